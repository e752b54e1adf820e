package cpu

import (
	"github.com/gotpu/gotpu/dtype"
)

// This file holds the generic strided loops elementwise kernels are built
// from. Kernels see inputs already broadcast to the output shape (op.Def
// Broadcast) and a contiguous output.

// unaryLoop applies f from input 0 to output 0.
func unaryLoop[I, O any](c *Call, f func(I) O) {
	in, out := c.In[0], c.Out[0]
	src, dst := as[I](c.InB[0]), as[O](c.OutB[0])
	forEachRun(out.Shape, [][]int{out.Strides, in.Strides}, []int{out.Offset, in.Offset}, func(offs []int, n int, inner []int) {
		o, a, sa := offs[0], offs[1], inner[1]
		d := dst[o : o+n]
		if sa == 1 {
			s := src[a : a+n]
			for i := range d {
				d[i] = f(s[i])
			}
			return
		}
		for i := range d {
			d[i] = f(src[a+i*sa])
		}
	})
}

// binaryLoop applies f to inputs 0 and 1, writing output 0.
func binaryLoop[A, B, O any](c *Call, f func(A, B) O) {
	x, y, out := c.In[0], c.In[1], c.Out[0]
	xs, ys, dst := as[A](c.InB[0]), as[B](c.InB[1]), as[O](c.OutB[0])
	forEachRun(out.Shape, [][]int{out.Strides, x.Strides, y.Strides}, []int{out.Offset, x.Offset, y.Offset}, func(offs []int, n int, inner []int) {
		o, a, b := offs[0], offs[1], offs[2]
		sa, sb := inner[1], inner[2]
		d := dst[o : o+n]
		switch {
		case sa == 1 && sb == 1:
			xa, yb := xs[a:a+n], ys[b:b+n]
			for i := range d {
				d[i] = f(xa[i], yb[i])
			}
		case sa == 1 && sb == 0:
			xa, yv := xs[a:a+n], ys[b]
			for i := range d {
				d[i] = f(xa[i], yv)
			}
		case sa == 0 && sb == 1:
			xv, yb := xs[a], ys[b:b+n]
			for i := range d {
				d[i] = f(xv, yb[i])
			}
		default:
			for i := range d {
				d[i] = f(xs[a+i*sa], ys[b+i*sb])
			}
		}
	})
}

// ternaryLoop applies f to inputs 0, 1 and 2, writing output 0.
func ternaryLoop[A, B, C, O any](c *Call, f func(A, B, C) O) {
	x, y, z, out := c.In[0], c.In[1], c.In[2], c.Out[0]
	xs, ys, zs, dst := as[A](c.InB[0]), as[B](c.InB[1]), as[C](c.InB[2]), as[O](c.OutB[0])
	forEachRun(out.Shape, [][]int{out.Strides, x.Strides, y.Strides, z.Strides}, []int{out.Offset, x.Offset, y.Offset, z.Offset}, func(offs []int, n int, inner []int) {
		o, a, b, cc := offs[0], offs[1], offs[2], offs[3]
		sa, sb, sc := inner[1], inner[2], inner[3]
		d := dst[o : o+n]
		for i := range d {
			d[i] = f(xs[a+i*sa], ys[b+i*sb], zs[cc+i*sc])
		}
	})
}

// Float conversions for the narrow float types, used by the generic loops.
func bf(x dtype.BFloat16) float64 { return float64(x.F32()) }
func hf(x dtype.Float16) float64  { return float64(x.F32()) }
func tobf(x float64) dtype.BFloat16 {
	return dtype.BF16FromF32(float32(x))
}
func tohf(x float64) dtype.Float16 { return dtype.F16FromF32(float32(x)) }

// floatUnary runs f on a floating input of any width, computing in float64
// and rounding once to the output dtype (the same dtype as the input).
func floatUnary(c *Call, f func(float64) float64) {
	switch c.In[0].DType {
	case dtype.F32:
		unaryLoop(c, func(x float32) float32 { return float32(f(float64(x))) })
	case dtype.F64:
		unaryLoop(c, f)
	case dtype.BF16:
		unaryLoop(c, func(x dtype.BFloat16) dtype.BFloat16 { return tobf(f(bf(x))) })
	case dtype.F16:
		unaryLoop(c, func(x dtype.Float16) dtype.Float16 { return tohf(f(hf(x))) })
	default:
		panic("cpu: floatUnary on " + c.In[0].DType.String())
	}
}

// floatPred runs a predicate on a floating input, writing bool.
func floatPred(c *Call, f func(float64) bool) {
	switch c.In[0].DType {
	case dtype.F32:
		unaryLoop(c, func(x float32) bool { return f(float64(x)) })
	case dtype.F64:
		unaryLoop(c, f)
	case dtype.BF16:
		unaryLoop(c, func(x dtype.BFloat16) bool { return f(bf(x)) })
	case dtype.F16:
		unaryLoop(c, func(x dtype.Float16) bool { return f(hf(x)) })
	default:
		panic("cpu: floatPred on " + c.In[0].DType.String())
	}
}

