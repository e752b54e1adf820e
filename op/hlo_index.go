package op

import (
	"fmt"
	"slices"
	"strings"
)

// StableHLO emitters of the index primitives. torch.gather/scatter address
// single elements, so their indices are full coordinate vectors (the index
// along dim, iota elsewhere); advanced indexing gathers slices. The ops whose
// result shape depends on data (masked_select, nonzero, repeat_interleave
// with tensor repeats) carry their count as an attribute, so they have a
// static shape and are emitted with prefix sums and a scatter into count+1
// slots (the last one collecting the unselected elements).

// gatherDims are stablehlo.gather's dimension numbers.
type gatherDims struct {
	OffsetDims, Collapsed, StartIndexMap []int
	IndexVectorDim                       int
}

func (g gatherDims) String() string {
	var parts []string
	if len(g.OffsetDims) > 0 {
		parts = append(parts, "offset_dims = "+HLOIntList(g.OffsetDims))
	}
	if len(g.Collapsed) > 0 {
		parts = append(parts, "collapsed_slice_dims = "+HLOIntList(g.Collapsed))
	}
	if len(g.StartIndexMap) > 0 {
		parts = append(parts, "start_index_map = "+HLOIntList(g.StartIndexMap))
	}
	parts = append(parts, fmt.Sprintf("index_vector_dim = %d", g.IndexVectorDim))
	return "#stablehlo.gather<" + strings.Join(parts, ", ") + ">"
}

// gather emits stablehlo.gather of x at idx with result shape res.
func (b hb) gather(x, idx HLOValue, dn gatherDims, sliceSizes, res []int) HLOValue {
	return b.op1("stablehlo.gather", withShape(x.Type, res), []HLOAttr{
		{"dimension_numbers", dn.String()},
		{"slice_sizes", HLODims(sliceSizes)},
		{"indices_are_sorted", "false"},
	}, x, idx)
}

// scatterDims are stablehlo.scatter's dimension numbers.
type scatterDims struct {
	UpdateWindowDims, InsertedWindowDims, ScatterDimsToOperandDims []int
	IndexVectorDim                                                 int
}

func (s scatterDims) String() string {
	var parts []string
	if len(s.UpdateWindowDims) > 0 {
		parts = append(parts, "update_window_dims = "+HLOIntList(s.UpdateWindowDims))
	}
	if len(s.InsertedWindowDims) > 0 {
		parts = append(parts, "inserted_window_dims = "+HLOIntList(s.InsertedWindowDims))
	}
	if len(s.ScatterDimsToOperandDims) > 0 {
		parts = append(parts, "scatter_dims_to_operand_dims = "+HLOIntList(s.ScatterDimsToOperandDims))
	}
	parts = append(parts, fmt.Sprintf("index_vector_dim = %d", s.IndexVectorDim))
	return "#stablehlo.scatter<" + strings.Join(parts, ", ") + ">"
}

// scatter emits stablehlo.scatter of upd into x at idx; combine merges the
// old and the new element (nil: replace).
func (b hb) scatter(x, idx, upd HLOValue, dn scatterDims, combine func(b hb, old, new HLOValue) HLOValue) HLOValue {
	region := HLORegion{Args: scalarArgs(x.Type.Elem, x.Type.Elem), Body: func(e HLOEmitter, args []HLOValue) []HLOValue {
		if combine == nil {
			return []HLOValue{args[1]}
		}
		return []HLOValue{combine(hb{e}, args[0], args[1])}
	}}
	return b.e.Emit("stablehlo.scatter", []HLOValue{x, idx, upd}, []HLOAttr{
		{"scatter_dimension_numbers", dn.String()},
		{"indices_are_sorted", "false"},
		{"unique_indices", "false"},
	}, []HLOType{x.Type}, region)[0]
}

// combiner returns a scatter combine function applying binary op name.
func combiner(name string) func(b hb, old, new HLOValue) HLOValue {
	return func(b hb, old, new HLOValue) HLOValue { return b.bin(name, old, new) }
}

