package op

import (
	"fmt"
	"slices"

	"github.com/gotpu/gotpu/dtype"
)

// The index group: shape views (transpose, squeeze, view, ...), joins and
// splits (cat, stack, split, chunk, unbind), gathers and scatters, masked and
// advanced indexing, padding, flips and repeats.
//
// Primitives: cat, gather, scatter, scatter_reduce, index, index_put,
// masked_select, masked_scatter, nonzero, pad_nd, flip, repeat_interleave.
// Everything else is a view or decomposes into those (and views).
//
// Ops whose output size depends on values (nonzero, masked_select,
// repeat_interleave with tensor repeats) take the size as an attribute
// ("count", "output_size"), which the tensor layer computes first at a sync
// point (as PyTorch does); their kernels check it against the data.

// The int64 index dtype set for index inputs.
const ixSetIndex = Set(1<<dtype.I32 | 1<<dtype.I64)

func init() {
	registerIndexViews()
	registerIndexJoins()
	registerIndexGather()
	registerIndexMasked()
	registerIndexMovement()
}

// ---------------------------------------------------------------- views

func registerIndexViews() {
	Register(&Def{
		Name: "transpose", Kind: View, Group: "shape",
		Doc:    "Swaps dimensions dim0 and dim1 (Tensor.transpose).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "dim0", Type: AttrInt}, {Name: "dim1", Type: AttrInt}},
		ViewFn: func(l Layout, a Attrs) (Layout, bool, error) {
			r := len(l.Shape)
			d0, err := NormAxis("transpose", a.Int("dim0"), r)
			if err != nil {
				return Layout{}, false, err
			}
			d1, err := NormAxis("transpose", a.Int("dim1"), r)
			if err != nil {
				return Layout{}, false, err
			}
			out := ixCloneLayout(l)
			if r > 0 {
				out.Shape[d0], out.Shape[d1] = out.Shape[d1], out.Shape[d0]
				out.Strides[d0], out.Strides[d1] = out.Strides[d1], out.Strides[d0]
			}
			return out, true, nil
		},
	})
	Register(&Def{
		Name: "t", Kind: View, Group: "shape",
		Doc:    "Transposes a tensor of at most 2 dimensions (Tensor.t); 0-d and 1-d tensors are returned as is.",
		Inputs: []string{"input"},
		ViewFn: func(l Layout, a Attrs) (Layout, bool, error) {
			r := len(l.Shape)
			if r > 2 {
				return Layout{}, false, fmt.Errorf("t: t() expects a tensor with <= 2 dimensions, but self is %dD", r)
			}
			out := ixCloneLayout(l)
			if r == 2 {
				out.Shape[0], out.Shape[1] = out.Shape[1], out.Shape[0]
				out.Strides[0], out.Strides[1] = out.Strides[1], out.Strides[0]
			}
			return out, true, nil
		},
	})
	Register(&Def{
		Name: "narrow", Kind: View, Group: "shape",
		Doc:    "Returns input[..., start:start+length, ...] along dim (Tensor.narrow); start may be negative, the range must lie inside the dimension.",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt}, {Name: "start", Type: AttrInt}, {Name: "length", Type: AttrInt}},
		ViewFn: func(l Layout, a Attrs) (Layout, bool, error) {
			if len(l.Shape) == 0 {
				return Layout{}, false, fmt.Errorf("narrow: narrow() cannot be applied to a 0-dim tensor")
			}
			ax, err := NormAxis("narrow", a.Int("dim"), len(l.Shape))
			if err != nil {
				return Layout{}, false, err
			}
			n, start, length := l.Shape[ax], a.Int("start"), a.Int("length")
			if start < -n || start > n {
				return Layout{}, false, fmt.Errorf("narrow: start out of range (expected to be in range of [%d, %d], but got %d)", -n, n, start)
			}
			if start < 0 {
				start += n
			}
			if length < 0 {
				return Layout{}, false, fmt.Errorf("narrow: narrow(): length must be non-negative")
			}
			if start+length > n {
				return Layout{}, false, fmt.Errorf("narrow: start (%d) + length (%d) exceeds dimension size (%d)", start, length, n)
			}
			out := ixCloneLayout(l)
			if length > 0 {
				out.Offset += start * l.Strides[ax]
			}
			out.Shape[ax] = length
			return out, true, nil
		},
	})
	Register(&Def{
		Name: "squeeze", Kind: View, Group: "shape",
		Doc:    "Removes dimensions of size 1: all of them, or those listed in dims (others listed are left alone) (Tensor.squeeze).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "dims", Type: AttrInts, Default: []int{}}},
		ViewFn: func(l Layout, a Attrs) (Layout, bool, error) {
			r := len(l.Shape)
			drop := make([]bool, r)
			dims := a.Ints("dims")
			if len(dims) == 0 {
				for i, d := range l.Shape {
					drop[i] = d == 1
				}
			}
			for _, d := range dims {
				ax, err := NormAxis("squeeze", d, r)
				if err != nil {
					return Layout{}, false, err
				}
				if r > 0 && l.Shape[ax] == 1 {
					drop[ax] = true
				}
			}
			out := Layout{Shape: []int{}, Strides: []int{}, Offset: l.Offset}
			for i := range l.Shape {
				if !drop[i] {
					out.Shape = append(out.Shape, l.Shape[i])
					out.Strides = append(out.Strides, l.Strides[i])
				}
			}
			return out, true, nil
		},
	})
	Register(&Def{
		Name: "unsqueeze", Kind: View, Group: "shape",
		Doc:    "Inserts a dimension of size 1 at dim, in [-rank-1, rank] (Tensor.unsqueeze).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt}},
		ViewFn: func(l Layout, a Attrs) (Layout, bool, error) {
			r := len(l.Shape)
			ax, err := NormAxis("unsqueeze", a.Int("dim"), r+1)
			if err != nil {
				return Layout{}, false, err
			}
			st := 1
			if ax < r {
				st = l.Strides[ax] * l.Shape[ax]
			}
			out := Layout{Offset: l.Offset}
			out.Shape = slices.Insert(slices.Clone(l.Shape), ax, 1)
			out.Strides = slices.Insert(slices.Clone(l.Strides), ax, st)
			return out, true, nil
		},
	})
	Register(&Def{
		Name: "flatten", Kind: View, Group: "shape",
		Doc:    "Flattens dimensions start_dim..end_dim into one (torch.flatten); a view when strides allow, else a copy. A 0-d tensor becomes 1-d.",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "start_dim", Type: AttrInt, Default: 0}, {Name: "end_dim", Type: AttrInt, Default: -1}},
		ViewFn: func(l Layout, a Attrs) (Layout, bool, error) {
			shape, err := FlattenShape(l.Shape, a.Int("start_dim"), a.Int("end_dim"))
			if err != nil {
				return Layout{}, false, err
			}
			return ixReshapeView(l, shape)
		},
	})
	Register(&Def{
		Name: "unflatten", Kind: View, Group: "shape",
		Doc:    "Splits dimension dim into sizes (one may be -1) (torch.unflatten); a view when strides allow, else a copy.",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt}, {Name: "sizes", Type: AttrInts}},
		ViewFn: func(l Layout, a Attrs) (Layout, bool, error) {
			shape, err := UnflattenShape(l.Shape, a.Int("dim"), a.Ints("sizes"))
			if err != nil {
				return Layout{}, false, err
			}
			return ixReshapeView(l, shape)
		},
	})
	Register(&Def{
		Name: "view", Kind: View, Group: "shape",
		Doc:    "Returns a view with the given shape (one dimension may be -1) (Tensor.view); unlike reshape it is an error when the strides do not allow a view.",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "shape", Type: AttrInts}},
		ViewFn: func(l Layout, a Attrs) (Layout, bool, error) {
			shape, err := InferReshape(l.Shape, a.Ints("shape"))
			if err != nil {
				return Layout{}, false, fmt.Errorf("view: %w", err)
			}
			st, ok := ReshapeStrides(l.Shape, l.Strides, shape)
			if !ok {
				return Layout{}, false, fmt.Errorf("view: view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead")
			}
			return Layout{Shape: shape, Strides: st, Offset: l.Offset}, true, nil
		},
	})
	Register(&Def{
		Name: "movedim", Kind: View, Group: "shape",
		Doc:    "Moves the dimensions in source to the positions in destination, keeping the others in order (torch.movedim).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "source", Type: AttrInts}, {Name: "destination", Type: AttrInts}},
		ViewFn: func(l Layout, a Attrs) (Layout, bool, error) {
			perm, err := MovedimPerm(len(l.Shape), a.Ints("source"), a.Ints("destination"))
			if err != nil {
				return Layout{}, false, err
			}
			out := Layout{Shape: make([]int, len(perm)), Strides: make([]int, len(perm)), Offset: l.Offset}
			for i, p := range perm {
				out.Shape[i], out.Strides[i] = l.Shape[p], l.Strides[p]
			}
			return out, true, nil
		},
	})
}

