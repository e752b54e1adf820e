package ir

import (
	"slices"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// TestAddNode: a node keeps copies of its inputs and output shapes (the
// caller's slices may change afterwards), a nil input list stays nil and an
// empty one empty, and values are numbered in order — for the one-output
// nodes AddNode builds in one allocation and for the others.
func TestAddNode(t *testing.T) {
	add := op.MustLookup("add")
	for _, c := range []struct {
		name   string
		nin    int
		nilIn  bool
		shapes [][]int
	}{
		{"nil inputs", 0, true, [][]int{{2}}},
		{"no inputs", 0, false, [][]int{{}}},
		{"two inputs", 2, false, [][]int{{2, 3}}},
		{"four inputs rank 4", 4, false, [][]int{{1, 2, 3, 4}}},
		{"five inputs", 5, false, [][]int{{3}}},
		{"rank 5", 1, false, [][]int{{1, 2, 3, 4, 5}}},
		{"two outputs", 2, false, [][]int{{2}, {3, 4}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := New()
			p := g.Param(op.Meta{Shape: []int{1}, DType: dtype.F32})
			var in []*Value
			if !c.nilIn {
				in = []*Value{}
			}
			for range c.nin {
				in = append(in, p)
			}
			var metas []op.Meta
			for _, s := range c.shapes {
				metas = append(metas, op.Meta{Shape: slices.Clone(s), DType: dtype.F32})
			}
			n := g.AddNode(add, op.Attrs{}, in, metas)
			if (n.In == nil) != (in == nil) || len(n.In) != c.nin {
				t.Fatalf("In = %v (nil %v), want %d entries (nil %v)", n.In, n.In == nil, c.nin, in == nil)
			}
			for i := range in {
				in[i] = nil
			}
			for i, v := range n.In {
				if v != p {
					t.Fatalf("input %d changed with the caller's slice", i)
				}
			}
			if len(n.Out) != len(c.shapes) {
				t.Fatalf("%d outputs, want %d", len(n.Out), len(c.shapes))
			}
			for i, m := range metas {
				for j := range m.Shape {
					m.Shape[j] = -1
				}
				v := n.Out[i]
				if !slices.Equal(v.Meta.Shape, c.shapes[i]) || v.Meta.Shape == nil || v.Meta.DType != dtype.F32 {
					t.Fatalf("output %d meta %v, want shape %v f32 (shape not nil)", i, v.Meta, c.shapes[i])
				}
				if v.Def != n || v.Index != i || v.ID != 1+i {
					t.Fatalf("output %d: def %p index %d id %d, want %p %d %d", i, v.Def, v.Index, v.ID, n, i, 1+i)
				}
			}
			if m := g.AddNode(add, op.Attrs{}, []*Value{p}, []op.Meta{{Shape: []int{1}, DType: dtype.F32}}); m.Out[0].ID != 1+len(c.shapes) {
				t.Fatalf("next value id %d, want %d", m.Out[0].ID, 1+len(c.shapes))
			}
			if len(g.Nodes) != 2 || g.Nodes[0] != n {
				t.Fatalf("graph nodes %d", len(g.Nodes))
			}
		})
	}
}
