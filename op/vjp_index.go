package op

import (
	"fmt"
	"slices"

	"github.com/gotpu/gotpu/dtype"
)

// Gradients of the index group (PyTorch 1.13's derivatives.yaml and
// FunctionsManual.cpp conventions): joins, gathers and scatters, advanced
// and masked indexing, padding, flips and repeats, plus the composites whose
// decomposition differentiates badly (split/chunk/unbind would scatter every
// piece into a full-size zero tensor) or whose direct kernel should also run
// while recording (index_select for embedding lookups, masked_fill, roll).

func init() {
	DefVJP(Cat, catVJP)
	DefVJP(Gather, func(b Builder, in, out, g []Value, a Attrs) []Value {
		z := Zeros(b, b.Meta(in[0]).Shape, b.Meta(g[0]).DType)
		return []Value{Call1(b, "scatter_add", Attrs{"dim": a.Int("dim")}, z, in[1], g[0]), nil}
	})
	DefVJP(Scatter, scatterVJP)
	DefVJP(ScatterReduce, scatterReduceVJP)
	DefVJP(Index, func(b Builder, in, out, g []Value, a Attrs) []Value {
		// Duplicate indices gather the same element twice: accumulate.
		args := append([]Value{Zeros(b, b.Meta(in[0]).Shape, b.Meta(g[0]).DType), g[0]}, in[1:]...)
		res := make([]Value, len(in))
		res[0] = Call1(b, "index_put", Attrs{"accumulate": true}, args...)
		return res
	})
	DefVJP(IndexPut, indexPutVJP)
	DefVJP(MaskedSelect, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x, mask := in[0], in[1]
		shape := broadcastOf(b, x, mask)
		z := Zeros(b, shape, b.Meta(g[0]).DType)
		r := Call1(b, "masked_scatter", nil, z, mask, g[0])
		return []Value{SumToShape(b, r, b.Meta(x).Shape), nil}
	})
	DefVJP(MaskedScatter, maskedScatterVJP)
	DefVJP(PadNd, padNDVJP)
	DefVJP(Flip, func(b Builder, in, out, g []Value, a Attrs) []Value {
		return []Value{Call1(b, "flip", Attrs{"dims": slices.Clone(a.Ints("dims"))}, g[0])}
	})
	DefVJP(RepeatInterleave, repeatInterleaveVJP)

	// Composites.
	joinBack := func(b Builder, in, out, g []Value, ax int, stack bool) []Value {
		if len(g) == 0 {
			return []Value{Zeros(b, b.Meta(in[0]).Shape, b.Meta(in[0]).DType)}
		}
		name := "cat"
		if stack {
			name = "stack"
		}
		return []Value{Call1(b, name, Attrs{"dim": ax}, g...)}
	}
	DefVJP(Split, func(b Builder, in, out, g []Value, a Attrs) []Value {
		ax, _, _ := ixSplitSizes(b.Meta(in[0]).Shape, a)
		return joinBack(b, in, out, g, ax, false)
	})
	DefVJP(Chunk, func(b Builder, in, out, g []Value, a Attrs) []Value {
		ax, _, _ := ixChunkSizes(b.Meta(in[0]).Shape, a)
		return joinBack(b, in, out, g, ax, false)
	})
	DefVJP(Unbind, func(b Builder, in, out, g []Value, a Attrs) []Value {
		return joinBack(b, in, out, g, axisOf(a.Int("dim"), len(b.Meta(in[0]).Shape)), true)
	})
	DefVJP(IndexSelect, func(b Builder, in, out, g []Value, a Attrs) []Value {
		// index_select_backward: the rows add back into zeros at index.
		z := Zeros(b, b.Meta(in[0]).Shape, b.Meta(g[0]).DType)
		return []Value{Call1(b, "index_add", Attrs{"dim": a.Int("dim")}, z, in[1], g[0]), nil}
	})
	DefVJP(MaskedFill, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x, mask, v := in[0], in[1], in[2]
		gx := Call1(b, "masked_fill", nil, g[0], mask, b.Scalar(0.0, g[0]))
		res := []Value{SumToShape(b, gx, b.Meta(x).Shape), nil, nil}
		if vm := b.Meta(v); !vm.Wrapped && vm.DType.IsFloat() {
			// value: the sum of the gradient where it was written.
			z := Zeros(b, []int{}, b.Meta(g[0]).DType)
			w := b.Call("where", []Value{mask, g[0], z}, nil)[0]
			res[2] = Call1(b, "sum", Attrs{"dims": []int{}}, w)
		}
		return res
	})
	DefVJP(Roll, func(b Builder, in, out, g []Value, a Attrs) []Value {
		sh := a.Ints("shifts")
		neg := make([]int, len(sh))
		for i, s := range sh {
			neg[i] = -s
		}
		return []Value{Call1(b, "roll", Attrs{"shifts": neg, "dims": slices.Clone(a.Ints("dims"))}, g[0])}
	})
}