func ixCloneLayout(l Layout) Layout {
	return Layout{Shape: slices.Clone(l.Shape), Strides: slices.Clone(l.Strides), Offset: l.Offset}
}

func ixReshapeView(l Layout, shape []int) (Layout, bool, error) {
	st, ok := ReshapeStrides(l.Shape, l.Strides, shape)
	if !ok {
		return Layout{}, false, nil
	}
	return Layout{Shape: shape, Strides: st, Offset: l.Offset}, true, nil
}

// FlattenShape returns the shape of torch.flatten(x, start, end) for x of
// shape.
func FlattenShape(shape []int, start, end int) ([]int, error) {
	r := len(shape)
	if r == 0 {
		return []int{1}, nil
	}
	s, err := NormAxis("flatten", start, r)
	if err != nil {
		return nil, err
	}
	e, err := NormAxis("flatten", end, r)
	if err != nil {
		return nil, err
	}
	if s > e {
		return nil, fmt.Errorf("flatten: flatten() has invalid args: start_dim cannot come after end_dim")
	}
	out := slices.Clone(shape[:s])
	out = append(out, Numel(shape[s:e+1]))
	return append(out, shape[e+1:]...), nil
}

// UnflattenShape returns the shape of torch.unflatten(x, dim, sizes).
func UnflattenShape(shape []int, dim int, sizes []int) ([]int, error) {
	if len(shape) == 0 {
		return nil, fmt.Errorf("unflatten: cannot unflatten a 0-dim tensor")
	}
	ax, err := NormAxis("unflatten", dim, len(shape))
	if err != nil {
		return nil, err
	}
	if len(sizes) == 0 {
		return nil, fmt.Errorf("unflatten: sizes must be non-empty")
	}
	got, err := InferReshape([]int{shape[ax]}, sizes)
	if err != nil {
		return nil, fmt.Errorf("unflatten: provided sizes %v don't multiply up to the size of dim %d (%d) in the input tensor", sizes, dim, shape[ax])
	}
	out := slices.Clone(shape[:ax])
	out = append(out, got...)
	return append(out, shape[ax+1:]...), nil
}

// MovedimPerm returns the permutation torch.movedim(x, source, destination)
// applies to a tensor of rank r: output dim i is input dim perm[i].
func MovedimPerm(r int, source, destination []int) ([]int, error) {
	if len(source) != len(destination) {
		return nil, fmt.Errorf("movedim: Invalid source or destination dims: source (%v dims) should contain the same number of dims as destination (%v dims)", source, destination)
	}
	perm := make([]int, max(r, 0))
	for i := range perm {
		perm[i] = -1
	}
	used := make([]bool, r)
	for i := range source {
		s, err := NormAxis("movedim", source[i], r)
		if err != nil {
			return nil, err
		}
		d, err := NormAxis("movedim", destination[i], r)
		if err != nil {
			return nil, err
		}
		if r == 0 {
			continue
		}
		if used[s] {
			return nil, fmt.Errorf("movedim: repeated dim in `source` (%v)", source)
		}
		if perm[d] != -1 {
			return nil, fmt.Errorf("movedim: repeated dim in `destination` (%v)", destination)
		}
		used[s] = true
		perm[d] = s
	}
	next := 0
	for i := range perm {
		if perm[i] != -1 {
			continue
		}
		for used[next] {
			next++
		}
		perm[i] = next
		used[next] = true
	}
	return perm, nil
}

// ---------------------------------------------------------------- joins

func registerIndexJoins() {
	Register(&Def{
		Name: "cat", Kind: Primitive, Group: "index",
		Doc:     "Concatenates tensors along dim with type promotion (torch.cat); 1-d empty tensors are skipped as PyTorch's legacy rule allows.",
		Inputs:  []string{"tensors*"},
		Attrs:   []AttrSpec{{Name: "dim", Type: AttrInt, Default: 0}},
		Promote: PromoteCommon,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			shape, _, err := CatShape("cat", in, a.Int("dim"))
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: shape, DType: in[0].DType}}, nil
		},
	})
	Register(&Def{
		Name: "stack", Kind: Composite, Group: "index",
		Doc:     "Stacks equally shaped tensors along a new dimension dim with type promotion (torch.stack).",
		Inputs:  []string{"tensors*"},
		Attrs:   []AttrSpec{{Name: "dim", Type: AttrInt, Default: 0}},
		Promote: PromoteCommon,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if len(in) == 0 {
				return nil, fmt.Errorf("stack: stack expects a non-empty TensorList")
			}
			for i, m := range in {
				if m.DType == dtype.Invalid {
					return nil, fmt.Errorf("stack: tensor %d is missing", i)
				}
				if !slices.Equal(m.Shape, in[0].Shape) {
					return nil, fmt.Errorf("stack: stack expects each tensor to be equal size, but got %v at entry 0 and %v at entry %d", in[0].Shape, m.Shape, i)
				}
			}
			ax, err := NormAxis("stack", a.Int("dim"), len(in[0].Shape)+1)
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: slices.Insert(slices.Clone(in[0].Shape), ax, len(in)), DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			ax, _ := NormAxis("stack", a.Int("dim"), len(b.Meta(in[0]).Shape)+1)
			us := make([]Value, len(in))
			for i, v := range in {
				us[i] = Call1(b, "unsqueeze", Attrs{"dim": ax}, v)
			}
			return b.Call("cat", us, Attrs{"dim": ax})
		},
	})
	Register(&Def{
		Name: "split", Kind: Composite, Group: "index",
		Doc:    "Splits into views along dim: pieces of split_size (the last may be smaller), or of the sizes in sections (torch.split).",
		Inputs: []string{"input"},
		Attrs: []AttrSpec{{Name: "split_size", Type: AttrInt, Optional: true}, {Name: "sections", Type: AttrInts, Optional: true},
			{Name: "dim", Type: AttrInt, Default: 0}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			ax, sizes, err := ixSplitSizes(in[0].Shape, a)
			if err != nil {
				return nil, err
			}
			out := make([]Meta, len(sizes))
			for i, s := range sizes {
				sh := slices.Clone(in[0].Shape)
				sh[ax] = s
				out[i] = Meta{Shape: sh, DType: in[0].DType}
			}
			return out, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			ax, sizes, _ := ixSplitSizes(b.Meta(in[0]).Shape, a)
			return ixSliceParts(b, in[0], ax, sizes)
		},
	})
	Register(&Def{
		Name: "chunk", Kind: Composite, Group: "index",
		Doc:    "Splits into at most chunks views of ceil(size/chunks) along dim (torch.chunk).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "chunks", Type: AttrInt}, {Name: "dim", Type: AttrInt, Default: 0}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			ax, sizes, err := ixChunkSizes(in[0].Shape, a)
			if err != nil {
				return nil, err
			}
			out := make([]Meta, len(sizes))
			for i, s := range sizes {
				sh := slices.Clone(in[0].Shape)
				sh[ax] = s
				out[i] = Meta{Shape: sh, DType: in[0].DType}
			}
			return out, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			ax, sizes, _ := ixChunkSizes(b.Meta(in[0]).Shape, a)
			return ixSliceParts(b, in[0], ax, sizes)
		},
	})
	Register(&Def{
		Name: "unbind", Kind: Composite, Group: "index",
		Doc:    "Removes dimension dim, returning the views along it (torch.unbind).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt, Default: 0}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			sh := in[0].Shape
			if len(sh) == 0 {
				return nil, fmt.Errorf("unbind: Dimension specified as %d but tensor has no dimensions", a.Int("dim"))
			}
			ax, err := NormAxis("unbind", a.Int("dim"), len(sh))
			if err != nil {
				return nil, err
			}
			out := make([]Meta, sh[ax])
			rest := slices.Delete(slices.Clone(sh), ax, ax+1)
			for i := range out {
				out[i] = Meta{Shape: rest, DType: in[0].DType}
			}
			return out, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			sh := b.Meta(in[0]).Shape
			ax, _ := NormAxis("unbind", a.Int("dim"), len(sh))
			out := make([]Value, sh[ax])
			for i := range out {
				out[i] = Call1(b, "select", Attrs{"dim": ax, "index": i}, in[0])
			}
			return out
		},
	})
}

