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

// ExpandAs expands t to other's shape (Tensor.expand_as).
func (t *Tensor) ExpandAs(other *Tensor) *Tensor { return t.Expand(other.Shape()...) }

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

// ---------------------------------------------------------------- joins

// ---------------------------------------------------------------- gather / scatter

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