// broadcastOf returns the broadcast shape of x and y.
func broadcastOf(b Builder, x, y Value) []int {
	s, err := BroadcastShapes("backward", b.Meta(x).Shape, b.Meta(y).Shape)
	if err != nil {
		panic(err)
	}
	return s
}

// catVJP narrows the gradient back into the pieces; 1-d empty inputs that
// cat skipped get an empty gradient.
func catVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	metas := make([]Meta, len(in))
	for i, v := range in {
		metas[i] = b.Meta(v)
	}
	outShape, ax, err := CatShape("cat", metas, a.Int("dim"))
	if err != nil {
		panic(err)
	}
	res := make([]Value, len(in))
	off := 0
	for i, m := range metas {
		if len(m.Shape) == 1 && m.Shape[0] == 0 && (len(outShape) != 1) {
			res[i] = Zeros(b, []int{0}, b.Meta(g[0]).DType)
			continue
		}
		n := m.Shape[ax]
		res[i] = Call1(b, "narrow", Attrs{"dim": ax, "start": off, "length": n}, g[0])
		off += n
	}
	return res
}

// fitIndexShape narrows v (shaped like src) to the index's shape, the part
// of src that a gather/scatter with that index reads.
func fitIndexShape(b Builder, v Value, idxShape []int) Value {
	vs := b.Meta(v).Shape
	for d := range vs {
		if d < len(idxShape) && idxShape[d] < vs[d] {
			v = Call1(b, "narrow", Attrs{"dim": d, "start": 0, "length": idxShape[d]}, v)
		}
	}
	return v
}

// padToShape pads v with zeros at the high end of every dimension up to
// shape (the gradient of the src elements an index does not reach).
func padToShape(b Builder, v Value, shape []int) Value {
	vs := b.Meta(v).Shape
	if slices.Equal(vs, shape) {
		return v
	}
	low, high := make([]int, len(shape)), make([]int, len(shape))
	for d := range shape {
		high[d] = shape[d] - vs[d]
	}
	return Call1(b, "pad_nd", Attrs{"low": low, "high": high}, v)
}

// scatterVJP: self gets the gradient except where src was written; src
// gets the gradient of the positions it was written to.
func scatterVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	x, idx, src := in[0], in[1], in[2]
	dim := a.Int("dim")
	gy := g[0]
	res := make([]Value, 3)
	if b.Meta(x).DType.IsFloat() {
		res[0] = b.Call("scatter", []Value{gy, idx, nil}, Attrs{"dim": dim, "value": 0.0})[0]
	}
	if src != nil && b.Meta(src).DType.IsFloat() {
		gs := Call1(b, "gather", Attrs{"dim": dim}, gy, idx)
		res[2] = padToShape(b, gs, b.Meta(src).Shape)
	}
	return res
}