// pointCoords returns the [shape(idx)..., rank] coordinates that address
// element-wise: idx along dim, the position itself along the other axes.
func pointCoords(b hb, idx HLOValue, dim, rank int) HLOValue {
	idx = b.convert(idx, "i64")
	s := idx.Type.Shape
	one := append(slices.Clone(s), 1)
	parts := make([]HLOValue, rank)
	for d := 0; d < rank; d++ {
		v := idx
		if d != dim {
			v = b.iota(s, d, "i64")
		}
		parts[d] = b.reshape(v, one)
	}
	return b.concat(len(s), parts...)
}

// pointDims are the dimension numbers of element-wise access of rank r
// (index vectors in the last index dimension).
func pointDims(r int) ([]int, int) {
	all := make([]int, r)
	for i := range all {
		all[i] = i
	}
	return all, r
}

// prefixCount returns the inclusive prefix sum of the i1 vector m as i64.
func prefixCount(b hb, m HLOValue) HLOValue {
	n := m.Type.Shape[0]
	x := b.convert(m, "i64")
	return scanWindow(b, []HLOValue{x}, []HLOValue{b.konst(scalarType("i64"), int64(0))}, 0, n, func(b hb, p, v []HLOValue) []HLOValue {
		return []HLOValue{b.bin("add", p[0], v[0])}
	})[0]
}

// wrapIndex maps negative indices into [0, size).
func wrapIndex(b hb, i HLOValue, size int) HLOValue {
	i = b.convert(i, "i64")
	return b.sel(b.cmp("LT", i, b.like(i, int64(0))), b.bin("add", i, b.like(i, int64(size))), i)
}

