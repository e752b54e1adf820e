package op

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// hb wraps an HLOEmitter with the small builders the emitters share. Its
// methods emit one StableHLO operation each (a few emit two or three).
type hb struct{ e HLOEmitter }

func (b hb) op1(name string, res HLOType, attrs []HLOAttr, in ...HLOValue) HLOValue {
	return b.e.Emit(name, in, attrs, []HLOType{res})[0]
}

// un applies the unary stablehlo op name to x (result type of x).
func (b hb) un(name string, x HLOValue) HLOValue { return b.op1("stablehlo."+name, x.Type, nil, x) }

// bin applies the binary stablehlo op name to equal-typed x and y.
func (b hb) bin(name string, x, y HLOValue) HLOValue {
	return b.op1("stablehlo."+name, x.Type, nil, x, y)
}

func scalarType(elem string) HLOType { return HLOType{Shape: []int{}, Elem: elem} }

func withElem(t HLOType, elem string) HLOType {
	return HLOType{Shape: slices.Clone(t.Shape), Elem: elem}
}

func withShape(t HLOType, shape []int) HLOType {
	return HLOType{Shape: slices.Clone(shape), Elem: t.Elem}
}

// konst emits a splat constant of type t holding v.
func (b hb) konst(t HLOType, v any) HLOValue {
	return b.op1("stablehlo.constant", t, []HLOAttr{{"value", HLOScalarDense(t, v)}})
}

// like emits a splat constant of x's type holding v.
func (b hb) like(x HLOValue, v any) HLOValue { return b.konst(x.Type, v) }

// dense emits a constant of type t from literal text (the inside of dense<...>).
func (b hb) dense(t HLOType, lit string) HLOValue {
	return b.op1("stablehlo.constant", t, []HLOAttr{{"value", "dense<" + lit + "> : " + t.String()}})
}

// ints emits a constant holding the integers vs with shape and element elem.
func (b hb) ints(elem string, shape []int, vs []int) HLOValue {
	t := HLOType{Shape: slices.Clone(shape), Elem: elem}
	if len(vs) == 0 {
		return b.dense(t, "")
	}
	same := true
	for _, v := range vs {
		if v != vs[0] {
			same = false
		}
	}
	if same {
		return b.konst(t, vs[0])
	}
	var sb strings.Builder
	var rec func(dim, off int)
	rec = func(dim, off int) {
		if dim == len(shape) {
			fmt.Fprint(&sb, vs[off])
			return
		}
		inner := Numel(shape[dim+1:])
		sb.WriteByte('[')
		for k := 0; k < shape[dim]; k++ {
			if k > 0 {
				sb.WriteString(", ")
			}
			rec(dim+1, off+k*inner)
		}
		sb.WriteByte(']')
	}
	rec(0, 0)
	return b.dense(t, sb.String())
}

// bcastDims emits broadcast_in_dim of x to shape, x's dim i going to dims[i].
func (b hb) bcastDims(x HLOValue, shape []int, dims []int) HLOValue {
	return b.op1("stablehlo.broadcast_in_dim", withShape(x.Type, shape), []HLOAttr{{"broadcast_dimensions", HLODims(dims)}}, x)
}

// bcastTo broadcasts x to shape with NumPy's trailing alignment (a no-op
// when the shapes are equal).
func (b hb) bcastTo(x HLOValue, shape []int) HLOValue {
	if slices.Equal(x.Type.Shape, shape) {
		return x
	}
	lead := len(shape) - x.Type.Rank()
	dims := make([]int, x.Type.Rank())
	for i := range dims {
		dims[i] = lead + i
	}
	return b.bcastDims(x, shape, dims)
}

// reshape emits a reshape of x to shape (a no-op when equal).
func (b hb) reshape(x HLOValue, shape []int) HLOValue {
	if slices.Equal(x.Type.Shape, shape) {
		return x
	}
	return b.op1("stablehlo.reshape", withShape(x.Type, shape), nil, x)
}

// transpose emits a transpose of x by perm (a no-op for the identity).
func (b hb) transpose(x HLOValue, perm []int) HLOValue {
	id := true
	shape := make([]int, len(perm))
	for i, p := range perm {
		shape[i] = x.Type.Shape[p]
		if p != i {
			id = false
		}
	}
	if id {
		return x
	}
	return b.op1("stablehlo.transpose", withShape(x.Type, shape), []HLOAttr{{"permutation", HLODims(perm)}}, x)
}