// scatterReduceVJP follows PyTorch's scatter_reduce_backward for every
// reduction, including its conventions: prod is exact with zeros, mean
// divides by the number of contributions, amax/amin share the gradient
// evenly among all values equal to the result (self counted even when
// include_self is false, as PyTorch does), and with include_self false the
// scattered positions of self get no gradient.
func scatterReduceVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	x, idx, src := in[0], in[1], in[2]
	xm := b.Meta(x)
	if !xm.DType.IsFloat() {
		return []Value{nil, nil, nil}
	}
	dt := xm.DType
	dim := a.Int("dim")
	red, incl := a.String("reduce"), a.Bool("include_self")
	gy, y := g[0], out[0]
	srcShape := b.Meta(src).Shape
	srcI := fitIndexShape(b, src, b.Meta(idx).Shape)

	c := func(name string, in ...Value) Value { return Call1(b, name, nil, in...) }
	gather := func(v Value) Value { return Call1(b, "gather", Attrs{"dim": dim}, v, idx) }
	scatterAdd := func(into, v Value) Value { return Call1(b, "scatter_add", Attrs{"dim": dim}, into, idx, v) }
	asF := func(v Value) Value { return Call1(b, "convert", Attrs{"dtype": dt}, v) }
	one := func(like Value) Value { return b.Scalar(1.0, like) }
	fill := func(v, mask Value, val float64) Value {
		return Call1(b, "masked_fill", nil, v, mask, b.Scalar(val, v))
	}

	var gx, gs Value
	switch red {
	case "sum":
		gx, gs = gy, gather(gy)
	case "prod":
		zero := func(v Value) Value { return c("eq", v, b.Scalar(0.0, v)) }
		maskedSelf := fill(x, zero(x), 1)
		maskedSelfResult := Call1(b, "scatter_reduce", a, maskedSelf, idx, srcI)
		gx = c("div", c("mul", gy, maskedSelfResult), maskedSelf)
		srcZero := zero(srcI)
		numZeros := gather(scatterAdd(Zeros(b, xm.Shape, dt), asF(srcZero)))
		single := c("bitwise_and", srcZero, c("eq", numZeros, one(numZeros)))
		maskedSrcResult := Call1(b, "scatter_reduce", a, x, idx, fill(srcI, single, 1))
		gs = b.Call("where", []Value{single,
			gather(c("mul", gy, maskedSrcResult)),
			c("div", gather(c("mul", gy, y)), fill(srcI, srcZero, 1))}, nil)[0]
	case "mean":
		init := 0.0
		if incl {
			init = 1
		}
		n := Call1(b, "full", Attrs{"shape": slices.Clone(b.Meta(gy).Shape), "value": init, "dtype": dt})
		n = scatterAdd(n, Call1(b, "full", Attrs{"shape": slices.Clone(b.Meta(srcI).Shape), "value": 1.0, "dtype": dt}))
		n = fill(n, c("eq", n, b.Scalar(0.0, n)), 1)
		gx = c("div", gy, n)
		gs = c("div", gather(gy), gather(n))
	case "amax", "amin":
		value := gather(y)
		selfIs := asF(c("eq", x, y))
		srcIs := asF(c("eq", srcI, value))
		share := c("div", gy, scatterAdd(selfIs, srcIs))
		gx = c("mul", selfIs, share)
		gs = c("mul", srcIs, gather(share))
	default:
		panic(fmt.Errorf("scatter_reduce backward: unknown reduction %q", red))
	}
	if !incl {
		gx = b.Call("scatter", []Value{gx, idx, nil}, Attrs{"dim": dim, "value": 0.0})[0]
	}
	var gsrc Value
	if b.Meta(src).DType.IsFloat() {
		gsrc = padToShape(b, gs, srcShape)
	}
	return []Value{gx, nil, gsrc}
}

// indexPutVJP: self gets the gradient except where values were written
// (all of it when accumulating); values get the gradient at the indexed
// positions, summed over the dimensions they were broadcast along.
func indexPutVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	x, v, indices := in[0], in[1], in[2:]
	gy := g[0]
	res := make([]Value, len(in))
	if b.Meta(x).DType.IsFloat() {
		if a.Bool("accumulate") {
			res[0] = gy
		} else {
			args := append([]Value{gy, Zeros(b, []int{}, b.Meta(gy).DType)}, indices...)
			res[0] = Call1(b, "index_put", Attrs{"accumulate": false}, args...)
		}
	}
	if vm := b.Meta(v); !vm.Wrapped && vm.DType.IsFloat() {
		res[1] = SumToShape(b, indexWithMasks(b, gy, indices, vm.Shape), vm.Shape)
	}
	return res
}