func init() {
	DefStableHLO(Cat, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		dim, err := NormAxis("cat", a.Int("dim"), len(out.Shape))
		if err != nil {
			return HLOValue{}, err
		}
		var xs []HLOValue
		for _, x := range in {
			if len(out.Shape) != 1 && x.Type.Rank() == 1 && x.Type.Shape[0] == 0 {
				continue // PyTorch's legacy rule: 1-d empty tensors are skipped
			}
			xs = append(xs, b.convert(x, HLOElem(out.DType)))
		}
		if len(xs) == 0 {
			return b.dense(HLOTypeOf(out), ""), nil
		}
		return b.concat(dim, xs...), nil
	}))
	DefStableHLO(Flip, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		var dims []int
		for _, d := range a.Ints("dims") {
			ax, err := NormAxis("flip", d, in[0].Type.Rank())
			if err != nil {
				return HLOValue{}, err
			}
			if in[0].Type.Rank() > 0 && !slices.Contains(dims, ax) {
				dims = append(dims, ax)
			}
		}
		if len(dims) == 0 {
			return in[0], nil
		}
		slices.Sort(dims)
		return b.op1("stablehlo.reverse", in[0].Type, []HLOAttr{{"dimensions", HLODims(dims)}}, in[0]), nil
	}))
	DefStableHLO(PadNd, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		x := in[0]
		interior := a.Ints("interior")
		if len(interior) == 0 {
			interior = make([]int, x.Type.Rank())
		}
		pv := b.konst(scalarType(x.Type.Elem), a["value"])
		return b.op1("stablehlo.pad", HLOTypeOf(out), []HLOAttr{
			{"edge_padding_low", HLODims(a.Ints("low"))},
			{"edge_padding_high", HLODims(a.Ints("high"))},
			{"interior_padding", HLODims(interior)},
		}, x, pv), nil
	}))
	DefStableHLO(Gather, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		x, idx := rank1(b, in[0]), rank1(b, in[1])
		dim, err := NormAxis("gather", a.Int("dim"), in[0].Type.Rank())
		if err != nil {
			return HLOValue{}, err
		}
		r := x.Type.Rank()
		if Numel(idx.Type.Shape) == 0 {
			return b.dense(HLOTypeOf(out), ""), nil
		}
		all, ivd := pointDims(r)
		ones := make([]int, r)
		for i := range ones {
			ones[i] = 1
		}
		g := b.gather(x, pointCoords(b, idx, dim, r), gatherDims{Collapsed: all, StartIndexMap: all, IndexVectorDim: ivd}, ones, idx.Type.Shape)
		return b.reshape(g, out.Shape), nil
	}))
	DefStableHLO(Scatter, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		x, idx := rank1(b, in[0]), rank1(b, in[1])
		dim, err := NormAxis("scatter", a.Int("dim"), in[0].Type.Rank())
		if err != nil {
			return HLOValue{}, err
		}
		if Numel(idx.Type.Shape) == 0 {
			return in[0], nil
		}
		upd := scatterUpdates(b, x, idx, in[2], a["value"])
		all, ivd := pointDims(x.Type.Rank())
		res := b.scatter(x, pointCoords(b, idx, dim, x.Type.Rank()), upd, scatterDims{InsertedWindowDims: all, ScatterDimsToOperandDims: all, IndexVectorDim: ivd}, nil)
		return b.reshape(res, out.Shape), nil
	}))
	DefStableHLO(ScatterReduce, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		x, idx := rank1(b, in[0]), rank1(b, in[1])
		dim, err := NormAxis("scatter_reduce", a.Int("dim"), in[0].Type.Rank())
		if err != nil {
			return HLOValue{}, err
		}
		if Numel(idx.Type.Shape) == 0 {
			return in[0], nil
		}
		el := x.Type.Elem
		upd := scatterUpdates(b, x, idx, in[2], nil)
		coords := pointCoords(b, idx, dim, x.Type.Rank())
		all, ivd := pointDims(x.Type.Rank())
		dn := scatterDims{InsertedWindowDims: all, ScatterDimsToOperandDims: all, IndexVectorDim: ivd}
		red := a.String("reduce")
		var comb string
		var id any
		switch red {
		case "sum", "mean":
			comb, id = "add", int64(0)
		case "prod":
			comb, id = "multiply", int64(1)
		case "amax":
			comb, id = "maximum", lowest(el)
		case "amin":
			comb, id = "minimum", highest(el)
		default:
			return HLOValue{}, unsupported("scatter_reduce", "reduce %q", red)
		}
		base := x
		if !a.Bool("include_self") {
			base = b.scatter(x, coords, b.konst(upd.Type, id), dn, nil)
		}
		res := b.scatter(base, coords, upd, dn, combiner(comb))
		if red == "mean" {
			start := int64(0)
			if a.Bool("include_self") {
				start = 1
			}
			cnt := b.scatter(b.konst(x.Type, start), coords, b.konst(upd.Type, int64(1)), dn, combiner("add"))
			zero := b.cmp("EQ", cnt, b.like(cnt, int64(0)))
			mode := ""
			if !isFloatElem(el) {
				mode = "floor"
			}
			res = b.sel(zero, res, emitDiv(b, res, b.sel(zero, b.like(cnt, int64(1)), cnt), mode))
		}
		return b.reshape(res, out.Shape), nil
	}))
	DefStableHLO(Index, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		return emitAdvIndex(b, in[0], HLOValue{}, in[1:], out, false)
	}))
	DefStableHLO(IndexPut, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		return emitAdvIndex(b, in[0], in[1], in[2:], out, a.Bool("accumulate"))
	}))
	DefStableHLO(MaskedScatter, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		x := b.bcastTo(in[0], out.Shape)
		m := b.bcastTo(in[1], out.Shape)
		n, ns := Numel(out.Shape), Numel(in[2].Type.Shape)
		if n == 0 || ns == 0 {
			return x, nil // no source elements: the mask must be all false
		}
		mf, xf := b.reshape(m, []int{n}), b.reshape(x, []int{n})
		pos := b.bin("subtract", prefixCount(b, mf), b.konst(HLOType{Shape: []int{n}, Elem: "i64"}, int64(1)))
		pos = b.op1("stablehlo.clamp", pos.Type, nil, b.konst(scalarType("i64"), int64(0)), pos, b.konst(scalarType("i64"), int64(ns-1)))
		src := b.reshape(in[2], []int{ns})
		g := b.gather(src, b.reshape(pos, []int{n, 1}), gatherDims{Collapsed: []int{0}, StartIndexMap: []int{0}, IndexVectorDim: 1}, []int{1}, []int{n})
		return b.reshape(b.sel(mf, g, xf), out.Shape), nil
	}))
	DefStableHLO(MaskedSelect, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		s, err := BroadcastShapes("masked_select", in[0].Type.Shape, in[1].Type.Shape)
		if err != nil {
			return HLOValue{}, err
		}
		c := a.Int("count")
		n := Numel(s)
		if n == 0 || c == 0 {
			return b.dense(HLOTypeOf(out), ""), nil
		}
		xf := b.reshape(b.bcastTo(in[0], s), []int{n})
		mf := b.reshape(b.bcastTo(in[1], s), []int{n})
		return compact(b, mf, xf, c, 0), nil
	}))
	DefStableHLO(Nonzero, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		x := in[0]
		c, r, n := a.Int("count"), x.Type.Rank(), Numel(x.Type.Shape)
		if c == 0 || r == 0 || n == 0 {
			if r == 0 && c > 0 {
				return b.konst(HLOTypeOf(out), int64(0)), nil
			}
			return b.dense(HLOTypeOf(out), ""), nil
		}
		mf := b.reshape(b.cmp("NE", x, b.like(x, int64(0))), []int{n})
		parts := make([]HLOValue, r)
		for d := 0; d < r; d++ {
			parts[d] = b.reshape(b.iota(x.Type.Shape, d, "i64"), []int{n, 1})
		}
		return compact(b, mf, b.concat(1, parts...), c, r), nil
	}))
	DefStableHLO(RepeatInterleave, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		x := in[0]
		dim := 0
		if a["dim"] == nil || x.Type.Rank() == 0 {
			x = b.reshape(x, []int{Numel(x.Type.Shape)})
		} else {
			var err error
			if dim, err = NormAxis("repeat_interleave", a.Int("dim"), x.Type.Rank()); err != nil {
				return HLOValue{}, err
			}
		}
		n := x.Type.Shape[dim]
		if Numel(out.Shape) == 0 {
			return b.dense(HLOTypeOf(out), ""), nil
		}
		if !in[1].Valid() {
			// Int repeats: insert an axis after dim, broadcast, merge.
			r := a.Int("repeats")
			shape := slices.Insert(slices.Clone(x.Type.Shape), dim+1, r)
			dims := make([]int, x.Type.Rank())
			for i := range dims {
				dims[i] = i
				if i > dim {
					dims[i] = i + 1
				}
			}
			return b.reshape(b.bcastDims(x, shape, dims), out.Shape), nil
		}
		o := out.Shape[dim]
		if len(out.Shape) == 1 {
			o = out.Shape[0]
		}
		reps := b.reshape(b.convert(in[1], "i64"), []int{Numel(in[1].Type.Shape)})
		reps = b.bcastTo(reps, []int{n})
		cs := prefixCount64(b, reps)
		// Output position j takes slice #{k : cs[k] <= j}.
		j := b.iota([]int{o, n}, 0, "i64")
		le := b.convert(b.cmp("LE", b.bcastDims(cs, []int{o, n}, []int{1}), j), "i64")
		src := b.reduce([]HLOValue{le}, []HLOValue{b.konst(scalarType("i64"), int64(0))}, []int{1}, func(b hb, acc, v []HLOValue) []HLOValue {
			return []HLOValue{b.bin("add", acc[0], v[0])}
		})[0]
		src = b.op1("stablehlo.clamp", src.Type, nil, b.konst(scalarType("i64"), int64(0)), src, b.konst(scalarType("i64"), int64(max(n-1, 0))))
		r := x.Type.Rank()
		var offs []int
		sizes := slices.Clone(x.Type.Shape)
		sizes[dim] = 1
		for d := 0; d < r; d++ {
			if d != dim {
				offs = append(offs, d)
			}
		}
		res := slices.Clone(x.Type.Shape)
		res[dim] = o
		g := b.gather(x, b.reshape(src, []int{o, 1}), gatherDims{OffsetDims: offs, Collapsed: []int{dim}, StartIndexMap: []int{dim}, IndexVectorDim: 1}, sizes, res)
		return b.reshape(g, out.Shape), nil
	}))
}