// CatShape returns the shape of torch.cat(in, dim) and the normalised dim,
// applying PyTorch's rules: no 0-d inputs, equal ranks and sizes except at
// dim, and 1-d empty inputs skipped.
func CatShape(name string, in []Meta, dim int) ([]int, int, error) {
	if len(in) == 0 {
		return nil, 0, fmt.Errorf("%s: expected a non-empty list of Tensors", name)
	}
	ref := -1
	for i, m := range in {
		if m.DType == dtype.Invalid {
			return nil, 0, fmt.Errorf("%s: tensor %d is missing", name, i)
		}
		if len(m.Shape) == 0 {
			return nil, 0, fmt.Errorf("%s: zero-dimensional tensor (at position %d) cannot be concatenated", name, i)
		}
		if ref < 0 && !(len(m.Shape) == 1 && m.Shape[0] == 0) {
			ref = i
		}
	}
	if ref < 0 {
		if _, err := NormAxis(name, dim, 1); err != nil {
			return nil, 0, err
		}
		return []int{0}, 0, nil
	}
	r := len(in[ref].Shape)
	ax, err := NormAxis(name, dim, r)
	if err != nil {
		return nil, 0, err
	}
	out := slices.Clone(in[ref].Shape)
	out[ax] = 0
	for i, m := range in {
		if len(m.Shape) == 1 && m.Shape[0] == 0 && r != 1 {
			continue
		}
		if len(m.Shape) != r {
			return nil, 0, fmt.Errorf("%s: Tensors must have same number of dimensions: got %d and %d", name, r, len(m.Shape))
		}
		for d := range m.Shape {
			if d != ax && m.Shape[d] != out[d] {
				return nil, 0, fmt.Errorf("%s: Sizes of tensors must match except in dimension %d. Expected size %d but got size %d for tensor number %d in the list", name, ax, out[d], m.Shape[d], i)
			}
		}
		out[ax] += m.Shape[ax]
	}
	return out, ax, nil
}

func ixSplitSizes(shape []int, a Attrs) (int, []int, error) {
	if len(shape) == 0 {
		return 0, nil, fmt.Errorf("split: split expects at least a 1-dimensional tensor")
	}
	ax, err := NormAxis("split", a.Int("dim"), len(shape))
	if err != nil {
		return 0, nil, err
	}
	n := shape[ax]
	switch {
	case a.Has("sections") == a.Has("split_size"):
		return 0, nil, fmt.Errorf("split: exactly one of split_size and sections must be given")
	case a.Has("sections"):
		secs := a.Ints("sections")
		sum := 0
		for _, s := range secs {
			if s < 0 {
				return 0, nil, fmt.Errorf("split: split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=%v", secs)
			}
			sum += s
		}
		if sum != n {
			return 0, nil, fmt.Errorf("split: split_with_sizes expects split_sizes to sum exactly to %d (input tensor's size at dimension %d), but got split_sizes=%v", n, ax, secs)
		}
		return ax, slices.Clone(secs), nil
	}
	s := a.Int("split_size")
	if s < 0 {
		return 0, nil, fmt.Errorf("split: split expects split_size be non-negative, but got split_size=%d", s)
	}
	if s == 0 && n != 0 {
		return 0, nil, fmt.Errorf("split: split_size can only be 0 if dimension size is 0, but got dimension size of %d", n)
	}
	if n == 0 {
		return ax, []int{0}, nil
	}
	var sizes []int
	for off := 0; off < n; off += s {
		sizes = append(sizes, min(s, n-off))
	}
	return ax, sizes, nil
}

func ixChunkSizes(shape []int, a Attrs) (int, []int, error) {
	if len(shape) == 0 {
		return 0, nil, fmt.Errorf("chunk: chunk expects at least a 1-dimensional tensor")
	}
	c := a.Int("chunks")
	if c <= 0 {
		return 0, nil, fmt.Errorf("chunk: chunk expects `chunks` to be greater than 0, got: %d", c)
	}
	ax, err := NormAxis("chunk", a.Int("dim"), len(shape))
	if err != nil {
		return 0, nil, err
	}
	n := shape[ax]
	s := (n + c - 1) / c
	if n == 0 {
		// torch.chunk of an empty dimension returns chunks empty pieces.
		return ax, make([]int, c), nil
	}
	var sizes []int
	for off := 0; off < n; off += s {
		sizes = append(sizes, min(s, n-off))
	}
	return ax, sizes, nil
}

func ixSliceParts(b Builder, x Value, ax int, sizes []int) []Value {
	out := make([]Value, len(sizes))
	off := 0
	for i, s := range sizes {
		out[i] = Call1(b, "narrow", Attrs{"dim": ax, "start": off, "length": s}, x)
		off += s
	}
	return out
}

// ---------------------------------------------------------------- gather / scatter

// ScatterReduces lists the reductions scatter_reduce accepts.
var ScatterReduces = []string{"sum", "prod", "mean", "amax", "amin"}