// indexWithMasks returns g[indices] where indices may hold boolean masks
// (which the index op does not take: their true count is data). Each mask
// is flattened together with the dimensions it covers and replaced by an
// integer index. When the number of selected elements is known from
// values' shape (vShape) or from another index, that index lists the
// positions of the true elements in order, so the result is exactly
// g[indices]. Otherwise values is broadcast along the selected elements and
// only their sum is needed: the mask's dimension is indexed whole with the
// unselected positions zeroed, which sums to the same total.
func indexWithMasks(b Builder, g Value, indices []Value, vShape []int) Value {
	hasMask := false
	for _, ix := range indices {
		if ix != nil && isMaskDType(b.Meta(ix).DType) {
			hasMask = true
		}
	}
	if !hasMask {
		return b.Call("index", append([]Value{g}, indices...), nil)[0]
	}
	gShape := b.Meta(g).Shape
	// Entries per dimension, masks expanded (count unknown: -1).
	var ents []IndexEntry
	var intShapes [][]int
	maskDim := map[int]int{} // indices position -> first dim it covers
	for i, ix := range indices {
		switch {
		case ix == nil:
			ents = append(ents, IndexEntry{None: true})
		case isMaskDType(b.Meta(ix).DType):
			maskDim[i] = len(ents)
			for range b.Meta(ix).Shape {
				ents = append(ents, IndexEntry{Shape: []int{-1}})
			}
		default:
			ents = append(ents, IndexEntry{Shape: b.Meta(ix).Shape})
			intShapes = append(intShapes, b.Meta(ix).Shape)
		}
	}
	count := maskCount(gShape, ents, intShapes, vShape)
	if count < 0 && len(maskDim) > 1 {
		panic(fmt.Errorf("index_put backward: several boolean masks with values broadcast along the selected elements are not supported"))
	}
	// Work from the last mask back so earlier dimension numbers stay valid.
	positions := make([]int, 0, len(maskDim))
	for p := range maskDim {
		positions = append(positions, p)
	}
	slices.Sort(positions)
	newIdx := slices.Clone(indices)
	for k := len(positions) - 1; k >= 0; k-- {
		p := positions[k]
		d := maskDim[p]
		m := indices[p]
		mk := len(b.Meta(m).Shape)
		gs := b.Meta(g).Shape
		n := Numel(gs[d : d+mk])
		merged := append(slices.Clone(gs[:d]), n)
		merged = append(merged, gs[d+mk:]...)
		g = Call1(b, "reshape", Attrs{"shape": merged}, g)
		mf := Call1(b, "reshape", Attrs{"shape": []int{n}}, m)
		if b.Meta(mf).DType != dtype.Bool {
			mf = Call1(b, "ne", nil, mf, b.Scalar(int64(0), mf))
		}
		pos := Call1(b, "iota", Attrs{"shape": []int{n}, "dtype": dtype.I64})
		if count >= 0 {
			// The true positions in order: position p goes to slot
			// (number of trues before p).
			mi := Call1(b, "convert", Attrs{"dtype": dtype.I64}, mf)
			rank := Call1(b, "sub", nil, Call1(b, "cumulative", Attrs{"kind": "sum", "dim": 0}, mi), mi)
			zero := b.Scalar(int64(0), rank)
			slot := b.Call("where", []Value{mf, rank, zero}, nil)[0]
			val := b.Call("where", []Value{mf, pos, zero}, nil)[0]
			pos = Call1(b, "scatter_reduce", Attrs{"dim": 0, "reduce": "sum", "include_self": true},
				Zeros(b, []int{count}, dtype.I64), slot, val)
		} else {
			bs := make([]int, len(merged))
			for i := range bs {
				bs[i] = 1
			}
			bs[d] = n
			mm := Call1(b, "reshape", Attrs{"shape": bs}, mf)
			g = Call1(b, "masked_fill", nil, g, Call1(b, "logical_not", nil, mm), b.Scalar(0.0, g))
		}
		newIdx[p] = pos
	}
	return b.Call("index", append([]Value{g}, newIdx...), nil)[0]
}

func isMaskDType(dt dtype.DType) bool { return dt == dtype.Bool || dt == dtype.U8 }

// maskCount returns the number of elements the masks among ents select when
// the shapes determine it (another index broadcast with them, or values'
// shape at the masks' position in the result), else -1.
func maskCount(shape []int, ents []IndexEntry, intShapes [][]int, vShape []int) int {
	// The masks' [count] is the last dimension of the broadcast index block.
	for _, s := range intShapes {
		if len(s) > 0 && s[len(s)-1] > 1 {
			return s[len(s)-1]
		}
	}
	// Plan with a sentinel count that no real dimension has, then read
	// values' size at the sentinel's place in the result.
	const sentinel = 1<<40 + 1
	plan := make([]IndexEntry, len(ents))
	for i, e := range ents {
		plan[i] = e
		if !e.None && len(e.Shape) == 1 && e.Shape[0] == -1 {
			plan[i] = IndexEntry{Shape: []int{sentinel}}
		}
	}
	p, err := PlanAdvIndex("index_put", shape, plan)
	if err != nil {
		panic(err)
	}
	at := slices.Index(p.Result, sentinel)
	if j := len(vShape) - len(p.Result) + at; at >= 0 && j >= 0 && vShape[j] != 1 {
		return vShape[j]
	}
	return -1
}