// convert emits a convert of x to element type elem (a no-op when equal).
func (b hb) convert(x HLOValue, elem string) HLOValue {
	if x.Type.Elem == elem {
		return x
	}
	if elem == "i1" {
		return b.cmp("NE", x, b.like(x, int64(0)))
	}
	return b.op1("stablehlo.convert", withElem(x.Type, elem), nil, x)
}

func isFloatElem(elem string) bool {
	return elem == "f16" || elem == "bf16" || elem == "f32" || elem == "f64"
}

func isUnsignedElem(elem string) bool { return elem == "i1" || strings.HasPrefix(elem, "ui") }

func compareType(elem string) string {
	switch {
	case isFloatElem(elem):
		return "FLOAT"
	case isUnsignedElem(elem):
		return "UNSIGNED"
	}
	return "SIGNED"
}

// cmp emits compare(x, y) with direction dir (EQ, NE, LT, LE, GT, GE).
func (b hb) cmp(dir string, x, y HLOValue) HLOValue {
	return b.op1("stablehlo.compare", withElem(x.Type, "i1"), []HLOAttr{
		{"comparison_direction", "#stablehlo<comparison_direction " + dir + ">"},
		{"compare_type", "#stablehlo<comparison_type " + compareType(x.Type.Elem) + ">"},
	}, x, y)
}

// sel emits select(c, x, y).
func (b hb) sel(c, x, y HLOValue) HLOValue { return b.op1("stablehlo.select", x.Type, nil, c, x, y) }

// isnan emits x != x (false for non-float x).
func (b hb) isnan(x HLOValue) HLOValue {
	if !isFloatElem(x.Type.Elem) {
		return b.konst(withElem(x.Type, "i1"), false)
	}
	return b.cmp("NE", x, x)
}

// iota emits an iota of shape along dim with element type elem.
func (b hb) iota(shape []int, dim int, elem string) HLOValue {
	t := HLOType{Shape: slices.Clone(shape), Elem: elem}
	if len(shape) == 0 {
		return b.konst(t, int64(0))
	}
	return b.op1("stablehlo.iota", t, []HLOAttr{{"iota_dimension", fmt.Sprintf("%d : i64", dim)}})
}

// slice emits a static slice of x.
func (b hb) slice(x HLOValue, start, limit, strides []int) HLOValue {
	shape := make([]int, len(start))
	for i := range start {
		if limit[i] > start[i] {
			shape[i] = (limit[i] - start[i] + strides[i] - 1) / strides[i]
		}
	}
	if slices.Equal(shape, x.Type.Shape) && !slices.ContainsFunc(start, func(v int) bool { return v != 0 }) {
		return x
	}
	return b.op1("stablehlo.slice", withShape(x.Type, shape), []HLOAttr{
		{"start_indices", HLODims(start)}, {"limit_indices", HLODims(limit)}, {"strides", HLODims(strides)}}, x)
}

// sliceDim slices x along dim d to [start, limit) with step 1.
func (b hb) sliceDim(x HLOValue, d, start, limit int) HLOValue {
	r := x.Type.Rank()
	st, li, sd := make([]int, r), slices.Clone(x.Type.Shape), make([]int, r)
	for i := range sd {
		sd[i] = 1
	}
	st[d], li[d] = start, limit
	return b.slice(x, st, li, sd)
}

// concat emits concatenate along dim.
func (b hb) concat(dim int, xs ...HLOValue) HLOValue {
	if len(xs) == 1 {
		return xs[0]
	}
	shape := slices.Clone(xs[0].Type.Shape)
	shape[dim] = 0
	for _, x := range xs {
		shape[dim] += x.Type.Shape[dim]
	}
	return b.op1("stablehlo.concatenate", withShape(xs[0].Type, shape), []HLOAttr{{"dimension", fmt.Sprintf("%d : i64", dim)}}, xs...)
}

// scalarArgs returns n rank-0 types of the given element types.
func scalarArgs(elems ...string) []HLOType {
	out := make([]HLOType, len(elems))
	for i, e := range elems {
		out[i] = scalarType(e)
	}
	return out
}

// reduce emits a (variadic) stablehlo.reduce of ins over dims with initial
// values inits; body combines accumulators acc with elements x (rank-0
// values) into new accumulators.
func (b hb) reduce(ins, inits []HLOValue, dims []int, body func(b hb, acc, x []HLOValue) []HLOValue) []HLOValue {
	var res []HLOType
	var elems []string
	for _, x := range ins {
		var shape []int
		for d, n := range x.Type.Shape {
			if !slices.Contains(dims, d) {
				shape = append(shape, n)
			}
		}
		if shape == nil {
			shape = []int{}
		}
		res = append(res, HLOType{Shape: shape, Elem: x.Type.Elem})
		elems = append(elems, x.Type.Elem)
	}
	n := len(ins)
	region := HLORegion{Args: scalarArgs(append(slices.Clone(elems), elems...)...), Body: func(e HLOEmitter, args []HLOValue) []HLOValue {
		return body(hb{e}, args[:n], args[n:])
	}}
	return b.e.Emit("stablehlo.reduce", append(slices.Clone(ins), inits...), []HLOAttr{{"dimensions", HLODims(dims)}}, res, region)
}

