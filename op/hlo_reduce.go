package op

import "slices"

// StableHLO emitters of the reduction primitives: reduce, argmax/argmin
// (variadic reduce over values and indices), the scans cumulative and
// cummax/cummin (reduce_window over a window as long as the axis, padded
// in front), and sort (stablehlo.sort with a NaN-aware stable comparator).

// reduceBody returns the combiner and identity of reduction kind on elem.
func reduceBody(kind, elem string) (string, any) {
	boolean := elem == "i1"
	switch kind {
	case ReduceSum:
		if boolean {
			return "or", false
		}
		return "add", int64(0)
	case ReduceProd:
		if boolean {
			return "and", true
		}
		return "multiply", int64(1)
	case ReduceMax:
		if boolean {
			return "or", false
		}
		return "maximum", lowest(elem)
	}
	if boolean {
		return "and", true
	}
	return "minimum", highest(elem)
}

// rank1 reshapes a 0-d x to [1] (dim-based ops treat 0-d as 1-d).
func rank1(b hb, x HLOValue) HLOValue {
	if x.Type.Rank() == 0 {
		return b.reshape(x, []int{1})
	}
	return x
}

// argBetter returns whether (bv, bi) should replace (av, ai) in a first-
// (later=false) or last-index (later=true) arg-reduction; max selects the
// largest value. NaN counts as the extreme value.
func argBetter(b hb, av, ai, bv, bi HLOValue, max, later bool) HLOValue {
	dir := "LT"
	if max {
		dir = "GT"
	}
	better := b.cmp(dir, bv, av)
	tie := b.cmp("EQ", bv, av)
	if isFloatElem(av.Type.Elem) {
		an, bn := b.isnan(av), b.isnan(bv)
		better = b.bin("or", better, b.bin("and", bn, b.un("not", an)))
		tie = b.bin("or", tie, b.bin("and", an, bn))
	}
	idir := "LT"
	if later {
		idir = "GT"
	}
	return b.bin("or", better, b.bin("and", tie, b.cmp(idir, bi, ai)))
}

func argPick(b hb, acc, x []HLOValue, max, later bool) []HLOValue {
	p := argBetter(b, acc[0], acc[1], x[0], x[1], max, later)
	return []HLOValue{b.sel(p, x[0], acc[0]), b.sel(p, x[1], acc[1])}
}

