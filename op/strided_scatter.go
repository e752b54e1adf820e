package op

import (
	"fmt"
	"slices"
)

// as_strided_scatter is the functional form of an in-place write into a view:
// the Fused mode and compile.Fn record copy_ (and every in-place op) into a
// partial view of a storage as the op on the view followed by this scatter
// of the view's new value into the storage's value.

func init() {
	Register(&Def{
		Name: "as_strided_scatter", Kind: Primitive, Group: "movement",
		Doc:    "Returns a copy of input (taken as contiguous) with src written at the elements input.as_strided(shape, strides, offset) selects (torch.as_strided_scatter).",
		Inputs: []string{"input", "src"},
		Attrs:  []AttrSpec{{Name: "shape", Type: AttrInts}, {Name: "strides", Type: AttrInts}, {Name: "offset", Type: AttrInt, Default: 0}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := checkStridedView("as_strided_scatter", in[0].Shape, a); err != nil {
				return nil, err
			}
			if in[0].DType != in[1].DType {
				return nil, fmt.Errorf("as_strided_scatter: expected src to have the same dtype as input, got %s and %s", in[1].DType, in[0].DType)
			}
			if !slices.Equal(in[1].Shape, a.Ints("shape")) {
				return nil, fmt.Errorf("as_strided_scatter: expected src of shape %v, got %v", a.Ints("shape"), in[1].Shape)
			}
			return []Meta{{Shape: slices.Clone(in[0].Shape), DType: in[0].DType}}, nil
		},
		// The view's elements are replaced: input's gradient is g with them
		// zeroed, src's is g at the view (views written twice are not
		// differentiable, as in PyTorch).
		VJP: func(b Builder, in, out, g []Value, a Attrs) []Value {
			var gi, gs Value
			view := func(v Value) Value { return Call1(b, "as_strided", a, Call1(b, "copy", nil, v)) }
			if NeedsGrad(b, 0) {
				z := Zeros(b, a.Ints("shape"), b.Meta(g[0]).DType)
				gi = Call1(b, "as_strided_scatter", a, g[0], z)
			}
			if NeedsGrad(b, 1) {
				gs = Call1(b, "copy", nil, view(g[0]))
			}
			return []Value{gi, gs}
		},
	})
}

// checkStridedView checks that the view (shape, strides, offset) of attrs a
// stays inside a contiguous tensor of shape base.
func checkStridedView(name string, base []int, a Attrs) error {
	shape, st, off := a.Ints("shape"), a.Ints("strides"), a.Int("offset")
	if len(shape) != len(st) {
		return fmt.Errorf("%s: shape %v and strides %v differ in length", name, shape, st)
	}
	if off < 0 {
		return fmt.Errorf("%s: negative offset %d", name, off)
	}
	last := off
	for i := range shape {
		if shape[i] < 0 || st[i] < 0 {
			return fmt.Errorf("%s: negative size or stride in %v / %v", name, shape, st)
		}
		if shape[i] == 0 {
			return nil
		}
		last += (shape[i] - 1) * st[i]
	}
	if n := Numel(base); last >= n {
		return fmt.Errorf("%s: view of shape %v, strides %v, offset %d reaches element %d of an input with %d elements", name, shape, st, off, last, n)
	}
	return nil
}

func init() {
	// The emitter flattens input, scatters src's elements at the flat
	// positions the view selects (the index as_strided's gather uses) and
	// reshapes back.
	DefStableHLO(AsStridedScatter, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		l := Layout{Shape: a.Ints("shape"), Strides: a.Ints("strides"), Offset: a.Int("offset")}
		m := Numel(l.Shape)
		if m == 0 {
			return in[0], nil
		}
		n := Numel(in[0].Type.Shape)
		x := b.reshape(in[0], []int{n})
		src := b.reshape(in[1], []int{m})
		idx := b.reshape(stridedIndex(b, l), []int{m, 1})
		res := b.scatter(x, idx, src, scatterDims{InsertedWindowDims: []int{0}, ScatterDimsToOperandDims: []int{0}, IndexVectorDim: 1}, nil)
		return b.reshape(res, out.Shape), nil
	}))
}