// reduceWindow emits a (variadic) stablehlo.reduce_window.
func (b hb) reduceWindow(ins, inits []HLOValue, out []int, window, strides, dilation, lo, hi []int, body func(b hb, acc, x []HLOValue) []HLOValue) []HLOValue {
	var res []HLOType
	var elems []string
	for _, x := range ins {
		res = append(res, withShape(x.Type, out))
		elems = append(elems, x.Type.Elem)
	}
	n := len(ins)
	region := HLORegion{Args: scalarArgs(append(slices.Clone(elems), elems...)...), Body: func(e HLOEmitter, args []HLOValue) []HLOValue {
		return body(hb{e}, args[:n], args[n:])
	}}
	return b.e.Emit("stablehlo.reduce_window", append(slices.Clone(ins), inits...), []HLOAttr{
		{"window_dimensions", HLODims(window)},
		{"window_strides", HLODims(strides)},
		{"window_dilations", HLODims(dilation)},
		{"padding", hloPadding(lo, hi)},
	}, res, region)
}

// hloPadding formats per-dimension (low, high) padding as a dense Nx2 i64
// attribute.
func hloPadding(lo, hi []int) string {
	if len(lo) == 0 {
		return "dense<> : tensor<0x2xi64>"
	}
	parts := make([]string, len(lo))
	for i := range lo {
		parts[i] = fmt.Sprintf("[%d, %d]", lo[i], hi[i])
	}
	return fmt.Sprintf("dense<[%s]> : tensor<%dx2xi64>", strings.Join(parts, ", "), len(lo))
}

// lowest returns the smallest value of elem (-inf for floats) as a Go scalar.
func lowest(elem string) any {
	switch elem {
	case "f16", "bf16", "f32", "f64":
		return math.Inf(-1)
	case "i1":
		return false
	case "ui8", "ui16", "ui32", "ui64":
		return int64(0)
	case "i8":
		return int64(math.MinInt8)
	case "i16":
		return int64(math.MinInt16)
	case "i32":
		return int64(math.MinInt32)
	}
	return int64(math.MinInt64)
}

// highest returns the largest value of elem (+inf for floats).
func highest(elem string) any {
	switch elem {
	case "f16", "bf16", "f32", "f64":
		return math.Inf(1)
	case "i1":
		return true
	case "ui8":
		return int64(math.MaxUint8)
	case "i8":
		return int64(math.MaxInt8)
	case "i16":
		return int64(math.MaxInt16)
	case "i32":
		return int64(math.MaxInt32)
	case "ui32":
		return uint64(math.MaxUint32)
	case "ui64":
		return uint64(math.MaxUint64)
	}
	return int64(math.MaxInt64)
}

// unsupported returns an error naming op for what StableHLO cannot express.
func unsupported(op, format string, args ...any) error {
	return fmt.Errorf("stablehlo: %s: %s: %w", op, fmt.Sprintf(format, args...), ErrHLOUnsupported)
}

// emit1 adapts a one-output emitter.
func emit1(f func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error)) StableHLOFunc {
	return func(e HLOEmitter, in []HLOValue, out []Meta, a Attrs) ([]HLOValue, error) {
		if len(out) != 1 {
			return nil, fmt.Errorf("stablehlo: emitter expects one output, got %d", len(out))
		}
		v, err := f(hb{e}, in, out[0], a)
		if err != nil {
			return nil, err
		}
		return []HLOValue{v}, nil
	}
}

func init() {
	DefStableHLO(Convert, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		return b.convert(in[0], HLOElem(out.DType)), nil
	}))
	DefStableHLO(Copy, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		return in[0], nil // values are immutable: a copy is the value itself
	}))
	DefStableHLO(CopyInPlace, func(e HLOEmitter, in []HLOValue, out []Meta, a Attrs) ([]HLOValue, error) {
		return nil, unsupported("copy_", "in-place writes have no functional form (trace the out-of-place op)")
	})
}

func itoa(i int) string { return fmt.Sprint(i) }