func registerIndexGather() {
	Register(&Def{
		Name: "gather", Kind: Primitive, Group: "index",
		Doc:    "Returns out with out[i][j][k] = input[i][index[i][j][k]][k] for dim 1, and so on (torch.gather); index values must lie in [0, size).",
		Inputs: []string{"input", "index"},
		Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if _, err := ixCheckGatherShapes("gather", in[0], in[1], Meta{}, a.Int("dim")); err != nil {
				return nil, err
			}
			return []Meta{{Shape: slices.Clone(in[1].Shape), DType: in[0].DType}}, nil
		},
	})
	Register(&Def{
		Name: "scatter", Kind: Primitive, Group: "index",
		Doc:    "Returns a copy of input with out[i][index[i][j][k]][k] = src[i][j][k] for dim 1 (torch.scatter); without src, the scalar value is written. Which of several writes to one position wins is unspecified in PyTorch; here the last in row-major order of index wins.",
		Inputs: []string{"input", "index", "src?"},
		Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt}, {Name: "value", Type: AttrScalar, Optional: true}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if in[2].DType == dtype.Invalid && !a.Has("value") {
				return nil, fmt.Errorf("scatter: needs a src tensor or a scalar value")
			}
			if in[2].DType != dtype.Invalid && a.Has("value") {
				return nil, fmt.Errorf("scatter: give a src tensor or a scalar value, not both")
			}
			if _, err := ixCheckGatherShapes("scatter", in[0], in[1], in[2], a.Int("dim")); err != nil {
				return nil, err
			}
			return []Meta{{Shape: slices.Clone(in[0].Shape), DType: in[0].DType}}, nil
		},
	})
	Register(&Def{
		Name: "scatter_reduce", Kind: Primitive, Group: "index",
		Doc:    "Returns a copy of input where src values are reduced (sum, prod, mean, amax, amin) into the positions index selects along dim, including the original value when include_self (torch.scatter_reduce).",
		Inputs: []string{"input", "index", "src"},
		Attrs: []AttrSpec{{Name: "dim", Type: AttrInt}, {Name: "reduce", Type: AttrString},
			{Name: "include_self", Type: AttrBool, Default: true}},
		DTypes: SetNumeric,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if !slices.Contains(ScatterReduces, a.String("reduce")) {
				return nil, fmt.Errorf("scatter_reduce: reduce argument must be either sum, prod, mean, amax or amin, got %s", a.String("reduce"))
			}
			if _, err := ixCheckGatherShapes("scatter_reduce", in[0], in[1], in[2], a.Int("dim")); err != nil {
				return nil, err
			}
			return []Meta{{Shape: slices.Clone(in[0].Shape), DType: in[0].DType}}, nil
		},
	})
	Register(&Def{
		Name: "scatter_add", Kind: Composite, Group: "index",
		Doc:    "Returns a copy of input with src values added at the positions index selects along dim (torch.scatter_add).",
		Inputs: []string{"input", "index", "src"},
		Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt}},
		DTypes: SetNumeric,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if _, err := ixCheckGatherShapes("scatter_add", in[0], in[1], in[2], a.Int("dim")); err != nil {
				return nil, err
			}
			return []Meta{{Shape: slices.Clone(in[0].Shape), DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			return b.Call("scatter_reduce", in, Attrs{"dim": a.Int("dim"), "reduce": "sum", "include_self": true})
		},
	})
	Register(&Def{
		Name: "index_select", Kind: Composite, Group: "index",
		Doc:    "Selects the entries index (a 1-d or 0-d integer tensor, values in [0, size)) along dim (torch.index_select).",
		Inputs: []string{"input", "index"},
		Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			ax, err := ixCheckIndexVector("index_select", in[0], in[1], a.Int("dim"))
			if err != nil {
				return nil, err
			}
			sh := slices.Clone(in[0].Shape)
			if len(sh) == 0 {
				if in[1].Numel() != 1 {
					return nil, fmt.Errorf("index_select: index of a 0-d input must have one element, got %d", in[1].Numel())
				}
				return []Meta{{Shape: []int{}, DType: in[0].DType}}, nil
			}
			sh[ax] = in[1].Numel()
			return []Meta{{Shape: sh, DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x, idx := in[0], in[1]
			xm, im := b.Meta(x), b.Meta(idx)
			if len(xm.Shape) == 0 {
				_ = im
				g := Call1(b, "gather", Attrs{"dim": 0}, Call1(b, "reshape", Attrs{"shape": []int{1}}, x),
					Call1(b, "reshape", Attrs{"shape": []int{-1}}, idx))
				return []Value{Call1(b, "reshape", Attrs{"shape": []int{}}, g)}
			}
			ax, _ := NormAxis("index_select", a.Int("dim"), len(xm.Shape))
			target := slices.Clone(xm.Shape)
			target[ax] = im.Numel()
			return []Value{Call1(b, "gather", Attrs{"dim": ax}, x, ixExpandIndex(b, idx, ax, target))}
		},
	})
	Register(&Def{
		Name: "index_add", Kind: Composite, Group: "index",
		Doc:    "Returns a copy of input with alpha*source[..., i, ...] added at position index[i] along dim (torch.index_add); duplicate indices accumulate.",
		Inputs: []string{"input", "index", "source"},
		Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt}, {Name: "alpha", Type: AttrScalar, Default: int64(1)}},
		DTypes: SetNumeric,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := ixCheckIndexSource("index_add", in, a.Int("dim")); err != nil {
				return nil, err
			}
			return []Meta{{Shape: slices.Clone(in[0].Shape), DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x, idx, src := in[0], in[1], in[2]
			if al := a["alpha"]; al != int64(1) && al != float64(1) && al != true {
				src = Call1(b, "mul", nil, src, b.Scalar(al, src))
			}
			x1, idx1, src1, ax, back := ixIndexSourceArgs(b, x, idx, src, a.Int("dim"))
			r := Call1(b, "scatter_reduce", Attrs{"dim": ax, "reduce": "sum", "include_self": true}, x1, idx1, src1)
			return []Value{back(r)}
		},
	})
	Register(&Def{
		Name: "index_copy", Kind: Composite, Group: "index",
		Doc:    "Returns a copy of input with source[..., i, ...] written at position index[i] along dim (torch.index_copy).",
		Inputs: []string{"input", "index", "source"},
		Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := ixCheckIndexSource("index_copy", in, a.Int("dim")); err != nil {
				return nil, err
			}
			return []Meta{{Shape: slices.Clone(in[0].Shape), DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x1, idx1, src1, ax, back := ixIndexSourceArgs(b, in[0], in[1], in[2], a.Int("dim"))
			return []Value{back(Call1(b, "scatter", Attrs{"dim": ax}, x1, idx1, src1))}
		},
	})
	Register(&Def{
		Name: "index_fill", Kind: Composite, Group: "index",
		Doc:    "Returns a copy of input with the entries index selects along dim set to value; negative indices count from the end (torch.index_fill).",
		Inputs: []string{"input", "index"},
		Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt}, {Name: "value", Type: AttrScalar}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if _, err := ixCheckIndexVector("index_fill", in[0], in[1], a.Int("dim")); err != nil {
				return nil, err
			}
			return []Meta{{Shape: slices.Clone(in[0].Shape), DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x, idx := in[0], in[1]
			xm := b.Meta(x)
			v := b.Scalar(a["value"], x)
			if len(xm.Shape) == 0 {
				r := Call1(b, "index_put", nil, Call1(b, "reshape", Attrs{"shape": []int{1}}, x), v,
					Call1(b, "reshape", Attrs{"shape": []int{-1}}, idx))
				return []Value{Call1(b, "reshape", Attrs{"shape": []int{}}, r)}
			}
			ax, _ := NormAxis("index_fill", a.Int("dim"), len(xm.Shape))
			args := []Value{x, v}
			for i := 0; i < ax; i++ {
				args = append(args, nil)
			}
			args = append(args, Call1(b, "reshape", Attrs{"shape": []int{-1}}, idx))
			return b.Call("index_put", args, nil)
		},
	})
	Register(&Def{
		Name: "index", Kind: Primitive, Group: "index",
		Doc:    "Advanced indexing input[indices] with integer index tensors, nil entries taking whole dimensions (Tensor.__getitem__ / torch.index); negative indices count from the end. Boolean masks are converted to integer indices by the tensor layer (a sync point).",
		Inputs: []string{"input", "indices?*"},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			ents, err := ixIndexEntries("index", in[0].Shape, in[1:], false)
			if err != nil {
				return nil, err
			}
			p, err := PlanAdvIndex("index", in[0].Shape, ents)
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: p.Result, DType: in[0].DType}}, nil
		},
	})
	Register(&Def{
		Name: "index_put", Kind: Primitive, Group: "index",
		Doc:    "Returns a copy of input with values (broadcast) written, or added when accumulate, at input[indices] (torch.index_put); indices are integer tensors, boolean masks or nil for whole dimensions.",
		Inputs: []string{"input", "values", "indices?*"},
		Attrs:  []AttrSpec{{Name: "accumulate", Type: AttrBool, Default: false}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			x, v := in[0], in[1]
			if v.DType != x.DType && !v.Wrapped {
				return nil, fmt.Errorf("index_put: Index put requires the source and destination dtypes match, got %s for the destination and %s for the source", x.DType, v.DType)
			}
			ents, err := ixIndexEntries("index_put", x.Shape, in[2:], true)
			if err != nil {
				return nil, err
			}
			p, err := PlanAdvIndex("index_put", x.Shape, ents)
			if err != nil {
				return nil, err
			}
			if !p.Dynamic {
				if _, ok := (Layout{Shape: v.Shape, Strides: make([]int, len(v.Shape))}).BroadcastTo(p.Result); !ok {
					return nil, fmt.Errorf("index_put: shape mismatch: value tensor of shape %v cannot be broadcast to indexing result of shape %v", v.Shape, p.Result)
				}
			}
			return []Meta{{Shape: slices.Clone(x.Shape), DType: x.DType}}, nil
		},
	})
	Register(&Def{
		Name: "take", Kind: Composite, Group: "index",
		Doc:    "Indexes input as if it were 1-d: out has index's shape, negative indices count from the end (torch.take).",
		Inputs: []string{"input", "index"},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if !ixSetIndex.Has(in[1].DType) {
				return nil, fmt.Errorf("take: Expected a long tensor for index, but got %s", in[1].DType)
			}
			return []Meta{{Shape: slices.Clone(in[1].Shape), DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			flat := Call1(b, "reshape", Attrs{"shape": []int{-1}}, in[0])
			return b.Call("index", []Value{flat, in[1]}, nil)
		},
	})
	Register(&Def{
		Name: "take_along_dim", Kind: Composite, Group: "index",
		Doc:    "Gathers values along dim at indices, broadcasting input and indices in the other dimensions; with no dim, input and indices are flattened (torch.take_along_dim).",
		Inputs: []string{"input", "indices"},
		Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt, Optional: true}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			xs, is, ax, err := ixTakeAlongShapes(in[0], in[1], a)
			if err != nil {
				return nil, err
			}
			if ax < 0 {
				return []Meta{{Shape: []int{is[0]}, DType: in[0].DType}}, nil
			}
			_ = xs
			return []Meta{{Shape: is, DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			xs, is, ax, _ := ixTakeAlongShapes(b.Meta(in[0]), b.Meta(in[1]), a)
			if ax < 0 {
				x := Call1(b, "reshape", Attrs{"shape": []int{-1}}, in[0])
				i := Call1(b, "reshape", Attrs{"shape": []int{-1}}, in[1])
				return b.Call("gather", []Value{x, i}, Attrs{"dim": 0})
			}
			x := Call1(b, "expand", Attrs{"shape": xs}, in[0])
			i := Call1(b, "expand", Attrs{"shape": is}, in[1])
			return b.Call("gather", []Value{x, i}, Attrs{"dim": ax})
		},
	})
}