func init() {
	DefStableHLO(Reduce, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		x := in[0]
		red, err := ReduceAxes("reduce", a.Ints("dims"), x.Type.Rank())
		if err != nil {
			return HLOValue{}, err
		}
		var dims []int
		for d, r := range red {
			if r {
				dims = append(dims, d)
			}
		}
		comb, id := reduceBody(a.String("kind"), x.Type.Elem)
		init := b.konst(scalarType(x.Type.Elem), id)
		r := b.reduce([]HLOValue{x}, []HLOValue{init}, dims, func(b hb, acc, v []HLOValue) []HLOValue {
			return []HLOValue{b.bin(comb, acc[0], v[0])}
		})[0]
		return b.reshape(r, out.Shape), nil
	}))
	for _, h := range []*Def{Argmax, Argmin} {
		name := h.Name
		max := name == "argmax"
		DefStableHLO(h, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
			x := in[0]
			dim := 0
			if a["dim"] == nil {
				x = b.reshape(in[0], []int{Numel(in[0].Type.Shape)})
			} else {
				var err error
				if dim, err = NormAxis(name, a.Int("dim"), x.Type.Rank()); err != nil {
					return HLOValue{}, err
				}
				x = rank1(b, x)
			}
			idx := b.iota(x.Type.Shape, dim, "i64")
			ext := lowest(x.Type.Elem)
			if !max {
				ext = highest(x.Type.Elem)
			}
			inits := []HLOValue{b.konst(scalarType(x.Type.Elem), ext), b.konst(scalarType("i64"), int64(0))}
			r := b.reduce([]HLOValue{x, idx}, inits, []int{dim}, func(b hb, acc, v []HLOValue) []HLOValue {
				return argPick(b, acc, v, max, false)
			})
			return b.reshape(r[1], out.Shape), nil
		}))
	}
	DefStableHLO(Cumulative, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		x := rank1(b, in[0])
		dim, err := NormAxis("cumulative", a.Int("dim"), in[0].Type.Rank())
		if err != nil {
			return HLOValue{}, err
		}
		n := x.Type.Shape[dim]
		if Numel(x.Type.Shape) == 0 {
			return in[0], nil
		}
		// Accumulate f32 in f64 and f16/bf16 in f32, as PyTorch's CPU cumsum.
		acc := map[string]string{"f32": "f64", "f16": "f32", "bf16": "f32"}[x.Type.Elem]
		if acc == "" {
			acc = x.Type.Elem
		}
		xa := b.convert(x, acc)
		comb, id := reduceBody(a.String("kind"), acc)
		s := scanWindow(b, []HLOValue{xa}, []HLOValue{b.konst(scalarType(acc), id)}, dim, n, func(b hb, p, v []HLOValue) []HLOValue {
			return []HLOValue{b.bin(comb, p[0], v[0])}
		})[0]
		return b.reshape(b.convert(s, x.Type.Elem), out.Shape), nil
	}))
	for _, h := range []*Def{Cummax, Cummin} {
		name := h.Name
		max := name == "cummax"
		DefStableHLO(h, func(e HLOEmitter, in []HLOValue, out []Meta, a Attrs) ([]HLOValue, error) {
			b := hb{e}
			x := rank1(b, in[0])
			dim, err := NormAxis(name, a.Int("dim"), in[0].Type.Rank())
			if err != nil {
				return nil, err
			}
			if Numel(x.Type.Shape) == 0 {
				return []HLOValue{in[0], b.konst(HLOTypeOf(out[1]), int64(0))}, nil
			}
			ext := lowest(x.Type.Elem)
			if !max {
				ext = highest(x.Type.Elem)
			}
			idx := b.iota(x.Type.Shape, dim, "i64")
			inits := []HLOValue{b.konst(scalarType(x.Type.Elem), ext), b.konst(scalarType("i64"), int64(-1))}
			r := scanWindow(b, []HLOValue{x, idx}, inits, dim, x.Type.Shape[dim], func(b hb, p, v []HLOValue) []HLOValue {
				return argPick(b, p, v, max, true) // ties and NaN: the later index
			})
			return []HLOValue{b.reshape(r[0], out[0].Shape), b.reshape(r[1], out[1].Shape)}, nil
		})
	}
	DefStableHLO(Sort, func(e HLOEmitter, in []HLOValue, out []Meta, a Attrs) ([]HLOValue, error) {
		b := hb{e}
		x := rank1(b, in[0])
		dim, err := NormAxis("sort", a.Int("dim"), in[0].Type.Rank())
		if err != nil {
			return nil, err
		}
		desc := a.Bool("descending")
		idx := b.iota(x.Type.Shape, dim, "i64")
		el := x.Type.Elem
		cmpRegion := HLORegion{Args: scalarArgs(el, el, "i64", "i64"), Body: func(e HLOEmitter, args []HLOValue) []HLOValue {
			b := hb{e}
			l, r := args[0], args[1]
			dir := "LT"
			if desc {
				dir = "GT"
			}
			c := b.cmp(dir, l, r)
			if isFloatElem(el) { // NaN sorts as the largest value
				ln, rn := b.isnan(l), b.isnan(r)
				if desc {
					c = b.bin("or", c, b.bin("and", ln, b.un("not", rn)))
				} else {
					c = b.bin("or", c, b.bin("and", b.un("not", ln), rn))
				}
			}
			return []HLOValue{c}
		}}
		res := e.Emit("stablehlo.sort", []HLOValue{x, idx}, []HLOAttr{{"dimension", itoa(dim) + " : i64"}, {"is_stable", "true"}},
			[]HLOType{x.Type, idx.Type}, cmpRegion)
		return []HLOValue{b.reshape(res[0], out[0].Shape), b.reshape(res[1], out[1].Shape)}, nil
	})
}

// scanWindow emits an inclusive scan along dim of length n as a
// reduce_window whose window spans the axis, padded by n-1 in front.
func scanWindow(b hb, ins, inits []HLOValue, dim, n int, body func(b hb, acc, x []HLOValue) []HLOValue) []HLOValue {
	r := ins[0].Type.Rank()
	win, st, dl, lo, hi := make([]int, r), make([]int, r), make([]int, r), make([]int, r), make([]int, r)
	for i := range win {
		win[i], st[i], dl[i] = 1, 1, 1
	}
	win[dim], lo[dim] = n, n-1
	return b.reduceWindow(ins, inits, slices.Clone(ins[0].Type.Shape), win, st, dl, lo, hi, body)
}
