package op

import (
	"slices"
	"strings"
	"testing"
)

func TestParseEinsum(t *testing.T) {
	cases := []struct {
		eq     string
		shapes [][]int
		out    []int
		err    string
	}{
		{"ij,jk->ik", [][]int{{2, 3}, {3, 4}}, []int{2, 4}, ""},
		{"ij,jk", [][]int{{2, 3}, {3, 4}}, []int{2, 4}, ""},
		{"ba,ab", [][]int{{2, 3}, {3, 2}}, []int{}, ""}, // both labels twice: full contraction
		{"Ba,a", [][]int{{2, 3}, {3}}, []int{2}, ""},    // implicit output keeps B
		{"ii", [][]int{{3, 3}}, []int{}, ""},            // trace
		{"ii->i", [][]int{{3, 3}}, []int{3}, ""},        // diagonal
		{"...ij,...jk", [][]int{{5, 1, 2, 3}, {4, 3, 2}}, []int{5, 4, 2, 2}, ""},
		{"i,i->i", [][]int{{1}, {3}}, []int{3}, ""},
		{"a...b->...", [][]int{{2, 3, 4, 5}}, []int{3, 4}, ""},
		{"ij->k", [][]int{{1, 2}}, nil, "output subscript k does not appear"},
		{"ij,jk->ik", [][]int{{2, 3}}, nil, "fewer operands"},
		{"i", [][]int{{2}, {2}}, nil, "more operands"},
		{"i..j", [][]int{{2, 3}}, nil, "not part of any ellipsis"},
		{"ijk", [][]int{{2, 3}}, nil, "does not match the number of dimensions (2)"},
		{"ij,ij->ij", [][]int{{2, 3}, {2, 4}}, nil, "subscript j has size 4 for operand 1"},
	}
	for _, c := range cases {
		t.Run(c.eq, func(t *testing.T) {
			sp, err := parseEinsum(c.eq, c.shapes)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := sp.outShape(); !slices.Equal(got, c.out) {
				t.Fatalf("output shape %v, want %v", got, c.out)
			}
		})
	}
}

func TestResolveDotGeneral(t *testing.T) {
	d, err := ResolveDotGeneral([]int{2, 3, 4, 5}, []int{5, 2, 6, 4}, []int{0}, []int{1}, []int{2, -1}, []int{3, 0})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Shape, []int{2, 3, 6}) || !slices.Equal(d.LhsFree, []int{1}) || !slices.Equal(d.RhsFree, []int{2}) {
		t.Fatalf("got %+v", d)
	}
	for _, c := range []struct {
		lb, rb, lc, rc []int
		err            string
	}{
		{[]int{0}, nil, nil, nil, "batch dimensions"},
		{nil, nil, []int{1}, []int{1}, "contracting dimension sizes differ"},
		{[]int{0}, []int{0}, nil, nil, "batch dimension sizes differ"},
		{nil, nil, []int{0, 0}, []int{1, 1}, "used twice"},
		{nil, nil, []int{4}, []int{0}, "out of range"},
	} {
		if _, err := ResolveDotGeneral([]int{2, 3, 4, 5}, []int{5, 2, 6, 4}, c.lb, c.rb, c.lc, c.rc); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%+v: got %v, want %q", c, err, c.err)
		}
	}
}

func TestPoolOutSize(t *testing.T) {
	// Values from PyTorch's pooling_output_shape.
	cases := []struct {
		in, k, pad, stride, dil int
		ceil                    bool
		want                    int
	}{
		{7, 3, 1, 2, 1, false, 4},
		{6, 3, 1, 2, 1, false, 3},
		{6, 3, 1, 2, 1, true, 4},
		{5, 2, 0, 2, 1, false, 2},
		{5, 2, 0, 2, 1, true, 3},
		{6, 2, 0, 3, 1, true, 2}, // the last window would start past the input: dropped
		{7, 2, 1, 2, 2, false, 4},
	}
	for _, c := range cases {
		if got := PoolOutSize(c.in, c.k, c.pad, c.stride, c.dil, c.ceil); got != c.want {
			t.Errorf("%+v: got %d", c, got)
		}
	}
}