// ixCheckGatherShapes checks the shapes of gather/scatter(input, dim, index,
// src) as PyTorch does; src is absent when its DType is Invalid.
func ixCheckGatherShapes(name string, x, idx, src Meta, dim int) (int, error) {
	if !ixSetIndex.Has(idx.DType) {
		return 0, fmt.Errorf("%s: Expected dtype int64 for index, got %s", name, idx.DType)
	}
	r := max(len(x.Shape), 1)
	ax, err := NormAxis(name, dim, len(x.Shape))
	if err != nil {
		return 0, err
	}
	if src.DType != dtype.Invalid && src.DType != x.DType {
		return 0, fmt.Errorf("%s: Expected self.dtype to be equal to src.dtype, got %s and %s", name, x.DType, src.DType)
	}
	if max(len(idx.Shape), 1) != r {
		return 0, fmt.Errorf("%s: Index tensor must have the same number of dimensions as input tensor (%d vs %d)", name, len(idx.Shape), len(x.Shape))
	}
	if src.DType != dtype.Invalid && max(len(src.Shape), 1) != r {
		return 0, fmt.Errorf("%s: Index tensor must have the same number of dimensions as src tensor (%d vs %d)", name, len(idx.Shape), len(src.Shape))
	}
	if idx.Numel() == 0 {
		return ax, nil
	}
	at := func(s []int, d int) int {
		if len(s) == 0 {
			return 1
		}
		return s[d]
	}
	for d := 0; d < r; d++ {
		if d != ax && at(idx.Shape, d) > at(x.Shape, d) {
			return 0, fmt.Errorf("%s: Size does not match at dimension %d expected index %v to be smaller than self %v apart from dimension %d", name, d, idx.Shape, x.Shape, ax)
		}
		if src.DType != dtype.Invalid && at(idx.Shape, d) > at(src.Shape, d) {
			return 0, fmt.Errorf("%s: Expected index %v to be smaller than self %v apart from dimension %d and to be smaller size than src %v", name, idx.Shape, x.Shape, ax, src.Shape)
		}
	}
	return ax, nil
}

// ixCheckIndexVector checks index_select-style (input, dim, index) arguments.
func ixCheckIndexVector(name string, x, idx Meta, dim int) (int, error) {
	if !ixSetIndex.Has(idx.DType) {
		return 0, fmt.Errorf("%s: Expected dtype int32 or int64 for index, got %s", name, idx.DType)
	}
	if len(idx.Shape) > 1 {
		return 0, fmt.Errorf("%s: Index is supposed to be a vector, got shape %v", name, idx.Shape)
	}
	return NormAxis(name, dim, len(x.Shape))
}

// ixCheckIndexSource checks index_add/index_copy(input, dim, index, source).
func ixCheckIndexSource(name string, in []Meta, dim int) error {
	x, idx, src := in[0], in[1], in[2]
	ax, err := ixCheckIndexVector(name, x, idx, dim)
	if err != nil {
		return err
	}
	if src.DType != x.DType {
		return fmt.Errorf("%s: self (%s) and source (%s) must have the same scalar type", name, x.DType, src.DType)
	}
	want := slices.Clone(x.Shape)
	if len(want) > 0 {
		want[ax] = idx.Numel()
	} else if idx.Numel() != 1 {
		return fmt.Errorf("%s: index of a 0-d input must have one element, got %d", name, idx.Numel())
	}
	if !slices.Equal(want, src.Shape) && !(len(want) == 1 && want[0] == 1 && len(src.Shape) == 0) {
		return fmt.Errorf("%s: source %v must have the shape of self %v except at dimension %d, where it must be the number of indices %d", name, src.Shape, x.Shape, ax, idx.Numel())
	}
	return nil
}

// ixExpandIndex turns a 1-d (or 0-d) index into a tensor of shape target that
// holds index[i] at every position with coordinate i along ax.
func ixExpandIndex(b Builder, idx Value, ax int, target []int) Value {
	sh := make([]int, len(target))
	for i := range sh {
		sh[i] = 1
	}
	sh[ax] = target[ax]
	r := Call1(b, "reshape", Attrs{"shape": sh}, idx)
	return Call1(b, "expand", Attrs{"shape": target}, r)
}

// ixIndexSourceArgs lowers index_add/index_copy arguments to scatter arguments.
func ixIndexSourceArgs(b Builder, x, idx, src Value, dim int) (Value, Value, Value, int, func(Value) Value) {
	xm := b.Meta(x)
	if len(xm.Shape) == 0 {
		one := Attrs{"shape": []int{1}}
		back := func(v Value) Value { return Call1(b, "reshape", Attrs{"shape": []int{}}, v) }
		return Call1(b, "reshape", one, x), Call1(b, "reshape", one, idx), Call1(b, "reshape", one, src), 0, back
	}
	ax, _ := NormAxis("index", dim, len(xm.Shape))
	if len(b.Meta(src).Shape) == 0 {
		// A 0-d source into a 1-d input of size 1 (as PyTorch allows).
		src = Call1(b, "reshape", Attrs{"shape": []int{1}}, src)
	}
	return x, ixExpandIndex(b, idx, ax, b.Meta(src).Shape), src, ax, func(v Value) Value { return v }
}

func ixTakeAlongShapes(x, idx Meta, a Attrs) ([]int, []int, int, error) {
	if !ixSetIndex.Has(idx.DType) {
		return nil, nil, 0, fmt.Errorf("take_along_dim: dtype of indices should be Long but got %s", idx.DType)
	}
	if !a.Has("dim") {
		return nil, []int{idx.Numel()}, -1, nil
	}
	if len(x.Shape) != len(idx.Shape) {
		return nil, nil, 0, fmt.Errorf("take_along_dim: input and indices should have the same number of dimensions, but got %d dimensions for input, and %d dimensions for indices", len(x.Shape), len(idx.Shape))
	}
	ax, err := NormAxis("take_along_dim", a.Int("dim"), len(x.Shape))
	if err != nil {
		return nil, nil, 0, err
	}
	if len(x.Shape) == 0 {
		return []int{}, []int{}, 0, nil
	}
	xs, is := slices.Clone(x.Shape), slices.Clone(idx.Shape)
	xs[ax], is[ax] = 1, 1
	bs, err := BroadcastShapes("take_along_dim", xs, is)
	if err != nil {
		return nil, nil, 0, err
	}
	xs, is = slices.Clone(bs), slices.Clone(bs)
	xs[ax], is[ax] = x.Shape[ax], idx.Shape[ax]
	return xs, is, ax, nil
}

// IndexEntry is one index of advanced indexing after boolean masks have been
// expanded: None takes the whole dimension; otherwise Shape is the index
// tensor's shape (a mask of rank k becomes k entries of shape [count]).
type IndexEntry struct {
	None  bool
	Shape []int
}

