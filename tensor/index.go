package tensor

import (
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// The index group's typed API: views and shape functions, joins and splits,
// gathers and scatters, advanced and masked indexing, padding, flips and
// repeats. Every function is a thin call of Apply on the op table (see
// op/index.go and op/view.go), so it runs on every device.
//
// Ops whose output size depends on values (Nonzero, MaskedSelect, Index with
// boolean masks, RepeatInterleave with tensor repeats) first compute that
// size on the device and read it back — a sync point, as in PyTorch — and
// then launch the op with the known size. On the meta device, which has no
// values, they panic with an error saying the output shape is data-dependent.

// ---------------------------------------------------------------- views

// Reshape returns a tensor with t's data and the given shape (one entry may
// be -1): a view when t's strides allow it, else a copy (Tensor.reshape).
func (t *Tensor) Reshape(shape ...int) *Tensor {
	return Apply1("reshape", []*Tensor{t}, op.Attrs{"shape": ixInts(shape)})
}

// View returns a view of t with the given shape (one entry may be -1); it
// panics when t's strides do not allow a view (Tensor.view).
func (t *Tensor) View(shape ...int) *Tensor {
	return Apply1("view", []*Tensor{t}, op.Attrs{"shape": ixInts(shape)})
}

// Permute returns a view with the dimensions reordered (Tensor.permute).
func (t *Tensor) Permute(dims ...int) *Tensor {
	return Apply1("permute", []*Tensor{t}, op.Attrs{"dims": ixInts(dims)})
}

// Expand returns a view broadcast to shape without copying; -1 keeps a
// dimension (Tensor.expand).
func (t *Tensor) Expand(shape ...int) *Tensor {
	return Apply1("expand", []*Tensor{t}, op.Attrs{"shape": ixInts(shape)})
}

// ExpandAs expands t to other's shape (Tensor.expand_as).
func (t *Tensor) ExpandAs(other *Tensor) *Tensor { return t.Expand(other.Shape()...) }

// Slice returns the view t[start:end:step] along dim with Python's clamping
// and negative-index rules; step must be positive.
func (t *Tensor) Slice(dim, start, end, step int) *Tensor {
	return Apply1("slice", []*Tensor{t}, op.Attrs{"dim": dim, "start": start, "end": end, "step": step})
}

// Select returns the view at index i along dim, removing the dimension
// (Tensor.select; i may be negative).
func (t *Tensor) Select(dim, i int) *Tensor {
	return Apply1("select", []*Tensor{t}, op.Attrs{"dim": dim, "index": i})
}

// Diagonal returns the view of the offset-th diagonal of the planes spanned
// by dim1 and dim2, appended as the last dimension (torch.diagonal).
func (t *Tensor) Diagonal(offset, dim1, dim2 int) *Tensor {
	return Apply1("diagonal", []*Tensor{t}, op.Attrs{"offset": offset, "dim1": dim1, "dim2": dim2})
}

// AsStrided returns a view of t's storage with an explicit shape, strides and
// storage offset, in elements (Tensor.as_strided).
func (t *Tensor) AsStrided(shape, strides []int, offset int) *Tensor {
	return Apply1("as_strided", []*Tensor{t}, op.Attrs{"shape": ixInts(shape), "strides": ixInts(strides), "offset": offset})
}

// Contiguous returns t if it is row-major without gaps, else a contiguous
// copy (Tensor.contiguous).
func (t *Tensor) Contiguous() *Tensor {
	if t.st != nil && t.IsContiguous() {
		return t
	}
	return Apply1("copy", []*Tensor{t}, nil)
}

// Clone returns a contiguous copy of t (Tensor.clone).
func (t *Tensor) Clone() *Tensor { return Apply1("copy", []*Tensor{t}, nil) }

// Transpose returns the view with dimensions d0 and d1 swapped
// (Tensor.transpose).
func (t *Tensor) Transpose(d0, d1 int) *Tensor {
	return Apply1("transpose", []*Tensor{t}, op.Attrs{"dim0": d0, "dim1": d1})
}

// T returns the transpose of a tensor of at most 2 dimensions (Tensor.t).
func (t *Tensor) T() *Tensor { return Apply1("t", []*Tensor{t}, nil) }

// Narrow returns the view t[..., start:start+length, ...] along dim; start may
// be negative and the range must lie inside the dimension (Tensor.narrow).
func (t *Tensor) Narrow(dim, start, length int) *Tensor {
	return Apply1("narrow", []*Tensor{t}, op.Attrs{"dim": dim, "start": start, "length": length})
}

// Squeeze removes dimensions of size 1: all of them with no dims, else
// those listed that have size 1 (Tensor.squeeze).
func (t *Tensor) Squeeze(dims ...int) *Tensor {
	return Apply1("squeeze", []*Tensor{t}, op.Attrs{"dims": ixInts(dims)})
}

// Unsqueeze inserts a dimension of size 1 at dim (Tensor.unsqueeze).
func (t *Tensor) Unsqueeze(dim int) *Tensor {
	return Apply1("unsqueeze", []*Tensor{t}, op.Attrs{"dim": dim})
}

// Flatten merges dimensions start..end (inclusive, negative from the end)
// into one (torch.flatten); a 0-d tensor becomes 1-d.
func (t *Tensor) Flatten(start, end int) *Tensor {
	return Apply1("flatten", []*Tensor{t}, op.Attrs{"start_dim": start, "end_dim": end})
}

// Unflatten splits dimension dim into sizes, one of which may be -1
// (Tensor.unflatten).
func (t *Tensor) Unflatten(dim int, sizes ...int) *Tensor {
	return Apply1("unflatten", []*Tensor{t}, op.Attrs{"dim": dim, "sizes": ixInts(sizes)})
}

// Movedim moves dimensions source[i] to destination[i], keeping the order of
// the others (torch.movedim).
func (t *Tensor) Movedim(source, destination []int) *Tensor {
	return Apply1("movedim", []*Tensor{t}, op.Attrs{"source": ixInts(source), "destination": ixInts(destination)})
}

// Unbind returns the views along dim, which is removed (torch.unbind).
func (t *Tensor) Unbind(dim int) []*Tensor {
	return Apply("unbind", []*Tensor{t}, op.Attrs{"dim": dim})
}

// ---------------------------------------------------------------- joins

// Cat concatenates ts along dim with type promotion (torch.cat); 1-d empty
// tensors are skipped as PyTorch's legacy rule allows.
func Cat(ts []*Tensor, dim int) *Tensor { return Apply1("cat", ts, op.Attrs{"dim": dim}) }

// Stack stacks equally shaped tensors along a new dimension dim
// (torch.stack).
func Stack(ts []*Tensor, dim int) *Tensor { return Apply1("stack", ts, op.Attrs{"dim": dim}) }

// Split splits t into views of size along dim; the last may be smaller
// (torch.split with an int).
func (t *Tensor) Split(size, dim int) []*Tensor {
	return Apply("split", []*Tensor{t}, op.Attrs{"split_size": size, "dim": dim})
}

// SplitSizes splits t into views of the given sizes along dim, which must
// add up to its size (torch.split with a list).
func (t *Tensor) SplitSizes(sizes []int, dim int) []*Tensor {
	return Apply("split", []*Tensor{t}, op.Attrs{"sections": ixInts(sizes), "dim": dim})
}

// Chunk splits t into at most chunks views of ceil(size/chunks) along dim
// (torch.chunk).
func (t *Tensor) Chunk(chunks, dim int) []*Tensor {
	return Apply("chunk", []*Tensor{t}, op.Attrs{"chunks": chunks, "dim": dim})
}

// ---------------------------------------------------------------- gather / scatter

// Gather returns out with out[i][j] = t[i][index[i][j]] for dim 1, and so
// on (torch.gather). Index values must lie in [0, size).
func Gather(t *Tensor, dim int, index *Tensor) *Tensor { return t.Gather(dim, index) }

// Gather is the method form of Gather (Tensor.gather).
func (t *Tensor) Gather(dim int, index *Tensor) *Tensor {
	return Apply1("gather", []*Tensor{t, index}, op.Attrs{"dim": dim})
}

// Scatter returns a copy of t with out[i][index[i][j]] = src[i][j] for dim 1,
// and so on (torch.scatter). Which of several writes to one position wins is
// unspecified in PyTorch; here the last in row-major order of index wins.
func (t *Tensor) Scatter(dim int, index, src *Tensor) *Tensor {
	return Apply1("scatter", []*Tensor{t, index, src}, op.Attrs{"dim": dim})
}

// ScatterValue is Scatter writing the Go scalar value (torch.scatter with a
// value).
func (t *Tensor) ScatterValue(dim int, index *Tensor, value any) *Tensor {
	return Apply1("scatter", []*Tensor{t, index, nil}, op.Attrs{"dim": dim, "value": scalarAttr("scatter", value)})
}

// ScatterReduce returns a copy of t with the src values reduced ("sum",
// "prod", "mean", "amax" or "amin") into the positions index selects along
// dim, together with t's value when includeSelf (torch.scatter_reduce).
func (t *Tensor) ScatterReduce(dim int, index, src *Tensor, reduce string, includeSelf bool) *Tensor {
	return Apply1("scatter_reduce", []*Tensor{t, index, src}, op.Attrs{"dim": dim, "reduce": reduce, "include_self": includeSelf})
}

// ScatterAdd returns a copy of t with src added at the positions index
// selects along dim (torch.scatter_add).
func (t *Tensor) ScatterAdd(dim int, index, src *Tensor) *Tensor {
	return Apply1("scatter_add", []*Tensor{t, index, src}, op.Attrs{"dim": dim})
}

// IndexSelect selects the entries index (1-d or 0-d, values in [0, size))
// along dim (torch.index_select).
func (t *Tensor) IndexSelect(dim int, index *Tensor) *Tensor {
	return Apply1("index_select", []*Tensor{t, index}, op.Attrs{"dim": dim})
}

// IndexAdd returns a copy of t with source[..., i, ...] added at index[i]
// along dim (torch.index_add); duplicate indices accumulate.
func (t *Tensor) IndexAdd(dim int, index, source *Tensor) *Tensor {
	return t.IndexAddAlpha(dim, index, source, 1)
}

// IndexAddAlpha is IndexAdd with source scaled by alpha (index_add(...,
// alpha=alpha)).
func (t *Tensor) IndexAddAlpha(dim int, index, source *Tensor, alpha any) *Tensor {
	return Apply1("index_add", []*Tensor{t, index, source}, op.Attrs{"dim": dim, "alpha": scalarAttr("index_add", alpha)})
}

// IndexCopy returns a copy of t with source[..., i, ...] written at index[i]
// along dim (torch.index_copy).
func (t *Tensor) IndexCopy(dim int, index, source *Tensor) *Tensor {
	return Apply1("index_copy", []*Tensor{t, index, source}, op.Attrs{"dim": dim})
}

// IndexFill returns a copy of t with the entries index selects along dim set
// to the Go scalar value; negative indices count from the end
// (torch.index_fill).
func (t *Tensor) IndexFill(dim int, index *Tensor, value any) *Tensor {
	return Apply1("index_fill", []*Tensor{t, index}, op.Attrs{"dim": dim, "value": scalarAttr("index_fill", value)})
}

// Index is advanced indexing t[indices...] (Tensor.__getitem__ with
// tensors): integer index tensors (negative values count from the end), nil
// entries for whole dimensions, and boolean masks, which are converted to
// integer indices with Nonzero first (a sync point).
func (t *Tensor) Index(indices ...*Tensor) *Tensor {
	in := []*Tensor{t}
	for _, ix := range indices {
		if ix != nil && (ix.dt == dtype.Bool || ix.dt == dtype.U8) {
			nz := ix.Nonzero()
			for k := 0; k < ix.Dim(); k++ {
				in = append(in, nz.Select(1, k))
			}
			continue
		}
		in = append(in, ix)
	}
	return Apply1("index", in, nil)
}

// IndexPut returns a copy of t with values (broadcast; a Go scalar via
// Scalar is fine) written at t[indices...], or added when accumulate
// (torch.index_put). Indices are integer tensors, boolean masks, or nil for
// whole dimensions.
func (t *Tensor) IndexPut(indices []*Tensor, values *Tensor, accumulate bool) *Tensor {
	in := append([]*Tensor{t, values}, indices...)
	return Apply1("index_put", in, op.Attrs{"accumulate": accumulate})
}

// Take indexes t as if it were 1-d; the result has index's shape and
// negative indices count from the end (torch.take).
func (t *Tensor) Take(index *Tensor) *Tensor { return Apply1("take", []*Tensor{t, index}, nil) }

// TakeAlongDim gathers t's values at indices along dim, broadcasting the
// other dimensions (torch.take_along_dim); with no dim both are flattened.
func (t *Tensor) TakeAlongDim(indices *Tensor, dim ...int) *Tensor {
	a := op.Attrs{}
	switch len(dim) {
	case 0:
	case 1:
		a["dim"] = dim[0]
	default:
		errorf("take_along_dim", []*Tensor{t, indices}, "at most one dim, got %v", dim)
	}
	return Apply1("take_along_dim", []*Tensor{t, indices}, a)
}

// ---------------------------------------------------------------- masked

// MaskedFill returns t (broadcast with mask) with value — a Go scalar or a
// 0-d tensor, converted to t's dtype — where mask is true (torch.masked_fill).
func (t *Tensor) MaskedFill(mask *Tensor, value any) *Tensor {
	return Apply1("masked_fill", []*Tensor{t, mask, ixValue(value)}, nil)
}

// MaskedSelect returns the 1-d tensor of t's elements where mask (broadcast
// with t) is true, in row-major order (torch.masked_select). It reads the
// number of true elements back from the device first (a sync point).
func (t *Tensor) MaskedSelect(mask *Tensor) *Tensor {
	shape, err := op.BroadcastShapes("masked_select", t.l.Shape, mask.l.Shape)
	if err != nil {
		errorf("masked_select", []*Tensor{t, mask}, "%v", err)
	}
	n := ixCount("masked_select", mask.Expand(shape...), t, mask)
	return Apply1("masked_select", []*Tensor{t, mask}, op.Attrs{"count": n})
}

// MaskedScatter returns t (broadcast with mask) with the positions where
// mask is true filled, in row-major order, from consecutive elements of
// source (torch.masked_scatter).
func (t *Tensor) MaskedScatter(mask, source *Tensor) *Tensor {
	return Apply1("masked_scatter", []*Tensor{t, mask, source}, nil)
}

// Nonzero returns the [n, t.Dim()] int64 coordinates of t's non-zero
// elements in row-major order (torch.nonzero). It reads the count back from
// the device first (a sync point); on meta it panics, the output shape being
// data-dependent.
func (t *Tensor) Nonzero() *Tensor {
	n := ixCount("nonzero", t, t)
	return Apply1("nonzero", []*Tensor{t}, op.Attrs{"count": n})
}

// NonzeroTuple returns Nonzero's coordinates as one 1-d tensor per dimension
// (torch.nonzero(as_tuple=True)); a 0-d t gives one tensor.
func (t *Tensor) NonzeroTuple() []*Tensor {
	if t.Dim() == 0 {
		return []*Tensor{t.Reshape(1).Nonzero().Select(1, 0)}
	}
	nz := t.Nonzero()
	out := make([]*Tensor, t.Dim())
	for k := range out {
		out[k] = nz.Select(1, k)
	}
	return out
}

// ixCount returns the number of non-zero elements of x, read back from the
// device (a sync point); meta tensors have no values, so it panics there.
func ixCount(opname string, x *Tensor, in ...*Tensor) int {
	if x.st != nil && x.st.dev.Type == "meta" {
		errorf(opname, in, "%s: data-dependent output shape is not supported on meta", opname)
	}
	return int(x.CountNonzero().Item())
}

// ---------------------------------------------------------------- movement

// Pad pads the last len(pads)/2 dimensions of t, pads listing (left, right)
// amounts from the last dimension backwards, in mode "constant" (filled
// with value; negative amounts crop), "reflect", "replicate" or "circular"
// (torch.nn.functional.pad).
func Pad(t *Tensor, pads []int, mode string, value float64) *Tensor {
	if mode == "" {
		mode = "constant"
	}
	return Apply1("pad", []*Tensor{t}, op.Attrs{"pad": ixInts(pads), "mode": mode, "value": value})
}

// PadND pads every dimension with low and high edge amounts (negative crop)
// and interior padding between elements, filled with the Go scalar value
// (StableHLO pad). interior may be nil.
func (t *Tensor) PadND(low, high, interior []int, value any) *Tensor {
	return Apply1("pad_nd", []*Tensor{t}, op.Attrs{"low": ixInts(low), "high": ixInts(high), "interior": ixInts(interior), "value": scalarAttr("pad_nd", value)})
}

// Flip reverses the order of elements along dims (torch.flip).
func (t *Tensor) Flip(dims ...int) *Tensor {
	return Apply1("flip", []*Tensor{t}, op.Attrs{"dims": ixInts(dims)})
}

// Roll rolls elements along dims by shifts with wrap-around; with no dims,
// shifts has one entry and the flattened tensor is rolled (torch.roll).
func (t *Tensor) Roll(shifts, dims []int) *Tensor {
	return Apply1("roll", []*Tensor{t}, op.Attrs{"shifts": ixInts(shifts), "dims": ixInts(dims)})
}

// Diag returns, for a 1-d t, the square matrix with t on its diagonal-th
// diagonal and, for a 2-d t, a copy of its diagonal-th diagonal (torch.diag).
func (t *Tensor) Diag(diagonal int) *Tensor {
	return Apply1("diag", []*Tensor{t}, op.Attrs{"diagonal": diagonal})
}

// Repeat tiles t repeats[i] times along each dimension; extra leading
// repeats add dimensions (Tensor.repeat).
func (t *Tensor) Repeat(repeats ...int) *Tensor {
	return Apply1("repeat", []*Tensor{t}, op.Attrs{"repeats": ixInts(repeats)})
}

// Tile tiles t dims[i] times along each dimension, padding dims with leading
// 1s when it is shorter than t's rank (torch.tile).
func (t *Tensor) Tile(dims ...int) *Tensor {
	return Apply1("tile", []*Tensor{t}, op.Attrs{"dims": ixInts(dims)})
}

// RepeatInterleave repeats each slice of t along dim (t flattened when no
// dim is given) repeats times (torch.repeat_interleave with an int).
func (t *Tensor) RepeatInterleave(repeats int, dim ...int) *Tensor {
	a := op.Attrs{"repeats": repeats}
	ixOptDim(a, "repeat_interleave", dim, t)
	return Apply1("repeat_interleave", []*Tensor{t, nil}, a)
}

// RepeatInterleaveTensor repeats slice i of t along dim (t flattened when no
// dim is given) repeats[i] times; repeats is a 1-d integer tensor with one
// count per slice, or one element for all (torch.repeat_interleave with a
// tensor). The output size is read back from the device first (a sync
// point).
func (t *Tensor) RepeatInterleaveTensor(repeats *Tensor, dim ...int) *Tensor {
	a := op.Attrs{}
	ixOptDim(a, "repeat_interleave", dim, t)
	if repeats.st != nil && repeats.st.dev.Type == "meta" {
		errorf("repeat_interleave", []*Tensor{t, repeats}, "repeat_interleave: data-dependent output shape is not supported on meta")
	}
	total := int(repeats.Sum(nil, false).Item())
	if repeats.Numel() == 1 {
		n := t.Numel()
		if len(dim) == 1 && t.Dim() > 0 {
			n = t.Size(dim[0])
		}
		total *= n
	}
	a["output_size"] = total
	return Apply1("repeat_interleave", []*Tensor{t, repeats}, a)
}

func ixOptDim(a op.Attrs, opname string, dim []int, t *Tensor) {
	switch len(dim) {
	case 0:
	case 1:
		a["dim"] = dim[0]
	default:
		errorf(opname, []*Tensor{t}, "at most one dim, got %v", dim)
	}
}

// ---------------------------------------------------------------- in place

// IndexPutInPlace writes (or adds, when accumulate) values at t[indices...]
// and returns t (Tensor.index_put_).
func (t *Tensor) IndexPutInPlace(indices []*Tensor, values *Tensor, accumulate bool) *Tensor {
	return t.inplace("index_put_", func() *Tensor { return t.IndexPut(indices, values, accumulate) })
}

// MaskedFillInPlace sets t to value where mask (broadcast to t) is true and
// returns t (Tensor.masked_fill_).
func (t *Tensor) MaskedFillInPlace(mask *Tensor, value any) *Tensor {
	return t.inplace("masked_fill_", func() *Tensor { return t.MaskedFill(mask, value) })
}

// MaskedScatterInPlace is MaskedScatter writing into t (Tensor.masked_scatter_).
func (t *Tensor) MaskedScatterInPlace(mask, source *Tensor) *Tensor {
	return t.inplace("masked_scatter_", func() *Tensor { return t.MaskedScatter(mask, source) })
}

// ScatterInPlace is Scatter writing into t (Tensor.scatter_).
func (t *Tensor) ScatterInPlace(dim int, index, src *Tensor) *Tensor {
	return t.inplace("scatter_", func() *Tensor { return t.Scatter(dim, index, src) })
}

// ScatterValueInPlace is ScatterValue writing into t (Tensor.scatter_ with a
// value).
func (t *Tensor) ScatterValueInPlace(dim int, index *Tensor, value any) *Tensor {
	return t.inplace("scatter_", func() *Tensor { return t.ScatterValue(dim, index, value) })
}

// ScatterAddInPlace is ScatterAdd writing into t (Tensor.scatter_add_).
func (t *Tensor) ScatterAddInPlace(dim int, index, src *Tensor) *Tensor {
	return t.inplace("scatter_add_", func() *Tensor { return t.ScatterAdd(dim, index, src) })
}

// ScatterReduceInPlace is ScatterReduce writing into t
// (Tensor.scatter_reduce_).
func (t *Tensor) ScatterReduceInPlace(dim int, index, src *Tensor, reduce string, includeSelf bool) *Tensor {
	return t.inplace("scatter_reduce_", func() *Tensor { return t.ScatterReduce(dim, index, src, reduce, includeSelf) })
}

// IndexAddInPlace is IndexAdd writing into t (Tensor.index_add_).
func (t *Tensor) IndexAddInPlace(dim int, index, source *Tensor) *Tensor {
	return t.inplace("index_add_", func() *Tensor { return t.IndexAdd(dim, index, source) })
}

// IndexCopyInPlace is IndexCopy writing into t (Tensor.index_copy_).
func (t *Tensor) IndexCopyInPlace(dim int, index, source *Tensor) *Tensor {
	return t.inplace("index_copy_", func() *Tensor { return t.IndexCopy(dim, index, source) })
}

// IndexFillInPlace is IndexFill writing into t (Tensor.index_fill_).
func (t *Tensor) IndexFillInPlace(dim int, index *Tensor, value any) *Tensor {
	return t.inplace("index_fill_", func() *Tensor { return t.IndexFill(dim, index, value) })
}

// ---------------------------------------------------------------- helpers

// ixInts returns a non-nil copy of s (op attributes distinguish nil from
// empty only through defaults; an explicit empty list must stay empty).
func ixInts(s []int) []int { return append([]int{}, s...) }

// ixValue returns v as a tensor: a *Tensor as is, any Go scalar wrapped.
func ixValue(v any) *Tensor {
	if t, ok := v.(*Tensor); ok {
		return t
	}
	return Scalar(v)
}
