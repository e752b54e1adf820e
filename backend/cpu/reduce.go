package cpu

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Kernels of the reduce group: the reduce, argmax/argmin, cumulative and sort
// primitives, and direct softmax/log_softmax kernels. Inputs may be strided;
// outputs are contiguous.

func init() {
	RegisterKernel(op.Reduce, Kernel{Run: runReduce})
	RegisterKernel(op.Argmax, Kernel{DTypes: op.SetNumeric, Run: func(c *Call) error { return runArg(c, true) }})
	RegisterKernel(op.Argmin, Kernel{DTypes: op.SetNumeric, Run: func(c *Call) error { return runArg(c, false) }})
	RegisterKernel(op.Cumulative, Kernel{Run: runCumulative})
	RegisterKernel(op.Sort, Kernel{Run: runSort})
	RegisterKernel(op.Cummax, Kernel{Run: func(c *Call) error { return runCumExtreme(c, true) }})
	RegisterKernel(op.Cummin, Kernel{Run: func(c *Call) error { return runCumExtreme(c, false) }})
	// Integer inputs reach the softmax kernels only with a floating dtype
	// attribute (the shape rule rejects them otherwise).
	RegisterKernel(op.Softmax, Kernel{DTypes: op.SetNumeric, Run: func(c *Call) error { return runSoftmax(c, false) }})
	RegisterKernel(op.LogSoftmax, Kernel{DTypes: op.SetNumeric, Run: func(c *Call) error { return runSoftmax(c, true) }})
}

// redPlan splits a strided input into the kept dimensions (one output element
// per position) and the reduced dimensions (combined into it). The reduced
// dimensions stay in row-major order, so runs visit elements in the order of
// the flattened input.
type redPlan struct {
	base                   int
	keptShape, keptStrides []int
	redShape, redStrides   []int // coalesced; never empty (a single 1 for nothing)
	nOut, nRed             int
}

func newRedPlan(l op.Layout, red []bool) *redPlan {
	p := &redPlan{base: l.Offset, nOut: 1, nRed: 1}
	for i, d := range l.Shape {
		if red[i] {
			p.nRed *= d
			if d == 1 {
				continue
			}
			if n := len(p.redShape); n > 0 && p.redStrides[n-1] == l.Strides[i]*d {
				p.redShape[n-1] *= d
				p.redStrides[n-1] = l.Strides[i]
				continue
			}
			p.redShape = append(p.redShape, d)
			p.redStrides = append(p.redStrides, l.Strides[i])
		} else {
			p.nOut *= d
			p.keptShape = append(p.keptShape, d)
			p.keptStrides = append(p.keptStrides, l.Strides[i])
		}
	}
	if len(p.redShape) == 0 {
		p.redShape, p.redStrides = []int{1}, []int{0}
	}
	return p
}

// start returns the input offset of output element o's first reduced element.
func (p *redPlan) start(o int) int {
	off := p.base
	for d := len(p.keptShape) - 1; d >= 0; d-- {
		n := p.keptShape[d]
		off += (o % n) * p.keptStrides[d]
		o /= n
	}
	return off
}