// prefixCount64 is the inclusive prefix sum of an i64 vector.
func prefixCount64(b hb, x HLOValue) HLOValue {
	return scanWindow(b, []HLOValue{x}, []HLOValue{b.konst(scalarType("i64"), int64(0))}, 0, x.Type.Shape[0], func(b hb, p, v []HLOValue) []HLOValue {
		return []HLOValue{b.bin("add", p[0], v[0])}
	})[0]
}

// compact writes the rows of vals ([n] or [n, w] when w > 0) where the i1
// vector m is true, in order, into a [c] or [c, w] result: selected row i
// goes to slot prefix(m)[i]-1, the others to slot c, which is sliced away.
func compact(b hb, m, vals HLOValue, c, w int) HLOValue {
	n := m.Type.Shape[0]
	pos := b.bin("subtract", prefixCount(b, m), b.konst(HLOType{Shape: []int{n}, Elem: "i64"}, int64(1)))
	pos = b.sel(m, pos, b.konst(pos.Type, int64(c)))
	idx := b.reshape(pos, []int{n, 1})
	shape := []int{c + 1}
	dn := scatterDims{InsertedWindowDims: []int{0}, ScatterDimsToOperandDims: []int{0}, IndexVectorDim: 1}
	if w > 0 {
		shape = []int{c + 1, w}
		dn.UpdateWindowDims = []int{1}
	}
	res := b.scatter(b.konst(withShape(vals.Type, shape), int64(0)), idx, vals, dn, nil)
	lim := slices.Clone(shape)
	lim[0] = c
	st, sd := make([]int, len(shape)), make([]int, len(shape))
	for i := range sd {
		sd[i] = 1
	}
	return b.slice(res, st, lim, sd)
}

