package op

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gotpu/gotpu/dtype"
)

// einsum: parsed once by the shape rule and again by the decomposition (the
// parse is cheap and keeps the two in agreement).

// Label ids: 'A'..'Z' are 0..25, 'a'..'z' 26..51, and the dimensions covered
// by "..." are einsumEll+j (right-aligned across operands).
const einsumEll = 52

// einsumSpec is a parsed einsum equation checked against operand shapes.
type einsumSpec struct {
	in    [][]int     // label ids per operand axis
	out   []int       // output label ids
	size  map[int]int // broadcast size of every label
	nEll  int         // number of dimensions "..." stands for
	terms []string
}

func einsumLabel(c byte) (int, bool) {
	switch {
	case c >= 'A' && c <= 'Z':
		return int(c - 'A'), true
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 26, true
	}
	return 0, false
}

func einsumLetter(id int) string {
	if id >= einsumEll {
		return "..."
	}
	if id < 26 {
		return string(rune('A' + id))
	}
	return string(rune('a' + id - 26))
}

// parseEinsum parses eq for operands of the given shapes.
func parseEinsum(eq string, shapes [][]int) (*einsumSpec, error) {
	const name = "einsum"
	eq = strings.ReplaceAll(eq, " ", "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	if len(shapes) == 0 {
		return nil, fmt.Errorf("%s(): must provide at least one operand", name)
	}
	if len(terms) > len(shapes) {
		return nil, fmt.Errorf("%s(): fewer operands were provided than specified in the equation", name)
	}
	if len(terms) < len(shapes) {
		return nil, fmt.Errorf("%s(): more operands were provided than specified in the equation", name)
	}
	sp := &einsumSpec{size: map[int]int{}, terms: terms}
	type term struct {
		labels []int // -1 marks the ellipsis position
		ell    bool
	}
	parseTerm := func(s string, where string) (term, error) {
		var t term
		for i := 0; i < len(s); i++ {
			if s[i] == '.' {
				if t.ell {
					return t, fmt.Errorf("%s(): found more than one ellipsis (\"...\") in %s", name, where)
				}
				if !strings.HasPrefix(s[i:], "...") {
					return t, fmt.Errorf("%s(): found '.' for %s that is not part of any ellipsis (\"...\")", name, where)
				}
				t.ell = true
				t.labels = append(t.labels, -1)
				i += 2
				continue
			}
			id, ok := einsumLabel(s[i])
			if !ok {
				return t, fmt.Errorf("%s(): invalid subscript given at index %d in the equation string, subscripts must be in [a-zA-Z]", name, strings.Index(eq, s)+i)
			}
			t.labels = append(t.labels, id)
		}
		return t, nil
	}
	parsed := make([]term, len(terms))
	for k, s := range terms {
		t, err := parseTerm(s, fmt.Sprintf("operand %d", k))
		if err != nil {
			return nil, err
		}
		parsed[k] = t
		nl := len(t.labels)
		if t.ell {
			nl--
			if nl > len(shapes[k]) {
				return nil, fmt.Errorf("%s(): the number of subscripts in the equation (%d) is more than the number of dimensions (%d) for operand %d", name, nl, len(shapes[k]), k)
			}
			sp.nEll = max(sp.nEll, len(shapes[k])-nl)
		} else if nl != len(shapes[k]) {
			return nil, fmt.Errorf("%s(): the number of subscripts in the equation (%d) does not match the number of dimensions (%d) for operand %d and no ellipsis was given", name, nl, len(shapes[k]), k)
		}
	}
	count := map[int]int{} // operands using a label
	occur := map[int]int{} // occurrences of a label in the equation
	for k, t := range parsed {
		shape := shapes[k]
		var ids []int
		for _, l := range t.labels {
			if l >= 0 {
				ids = append(ids, l)
				continue
			}
			e := len(shape) - (len(t.labels) - 1)
			for j := sp.nEll - e; j < sp.nEll; j++ {
				ids = append(ids, einsumEll+j)
			}
		}
		seen := map[int]int{}
		for ax, id := range ids {
			d := shape[ax]
			occur[id]++
			if prev, ok := seen[id]; ok {
				if prev != d {
					return nil, fmt.Errorf("%s(): subscript %s is repeated for operand %d but the sizes don't match, %d != %d", name, einsumLetter(id), k, prev, d)
				}
				continue
			}
			seen[id] = d
			count[id]++
			if s, ok := sp.size[id]; ok && s != d {
				if s != 1 && d != 1 {
					if id >= einsumEll {
						return nil, fmt.Errorf("%s(): operands do not broadcast with remapped shapes (original->remapped): ellipsis dimension of size %d does not broadcast with %d", name, d, s)
					}
					return nil, fmt.Errorf("%s(): subscript %s has size %d for operand %d which does not broadcast with previously seen size %d", name, einsumLetter(id), d, k, s)
				}
				sp.size[id] = max(s, d)
			} else if !ok {
				sp.size[id] = d
			}
		}
		sp.in = append(sp.in, ids)
	}
	if explicit {
		t, err := parseTerm(rhs, "the output")
		if err != nil {
			return nil, err
		}
		seen := map[int]bool{}
		for _, l := range t.labels {
			if l < 0 {
				for j := 0; j < sp.nEll; j++ {
					sp.out = append(sp.out, einsumEll+j)
				}
				continue
			}
			if seen[l] {
				return nil, fmt.Errorf("%s(): output subscript %s appears more than once in the output", name, einsumLetter(l))
			}
			seen[l] = true
			if count[l] == 0 {
				return nil, fmt.Errorf("%s(): output subscript %s does not appear in the equation for any input operand", name, einsumLetter(l))
			}
			sp.out = append(sp.out, l)
		}
	} else {
		for j := 0; j < sp.nEll; j++ {
			sp.out = append(sp.out, einsumEll+j)
		}
		var once []int
		for id, c := range occur {
			if id < einsumEll && c == 1 {
				once = append(once, id)
			}
		}
		sort.Ints(once)
		sp.out = append(sp.out, once...)
	}
	if sp.out == nil {
		sp.out = []int{}
	}
	return sp, nil
}