// maskedScatterVJP: self gets the gradient where the mask is false; source
// element k gets the gradient of the k-th true mask position (in row-major
// order), and elements past the number of trues get zero.
func maskedScatterVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	x, mask, src := in[0], in[1], in[2]
	gy := g[0]
	gdt := b.Meta(gy).DType
	res := make([]Value, 3)
	if b.Meta(x).DType.IsFloat() {
		gx := Call1(b, "masked_fill", nil, gy, mask, b.Scalar(0.0, gy))
		res[0] = SumToShape(b, gx, b.Meta(x).Shape)
	}
	sm := b.Meta(src)
	if !sm.DType.IsFloat() {
		return res
	}
	if sm.Numel() == 0 {
		res[2] = Zeros(b, sm.Shape, gdt)
		return res
	}
	shape := b.Meta(gy).Shape
	mf := Call1(b, "reshape", Attrs{"shape": []int{-1}}, Call1(b, "expand", Attrs{"shape": slices.Clone(shape)}, mask))
	gf := Call1(b, "reshape", Attrs{"shape": []int{-1}}, gy)
	mi := Call1(b, "convert", Attrs{"dtype": dtype.I64}, mf)
	rank := Call1(b, "sub", nil, Call1(b, "cumulative", Attrs{"kind": "sum", "dim": 0}, mi), mi)
	slot := b.Call("where", []Value{mf, rank, b.Scalar(int64(0), rank)}, nil)[0]
	val := b.Call("where", []Value{mf, gf, Zeros(b, []int{}, gdt)}, nil)[0]
	gs := Call1(b, "scatter_add", Attrs{"dim": 0}, Zeros(b, []int{sm.Numel()}, gdt), slot, val)
	res[2] = Call1(b, "reshape", Attrs{"shape": slices.Clone(sm.Shape)}, gs)
	return res
}

// padNDVJP reads the input's positions back out of the padded gradient:
// element i of a dimension sits at low + i*(interior+1); positions that
// negative padding cropped get zero.
func padNDVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	shape := b.Meta(in[0]).Shape
	r := len(shape)
	if r == 0 {
		return []Value{g[0]}
	}
	low, high, interior := a.Ints("low"), a.Ints("high"), a.Ints("interior")
	gl, gh := make([]int, r), make([]int, r)
	needPad := false
	for d := 0; d < r; d++ {
		gl[d], gh[d] = max(0, -low[d]), max(0, -high[d])
		needPad = needPad || gl[d] > 0 || gh[d] > 0
	}
	gy := g[0]
	if needPad {
		gy = Call1(b, "pad_nd", Attrs{"low": gl, "high": gh}, gy)
	}
	for d := 0; d < r; d++ {
		step := 1
		if len(interior) > 0 {
			step += interior[d]
		}
		start := max(low[d], 0)
		end := start + (shape[d]-1)*step + 1
		if shape[d] == 0 {
			end = start
		}
		if start == 0 && step == 1 && end == b.Meta(gy).Shape[d] {
			continue
		}
		gy = Call1(b, "slice", Attrs{"dim": d, "start": start, "end": end, "step": step}, gy)
	}
	return []Value{gy}
}

// repeatInterleaveVJP sums the gradient of each input slice's copies.
func repeatInterleaveVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	x := in[0]
	xs := b.Meta(x).Shape
	gy := g[0]
	gdt := b.Meta(gy).DType
	ax, work := 0, []int{Numel(xs)}
	if a.Has("dim") {
		ax = axisOf(a.Int("dim"), len(xs))
		work = xs
	}
	n := work[ax]
	var gw Value
	if a.Has("repeats") {
		rep := a.Int("repeats")
		split := append(slices.Clone(work[:ax]), n, rep)
		split = append(split, work[ax+1:]...)
		gw = Call1(b, "reshape", Attrs{"shape": split}, gy)
		gw = Call1(b, "sum", Attrs{"dims": []int{ax + 1}}, gw)
	} else {
		outN := b.Meta(gy).Shape
		if !a.Has("dim") {
			gy = Call1(b, "reshape", Attrs{"shape": []int{-1}}, gy)
			outN = b.Meta(gy).Shape
		}
		owner := Call1(b, "repeat_interleave", Attrs{"dim": 0, "output_size": outN[ax]},
			Call1(b, "iota", Attrs{"shape": []int{n}, "dtype": dtype.I64}), in[1])
		gw = Call1(b, "index_add", Attrs{"dim": ax}, Zeros(b, work, gdt), owner, gy)
	}
	return []Value{Call1(b, "reshape", Attrs{"shape": slices.Clone(xs)}, gw), nil}
}