// AdvIndex is the plan of an advanced-indexing operation x[indices]: the
// index tensors broadcast to BShape; the result has the not-indexed input
// dims Before, then BShape, then the dims After (PyTorch puts the broadcast
// block where the indexed dims were when they are adjacent, else first).
type AdvIndex struct {
	Result  []int
	BShape  []int
	Dims    []int // the input dim each non-None entry indexes, in order
	Before  []int // input dims before the broadcast block in the result
	After   []int // input dims after it
	Dynamic bool  // a mask's count is unknown (shape rules only)
}

// PlanAdvIndex plans x[ents...] for x of shape. Entries with a negative
// size in Shape mark data-dependent counts (Dynamic plans).
func PlanAdvIndex(name string, shape []int, ents []IndexEntry) (AdvIndex, error) {
	if len(ents) > len(shape) {
		return AdvIndex{}, fmt.Errorf("%s: too many indices for tensor of dimension %d (got %d)", name, len(shape), len(ents))
	}
	var p AdvIndex
	var bshapes [][]int
	first, last := -1, -1
	for i, e := range ents {
		if e.None {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		p.Dims = append(p.Dims, i)
		for _, d := range e.Shape {
			if d < 0 {
				p.Dynamic = true
			}
		}
		bshapes = append(bshapes, e.Shape)
	}
	if first < 0 {
		// No index tensors: the result is the input.
		p.Result = slices.Clone(shape)
		for i := range shape {
			p.After = append(p.After, i)
		}
		p.BShape = []int{}
		return p, nil
	}
	if p.Dynamic {
		p.Result = nil
		return p, nil
	}
	bs, err := BroadcastShapes(name, bshapes...)
	if err != nil {
		return AdvIndex{}, fmt.Errorf("%s: shape mismatch: indexing tensors could not be broadcast together with shapes %v", name, bshapes)
	}
	p.BShape = bs
	adjacent := last-first+1 == len(p.Dims)
	for d := range shape {
		indexed := d < len(ents) && !ents[d].None
		if indexed {
			continue
		}
		if adjacent && d < first {
			p.Before = append(p.Before, d)
		} else {
			p.After = append(p.After, d)
		}
	}
	for _, d := range p.Before {
		p.Result = append(p.Result, shape[d])
	}
	p.Result = append(p.Result, bs...)
	for _, d := range p.After {
		p.Result = append(p.Result, shape[d])
	}
	if p.Result == nil {
		p.Result = []int{}
	}
	return p, nil
}

// ixIndexEntries turns index metas (Invalid dtype for nil) into IndexEntry
// values, expanding boolean masks when allowed (with unknown counts).
func ixIndexEntries(name string, shape []int, idx []Meta, masks bool) ([]IndexEntry, error) {
	var ents []IndexEntry
	for i, m := range idx {
		switch {
		case m.DType == dtype.Invalid:
			ents = append(ents, IndexEntry{None: true})
		case m.DType == dtype.Bool || m.DType == dtype.U8:
			if !masks {
				return nil, fmt.Errorf("%s: boolean mask indices have a data-dependent result shape; convert them with nonzero first (tensor.Index does)", name)
			}
			d := len(ents)
			for k, s := range m.Shape {
				if d+k >= len(shape) {
					return nil, fmt.Errorf("%s: too many indices for tensor of dimension %d", name, len(shape))
				}
				if shape[d+k] != s {
					return nil, fmt.Errorf("%s: The shape of the mask %v at index %d does not match the shape of the indexed tensor %v at index %d", name, m.Shape, k, shape, d+k)
				}
			}
			for range m.Shape {
				ents = append(ents, IndexEntry{Shape: []int{-1}})
			}
			if len(m.Shape) == 0 {
				return nil, fmt.Errorf("%s: 0-d boolean mask indices are not supported", name)
			}
		case ixSetIndex.Has(m.DType):
			ents = append(ents, IndexEntry{Shape: m.Shape})
		default:
			return nil, fmt.Errorf("%s: tensors used as indices must be long, int, byte or bool tensors, got %s at position %d", name, m.DType, i)
		}
	}
	return ents, nil
}

// ---------------------------------------------------------------- masked

func registerIndexMasked() {
	Register(&Def{
		Name: "masked_fill", Kind: Composite, Group: "index",
		Doc:    "Returns input (broadcast with mask) with value, a scalar or 0-d tensor converted to input's dtype, where mask is true (torch.masked_fill).",
		Inputs: []string{"input", "mask", "value"},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if in[1].DType != dtype.Bool {
				return nil, fmt.Errorf("masked_fill: masked_fill_ only supports boolean masks, but got mask with dtype %s", in[1].DType)
			}
			if len(in[2].Shape) != 0 {
				return nil, fmt.Errorf("masked_fill: masked_fill_ only supports a 0-dimensional value tensor, but got tensor with %d dimension(s)", len(in[2].Shape))
			}
			s, err := BroadcastShapes("masked_fill", in[0].Shape, in[1].Shape)
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: s, DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x, mask, v := in[0], in[1], in[2]
			xm := b.Meta(x)
			if b.Meta(v).DType != xm.DType {
				v = Call1(b, "convert", Attrs{"dtype": xm.DType}, v)
			}
			return b.Call("where", []Value{mask, v, x}, nil)
		},
	})
	Register(&Def{
		Name: "masked_select", Kind: Primitive, Group: "index",
		Doc:    "Returns the 1-d tensor of input's elements (input and mask broadcast together) where mask is true, in row-major order (torch.masked_select); count, the number of true mask elements, is computed by the tensor layer at a sync point.",
		Inputs: []string{"input", "mask"},
		Attrs:  []AttrSpec{{Name: "count", Type: AttrInt}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if in[1].DType != dtype.Bool {
				return nil, fmt.Errorf("masked_select: masked_select: expected BoolTensor for mask, got %s", in[1].DType)
			}
			if _, err := BroadcastShapes("masked_select", in[0].Shape, in[1].Shape); err != nil {
				return nil, err
			}
			if a.Int("count") < 0 {
				return nil, fmt.Errorf("masked_select: negative count %d", a.Int("count"))
			}
			return []Meta{{Shape: []int{a.Int("count")}, DType: in[0].DType}}, nil
		},
	})
	Register(&Def{
		Name: "masked_scatter", Kind: Primitive, Group: "index",
		Doc:    "Returns input (broadcast with mask) with the positions where mask is true filled, in row-major order, from consecutive elements of source (torch.masked_scatter).",
		Inputs: []string{"input", "mask", "source"},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if in[1].DType != dtype.Bool {
				return nil, fmt.Errorf("masked_scatter: masked_scatter_ only supports boolean masks, but got mask with dtype %s", in[1].DType)
			}
			if in[2].DType != in[0].DType {
				return nil, fmt.Errorf("masked_scatter: expected self and source to have same dtypes but got %s and %s", in[0].DType, in[2].DType)
			}
			s, err := BroadcastShapes("masked_scatter", in[0].Shape, in[1].Shape)
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: s, DType: in[0].DType}}, nil
		},
	})
	Register(&Def{
		Name: "nonzero", Kind: Primitive, Group: "index",
		Doc:    "Returns the [count, rank] int64 coordinates of input's non-zero elements in row-major order (torch.nonzero); count is computed by the tensor layer at a sync point, so it is not available on meta.",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "count", Type: AttrInt}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if a.Int("count") < 0 {
				return nil, fmt.Errorf("nonzero: negative count %d", a.Int("count"))
			}
			return []Meta{{Shape: []int{a.Int("count"), len(in[0].Shape)}, DType: dtype.I64}}, nil
		},
	})
}

// ---------------------------------------------------------------- movement

// PadModes lists the modes pad accepts.
var PadModes = []string{"constant", "reflect", "replicate", "circular"}