// scatterUpdates returns the update tensor of torch.scatter: src sliced to
// index's shape, or the scalar value broadcast to it.
func scatterUpdates(b hb, x, idx, src HLOValue, value any) HLOValue {
	s := idx.Type.Shape
	if !src.Valid() {
		return b.konst(withShape(x.Type, s), value)
	}
	src = rank1(b, b.convert(src, x.Type.Elem))
	st, sd := make([]int, len(s)), make([]int, len(s))
	for i := range sd {
		sd[i] = 1
	}
	return b.slice(src, st, slices.Clone(s), sd)
}

// emitAdvIndex emits x[indices] (values invalid) or index_put of values.
func emitAdvIndex(b hb, x, values HLOValue, idx []HLOValue, out Meta, accumulate bool) (HLOValue, error) {
	name := "index"
	if values.Valid() {
		name = "index_put"
	}
	var ents []IndexEntry
	mask := -1
	for i, v := range idx {
		switch {
		case !v.Valid():
			ents = append(ents, IndexEntry{None: true})
		case v.Type.Elem == "i1" || v.Type.Elem == "ui8":
			if mask >= 0 || !values.Valid() {
				return HLOValue{}, unsupported(name, "boolean mask index %d has a data-dependent number of positions", i)
			}
			mask = i
			for range v.Type.Shape {
				ents = append(ents, IndexEntry{Shape: []int{-1}})
			}
		default:
			ents = append(ents, IndexEntry{Shape: v.Type.Shape})
		}
	}
	if mask >= 0 {
		return emitMaskPut(b, x, values, idx, mask, accumulate)
	}
	p, err := PlanAdvIndex(name, x.Type.Shape, ents)
	if err != nil {
		return HLOValue{}, err
	}
	if len(p.Dims) == 0 {
		if !values.Valid() {
			return x, nil
		}
		v := b.bcastTo(b.convert(values, x.Type.Elem), x.Type.Shape)
		if accumulate {
			return addOrOr(b, x, v), nil
		}
		return v, nil
	}
	// Index vectors: [BShape..., k] of wrapped i64 indices.
	var parts []HLOValue
	ent := 0
	one := append(slices.Clone(p.BShape), 1)
	for _, v := range idx {
		if !v.Valid() {
			ent++
			continue
		}
		d := ent
		w := b.bcastTo(wrapIndex(b, v, x.Type.Shape[d]), p.BShape)
		parts = append(parts, b.reshape(w, one))
		ent++
	}
	coords := b.concat(len(p.BShape), parts...)
	var offs []int
	for i := range p.Before {
		offs = append(offs, i)
	}
	for i := range p.After {
		offs = append(offs, len(p.Before)+len(p.BShape)+i)
	}
	sizes := slices.Clone(x.Type.Shape)
	for _, d := range p.Dims {
		sizes[d] = 1
	}
	if Numel(p.Result) == 0 {
		if values.Valid() {
			return x, nil
		}
		return b.dense(HLOTypeOf(out), ""), nil
	}
	if !values.Valid() {
		return b.gather(x, coords, gatherDims{OffsetDims: offs, Collapsed: p.Dims, StartIndexMap: p.Dims, IndexVectorDim: len(p.BShape)}, sizes, p.Result), nil
	}
	upd := b.bcastTo(b.convert(values, x.Type.Elem), p.Result)
	var comb func(b hb, old, new HLOValue) HLOValue
	if accumulate {
		comb = func(b hb, old, new HLOValue) HLOValue { return addOrOr(b, old, new) }
	}
	return b.scatter(x, coords, upd, scatterDims{UpdateWindowDims: offs, InsertedWindowDims: p.Dims, ScatterDimsToOperandDims: p.Dims, IndexVectorDim: len(p.BShape)}, comb), nil
}

