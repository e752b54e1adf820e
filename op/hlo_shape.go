package op

import (
	"fmt"
	"slices"
)

// StableHLO emitters of the view ops. Values are functional, so a view is
// the selection it makes from its contiguous input: the op's own ViewFn is
// run on the contiguous layout of the input and the resulting layout is
// emitted as reshape, transpose, broadcast_in_dim or slice where it has that
// structure, and as a gather of computed flat indices otherwise (diagonal,
// as_strided).

// viewLayout runs d's ViewFn on in's contiguous layout.
func viewLayout(name string, in HLOValue, a Attrs) (Layout, error) {
	d, ok := Lookup(name)
	if !ok || d.ViewFn == nil {
		return Layout{}, fmt.Errorf("stablehlo: %s is not a view op", name)
	}
	l, ok, err := d.ViewFn(Contiguous(slices.Clone(in.Type.Shape)), a)
	if err != nil {
		return Layout{}, fmt.Errorf("stablehlo: %s: %w", name, err)
	}
	if !ok {
		return Layout{}, fmt.Errorf("stablehlo: %s: no view of a contiguous %v", name, in.Type)
	}
	return l, nil
}

// permFromLayout finds the permutation p with l.Shape[k] = shape[p[k]] and
// l.Strides[k] = contiguous stride of p[k]. Dimensions with equal contiguous
// strides differ only by size-1 dimensions, so any match selects the same
// elements.
func permFromLayout(shape []int, l Layout) ([]int, bool) {
	st := ContiguousStrides(shape)
	used := make([]bool, len(shape))
	p := make([]int, len(l.Shape))
	for k := range l.Shape {
		found := false
		for j := range shape {
			if !used[j] && shape[j] == l.Shape[k] && (st[j] == l.Strides[k] || shape[j] <= 1) {
				p[k], used[j], found = j, true, true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return p, len(l.Shape) == len(shape)
}

// emitBox emits a view whose output dim k selects input dim dims[k] with a
// start and a step (slice, narrow, select), then reshapes to out.
func emitBox(b hb, x HLOValue, l Layout, dims []int, out []int) HLOValue {
	if Numel(out) == 0 {
		return b.dense(withShape(x.Type, out), "")
	}
	st := ContiguousStrides(x.Type.Shape)
	r := x.Type.Rank()
	start, limit, step := make([]int, r), make([]int, r), make([]int, r)
	off := l.Offset
	for j := 0; j < r; j++ {
		if x.Type.Shape[j] > 1 && st[j] > 0 {
			start[j] = off / st[j]
			off -= start[j] * st[j]
		}
		limit[j], step[j] = start[j]+1, 1
	}
	for k, j := range dims {
		n := l.Shape[k]
		if n > 1 && st[j] > 0 {
			step[j] = l.Strides[k] / st[j]
		}
		limit[j] = start[j] + (n-1)*step[j] + 1
	}
	return b.reshape(b.slice(x, start, limit, step), out)
}

// emitStrided emits an arbitrary layout over x's contiguous storage as a
// gather of the flat indices offset + sum_k i_k*stride_k.
func emitStrided(b hb, x HLOValue, l Layout) HLOValue {
	if Numel(l.Shape) == 0 {
		return b.dense(withShape(x.Type, l.Shape), "")
	}
	flat := b.reshape(x, []int{Numel(x.Type.Shape)})
	r := len(l.Shape)
	idx := b.reshape(stridedIndex(b, l), append(slices.Clone(l.Shape), 1))
	return b.gather(flat, idx, gatherDims{Collapsed: []int{0}, StartIndexMap: []int{0}, IndexVectorDim: r}, []int{1}, l.Shape)
}

// stridedIndex emits the i64 tensor of shape l.Shape holding, at each
// position, the flat element index layout l selects (offset + Σ i·stride).
func stridedIndex(b hb, l Layout) HLOValue {
	idx := b.konst(HLOType{Shape: slices.Clone(l.Shape), Elem: "i64"}, int64(l.Offset))
	for k, n := range l.Shape {
		if n > 1 && l.Strides[k] != 0 {
			t := b.bin("multiply", b.iota(l.Shape, k, "i64"), b.konst(idx.Type, int64(l.Strides[k])))
			idx = b.bin("add", idx, t)
		}
	}
	return idx
}

func init() {
	for _, h := range []*Def{Reshape, ViewOp, Flatten, Unflatten, Squeeze, Unsqueeze} {
		DefStableHLO(h, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
			return b.reshape(in[0], out.Shape), nil
		}))
	}
	for _, h := range []*Def{Permute, Transpose, T, Movedim} {
		name := h.Name
		DefStableHLO(h, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
			l, err := viewLayout(name, in[0], a)
			if err != nil {
				return HLOValue{}, err
			}
			p, ok := permFromLayout(in[0].Type.Shape, l)
			if !ok {
				return emitStrided(b, in[0], l), nil
			}
			return b.transpose(in[0], p), nil
		}))
	}
	DefStableHLO(Expand, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		return b.bcastTo(in[0], out.Shape), nil
	}))
	for _, h := range []*Def{Slice, Narrow, Select} {
		name := h.Name
		DefStableHLO(h, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
			x := in[0]
			l, err := viewLayout(name, x, a)
			if err != nil {
				return HLOValue{}, err
			}
			dims := make([]int, len(l.Shape))
			skip := -1
			if name == "select" {
				if skip, err = NormAxis(name, a.Int("dim"), x.Type.Rank()); err != nil {
					return HLOValue{}, err
				}
			}
			for k := range dims {
				dims[k] = k
				if skip >= 0 && k >= skip {
					dims[k] = k + 1
				}
			}
			return emitBox(b, x, l, dims, out.Shape), nil
		}))
	}
	for _, h := range []*Def{Diagonal, AsStrided} {
		name := h.Name
		DefStableHLO(h, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
			l, err := viewLayout(name, in[0], a)
			if err != nil {
				return HLOValue{}, err
			}
			lo, hi := l.Span()
			if Numel(l.Shape) > 0 && (lo < 0 || hi > Numel(in[0].Type.Shape)) {
				return HLOValue{}, unsupported(name, "view reaches storage outside its input (elements %d..%d of %d)", lo, hi, Numel(in[0].Type.Shape))
			}
			return emitStrided(b, in[0], l), nil
		}))
	}
}