func (sp *einsumSpec) outShape() []int {
	s := make([]int, len(sp.out))
	for i, id := range sp.out {
		s[i] = sp.size[id]
	}
	return s
}

// einsumSum sums x over the axes whose labels are in drop, using a
// contraction with a ones tensor (dot_general is the one summing primitive
// einsum needs).
func einsumSum(b Builder, x Value, labels []int, drop func(int) bool, prec any) (Value, []int) {
	var axes, keep, shape []int
	m := b.Meta(x)
	for ax, id := range labels {
		if drop(id) {
			axes = append(axes, ax)
			shape = append(shape, m.Shape[ax])
		} else {
			keep = append(keep, id)
		}
	}
	if len(axes) == 0 {
		return x, labels
	}
	ones := Call1(b, "expand", Attrs{"shape": shape}, Call1(b, "convert", Attrs{"dtype": m.DType}, b.Scalar(int64(1), x)))
	out := laDot(b, x, ones, []int{}, []int{}, axes, laIota(0, len(axes)), prec)
	if keep == nil {
		keep = []int{}
	}
	return out, keep
}

// einsumDiagonal takes diagonals until no label repeats within x.
func einsumDiagonal(b Builder, x Value, labels []int) (Value, []int) {
	for {
		i, j := -1, -1
	search:
		for a := range labels {
			for c := a + 1; c < len(labels); c++ {
				if labels[a] == labels[c] {
					i, j = a, c
					break search
				}
			}
		}
		if i < 0 {
			return x, labels
		}
		x = Call1(b, "diagonal", Attrs{"offset": 0, "dim1": i, "dim2": j}, x)
		id := labels[i]
		nl := make([]int, 0, len(labels)-1)
		for a, l := range labels {
			if a != i && a != j {
				nl = append(nl, l)
			}
		}
		labels = append(nl, id)
	}
}

