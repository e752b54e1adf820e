package op

import (
	"fmt"
	"slices"
)

// View ops: results share the input's storage; only the layout changes.
func init() {
	Register(&Def{
		Name: "reshape", Kind: View, Group: "shape",
		Doc:    "Returns a tensor with the same data and the given shape (one dimension may be -1); a view when strides allow, else a copy.",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "shape", Type: AttrInts}},
		ViewFn: func(l Layout, a Attrs) (Layout, bool, error) {
			shape, err := InferReshape(l.Shape, a.Ints("shape"))
			if err != nil {
				return Layout{}, false, err
			}
			st, ok := ReshapeStrides(l.Shape, l.Strides, shape)
			if !ok {
				return Layout{}, false, nil
			}
			return Layout{Shape: shape, Strides: st, Offset: l.Offset}, true, nil
		},
		VJP: func(b Builder, in, out, g []Value, a Attrs) []Value {
			return []Value{Call1(b, "reshape", Attrs{"shape": slices.Clone(b.Meta(in[0]).Shape)}, g[0])}
		},
	})
	Register(&Def{
		Name: "permute", Kind: View, Group: "shape",
		Doc:    "Reorders dimensions (Tensor.permute).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "dims", Type: AttrInts}},
		ViewFn: func(l Layout, a Attrs) (Layout, bool, error) {
			dims := a.Ints("dims")
			r := len(l.Shape)
			if len(dims) != r {
				return Layout{}, false, fmt.Errorf("permute: number of dims %v doesn't match tensor rank %d", dims, r)
			}
			seen := make([]bool, r)
			out := Layout{Shape: make([]int, r), Strides: make([]int, r), Offset: l.Offset}
			for i, d := range dims {
				ax, err := NormAxis("permute", d, r)
				if err != nil {
					return Layout{}, false, err
				}
				if seen[ax] {
					return Layout{}, false, fmt.Errorf("permute: repeated dim %d in %v", d, dims)
				}
				seen[ax] = true
				out.Shape[i], out.Strides[i] = l.Shape[ax], l.Strides[ax]
			}
			return out, true, nil
		},
		VJP: func(b Builder, in, out, g []Value, a Attrs) []Value {
			r := len(b.Meta(in[0]).Shape)
			p := make([]int, r)
			for i, d := range a.Ints("dims") {
				p[i], _ = NormAxis("permute", d, r)
			}
			return []Value{Call1(b, "permute", Attrs{"dims": invertPerm(p)}, g[0])}
		},
	})
	Register(&Def{
		Name: "expand", Kind: View, Group: "shape",
		Doc:    "Broadcasts to a larger shape without copying (-1 keeps a dimension).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "shape", Type: AttrInts}},
		ViewFn: func(l Layout, a Attrs) (Layout, bool, error) {
			shape := slices.Clone(a.Ints("shape"))
			off := len(shape) - len(l.Shape)
			if off < 0 {
				return Layout{}, false, fmt.Errorf("expand: the number of sizes provided (%d) must be greater or equal to the number of dimensions in the tensor (%d)", len(shape), len(l.Shape))
			}
			for i := range shape {
				if shape[i] == -1 {
					if i < off {
						return Layout{}, false, fmt.Errorf("expand: -1 not allowed in a new leading dimension")
					}
					shape[i] = l.Shape[i-off]
				}
			}
			out, ok := l.BroadcastTo(shape)
			if !ok {
				return Layout{}, false, fmt.Errorf("expand: the expanded size %v is not compatible with the existing size %v", shape, l.Shape)
			}
			return out, true, nil
		},
		VJP: func(b Builder, in, out, g []Value, a Attrs) []Value {
			return []Value{SumToShape(b, g[0], b.Meta(in[0]).Shape)}
		},
	})
	Register(&Def{
		Name: "slice", Kind: View, Group: "shape",
		Doc:    "Selects start:end:step along dim (Python slicing semantics: clamped bounds, negative indices from the end; step > 0).",
		Inputs: []string{"input"},
		Attrs: []AttrSpec{{Name: "dim", Type: AttrInt, Default: 0}, {Name: "start", Type: AttrInt, Default: 0},
			{Name: "end", Type: AttrInt, Default: int(^uint(0) >> 1)}, {Name: "step", Type: AttrInt, Default: 1}},
		ViewFn: func(l Layout, a Attrs) (Layout, bool, error) {
			ax, err := NormAxis("slice", a.Int("dim"), len(l.Shape))
			if err != nil {
				return Layout{}, false, err
			}
			if len(l.Shape) == 0 {
				return Layout{}, false, fmt.Errorf("slice: cannot slice a 0-d tensor")
			}
			step := a.Int("step")
			if step <= 0 {
				return Layout{}, false, fmt.Errorf("slice: step must be positive, got %d", step)
			}
			n := l.Shape[ax]
			start, end := clampIndex(a.Int("start"), n), clampIndex(a.Int("end"), n)
			cnt := 0
			if end > start {
				cnt = (end - start + step - 1) / step
			}
			out := Layout{Shape: slices.Clone(l.Shape), Strides: slices.Clone(l.Strides), Offset: l.Offset}
			if cnt > 0 {
				out.Offset += start * l.Strides[ax]
			}
			out.Shape[ax] = cnt
			out.Strides[ax] = l.Strides[ax] * step
			return out, true, nil
		},
		VJP: func(b Builder, in, out, g []Value, a Attrs) []Value {
			return []Value{ScatterIntoZeros(b, g[0], b.Meta(in[0]).Shape, func(z Value) Value { return Call1(b, "slice", a, z) })}
		},
	})
	Register(&Def{
		Name: "select", Kind: View, Group: "shape",
		Doc:    "Indexes one position along dim, removing it (Tensor.select / x[i]).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt}, {Name: "index", Type: AttrInt}},
		ViewFn: func(l Layout, a Attrs) (Layout, bool, error) {
			if len(l.Shape) == 0 {
				return Layout{}, false, fmt.Errorf("select: cannot be applied to a 0-dim tensor")
			}
			ax, err := NormAxis("select", a.Int("dim"), len(l.Shape))
			if err != nil {
				return Layout{}, false, err
			}
			n := l.Shape[ax]
			i := a.Int("index")
			if i < -n || i >= n {
				return Layout{}, false, fmt.Errorf("select: index %d out of range for tensor of size %v at dimension %d", i, l.Shape, ax)
			}
			if i < 0 {
				i += n
			}
			out := Layout{Offset: l.Offset + i*l.Strides[ax]}
			out.Shape = append(slices.Clone(l.Shape[:ax]), l.Shape[ax+1:]...)
			out.Strides = append(slices.Clone(l.Strides[:ax]), l.Strides[ax+1:]...)
			return out, true, nil
		},
		VJP: func(b Builder, in, out, g []Value, a Attrs) []Value {
			return []Value{ScatterIntoZeros(b, g[0], b.Meta(in[0]).Shape, func(z Value) Value { return Call1(b, "select", a, z) })}
		},
	})
	Register(&Def{
		Name: "diagonal", Kind: View, Group: "shape",
		Doc:    "Returns a view of the diagonal with the given offset of the 2-d planes spanned by dim1 and dim2 (appended as the last dim).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "offset", Type: AttrInt, Default: 0}, {Name: "dim1", Type: AttrInt, Default: 0}, {Name: "dim2", Type: AttrInt, Default: 1}},
		ViewFn: func(l Layout, a Attrs) (Layout, bool, error) {
			r := len(l.Shape)
			if r < 2 {
				return Layout{}, false, fmt.Errorf("diagonal: requires at least 2 dimensions, got %d", r)
			}
			d1, err := NormAxis("diagonal", a.Int("dim1"), r)
			if err != nil {
				return Layout{}, false, err
			}
			d2, err := NormAxis("diagonal", a.Int("dim2"), r)
			if err != nil {
				return Layout{}, false, err
			}
			if d1 == d2 {
				return Layout{}, false, fmt.Errorf("diagonal: dimensions cannot be identical %d, %d", a.Int("dim1"), a.Int("dim2"))
			}
			off := a.Int("offset")
			out := Layout{Offset: l.Offset}
			var n int
			if off >= 0 {
				n = max(0, min(l.Shape[d1], l.Shape[d2]-off))
				if n > 0 {
					out.Offset += off * l.Strides[d2]
				}
			} else {
				n = max(0, min(l.Shape[d1]+off, l.Shape[d2]))
				if n > 0 {
					out.Offset -= off * l.Strides[d1]
				}
			}
			for i := 0; i < r; i++ {
				if i != d1 && i != d2 {
					out.Shape = append(out.Shape, l.Shape[i])
					out.Strides = append(out.Strides, l.Strides[i])
				}
			}
			out.Shape = append(out.Shape, n)
			out.Strides = append(out.Strides, l.Strides[d1]+l.Strides[d2])
			return out, true, nil
		},
		VJP: func(b Builder, in, out, g []Value, a Attrs) []Value {
			return []Value{ScatterIntoZeros(b, g[0], b.Meta(in[0]).Shape, func(z Value) Value { return Call1(b, "diagonal", a, z) })}
		},
	})
	Register(&Def{
		Name: "as_strided", Kind: View, Group: "shape",
		Doc:    "Views the storage with an explicit shape, strides and storage offset (Tensor.as_strided).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "shape", Type: AttrInts}, {Name: "strides", Type: AttrInts}, {Name: "offset", Type: AttrInt, Default: 0}},
		ViewFn: func(l Layout, a Attrs) (Layout, bool, error) {
			shape, st := a.Ints("shape"), a.Ints("strides")
			if len(shape) != len(st) {
				return Layout{}, false, fmt.Errorf("as_strided: shape %v and strides %v differ in length", shape, st)
			}
			for i := range shape {
				if shape[i] < 0 || st[i] < 0 {
					return Layout{}, false, fmt.Errorf("as_strided: negative size or stride in %v / %v", shape, st)
				}
			}
			return Layout{Shape: slices.Clone(shape), Strides: slices.Clone(st), Offset: a.Int("offset")}, true, nil
		},
	})
}

