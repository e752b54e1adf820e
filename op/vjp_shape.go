package op

import (
	"slices"
	"sort"

	"github.com/gotpu/gotpu/dtype"
)

// Gradients of the shape views declared with the index group (transpose, t,
// narrow, squeeze, unsqueeze, flatten, unflatten, view, movedim) and of
// as_strided. reshape, permute, expand, slice, select and diagonal carry
// their VJPs in their declarations (view.go).

// LayoutReader is implemented by Builders whose values are strided views of
// a storage (the eager runtime). as_strided addresses the storage directly,
// so its VJP needs the input's geometry; with a Builder that does not
// implement LayoutReader (a tracer of functional values), the input is taken
// to be contiguous at storage offset 0.
type LayoutReader interface {
	// Layout returns v's shape, strides and storage offset, in elements;
	// ok is false when v has no strided layout.
	Layout(v Value) (l Layout, ok bool)
}

// reshapeTo reshapes g to the shape of x (the VJP of every view that only
// regroups or relabels dimensions without reordering elements).
func reshapeTo(b Builder, g, x Value) Value {
	return Call1(b, "reshape", Attrs{"shape": slices.Clone(b.Meta(x).Shape)}, g)
}

func init() {
	DefVJP(Transpose, func(b Builder, in, out, g []Value, a Attrs) []Value {
		return []Value{Call1(b, "transpose", Attrs{"dim0": a.Int("dim0"), "dim1": a.Int("dim1")}, g[0])}
	})
	DefVJP(T, func(b Builder, in, out, g []Value, a Attrs) []Value {
		return []Value{Call1(b, "t", nil, g[0])}
	})
	DefVJP(Narrow, func(b Builder, in, out, g []Value, a Attrs) []Value {
		return []Value{ScatterIntoZeros(b, g[0], b.Meta(in[0]).Shape, func(z Value) Value { return Call1(b, "narrow", a, z) })}
	})
	regroup := func(b Builder, in, out, g []Value, a Attrs) []Value {
		return []Value{reshapeTo(b, g[0], in[0])}
	}
	for _, h := range []*Def{Squeeze, Unsqueeze, Flatten, Unflatten, ViewOp} {
		DefVJP(h, regroup)
	}
	DefVJP(Movedim, func(b Builder, in, out, g []Value, a Attrs) []Value {
		// Moving destination back to source inverts the permutation.
		return []Value{Call1(b, "movedim", Attrs{"source": slices.Clone(a.Ints("destination")), "destination": slices.Clone(a.Ints("source"))}, g[0])}
	})
	DefVJP(AsStrided, asStridedVJP)
}

// geometry is a strided view of a storage without its size-1 dimensions.
type geometry struct {
	sizes, strides []int
	offset         int
}

// minStorage returns the number of storage elements a non-empty geometry
// needs from offset 0.
func (g geometry) minStorage() int {
	n := g.offset + 1
	for i, s := range g.sizes {
		n += (s - 1) * g.strides[i]
	}
	return n
}

// mayOverlap reports whether two indices of g may address the same storage
// element (PyTorch's _maybe_overlapping_memory: exact for the layouts views
// produce, conservative otherwise).
func (g geometry) mayOverlap() bool {
	idx := make([]int, len(g.sizes))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return g.strides[idx[i]] < g.strides[idx[j]] })
	span := 0
	for _, i := range idx {
		if g.strides[i] <= span {
			return true
		}
		span += g.strides[i] * (g.sizes[i] - 1)
	}
	return false
}

// asStridedVJP is the gradient of as_strided as PyTorch's
// as_strided_backward computes it: the output gradient is scattered into a
// buffer standing for the shared storage, accumulating where output
// elements overlap (windows that share storage elements), and the input's
// gradient is read back through the input's own geometry. When the input's
// geometry overlaps itself (an expanded input), each storage element's
// gradient is divided by the number of input elements that alias it, so
// that the gradient flowing further back (through expand, say) sums to the
// right total.
func asStridedVJP(b Builder, in, out, gs []Value, a Attrs) []Value {
	x, g := in[0], gs[0]
	xm := b.Meta(x)
	gdt := b.Meta(g).DType
	inL := Layout{Shape: slices.Clone(xm.Shape), Strides: ContiguousStrides(xm.Shape)}
	if lr, ok := b.(LayoutReader); ok {
		if l, ok := lr.Layout(x); ok {
			inL = l
		}
	}
	oSizes, oStrides, oOff := a.Ints("shape"), a.Ints("strides"), a.Int("offset")
	if Numel(xm.Shape) == 0 || Numel(oSizes) == 0 {
		return []Value{Zeros(b, xm.Shape, gdt)}
	}

	// Output geometry: size-1 dims dropped, stride-0 dims summed away.
	var outG geometry
	var sumDims []int
	for i, s := range oSizes {
		switch {
		case s == 1:
		case oStrides[i] == 0:
			sumDims = append(sumDims, i)
		default:
			outG.sizes = append(outG.sizes, s)
			outG.strides = append(outG.strides, oStrides[i])
		}
	}
	if len(sumDims) > 0 {
		g = Call1(b, "sum", Attrs{"dims": sumDims, "keepdim": true}, g)
	}
	g = Call1(b, "reshape", Attrs{"shape": append([]int{}, outG.sizes...)}, g)

	var inG geometry
	for i, s := range inL.Shape {
		if s != 1 {
			inG.sizes = append(inG.sizes, s)
			inG.strides = append(inG.strides, inL.Strides[i])
		}
	}
	shared := min(inL.Offset, oOff)
	inG.offset, outG.offset = inL.Offset-shared, oOff-shared
	base := max(inG.minStorage(), outG.minStorage())
	outOverlap, inOverlap := outG.mayOverlap(), inG.mayOverlap()

	view := func(v Value, geo geometry) Value {
		return Call1(b, "as_strided", Attrs{"shape": append([]int{}, geo.sizes...), "strides": append([]int{}, geo.strides...), "offset": geo.offset}, v)
	}
	var positions Value
	flatIndex := func(geo geometry) Value {
		if positions == nil {
			positions = Call1(b, "iota", Attrs{"shape": []int{base}, "dtype": dtype.I64})
		}
		return Call1(b, "reshape", Attrs{"shape": []int{-1}}, view(positions, geo))
	}

	storage := Zeros(b, []int{base}, gdt)
	if outOverlap {
		// Several output elements share a storage element: accumulate.
		storage = Call1(b, "index_add", Attrs{"dim": 0}, storage, flatIndex(outG), Call1(b, "reshape", Attrs{"shape": []int{-1}}, g))
	} else {
		b.Call("copy_", []Value{view(storage, outG), g}, nil)
	}
	if inOverlap {
		idx := flatIndex(inG)
		ones := Call1(b, "full", Attrs{"shape": []int{Numel(inG.sizes)}, "value": 1.0, "dtype": gdt})
		count := Call1(b, "index_add", Attrs{"dim": 0}, Zeros(b, []int{base}, gdt), idx, ones)
		// Storage elements outside the input's view get 0/0; they are not read.
		storage = Call1(b, "div", nil, storage, count)
	}
	return []Value{Call1(b, "as_strided", Attrs{"shape": slices.Clone(inL.Shape), "strides": slices.Clone(inL.Strides), "offset": inG.offset}, storage)}
}