// intUnary runs f on an integer input, wrapping the result to the dtype.
func intUnary(c *Call, f func(int64) int64) {
	switch c.In[0].DType {
	case dtype.U8:
		unaryLoop(c, func(x uint8) uint8 { return uint8(f(int64(x))) })
	case dtype.I8:
		unaryLoop(c, func(x int8) int8 { return int8(f(int64(x))) })
	case dtype.I16:
		unaryLoop(c, func(x int16) int16 { return int16(f(int64(x))) })
	case dtype.I32:
		unaryLoop(c, func(x int32) int32 { return int32(f(int64(x))) })
	case dtype.I64:
		unaryLoop(c, f)
	case dtype.Bool:
		unaryLoop(c, func(x bool) bool { return f(b2i(x)) != 0 })
	default:
		panic("cpu: intUnary on " + c.In[0].DType.String())
	}
}

// intPred runs a predicate on an integer or bool input, writing bool.
func intPred(c *Call, f func(int64) bool) {
	switch c.In[0].DType {
	case dtype.U8:
		unaryLoop(c, func(x uint8) bool { return f(int64(x)) })
	case dtype.I8:
		unaryLoop(c, func(x int8) bool { return f(int64(x)) })
	case dtype.I16:
		unaryLoop(c, func(x int16) bool { return f(int64(x)) })
	case dtype.I32:
		unaryLoop(c, func(x int32) bool { return f(int64(x)) })
	case dtype.I64:
		unaryLoop(c, f)
	case dtype.Bool:
		unaryLoop(c, func(x bool) bool { return f(b2i(x)) })
	default:
		panic("cpu: intPred on " + c.In[0].DType.String())
	}
}

func b2i(x bool) int64 {
	if x {
		return 1
	}
	return 0
}

// floatBinary runs f on two floating inputs of the same dtype.
func floatBinary(c *Call, f func(a, b float64) float64) {
	switch c.In[0].DType {
	case dtype.F32:
		binaryLoop(c, func(a, b float32) float32 { return float32(f(float64(a), float64(b))) })
	case dtype.F64:
		binaryLoop(c, f)
	case dtype.BF16:
		binaryLoop(c, func(a, b dtype.BFloat16) dtype.BFloat16 { return tobf(f(bf(a), bf(b))) })
	case dtype.F16:
		binaryLoop(c, func(a, b dtype.Float16) dtype.Float16 { return tohf(f(hf(a), hf(b))) })
	default:
		panic("cpu: floatBinary on " + c.In[0].DType.String())
	}
}

// intBinary runs f on two integer (or bool) inputs of the same dtype,
// wrapping the result to the dtype.
func intBinary(c *Call, f func(a, b int64) int64) {
	switch c.In[0].DType {
	case dtype.U8:
		binaryLoop(c, func(a, b uint8) uint8 { return uint8(f(int64(a), int64(b))) })
	case dtype.I8:
		binaryLoop(c, func(a, b int8) int8 { return int8(f(int64(a), int64(b))) })
	case dtype.I16:
		binaryLoop(c, func(a, b int16) int16 { return int16(f(int64(a), int64(b))) })
	case dtype.I32:
		binaryLoop(c, func(a, b int32) int32 { return int32(f(int64(a), int64(b))) })
	case dtype.I64:
		binaryLoop(c, f)
	case dtype.Bool:
		binaryLoop(c, func(a, b bool) bool { return f(b2i(a), b2i(b)) != 0 })
	default:
		panic("cpu: intBinary on " + c.In[0].DType.String())
	}
}

// cmpBinary runs a comparison on two inputs of the same dtype, writing bool.
func cmpBinary(c *Call, ff func(a, b float64) bool, fi func(a, b int64) bool) {
	switch c.In[0].DType {
	case dtype.F32:
		binaryLoop(c, func(a, b float32) bool { return ff(float64(a), float64(b)) })
	case dtype.F64:
		binaryLoop(c, ff)
	case dtype.BF16:
		binaryLoop(c, func(a, b dtype.BFloat16) bool { return ff(bf(a), bf(b)) })
	case dtype.F16:
		binaryLoop(c, func(a, b dtype.Float16) bool { return ff(hf(a), hf(b)) })
	case dtype.U8:
		binaryLoop(c, func(a, b uint8) bool { return fi(int64(a), int64(b)) })
	case dtype.I8:
		binaryLoop(c, func(a, b int8) bool { return fi(int64(a), int64(b)) })
	case dtype.I16:
		binaryLoop(c, func(a, b int16) bool { return fi(int64(a), int64(b)) })
	case dtype.I32:
		binaryLoop(c, func(a, b int32) bool { return fi(int64(a), int64(b)) })
	case dtype.I64:
		binaryLoop(c, fi)
	case dtype.Bool:
		binaryLoop(c, func(a, b bool) bool { return fi(b2i(a), b2i(b)) })
	}
}

// numBinary dispatches to floatBinary or intBinary by dtype.
func numBinary(c *Call, ff func(a, b float64) float64, fi func(a, b int64) int64) {
	if c.In[0].DType.IsFloat() {
		floatBinary(c, ff)
	} else {
		intBinary(c, fi)
	}
}

// numUnary dispatches to floatUnary or intUnary by dtype.
func numUnary(c *Call, ff func(float64) float64, fi func(int64) int64) {
	if c.In[0].DType.IsFloat() {
		floatUnary(c, ff)
	} else {
		intUnary(c, fi)
	}
}