func clampIndex(i, n int) int {
	if i < 0 {
		i += n
		if i < 0 {
			i = 0
		}
	}
	if i > n {
		i = n
	}
	return i
}

// InferReshape resolves a target shape with at most one -1 against the
// number of elements of shape.
func InferReshape(shape, target []int) ([]int, error) {
	n := Numel(shape)
	out := slices.Clone(target)
	neg := -1
	prod := 1
	for i, d := range out {
		switch {
		case d == -1:
			if neg >= 0 {
				return nil, fmt.Errorf("reshape: only one dimension can be inferred in %v", target)
			}
			neg = i
		case d < 0:
			return nil, fmt.Errorf("reshape: invalid shape dimension %d in %v", d, target)
		default:
			prod *= d
		}
	}
	if neg >= 0 {
		if prod == 0 || n%prod != 0 {
			return nil, fmt.Errorf("reshape: shape %v is invalid for input of size %d", target, n)
		}
		out[neg] = n / prod
	} else if prod != n {
		return nil, fmt.Errorf("reshape: shape %v is invalid for input of size %d", target, n)
	}
	return out, nil
}

// ReshapeStrides computes strides that view a tensor of shape/strides as
// newShape without copying, as PyTorch's computeStride does; ok is false when
// a copy is needed.
func ReshapeStrides(shape, strides, newShape []int) ([]int, bool) {
	if Numel(shape) == 0 || len(shape) == 0 {
		// Empty tensors and 0-d tensors (one element) view as anything.
		return ContiguousStrides(newShape), true
	}
	newStrides := make([]int, len(newShape))
	viewD := len(newShape) - 1
	chunkBase := 0
	if len(strides) > 0 {
		chunkBase = strides[len(strides)-1]
	}
	tensorNumel, viewNumel := 1, 1
	for d := len(shape) - 1; d >= 0; d-- {
		tensorNumel *= shape[d]
		if d == 0 || (shape[d-1] != 1 && strides[d-1] != tensorNumel*chunkBase) {
			for viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] == 1) {
				newStrides[viewD] = viewNumel * chunkBase
				viewNumel *= newShape[viewD]
				viewD--
			}
			if viewNumel != tensorNumel {
				return nil, false
			}
			if d > 0 {
				chunkBase = strides[d-1]
				tensorNumel, viewNumel = 1, 1
			}
		}
	}
	if viewD != -1 {
		return nil, false
	}
	return newStrides, true
}