func registerIndexMovement() {
	Register(&Def{
		Name: "pad_nd", Kind: Primitive, Group: "index",
		Doc:    "Pads every dimension with low and high edge padding (negative amounts crop) and interior padding between elements, filled with value (StableHLO pad).",
		Inputs: []string{"input"},
		Attrs: []AttrSpec{{Name: "low", Type: AttrInts}, {Name: "high", Type: AttrInts},
			{Name: "interior", Type: AttrInts, Default: []int{}}, {Name: "value", Type: AttrScalar, Default: int64(0)}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			s, err := PadNDShape(in[0].Shape, a.Ints("low"), a.Ints("high"), a.Ints("interior"))
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: s, DType: in[0].DType}}, nil
		},
	})
	Register(&Def{
		Name: "pad", Kind: Composite, Group: "index",
		Doc:    "Pads the last len(pad)/2 dimensions, pad listing (left, right) amounts from the last dimension backwards, in mode constant (with value; negative amounts crop), reflect, replicate or circular (torch.nn.functional.pad).",
		Inputs: []string{"input"},
		Attrs: []AttrSpec{{Name: "pad", Type: AttrInts}, {Name: "mode", Type: AttrString, Default: "constant"},
			{Name: "value", Type: AttrScalar, Default: int64(0)}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			s, _, _, err := ixPadPlan(in[0].Shape, a.Ints("pad"), a.String("mode"))
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: s, DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x := in[0]
			sh := b.Meta(x).Shape
			_, low, high, _ := ixPadPlan(sh, a.Ints("pad"), a.String("mode"))
			mode := a.String("mode")
			if mode == "constant" {
				return b.Call("pad_nd", in, Attrs{"low": low, "high": high, "value": a["value"]})
			}
			for d := range sh {
				l, h := low[d], high[d]
				if l == 0 && h == 0 {
					continue
				}
				n := b.Meta(x).Shape[d]
				var parts []Value
				narrow := func(start, length int) Value {
					return Call1(b, "narrow", Attrs{"dim": d, "start": start, "length": length}, x)
				}
				flip := func(v Value) Value { return Call1(b, "flip", Attrs{"dims": []int{d}}, v) }
				rep := func(v Value, k int) Value {
					s := slices.Clone(b.Meta(v).Shape)
					s[d] = k
					return Call1(b, "expand", Attrs{"shape": s}, v)
				}
				switch mode {
				case "reflect":
					if l > 0 {
						parts = append(parts, flip(narrow(1, l)))
					}
					parts = append(parts, x)
					if h > 0 {
						parts = append(parts, flip(narrow(n-1-h, h)))
					}
				case "replicate":
					if l > 0 {
						parts = append(parts, rep(narrow(0, 1), l))
					}
					parts = append(parts, x)
					if h > 0 {
						parts = append(parts, rep(narrow(n-1, 1), h))
					}
				case "circular":
					if l > 0 {
						parts = append(parts, narrow(n-l, l))
					}
					parts = append(parts, x)
					if h > 0 {
						parts = append(parts, narrow(0, h))
					}
				}
				x = b.Call("cat", parts, Attrs{"dim": d})[0]
			}
			if x == in[0] {
				x = Call1(b, "copy", nil, x)
			}
			return []Value{x}
		},
	})
	Register(&Def{
		Name: "flip", Kind: Primitive, Group: "index",
		Doc:    "Reverses the order of elements along dims (torch.flip; StableHLO reverse).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "dims", Type: AttrInts}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if _, err := ReduceAxes("flip", a.Ints("dims"), len(in[0].Shape)); err != nil {
				return nil, err
			}
			return []Meta{{Shape: slices.Clone(in[0].Shape), DType: in[0].DType}}, nil
		},
	})
	Register(&Def{
		Name: "roll", Kind: Composite, Group: "index",
		Doc:    "Rolls elements along dims by shifts, wrapping around; with no dims the flattened tensor is rolled and the shape restored (torch.roll).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "shifts", Type: AttrInts}, {Name: "dims", Type: AttrInts, Default: []int{}}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if _, err := ixRollDims(in[0].Shape, a.Ints("shifts"), a.Ints("dims")); err != nil {
				return nil, err
			}
			return []Meta{{Shape: slices.Clone(in[0].Shape), DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x := in[0]
			sh := b.Meta(x).Shape
			shifts, dims := a.Ints("shifts"), a.Ints("dims")
			if len(dims) == 0 {
				flat := Call1(b, "reshape", Attrs{"shape": []int{-1}}, x)
				r := Call1(b, "roll", Attrs{"shifts": shifts, "dims": []int{0}}, flat)
				return []Value{Call1(b, "reshape", Attrs{"shape": sh}, r)}
			}
			axes, _ := ixRollDims(sh, shifts, dims)
			for i, d := range axes {
				n := sh[d]
				if n == 0 {
					continue
				}
				s := ((shifts[i] % n) + n) % n
				if s == 0 {
					continue
				}
				tail := Call1(b, "narrow", Attrs{"dim": d, "start": n - s, "length": s}, x)
				head := Call1(b, "narrow", Attrs{"dim": d, "start": 0, "length": n - s}, x)
				x = b.Call("cat", []Value{tail, head}, Attrs{"dim": d})[0]
			}
			if len(axes) == 0 || x == in[0] {
				x = Call1(b, "copy", nil, x)
			}
			return []Value{x}
		},
	})
	Register(&Def{
		Name: "diag", Kind: Composite, Group: "index",
		Doc:    "Returns, for a 1-d input, the square matrix with input on the diagonal-th diagonal; for a 2-d input, a copy of its diagonal-th diagonal (torch.diag).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "diagonal", Type: AttrInt, Default: 0}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			s, err := ixDiagShape(in[0].Shape, a.Int("diagonal"))
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: s, DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x := in[0]
			sh := b.Meta(x).Shape
			k := a.Int("diagonal")
			if len(sh) == 2 {
				d := Call1(b, "diagonal", Attrs{"offset": k, "dim1": 0, "dim2": 1}, x)
				return []Value{Call1(b, "copy", nil, d)}
			}
			n := sh[0]
			m := n + ixAbs(k)
			c := max(0, -k)*m + max(0, k)
			var p Value
			if n == 0 {
				p = Call1(b, "pad_nd", Attrs{"low": []int{m * m}, "high": []int{0}}, x)
			} else {
				used := (n-1)*(m+1) + 1
				p = Call1(b, "pad_nd", Attrs{"low": []int{c}, "high": []int{m*m - c - used}, "interior": []int{m}}, x)
			}
			return []Value{Call1(b, "reshape", Attrs{"shape": []int{m, m}}, p)}
		},
	})
	Register(&Def{
		Name: "repeat", Kind: Composite, Group: "index",
		Doc:    "Tiles input repeats[i] times along each dimension; extra leading repeats add dimensions (Tensor.repeat).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "repeats", Type: AttrInts}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			s, err := ixRepeatShape(in[0].Shape, a.Ints("repeats"))
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: s, DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			reps := a.Ints("repeats")
			sh := b.Meta(in[0]).Shape
			padded := make([]int, len(reps))
			for i := range padded {
				padded[i] = 1
			}
			copy(padded[len(reps)-len(sh):], sh)
			inter, exp := make([]int, 0, 2*len(reps)), make([]int, 0, 2*len(reps))
			for i, r := range reps {
				inter = append(inter, 1, padded[i])
				exp = append(exp, r, padded[i])
			}
			out, _ := ixRepeatShape(sh, reps)
			x := Call1(b, "reshape", Attrs{"shape": inter}, in[0])
			x = Call1(b, "expand", Attrs{"shape": exp}, x)
			x = Call1(b, "copy", nil, x)
			return []Value{Call1(b, "reshape", Attrs{"shape": out}, x)}
		},
	})
	Register(&Def{
		Name: "tile", Kind: Composite, Group: "index",
		Doc:    "Tiles input dims[i] times along each dimension; fewer dims than input dimensions are padded with leading 1s (torch.tile).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "dims", Type: AttrInts}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			s, err := ixRepeatShape(in[0].Shape, ixTileReps(in[0].Shape, a.Ints("dims")))
			if err != nil {
				return nil, fmt.Errorf("tile: %w", err)
			}
			return []Meta{{Shape: s, DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			return b.Call("repeat", in, Attrs{"repeats": ixTileReps(b.Meta(in[0]).Shape, a.Ints("dims"))})
		},
	})
	Register(&Def{
		Name: "repeat_interleave", Kind: Primitive, Group: "index",
		Doc:    "Repeats each element (or each slice along dim) repeats times, repeats being an int or a 1-d tensor with one count per slice; with no dim the input is flattened (torch.repeat_interleave). Tensor repeats need output_size (their sum), which the tensor layer computes at a sync point.",
		Inputs: []string{"input", "repeats?"},
		Attrs: []AttrSpec{{Name: "repeats", Type: AttrInt, Optional: true}, {Name: "dim", Type: AttrInt, Optional: true},
			{Name: "output_size", Type: AttrInt, Optional: true}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			s, err := ixRepeatInterleaveShape(in[0].Shape, in[1], a)
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: s, DType: in[0].DType}}, nil
		},
	})
}