func decomposeEinsum(b Builder, in []Value, a Attrs) Value {
	shapes := make([][]int, len(in))
	for i, v := range in {
		shapes[i] = b.Meta(v).Shape
	}
	sp, err := parseEinsum(a.String("equation"), shapes)
	if err != nil {
		panic(err) // Infer already accepted the same equation
	}
	prec := a["precision"]
	inOut := map[int]bool{}
	for _, id := range sp.out {
		inOut[id] = true
	}
	// neededAfter(k, id): id is in the output or in an operand after k.
	neededAfter := func(k, id int) bool {
		if inOut[id] {
			return true
		}
		for j := k + 1; j < len(sp.in); j++ {
			if slices.Contains(sp.in[j], id) {
				return true
			}
		}
		return false
	}
	prep := func(k int) (Value, []int) {
		x, labels := einsumDiagonal(b, in[k], slices.Clone(sp.in[k]))
		return x, labels
	}
	cur, cl := prep(0)
	for k := 1; k < len(in); k++ {
		y, yl := prep(k)
		// Sum labels private to one side that nothing later needs.
		cur, cl = einsumSum(b, cur, cl, func(id int) bool { return !slices.Contains(yl, id) && !neededAfter(k, id) }, prec)
		y, yl = einsumSum(b, y, yl, func(id int) bool { return !slices.Contains(cl, id) && !neededAfter(k, id) }, prec)
		// Broadcast size-1 shared labels to the other side's size.
		cs, ys := slices.Clone(b.Meta(cur).Shape), slices.Clone(b.Meta(y).Shape)
		var lb, rb, lc, rc, batch, lfree, rfree []int
		for i, id := range cl {
			j := slices.Index(yl, id)
			if j < 0 {
				lfree = append(lfree, id)
				continue
			}
			s := max(cs[i], ys[j])
			cs[i], ys[j] = s, s
			if neededAfter(k, id) {
				lb, rb, batch = append(lb, i), append(rb, j), append(batch, id)
			} else {
				lc, rc = append(lc, i), append(rc, j)
			}
		}
		for _, id := range yl {
			if !slices.Contains(cl, id) {
				rfree = append(rfree, id)
			}
		}
		cur, y = laExpand(b, cur, cs), laExpand(b, y, ys)
		if lb == nil {
			lb, rb = []int{}, []int{}
		}
		if lc == nil {
			lc, rc = []int{}, []int{}
		}
		cur = laDot(b, cur, y, lb, rb, lc, rc, prec)
		cl = append(append(batch, lfree...), rfree...)
	}
	cur, cl = einsumSum(b, cur, cl, func(id int) bool { return !inOut[id] }, prec)
	perm := make([]int, len(sp.out))
	for i, id := range sp.out {
		perm[i] = slices.Index(cl, id)
	}
	cur = laPermute(b, cur, perm)
	// A label broadcast only through size-1 occurrences keeps size 1; the
	// output wants the broadcast size.
	return laExpand(b, cur, sp.outShape())
}

func init() {
	Register(&Def{
		Name: "einsum", Kind: Composite, Group: "linalg",
		Doc:    "Einstein summation (torch.einsum): explicit or implicit output, repeated subscripts take diagonals, \"...\" broadcasts.",
		Inputs: []string{"operands*"},
		Attrs:  []AttrSpec{{Name: "equation", Type: AttrString}, laPrecisionAttr},
		DTypes: SetNumeric,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := CheckPrecision("einsum", a.String("precision")); err != nil {
				return nil, err
			}
			shapes := make([][]int, len(in))
			dt := dtype.Invalid
			for i, m := range in {
				shapes[i] = m.Shape
				if dt == dtype.Invalid {
					dt = m.DType
				}
			}
			if err := laSameDType("einsum", in...); err != nil {
				return nil, err
			}
			sp, err := parseEinsum(a.String("equation"), shapes)
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: sp.outShape(), DType: dt}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			return []Value{decomposeEinsum(b, in, a)}
		},
	})
}