// runs calls fn for each run of the innermost reduced dimension of the
// elements reduced into the output element starting at off, in row-major
// order; fn returns false to stop early. idx is scratch of len(redShape).
func (p *redPlan) runs(off int, idx []int, fn func(off, n, stride int) bool) {
	r := len(p.redShape)
	if p.nRed == 0 {
		return
	}
	n, st := p.redShape[r-1], p.redStrides[r-1]
	clear(idx)
	for {
		if !fn(off, n, st) {
			return
		}
		d := r - 2
		for ; d >= 0; d-- {
			idx[d]++
			off += p.redStrides[d]
			if idx[d] < p.redShape[d] {
				break
			}
			off -= p.redStrides[d] * p.redShape[d]
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

// each runs body(o, start) for every output element, in parallel chunks.
func (p *redPlan) each(body func(o, start int, idx []int)) {
	parallelFor(p.nOut, p.nOut*max(p.nRed, 1), func(lo, hi int) {
		idx := make([]int, len(p.redShape))
		for o := lo; o < hi; o++ {
			body(o, p.start(o), idx)
		}
	})
}

func reducePlan(c *Call, name string, dims []int) (*redPlan, error) {
	in := c.In[0]
	red, err := op.ReduceAxes(name, dims, len(in.Shape))
	if err != nil {
		return nil, err
	}
	return newRedPlan(in.Layout, red), nil
}

type redFloat interface{ ~float32 | ~float64 }

type redInt interface {
	~uint8 | ~int8 | ~int16 | ~int32 | ~int64
}

func runReduce(c *Call) error {
	p, err := reducePlan(c, "reduce", c.Attrs.Ints("dims"))
	if err != nil {
		return err
	}
	kind := c.Attrs.String("kind")
	switch dt := c.In[0].DType; dt {
	case dtype.F32:
		reduceFloatFast[float32](c, p, kind)
	case dtype.F64:
		reduceFloatFast[float64](c, p, kind)
	case dtype.BF16:
		reduceFloat(c, p, kind, bf, tobf)
	case dtype.F16:
		reduceFloat(c, p, kind, hf, tohf)
	case dtype.U8:
		reduceInt[uint8](c, p, kind, 0, math.MaxUint8)
	case dtype.I8:
		reduceInt[int8](c, p, kind, math.MinInt8, math.MaxInt8)
	case dtype.I16:
		reduceInt[int16](c, p, kind, math.MinInt16, math.MaxInt16)
	case dtype.I32:
		reduceInt[int32](c, p, kind, math.MinInt32, math.MaxInt32)
	case dtype.I64:
		reduceInt[int64](c, p, kind, math.MinInt64, math.MaxInt64)
	case dtype.Bool:
		reduceBool(c, p, kind)
	default:
		return fmt.Errorf("reduce: unsupported dtype %s", dt)
	}
	return nil
}

// reduceFloat reduces a floating input: sums and products accumulate in
// float64 and round once; max and min propagate NaN.
func reduceFloat[T any](c *Call, p *redPlan, kind string, load func(T) float64, store func(float64) T) {
	src, dst := as[T](c.InB[0]), as[T](c.OutB[0])[c.Out[0].Offset:]
	var init float64
	var step func(acc float64, s []T, off, n, st int) float64
	switch kind {
	case op.ReduceSum:
		// Left to right, as PyTorch does for short rows (its cascade only
		// splits long ones); float64 keeps long f32 rows accurate.
		step = func(acc float64, s []T, off, n, st int) float64 {
			for i := 0; i < n; i++ {
				acc += load(s[off+i*st])
			}
			return acc
		}
	case op.ReduceProd:
		init = 1
		step = func(acc float64, s []T, off, n, st int) float64 {
			for i := 0; i < n; i++ {
				acc *= load(s[off+i*st])
			}
			return acc
		}
	case op.ReduceMax:
		init = math.Inf(-1)
		step = func(acc float64, s []T, off, n, st int) float64 {
			for i := 0; i < n; i++ {
				x := load(s[off+i*st])
				if x > acc || x != x {
					acc = x
					if x != x {
						return acc
					}
				}
			}
			return acc
		}
	case op.ReduceMin:
		init = math.Inf(1)
		step = func(acc float64, s []T, off, n, st int) float64 {
			for i := 0; i < n; i++ {
				x := load(s[off+i*st])
				if x < acc || x != x {
					acc = x
					if x != x {
						return acc
					}
				}
			}
			return acc
		}
	}
	p.each(func(o, start int, idx []int) {
		acc := init
		p.runs(start, idx, func(off, n, st int) bool {
			acc = step(acc, src, off, n, st)
			return acc == acc || kind == op.ReduceSum || kind == op.ReduceProd
		})
		dst[o] = store(acc)
	})
}

// reduceFloatFast is reduceFloat for float32 and float64 without per-element
// calls, with a column path for reductions over outer dimensions of rows
// that are contiguous (the bias-gradient shape: sum over batch).
func reduceFloatFast[T redFloat](c *Call, p *redPlan, kind string) {
	src, dst := as[T](c.InB[0]), as[T](c.OutB[0])[c.Out[0].Offset:]
	if len(p.keptShape) == 1 && p.keptStrides[0] == 1 && len(p.redShape) == 1 && p.redStrides[0] != 0 && p.nRed > 1 {
		redColumns(src, dst, p.base, p.redShape[0], p.redStrides[0], p.nOut, kind)
		return
	}
	if kind == op.ReduceSum && sumInterleaved(src, dst, p) {
		return
	}
	var init float64
	switch kind {
	case op.ReduceProd:
		init = 1
	case op.ReduceMax:
		init = math.Inf(-1)
	case op.ReduceMin:
		init = math.Inf(1)
	}
	p.each(func(o, start int, idx []int) {
		acc := init
		p.runs(start, idx, func(off, n, st int) bool {
			switch kind {
			case op.ReduceSum:
				if st == 1 {
					for _, v := range src[off : off+n] {
						acc += float64(v)
					}
				} else {
					for i := 0; i < n; i++ {
						acc += float64(src[off+i*st])
					}
				}
			case op.ReduceProd:
				for i := 0; i < n; i++ {
					acc *= float64(src[off+i*st])
				}
			case op.ReduceMax:
				if s32, ok := any(src).([]float32); ok && st == 1 && n >= 8 {
					m := float64(c.kernels().vec.Max(s32[off : off+n]))
					if m != m {
						acc = m
						return false
					}
					acc = max(acc, m)
					return true
				}
				for i := 0; i < n; i++ {
					x := float64(src[off+i*st])
					if x > acc {
						acc = x
					} else if x != x {
						acc = x
						return false
					}
				}
			case op.ReduceMin:
				for i := 0; i < n; i++ {
					x := float64(src[off+i*st])
					if x < acc {
						acc = x
					} else if x != x {
						acc = x
						return false
					}
				}
			}
			return true
		})
		dst[o] = T(acc)
	})
}

// redColumns reduces rows of a [rows, cols] strided matrix (row stride rs,
// contiguous columns) into dst[cols], walking memory row by row. Each column
// combines its values in row order, as the per-output loop would.
func redColumns[T redFloat](src, dst []T, base, rows, rs, cols int, kind string) {
	parallelFor(cols, rows*cols, func(lo, hi int) {
		const block = 256
		var acc [block]float64
		for c0 := lo; c0 < hi; c0 += block {
			c1 := min(c0+block, hi)
			a := acc[:c1-c0]
			switch kind {
			case op.ReduceSum:
				clear(a)
			case op.ReduceProd:
				for j := range a {
					a[j] = 1
				}
			case op.ReduceMax:
				for j := range a {
					a[j] = math.Inf(-1)
				}
			case op.ReduceMin:
				for j := range a {
					a[j] = math.Inf(1)
				}
			}
			for r := 0; r < rows; r++ {
				row := src[base+r*rs+c0 : base+r*rs+c1]
				switch kind {
				case op.ReduceSum:
					for j, v := range row {
						a[j] += float64(v)
					}
				case op.ReduceProd:
					for j, v := range row {
						a[j] *= float64(v)
					}
				case op.ReduceMax:
					for j, v := range row {
						if x := float64(v); x > a[j] || x != x {
							if a[j] == a[j] {
								a[j] = x
							}
						}
					}
				case op.ReduceMin:
					for j, v := range row {
						if x := float64(v); x < a[j] || x != x {
							if a[j] == a[j] {
								a[j] = x
							}
						}
					}
				}
			}
			for j, v := range a {
				dst[c0+j] = T(v)
			}
		}
	})
}

// reduceInt reduces an integer input in int64 with wrap-around, truncating
// to the dtype once.
func reduceInt[T redInt](c *Call, p *redPlan, kind string, lo, hi int64) {
	src, dst := as[T](c.InB[0]), as[T](c.OutB[0])[c.Out[0].Offset:]
	init := map[string]int64{op.ReduceSum: 0, op.ReduceProd: 1, op.ReduceMax: lo, op.ReduceMin: hi}[kind]
	p.each(func(o, start int, idx []int) {
		acc := init
		p.runs(start, idx, func(off, n, st int) bool {
			switch kind {
			case op.ReduceSum:
				for i := 0; i < n; i++ {
					acc += int64(src[off+i*st])
				}
			case op.ReduceProd:
				for i := 0; i < n; i++ {
					acc *= int64(src[off+i*st])
				}
			case op.ReduceMax:
				for i := 0; i < n; i++ {
					acc = max(acc, int64(src[off+i*st]))
				}
			case op.ReduceMin:
				for i := 0; i < n; i++ {
					acc = min(acc, int64(src[off+i*st]))
				}
			}
			return true
		})
		dst[o] = T(acc)
	})
}

// reduceBool: sum and max are logical or, prod and min logical and.
func reduceBool(c *Call, p *redPlan, kind string) {
	src, dst := as[uint8](c.InB[0]), as[uint8](c.OutB[0])[c.Out[0].Offset:]
	isOr := kind == op.ReduceSum || kind == op.ReduceMax
	p.each(func(o, start int, idx []int) {
		acc := !isOr
		p.runs(start, idx, func(off, n, st int) bool {
			for i := 0; i < n; i++ {
				v := src[off+i*st] != 0
				if v == isOr {
					acc = isOr
					return false
				}
			}
			return true
		})
		dst[o] = uint8(b2i(acc))
	})
}

// runArg computes argmax (isMax) or argmin: the first extreme, or the first
// NaN, along dim or over the flattened input.
func runArg(c *Call, isMax bool) error {
	in := c.In[0]
	var dims []int
	if c.Attrs.Has("dim") {
		dims = []int{c.Attrs.Int("dim")}
	}
	name := "argmin"
	if isMax {
		name = "argmax"
	}
	p, err := reducePlan(c, name, dims)
	if err != nil {
		return err
	}
	if p.nRed == 0 && p.nOut > 0 {
		return fmt.Errorf("%s(): Expected reduction dim to have non-zero size", name)
	}
	dst := as[int64](c.OutB[0])[c.Out[0].Offset:]
	switch in.DType {
	case dtype.F32:
		redArgFloat(c, p, dst, isMax, func(x float32) float64 { return float64(x) })
	case dtype.F64:
		redArgFloat(c, p, dst, isMax, func(x float64) float64 { return x })
	case dtype.BF16:
		redArgFloat(c, p, dst, isMax, bf)
	case dtype.F16:
		redArgFloat(c, p, dst, isMax, hf)
	case dtype.U8:
		redArgInt[uint8](c, p, dst, isMax)
	case dtype.I8:
		redArgInt[int8](c, p, dst, isMax)
	case dtype.I16:
		redArgInt[int16](c, p, dst, isMax)
	case dtype.I32:
		redArgInt[int32](c, p, dst, isMax)
	case dtype.I64:
		redArgInt[int64](c, p, dst, isMax)
	default:
		return fmt.Errorf("%s: not implemented for dtype %s", name, in.DType)
	}
	return nil
}

func redArgFloat[T any](c *Call, p *redPlan, dst []int64, isMax bool, load func(T) float64) {
	src := as[T](c.InB[0])
	p.each(func(o, start int, idx []int) {
		best, bi, pos := 0.0, int64(-1), int64(0)
		p.runs(start, idx, func(off, n, st int) bool {
			for i := 0; i < n; i++ {
				x := load(src[off+i*st])
				if x != x {
					bi = pos + int64(i)
					return false
				}
				if bi < 0 || (isMax && x > best) || (!isMax && x < best) {
					best, bi = x, pos+int64(i)
				}
			}
			pos += int64(n)
			return true
		})
		dst[o] = bi
	})
}

func redArgInt[T redInt](c *Call, p *redPlan, dst []int64, isMax bool) {
	src := as[T](c.InB[0])
	p.each(func(o, start int, idx []int) {
		var best T
		bi, pos := int64(-1), int64(0)
		p.runs(start, idx, func(off, n, st int) bool {
			for i := 0; i < n; i++ {
				x := src[off+i*st]
				if bi < 0 || (isMax && x > best) || (!isMax && x < best) {
					best, bi = x, pos+int64(i)
				}
			}
			pos += int64(n)
			return true
		})
		dst[o] = bi
	})
}

// redLanes iterates the 1-d lanes along axis ax of a strided input and of the
// contiguous output of the same shape: body gets the input offset of a lane's
// first element and the output offset and stride.
type redLanes struct {
	n, inStride         int
	outer, inner        int
	outerShape, innerSh []int
	outerSt, innerSt    []int
	base, outBase       int
}

func newRedLanes(in, out device.Operand, ax int) *redLanes {
	shape := in.Shape
	if len(shape) == 0 {
		return &redLanes{n: 1, outer: 1, inner: 1, base: in.Offset, outBase: out.Offset}
	}
	l := &redLanes{n: shape[ax], inStride: in.Strides[ax], outer: 1, inner: 1, base: in.Offset, outBase: out.Offset}
	l.outerShape, l.outerSt = shape[:ax], in.Strides[:ax]
	l.innerSh, l.innerSt = shape[ax+1:], in.Strides[ax+1:]
	for _, d := range l.outerShape {
		l.outer *= d
	}
	for _, d := range l.innerSh {
		l.inner *= d
	}
	return l
}

// each runs body for every lane, in parallel chunks.
func (l *redLanes) each(body func(inOff, outOff, outStride int)) {
	total := l.outer * l.inner
	if total == 0 || l.n == 0 {
		return
	}
	parallelFor(total, total*l.n, func(lo, hi int) { l.eachRange(lo, hi, body) })
}

func redLaneAxis(c *Call, name string) (int, error) {
	return op.NormAxis(name, c.Attrs.Int("dim"), len(c.In[0].Shape))
}

// runCumulative scans along dim. As PyTorch's CPU kernels, f32 and f64
// accumulate in float64, f16 and bf16 in float32 (rounding each partial
// result to the dtype only on output), integers in int64 with wrap-around.
func runCumulative(c *Call) error {
	ax, err := redLaneAxis(c, "cumulative")
	if err != nil {
		return err
	}
	prod := c.Attrs.String("kind") == op.ReduceProd
	l := newRedLanes(c.In[0], c.Out[0], ax)
	switch dt := c.In[0].DType; dt {
	case dtype.F32:
		redScanFloat[float32, float64](c, l, prod)
	case dtype.F64:
		redScanFloat[float64, float64](c, l, prod)
	case dtype.BF16:
		redScanHalf(c, l, prod, func(x dtype.BFloat16) float32 { return x.F32() }, dtype.BF16FromF32)
	case dtype.F16:
		redScanHalf(c, l, prod, func(x dtype.Float16) float32 { return x.F32() }, dtype.F16FromF32)
	case dtype.U8:
		redScanInt[uint8](c, l, prod)
	case dtype.I8:
		redScanInt[int8](c, l, prod)
	case dtype.I16:
		redScanInt[int16](c, l, prod)
	case dtype.I32:
		redScanInt[int32](c, l, prod)
	case dtype.I64:
		redScanInt[int64](c, l, prod)
	case dtype.Bool:
		src, dst := as[uint8](c.InB[0]), as[uint8](c.OutB[0])
		l.each(func(in, out, os int) {
			acc := prod
			for i := 0; i < l.n; i++ {
				v := src[in+i*l.inStride] != 0
				if prod {
					acc = acc && v
				} else {
					acc = acc || v
				}
				dst[out+i*os] = uint8(b2i(acc))
			}
		})
	default:
		return fmt.Errorf("cumulative: unsupported dtype %s", dt)
	}
	return nil
}

func redScanFloat[T, A redFloat](c *Call, l *redLanes, prod bool) {
	src, dst := as[T](c.InB[0]), as[T](c.OutB[0])
	l.each(func(in, out, os int) {
		var acc A
		if prod {
			acc = 1
		}
		for i := 0; i < l.n; i++ {
			if prod {
				acc *= A(src[in+i*l.inStride])
			} else {
				acc += A(src[in+i*l.inStride])
			}
			dst[out+i*os] = T(acc)
		}
	})
}

func redScanHalf[T any](c *Call, l *redLanes, prod bool, load func(T) float32, store func(float32) T) {
	src, dst := as[T](c.InB[0]), as[T](c.OutB[0])
	l.each(func(in, out, os int) {
		var acc float32
		if prod {
			acc = 1
		}
		for i := 0; i < l.n; i++ {
			if prod {
				acc *= load(src[in+i*l.inStride])
			} else {
				acc += load(src[in+i*l.inStride])
			}
			dst[out+i*os] = store(acc)
		}
	})
}

func redScanInt[T redInt](c *Call, l *redLanes, prod bool) {
	src, dst := as[T](c.InB[0]), as[T](c.OutB[0])
	l.each(func(in, out, os int) {
		var acc int64
		if prod {
			acc = 1
		}
		for i := 0; i < l.n; i++ {
			if prod {
				acc *= int64(src[in+i*l.inStride])
			} else {
				acc += int64(src[in+i*l.inStride])
			}
			dst[out+i*os] = T(acc)
		}
	})
}

// runSort sorts every lane along dim stably, writing values and indices.
func runSort(c *Call) error {
	ax, err := redLaneAxis(c, "sort")
	if err != nil {
		return err
	}
	desc := c.Attrs.Bool("descending")
	l := newRedLanes(c.In[0], c.Out[0], ax)
	switch dt := c.In[0].DType; dt {
	case dtype.F32:
		sortLanes(c, l, desc, func(x float32) uint64 { return sortFloatKey(float64(x)) })
	case dtype.F64:
		sortLanes(c, l, desc, sortFloatKey)
	case dtype.BF16:
		sortLanes(c, l, desc, func(x dtype.BFloat16) uint64 { return sortFloatKey(bf(x)) })
	case dtype.F16:
		sortLanes(c, l, desc, func(x dtype.Float16) uint64 { return sortFloatKey(hf(x)) })
	case dtype.U8, dtype.Bool:
		sortLanes(c, l, desc, func(x uint8) uint64 { return uint64(x) })
	case dtype.I8:
		sortLanes(c, l, desc, func(x int8) uint64 { return sortIntKey(int64(x)) })
	case dtype.I16:
		sortLanes(c, l, desc, func(x int16) uint64 { return sortIntKey(int64(x)) })
	case dtype.I32:
		sortLanes(c, l, desc, func(x int32) uint64 { return sortIntKey(int64(x)) })
	case dtype.I64:
		sortLanes(c, l, desc, sortIntKey)
	default:
		return fmt.Errorf("sort: unsupported dtype %s", dt)
	}
	return nil
}

// sortFloatKey maps a float to an unsigned key with the same order, every NaN
// the largest key and -0 equal to +0 (so ties between them stay stable).
func sortFloatKey(f float64) uint64 {
	if f != f {
		return math.MaxUint64
	}
	if f == 0 {
		f = 0
	}
	b := math.Float64bits(f)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// sortIntKey maps a signed integer to an unsigned key with the same order.
func sortIntKey(v int64) uint64 { return uint64(v) ^ 1<<63 }

// sortLanes sorts each lane by key(value); ties break on the original index,
// which makes the sort stable (descending order inverts the key, so ties
// still keep their original order, as PyTorch's stable sort does). Values are
// copied from the input, keeping NaN payloads and the sign of zero.
func sortLanes[T any](c *Call, l *redLanes, desc bool, key func(T) uint64) {
	src, dst, idst := as[T](c.InB[0]), as[T](c.OutB[0]), as[int64](c.OutB[1])
	ioff := c.Out[1].Offset - c.Out[0].Offset
	total := l.outer * l.inner
	if total == 0 || l.n == 0 {
		return
	}
	type pair struct {
		k uint64
		i int64
	}
	var flip uint64
	if desc {
		flip = math.MaxUint64
	}
	parallelFor(total, total*l.n*8, func(lo, hi int) {
		buf := make([]pair, l.n)
		l.eachRange(lo, hi, func(in, out, os int) {
			for i := range buf {
				buf[i] = pair{key(src[in+i*l.inStride]) ^ flip, int64(i)}
			}
			slices.SortFunc(buf, func(a, b pair) int {
				if a.k != b.k {
					if a.k < b.k {
						return -1
					}
					return 1
				}
				return cmp.Compare(a.i, b.i)
			})
			for i, p := range buf {
				dst[out+i*os] = src[in+int(p.i)*l.inStride]
				idst[out+ioff+i*os] = p.i
			}
		})
	})
}

// eachRange runs body for redLanes [lo, hi) sequentially.
func (l *redLanes) eachRange(lo, hi int, body func(inOff, outOff, outStride int)) {
	for li := lo; li < hi; li++ {
		o, i := li/l.inner, li%l.inner
		off := l.base
		for d, r := len(l.outerShape)-1, o; d >= 0; d-- {
			off += (r % l.outerShape[d]) * l.outerSt[d]
			r /= l.outerShape[d]
		}
		for d, r := len(l.innerSh)-1, i; d >= 0; d-- {
			off += (r % l.innerSh[d]) * l.innerSt[d]
			r /= l.innerSh[d]
		}
		body(off, l.outBase+o*l.n*l.inner+i, l.inner)
	}
}

// runSoftmax is the direct softmax / log_softmax kernel: per lane, the max,
// then the sum of exp(x - max) in float64, rounding once to the output dtype
// (which may differ from the input's when the dtype attribute is set).
func runSoftmax(c *Call, logSM bool) error {
	name := "softmax"
	if logSM {
		name = "log_softmax"
	}
	ax, err := redLaneAxis(c, name)
	if err != nil {
		return err
	}
	in, out := c.In[0], c.Out[0]
	if !out.DType.IsFloat() || in.DType == dtype.Bool {
		return fmt.Errorf("%s: unsupported dtypes %s -> %s", name, in.DType, out.DType)
	}
	l := newRedLanes(in, out, ax)
	switch {
	case in.DType == dtype.F32 && out.DType == dtype.F32:
		if fusedSoftmax(c, ax, logSM) { // dense last dim: fusednn.go
			return nil
		}
		softmaxRedLanes(l, as[float32](c.InB[0]), as[float32](c.OutB[0]), logSM)
		return nil
	case in.DType == dtype.F64 && out.DType == dtype.F64:
		softmaxRedLanes(l, as[float64](c.InB[0]), as[float64](c.OutB[0]), logSM)
		return nil
	case in.DType == dtype.BF16 && fusedSoftmaxBF16(c, ax, logSM): // dense last dim: bf16_nn.go
		return nil
	}
	inB, outB := c.InB[0], c.OutB[0]
	total := l.outer * l.inner
	if total == 0 || l.n == 0 {
		return nil
	}
	parallelFor(total, total*l.n*16, func(lo, hi int) {
		buf := make([]float64, l.n)
		l.eachRange(lo, hi, func(io, oo, os int) {
			mx := math.Inf(-1)
			for i := range buf {
				x := dtype.Float64At(in.DType, inB, io+i*l.inStride)
				buf[i] = x
				if x > mx || x != x {
					mx = x
				}
			}
			var s float64
			for _, x := range buf {
				s += math.Exp(x - mx)
			}
			if logSM {
				ls := math.Log(s)
				for i, x := range buf {
					dtype.PutFloat64(out.DType, outB, oo+i*os, x-mx-ls)
				}
				return
			}
			for i, x := range buf {
				dtype.PutFloat64(out.DType, outB, oo+i*os, math.Exp(x-mx)/s)
			}
		})
	})
	return nil
}

// softmaxRedLanes is the float32/float64 softmax without per-element dtype
// dispatch; it computes in float64 and rounds once.
func softmaxRedLanes[T redFloat](l *redLanes, src, dst []T, logSM bool) {
	total := l.outer * l.inner
	if total == 0 || l.n == 0 {
		return
	}
	parallelFor(total, total*l.n*16, func(lo, hi int) {
		buf := make([]float64, l.n)
		l.eachRange(lo, hi, func(io, oo, os int) {
			mx := math.Inf(-1)
			for i := range buf {
				x := float64(src[io+i*l.inStride])
				buf[i] = x
				if x > mx || x != x {
					mx = x
				}
			}
			var s float64
			for i, x := range buf {
				e := math.Exp(x - mx)
				if !logSM {
					buf[i] = e
				}
				s += e
			}
			if logSM {
				ls := mx + math.Log(s)
				for i, x := range buf {
					dst[oo+i*os] = T(x - ls)
				}
				return
			}
			inv := 1 / s
			for i, e := range buf {
				dst[oo+i*os] = T(e * inv)
			}
		})
	})
}

// runCumExtreme is cummax (isMax) or cummin along dim: as PyTorch, an
// element equal to the running extreme, or a NaN, takes over (so ties report
// the later index, and NaN, once seen, stays with the index of the latest NaN).
func runCumExtreme(c *Call, isMax bool) error {
	name := "cummin"
	if isMax {
		name = "cummax"
	}
	ax, err := redLaneAxis(c, name)
	if err != nil {
		return err
	}
	l := newRedLanes(c.In[0], c.Out[0], ax)
	switch dt := c.In[0].DType; dt {
	case dtype.F32:
		cumExtreme(c, l, isMax, func(x float32) float64 { return float64(x) })
	case dtype.F64:
		cumExtreme(c, l, isMax, func(x float64) float64 { return x })
	case dtype.BF16:
		cumExtreme(c, l, isMax, bf)
	case dtype.F16:
		cumExtreme(c, l, isMax, hf)
	case dtype.U8, dtype.Bool:
		cumExtreme(c, l, isMax, func(x uint8) float64 { return float64(x) })
	case dtype.I8:
		cumExtreme(c, l, isMax, func(x int8) float64 { return float64(x) })
	case dtype.I16:
		cumExtreme(c, l, isMax, func(x int16) float64 { return float64(x) })
	case dtype.I32:
		cumExtreme(c, l, isMax, func(x int32) float64 { return float64(x) })
	case dtype.I64:
		cumExtremeI64(c, l, isMax)
	default:
		return fmt.Errorf("%s: unsupported dtype %s", name, dt)
	}
	return nil
}

// cumExtreme compares through float64, which is exact for every dtype but
// int64 (handled by cumExtremeI64).
func cumExtreme[T any](c *Call, l *redLanes, isMax bool, load func(T) float64) {
	src, dst, idst := as[T](c.InB[0]), as[T](c.OutB[0]), as[int64](c.OutB[1])
	ioff := c.Out[1].Offset - c.Out[0].Offset
	l.each(func(in, out, os int) {
		best, bi := 0.0, int64(0)
		var bv T
		for i := 0; i < l.n; i++ {
			v := src[in+i*l.inStride]
			x := load(v)
			if i == 0 || x != x || (best == best && ((isMax && x >= best) || (!isMax && x <= best))) {
				best, bi, bv = x, int64(i), v
			}
			dst[out+i*os] = bv
			idst[out+ioff+i*os] = bi
		}
	})
}

func cumExtremeI64(c *Call, l *redLanes, isMax bool) {
	src, dst, idst := as[int64](c.InB[0]), as[int64](c.OutB[0]), as[int64](c.OutB[1])
	ioff := c.Out[1].Offset - c.Out[0].Offset
	l.each(func(in, out, os int) {
		var best, bi int64
		for i := 0; i < l.n; i++ {
			x := src[in+i*l.inStride]
			if i == 0 || (isMax && x >= best) || (!isMax && x <= best) {
				best, bi = x, int64(i)
			}
			dst[out+i*os] = best
			idst[out+ioff+i*os] = bi
		}
	})
}

// sumInterleaved is the sum over everything but one kept dimension (a bias
// gradient: sum over batch and space per channel) with four outputs' float64
// chains in flight at once. Each output still adds its elements one at a
// time in the same order (its runs are output 0's shifted by the kept
// stride), so the bits are the one-output loop's; a single chain waits on
// the adder's latency for every element. It reports false for other plans.
func sumInterleaved[T redFloat](src, dst []T, p *redPlan) bool {
	if len(p.keptShape) != 1 || p.nOut < 2 || p.nRed < 1024 {
		return false
	}
	type run struct{ off, n, st int }
	var runs []run
	p.runs(0, make([]int, len(p.redShape)), func(off, n, st int) bool {
		runs = append(runs, run{off, n, st})
		return true
	})
	sk := p.keptStrides[0]
	g := min(4, ceilDiv(p.nOut, runtime.GOMAXPROCS(0)))
	groups := ceilDiv(p.nOut, g)
	parallelFor(groups, p.nOut*p.nRed, func(lo, hi int) {
		for gi := lo; gi < hi; gi++ {
			o0 := gi * g
			var b [4]int // the group's outputs (a short group repeats its last)
			for j := range b {
				b[j] = p.base + min(o0+j, o0+g-1, p.nOut-1)*sk
			}
			var a0, a1, a2, a3 float64
			for _, r := range runs {
				if r.st == 1 {
					s0, s1, s2, s3 := src[b[0]+r.off:][:r.n], src[b[1]+r.off:][:r.n], src[b[2]+r.off:][:r.n], src[b[3]+r.off:][:r.n]
					for i := range s0 {
						a0 += float64(s0[i])
						a1 += float64(s1[i])
						a2 += float64(s2[i])
						a3 += float64(s3[i])
					}
					continue
				}
				for i := 0; i < r.n; i++ {
					k := r.off + i*r.st
					a0 += float64(src[b[0]+k])
					a1 += float64(src[b[1]+k])
					a2 += float64(src[b[2]+k])
					a3 += float64(src[b[3]+k])
				}
			}
			for j, a := range [4]float64{a0, a1, a2, a3} {
				if o := o0 + j; j < g && o < p.nOut {
					dst[o] = T(a)
				}
			}
		}
	})
	return true
}