func ixAbs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// PadNDShape returns the shape pad_nd produces.
func PadNDShape(shape, low, high, interior []int) ([]int, error) {
	r := len(shape)
	if len(low) != r || len(high) != r || (len(interior) != 0 && len(interior) != r) {
		return nil, fmt.Errorf("pad_nd: low %v, high %v and interior %v must each have one entry per dimension of %v", low, high, interior, shape)
	}
	out := make([]int, r)
	for d, n := range shape {
		in := 0
		if len(interior) > 0 {
			in = interior[d]
		}
		if in < 0 {
			return nil, fmt.Errorf("pad_nd: negative interior padding %d at dimension %d", in, d)
		}
		out[d] = low[d] + high[d] + n + max(n-1, 0)*in
		if out[d] < 0 {
			return nil, fmt.Errorf("pad_nd: resulting padded dimension %d has negative size %d (input %v, low %v, high %v)", d, out[d], shape, low, high)
		}
	}
	return out, nil
}

// ixPadPlan maps torch.nn.functional.pad's pad list onto per-dimension low and
// high amounts and checks the mode's constraints.
func ixPadPlan(shape, pad []int, mode string) (out, low, high []int, err error) {
	r := len(shape)
	if !slices.Contains(PadModes, mode) {
		return nil, nil, nil, fmt.Errorf("pad: unsupported padding mode %q (want constant, reflect, replicate or circular)", mode)
	}
	if len(pad)%2 != 0 {
		return nil, nil, nil, fmt.Errorf("pad: Padding length must be divisible by 2")
	}
	if len(pad)/2 > r {
		return nil, nil, nil, fmt.Errorf("pad: Padding length too large (%d pads for a %d-d input)", len(pad), r)
	}
	low, high = make([]int, r), make([]int, r)
	for i := 0; i < len(pad)/2; i++ {
		low[r-1-i], high[r-1-i] = pad[2*i], pad[2*i+1]
	}
	out = make([]int, r)
	for d, n := range shape {
		l, h := low[d], high[d]
		out[d] = n + l + h
		if mode != "constant" {
			if l < 0 || h < 0 {
				return nil, nil, nil, fmt.Errorf("pad: negative padding %v is only supported in constant mode", pad)
			}
			if (l > 0 || h > 0) && n == 0 {
				return nil, nil, nil, fmt.Errorf("pad: %s padding needs a non-empty dimension %d, input %v", mode, d, shape)
			}
		}
		switch mode {
		case "constant":
			if out[d] < 0 {
				return nil, nil, nil, fmt.Errorf("pad: The input size %d, plus negative padding %d and %d resulted in a negative output size, which is invalid. Check dimension %d of your input", n, l, h, d)
			}
		case "reflect":
			if l >= n || h >= n {
				return nil, nil, nil, fmt.Errorf("pad: Padding size should be less than the corresponding input dimension, but got: padding (%d, %d) at dimension %d of input %v", l, h, d, shape)
			}
		case "circular":
			if l > n || h > n {
				return nil, nil, nil, fmt.Errorf("pad: Padding value causes wrapping around more than once (padding (%d, %d) at dimension %d of input %v)", l, h, d, shape)
			}
		}
	}
	return out, low, high, nil
}

func ixRollDims(shape, shifts, dims []int) ([]int, error) {
	if len(shifts) == 0 {
		return nil, fmt.Errorf("roll: `shifts` required")
	}
	if len(dims) == 0 {
		if len(shifts) != 1 {
			return nil, fmt.Errorf("roll: shifts and dimensions must align. shifts: %d, dims:%d", len(shifts), len(dims))
		}
		return nil, nil
	}
	if len(shifts) != len(dims) {
		return nil, fmt.Errorf("roll: shifts and dimensions must align. shifts: %d, dims:%d", len(shifts), len(dims))
	}
	axes := make([]int, len(dims))
	for i, d := range dims {
		ax, err := NormAxis("roll", d, len(shape))
		if err != nil {
			return nil, err
		}
		if len(shape) == 0 {
			return nil, fmt.Errorf("roll: cannot roll a 0-d tensor along a dimension")
		}
		axes[i] = ax
	}
	return axes, nil
}

func ixDiagShape(shape []int, k int) ([]int, error) {
	switch len(shape) {
	case 1:
		m := shape[0] + ixAbs(k)
		return []int{m, m}, nil
	case 2:
		var n int
		if k >= 0 {
			n = max(0, min(shape[0], shape[1]-k))
		} else {
			n = max(0, min(shape[0]+k, shape[1]))
		}
		return []int{n}, nil
	}
	return nil, fmt.Errorf("diag: diag(): Supports 1D or 2D tensors. Got %dD", len(shape))
}

func ixRepeatShape(shape, reps []int) ([]int, error) {
	if len(reps) < len(shape) {
		return nil, fmt.Errorf("repeat: Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor (%d < %d)", len(reps), len(shape))
	}
	out := make([]int, len(reps))
	off := len(reps) - len(shape)
	for i, r := range reps {
		if r < 0 {
			return nil, fmt.Errorf("repeat: Trying to create tensor with negative dimension %d: %v", r, reps)
		}
		out[i] = r
		if i >= off {
			out[i] *= shape[i-off]
		}
	}
	return out, nil
}

func ixTileReps(shape, dims []int) []int {
	if len(dims) >= len(shape) {
		return dims
	}
	out := make([]int, len(shape)-len(dims), len(shape))
	for i := range out {
		out[i] = 1
	}
	return append(out, dims...)
}

func ixRepeatInterleaveShape(shape []int, rep Meta, a Attrs) ([]int, error) {
	hasT, hasI := rep.DType != dtype.Invalid, a.Has("repeats")
	if hasT == hasI {
		return nil, fmt.Errorf("repeat_interleave: give repeats either as an int attribute or as a tensor, not %s", map[bool]string{true: "both", false: "neither"}[hasT])
	}
	var n int
	out := []int{}
	if !a.Has("dim") {
		n = Numel(shape)
		out = []int{n}
	} else {
		ax, err := NormAxis("repeat_interleave", a.Int("dim"), len(shape))
		if err != nil {
			return nil, err
		}
		if len(shape) == 0 {
			return nil, fmt.Errorf("repeat_interleave: Dimension specified as %d but tensor has no dimensions", a.Int("dim"))
		} else {
			out = slices.Clone(shape)
			n = shape[ax]
		}
		return ixFillRepeat(out, ax, len(shape), n, rep, a)
	}
	return ixFillRepeat(out, 0, 1, n, rep, a)
}

func ixFillRepeat(out []int, ax, rank, n int, rep Meta, a Attrs) ([]int, error) {
	if rank == 0 {
		ax = 0
	}
	if a.Has("repeats") {
		r := a.Int("repeats")
		if r < 0 {
			return nil, fmt.Errorf("repeat_interleave: repeats can not be negative")
		}
		out[ax] = n * r
		return out, nil
	}
	if !ixSetIndex.Has(rep.DType) {
		return nil, fmt.Errorf("repeat_interleave: repeats has to be Long or Int tensor, got %s", rep.DType)
	}
	if len(rep.Shape) > 1 {
		return nil, fmt.Errorf("repeat_interleave: repeats must be 0-dim or 1-dim tensor")
	}
	if rn := rep.Numel(); rn != 1 && rn != n {
		return nil, fmt.Errorf("repeat_interleave: repeats must have the same size as input along dim, but got repeats.size(0) = %d and input.size(%d) = %d", rn, ax, n)
	}
	if !a.Has("output_size") {
		return nil, fmt.Errorf("repeat_interleave: tensor repeats need output_size (tensor.RepeatInterleave computes it)")
	}
	out[ax] = a.Int("output_size")
	if out[ax] < 0 {
		return nil, fmt.Errorf("repeat_interleave: negative output_size %d", out[ax])
	}
	return out, nil
}