func addOrOr(b hb, x, y HLOValue) HLOValue {
	if x.Type.Elem == "i1" {
		return b.bin("or", x, y)
	}
	return b.bin("add", x, y)
}

// emitMaskPut emits index_put with one boolean mask (and whole dims
// elsewhere) and a single value: a select, whatever the mask's count.
func emitMaskPut(b hb, x, values HLOValue, idx []HLOValue, mask int, accumulate bool) (HLOValue, error) {
	m := idx[mask]
	start := 0
	for i := 0; i < mask; i++ {
		if idx[i].Valid() {
			return HLOValue{}, unsupported("index_put", "a boolean mask combined with other index tensors")
		}
		start++
	}
	for _, v := range idx[mask+1:] {
		if v.Valid() {
			return HLOValue{}, unsupported("index_put", "a boolean mask combined with other index tensors")
		}
	}
	if Numel(values.Type.Shape) != 1 {
		return HLOValue{}, unsupported("index_put", "a boolean mask with %d values has a data-dependent layout (only a single value is supported)", Numel(values.Type.Shape))
	}
	dims := make([]int, m.Type.Rank())
	for i := range dims {
		dims[i] = start + i
	}
	mb := b.bcastDims(b.convert(m, "i1"), x.Type.Shape, dims)
	v := b.bcastTo(b.reshape(b.convert(values, x.Type.Elem), []int{}), x.Type.Shape)
	if accumulate {
		v = addOrOr(b, x, v)
	}
	return b.sel(mb, v, x), nil
}
