package cpu

import (
	"errors"
	"math"
	"sync/atomic"

	"github.com/gotpu/gotpu/backend/cpu/internal/vec"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Kernels of the elementwise group: every primitive of op/unary.go and
// op/binary.go, and direct kernels for the hot or precision-sensitive
// composites (activations, inverse trig, remainder, clamp, lerp, ...), which
// the conformance suite checks against their decompositions.
//
// Floating kernels compute in float64 and round once to the output dtype,
// except where PyTorch rounds an intermediate to the input dtype (division
// with a rounding mode, round with decimals): there the rounding is repeated
// with roundTo so results agree with PyTorch bit for bit.

// ErrZeroDivision is returned by integer division, remainder and fmod when a
// divisor is zero (PyTorch raises ZeroDivisionError).
var ErrZeroDivision = errors.New("ZeroDivisionError: integer division or modulo by zero")

func init() {
	registerUnaryKernels()
	registerBinaryKernels()
	registerCompositeKernels()
}

// roundTo returns a function that rounds a float64 to dtype d's precision.
func roundTo(d dtype.DType) func(float64) float64 {
	switch d {
	case dtype.F32:
		return func(x float64) float64 { return float64(float32(x)) }
	case dtype.BF16:
		return func(x float64) float64 { return bf(tobf(x)) }
	case dtype.F16:
		return func(x float64) float64 { return hf(tohf(x)) }
	}
	return func(x float64) float64 { return x }
}

// wrapInt converts v to dtype d's integer range with two's-complement
// wrap-around, as a C cast does.
func wrapInt(v int64, d dtype.DType) int64 {
	switch d {
	case dtype.U8:
		return int64(uint8(v))
	case dtype.I8:
		return int64(int8(v))
	case dtype.I16:
		return int64(int16(v))
	case dtype.I32:
		return int64(int32(v))
	case dtype.Bool:
		if v != 0 {
			return 1
		}
		return 0
	}
	return v
}

func reg(d *op.Def, set op.Set, run func(c *Call) error) {
	RegisterKernel(d, Kernel{DTypes: set, Run: run})
}

// regFloatUnary registers the float kernel of unary op d: the vec kernel
// of the call's table for dense f32 and bf16 data (vecUnaryFor, vec.go;
// bf16_elem.go), else f element by element.
func regFloatUnary(d *op.Def, f func(float64) float64) {
	v := vecUnaryFor(d)
	reg(d, op.SetFloats, func(c *Call) error {
		if v != nil {
			k := c.kernels().vec
			if vecRunUnary(c, func(dst, a []float32) { v(k, dst, a) }) {
				return nil
			}
		}
		floatUnary(c, f)
		return nil
	})
}

// Unary primitives.

func registerUnaryKernels() {
	regFloatUnary(op.Exp, math.Exp)
	regFloatUnary(op.Expm1, math.Expm1)
	regFloatUnary(op.Log, logf)
	regFloatUnary(op.Log1p, math.Log1p)
	regFloatUnary(op.Sqrt, math.Sqrt)
	regFloatUnary(op.Rsqrt, func(x float64) float64 { return 1 / math.Sqrt(x) })
	regFloatUnary(op.Sin, math.Sin)
	regFloatUnary(op.Cos, math.Cos)
	regFloatUnary(op.Tan, math.Tan)
	regFloatUnary(op.Tanh, math.Tanh)
	regFloatUnary(op.Sigmoid, sigmoid)
	regFloatUnary(op.Erf, math.Erf)
	regFloatUnary(op.Erfc, math.Erfc)
	regFloatUnary(op.Erfinv, math.Erfinv)

	ident := func(x int64) int64 { return x }
	reg(op.Neg, op.SetNumeric, func(c *Call) error {
		numUnary(c, func(x float64) float64 { return -x }, func(x int64) int64 { return -x })
		return nil
	})
	reg(op.Abs, op.SetNumeric, func(c *Call) error {
		numUnary(c, math.Abs, func(x int64) int64 {
			if x < 0 {
				return -x
			}
			return x
		})
		return nil
	})
	reg(op.Sign, op.SetAll, func(c *Call) error {
		numUnary(c, func(x float64) float64 {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return 0
		}, func(x int64) int64 {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return 0
		})
		return nil
	})
	reg(op.Floor, op.SetNumeric, func(c *Call) error { numUnary(c, math.Floor, ident); return nil })
	reg(op.Ceil, op.SetNumeric, func(c *Call) error { numUnary(c, math.Ceil, ident); return nil })
	reg(op.RoundNearestEven, op.SetNumeric, func(c *Call) error { numUnary(c, math.RoundToEven, ident); return nil })
	reg(op.BitwiseNot, op.SetBits, func(c *Call) error {
		if c.In[0].DType == dtype.Bool {
			unaryLoop(c, func(x bool) bool { return !x })
			return nil
		}
		intUnary(c, func(x int64) int64 { return ^x })
		return nil
	})
	reg(op.Signbit, op.SetAll, func(c *Call) error {
		if c.In[0].DType.IsFloat() {
			floatPred(c, math.Signbit)
		} else {
			intPred(c, func(x int64) bool { return x < 0 })
		}
		return nil
	})
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// Binary primitives.

func registerBinaryKernels() {
	reg(op.Add, op.SetAll, func(c *Call) error { return addSub(c, 1) })
	reg(op.Sub, op.SetNumeric, func(c *Call) error { return addSub(c, -1) })
	reg(op.Mul, op.SetAll, func(c *Call) error {
		switch c.In[0].DType {
		case dtype.F32:
			arith[float32](c, '*')
		case dtype.F64:
			arith[float64](c, '*')
		default:
			if bf16RunBinary(c, vecOpMul) { // bf16_elem.go
				return nil
			}
			numBinary(c, func(a, b float64) float64 { return a * b }, func(a, b int64) int64 { return a * b })
		}
		return nil
	})
	reg(op.Div, op.SetNumeric, divKernel)
	reg(op.Fmod, op.SetNumeric, func(c *Call) error {
		return intOrFloat(c, math.Mod, func(a, b int64) int64 { return a % b })
	})
	reg(op.Pow, op.SetNumeric, func(c *Call) error {
		numBinary(c, math.Pow, ipow)
		return nil
	})
	reg(op.Atan2, op.SetFloats, func(c *Call) error { floatBinary(c, math.Atan2); return nil })
	reg(op.Maximum, op.SetAll, func(c *Call) error {
		if vecRunBinary(c, vecOpMaximum) {
			return nil
		}
		numBinary(c, maxNaN, func(a, b int64) int64 { return max(a, b) })
		return nil
	})
	reg(op.Minimum, op.SetAll, func(c *Call) error {
		numBinary(c, minNaN, func(a, b int64) int64 { return min(a, b) })
		return nil
	})
	reg(op.BitwiseAnd, op.SetBits, func(c *Call) error { intBinary(c, func(a, b int64) int64 { return a & b }); return nil })
	reg(op.BitwiseOr, op.SetBits, func(c *Call) error { intBinary(c, func(a, b int64) int64 { return a | b }); return nil })
	reg(op.BitwiseXor, op.SetBits, func(c *Call) error { intBinary(c, func(a, b int64) int64 { return a ^ b }); return nil })
	reg(op.BitwiseLeftShift, op.SetIntegral, func(c *Call) error {
		bits := int64(8 * c.In[0].DType.Size())
		intBinary(c, func(a, b int64) int64 {
			if b < 0 || b >= bits {
				return 0
			}
			return int64(uint64(a) << uint(b))
		})
		return nil
	})
	reg(op.BitwiseRightShift, op.SetIntegral, func(c *Call) error {
		dt := c.In[0].DType
		maxShift := int64(8*dt.Size()) - 1 // keeps the sign of signed types
		if dt == dtype.U8 {
			maxShift = 8
		}
		intBinary(c, func(a, b int64) int64 {
			if b < 0 || b >= maxShift {
				return a >> uint(maxShift)
			}
			return a >> uint(b)
		})
		return nil
	})
	cmp := func(d *op.Def, ff func(a, b float64) bool, fi func(a, b int64) bool) {
		kind := cmpKinds[d]
		reg(d, op.SetAll, func(c *Call) error {
			if c.In[0].DType == dtype.F32 && cmpF32(c, kind) {
				return nil
			}
			cmpBinary(c, ff, fi)
			return nil
		})
	}
	cmp(op.Eq, func(a, b float64) bool { return a == b }, func(a, b int64) bool { return a == b })
	cmp(op.Ne, func(a, b float64) bool { return a != b }, func(a, b int64) bool { return a != b })
	cmp(op.Lt, func(a, b float64) bool { return a < b }, func(a, b int64) bool { return a < b })
	cmp(op.Le, func(a, b float64) bool { return a <= b }, func(a, b int64) bool { return a <= b })
	cmp(op.Gt, func(a, b float64) bool { return a > b }, func(a, b int64) bool { return a > b })
	cmp(op.Ge, func(a, b float64) bool { return a >= b }, func(a, b int64) bool { return a >= b })
	reg(op.Where, op.SetAll, func(c *Call) error {
		switch c.In[1].DType.Size() {
		case 1:
			ternaryLoop(c, pick[uint8])
		case 2:
			ternaryLoop(c, pick[uint16])
		case 4:
			if c.In[0].DType == dtype.Bool {
				whereLoop32(c)
				return nil
			}
			ternaryLoop(c, pick[uint32])
		case 8:
			ternaryLoop(c, pick[uint64])
		}
		return nil
	})
}

// arith is the fast path of f32/f64 +, -, *, /: the operator is chosen once
// per run instead of through a function value per element, and the common
// contiguous and scalar-broadcast runs are plain slice loops.
func arith[T float32 | float64](c *Call, op byte) {
	if vecRunArith(c, op) { // dense f32: vec.go
		return
	}
	x, y, out := c.In[0], c.In[1], c.Out[0]
	xs, ys, dst := as[T](c.InB[0]), as[T](c.InB[1]), as[T](c.OutB[0])
	forEachRun(out.Shape, [][]int{out.Strides, x.Strides, y.Strides}, []int{out.Offset, x.Offset, y.Offset}, func(offs []int, n int, inner []int) {
		o, a, b := offs[0], offs[1], offs[2]
		sa, sb := inner[1], inner[2]
		d := dst[o : o+n]
		switch {
		case sa == 1 && sb == 1:
			xa, yb := xs[a:a+n], ys[b:b+n]
			switch op {
			case '+':
				for i := range d {
					d[i] = xa[i] + yb[i]
				}
			case '-':
				for i := range d {
					d[i] = xa[i] - yb[i]
				}
			case '*':
				for i := range d {
					d[i] = xa[i] * yb[i]
				}
			case '/':
				for i := range d {
					d[i] = xa[i] / yb[i]
				}
			}
		case sa == 1 && sb == 0:
			xa, v := xs[a:a+n], ys[b]
			switch op {
			case '+':
				for i := range d {
					d[i] = xa[i] + v
				}
			case '-':
				for i := range d {
					d[i] = xa[i] - v
				}
			case '*':
				for i := range d {
					d[i] = xa[i] * v
				}
			case '/':
				for i := range d {
					d[i] = xa[i] / v
				}
			}
		default:
			for i := range d {
				p, q := xs[a+i*sa], ys[b+i*sb]
				switch op {
				case '+':
					d[i] = p + q
				case '-':
					d[i] = p - q
				case '*':
					d[i] = p * q
				case '/':
					d[i] = p / q
				}
			}
		}
	})
}

// whereLoop32 is where for a bool condition and 4-byte values, without a
// branch per element (a ReLU gradient's condition is as good as random, and
// its mispredictions cost more than the select) nor a call per element:
// each run selects by mask, out = y ^ ((x ^ y) & -(cond != 0)). Condition
// and values may be dense or broadcast along the run.
func whereLoop32(c *Call) {
	ks := c.kernels()
	x, y, z, out := c.In[0], c.In[1], c.In[2], c.Out[0]
	cs, xs, ys, dst := c.InB[0], as[uint32](c.InB[1]), as[uint32](c.InB[2]), as[uint32](c.OutB[0])
	forEachRun(out.Shape, [][]int{out.Strides, x.Strides, y.Strides, z.Strides}, []int{out.Offset, x.Offset, y.Offset, z.Offset}, func(offs []int, n int, inner []int) {
		o, a, b, cc := offs[0], offs[1], offs[2], offs[3]
		sa, sb, sc := inner[1], inner[2], inner[3]
		d := dst[o : o+n]
		cr := cs[a:]
		switch {
		case sa == 1 && sb == 1 && sc == 1:
			vecParallel(n, func(lo, hi int) { ks.vec.Select32(d[lo:hi], cr[lo:hi], xs[b+lo:b+hi], ys[cc+lo:cc+hi], 0) })
		case sa == 1 && sb == 1 && sc == 0:
			// One value broadcast (a ReLU gradient's zero).
			vecParallel(n, func(lo, hi int) { ks.vec.Select32(d[lo:hi], cr[lo:hi], xs[b+lo:b+hi], ys[cc:cc+1], 1) })
		case sa == 1 && sb == 0 && sc == 1:
			vecParallel(n, func(lo, hi int) { ks.vec.Select32(d[lo:hi], cr[lo:hi], xs[b:b+1], ys[cc+lo:cc+hi], 2) })
		default:
			for i := range d {
				d[i] = vec.SelectBits(cs[a+i*sa], xs[b+i*sb], ys[cc+i*sc])
			}
		}
	})
}

func pick[T any](c bool, x, y T) T {
	if c {
		return x
	}
	return y
}

// maxNaN and minNaN are torch.maximum/minimum: NaN if either is NaN, else
// std::max / std::min (the first operand on ties, so max(-0, 0) is -0).
func maxNaN(a, b float64) float64 {
	if a != a || b != b {
		return math.NaN()
	}
	if a < b {
		return b
	}
	return a
}

func minNaN(a, b float64) float64 {
	if a != a || b != b {
		return math.NaN()
	}
	if b < a {
		return b
	}
	return a
}

// addSub computes input + sign*alpha*other.
func addSub(c *Call, sign float64) error {
	al := c.Attrs["alpha"]
	dt := c.In[0].DType
	if dt.IsFloat() {
		// PyTorch casts alpha to the op's compute type (f32 for f32/bf16/f16).
		alpha := op.ScalarAs(al, dtype.F64).(float64) * sign
		if dt != dtype.F64 {
			alpha = float64(float32(alpha))
		}
		switch {
		case dt == dtype.F32 && alpha == 1:
			arith[float32](c, '+')
		case dt == dtype.F32 && alpha == -1:
			arith[float32](c, '-')
		case dt == dtype.F64 && alpha == 1:
			arith[float64](c, '+')
		case dt == dtype.F64 && alpha == -1:
			arith[float64](c, '-')
		case dt == dtype.F64:
			binaryLoop(c, func(a, b float64) float64 { return math.FMA(alpha, b, a) })
		case dt == dtype.BF16 && alpha == 1 && bf16RunBinary(c, vecOpAdd): // bf16_elem.go
		case dt == dtype.BF16 && alpha == -1 && bf16RunBinary(c, vecOpSub):
		default:
			floatBinary(c, func(a, b float64) float64 { return a + alpha*b })
		}
		return nil
	}
	alpha := op.ScalarAs(al, dtype.I64).(int64) * int64(sign)
	intBinary(c, func(a, b int64) int64 { return a + alpha*b })
	return nil
}

// intOrFloat runs ff on floats and fi on integers, fi guarded against a zero
// divisor (which makes the kernel return ErrZeroDivision).
func intOrFloat(c *Call, ff func(a, b float64) float64, fi func(a, b int64) int64) error {
	if c.In[0].DType.IsFloat() {
		floatBinary(c, ff)
		return nil
	}
	var zero atomic.Bool
	intBinary(c, func(a, b int64) int64 {
		if b == 0 {
			zero.Store(true)
			return 0
		}
		return fi(a, b)
	})
	if zero.Load() {
		return ErrZeroDivision
	}
	return nil
}

func divKernel(c *Call) error {
	mode, _ := c.Attrs["rounding_mode"].(string)
	dt := c.In[0].DType
	if dt.IsFloat() {
		r := roundTo(dt)
		switch mode {
		case "trunc":
			floatBinary(c, func(a, b float64) float64 { return math.Trunc(r(a / b)) })
		case "floor":
			floatBinary(c, func(a, b float64) float64 { return divFloor(a, b, r) })
		default:
			switch dt {
			case dtype.F32:
				arith[float32](c, '/')
			case dtype.F64:
				arith[float64](c, '/')
			default:
				if bf16RunBinary(c, vecOpDiv) { // bf16_elem.go
					return nil
				}
				floatBinary(c, func(a, b float64) float64 { return a / b })
			}
		}
		return nil
	}
	if mode == "floor" {
		return intOrFloat(c, nil, floorDivInt)
	}
	return intOrFloat(c, nil, func(a, b int64) int64 { return a / b })
}

func floorDivInt(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// divFloor is PyTorch's floor division of floats (c10::div_floor_floating),
// with every intermediate rounded to the input dtype by r.
func divFloor(a, b float64, r func(float64) float64) float64 {
	if b == 0 {
		return r(a / b)
	}
	mod := math.Mod(a, b)
	div := r(r(a-mod) / b)
	if mod != 0 && (b < 0) != (mod < 0) {
		div = r(div - 1)
	}
	if div == 0 {
		return math.Copysign(0, r(a/b))
	}
	fl := math.Floor(div)
	if r(div-fl) > 0.5 {
		fl = r(fl + 1)
	}
	return fl
}

// ipow is an integer power with wrap-around; negative exponents give 0
// except for bases 1 and -1, as PyTorch's integer pow does.
func ipow(a, b int64) int64 {
	if b < 0 {
		switch a {
		case 1:
			return 1
		case -1:
			if b&1 != 0 {
				return -1
			}
			return 1
		}
		return 0
	}
	r := int64(1)
	for b > 0 {
		if b&1 != 0 {
			r *= a
		}
		a *= a
		b >>= 1
	}
	return r
}

// remainderF is Python's float modulo: fmod adjusted to the divisor's sign.
func remainderF(a, b float64) float64 {
	m := math.Mod(a, b)
	if m != 0 && (b < 0) != (m < 0) {
		m += b
	}
	return m
}

func remainderI(a, b int64) int64 {
	m := a % b
	if m != 0 && (b < 0) != (m < 0) {
		m += b
	}
	return m
}

// Direct kernels of composites.

func registerCompositeKernels() {
	regFloatUnary(op.Exp2, math.Exp2)
	regFloatUnary(op.Log2, math.Log2)
	regFloatUnary(op.Log10, func(x float64) float64 { return logf(x) * (1 / math.Ln10) })
	regFloatUnary(op.Asin, math.Asin)
	regFloatUnary(op.Acos, math.Acos)
	regFloatUnary(op.Atan, math.Atan)
	regFloatUnary(op.Sinh, math.Sinh)
	regFloatUnary(op.Cosh, math.Cosh)
	regFloatUnary(op.Asinh, math.Asinh)
	regFloatUnary(op.Acosh, math.Acosh)
	regFloatUnary(op.Atanh, math.Atanh)
	regFloatUnary(op.Silu, func(x float64) float64 { return x / (1 + math.Exp(-x)) })
	regFloatUnary(op.Mish, func(x float64) float64 { return x * math.Tanh(math.Log1p(math.Exp(x))) })
	regFloatUnary(op.Hardsigmoid, func(x float64) float64 { return min(max(x+3, 0), 6) / 6 })
	regFloatUnary(op.Hardswish, func(x float64) float64 { return x * min(max(x+3, 0), 6) / 6 })
	regFloatUnary(op.Frac, func(x float64) float64 { return x - math.Trunc(x) })
	reg(op.Selu, op.SetFloats, func(c *Call) error {
		floatUnary(c, func(x float64) float64 { return elu(x, op.SeluAlpha, op.SeluScale, 1) })
		return nil
	})
	reg(op.Elu, op.SetFloats, func(c *Call) error {
		al, s, is := c.Attrs.Float("alpha"), c.Attrs.Float("scale"), c.Attrs.Float("input_scale")
		floatUnary(c, func(x float64) float64 { return elu(x, al, s, is) })
		return nil
	})
	reg(op.LeakyRelu, op.SetFloats, func(c *Call) error {
		s := c.Attrs.Float("negative_slope")
		floatUnary(c, func(x float64) float64 {
			if x > 0 {
				return x
			}
			return x * s
		})
		return nil
	})
	reg(op.Softplus, op.SetFloats, func(c *Call) error {
		beta, th := c.Attrs.Float("beta"), c.Attrs.Float("threshold")
		floatUnary(c, func(x float64) float64 {
			if x*beta > th {
				return x
			}
			return math.Log1p(math.Exp(x*beta)) / beta
		})
		return nil
	})
	reg(op.Gelu, op.SetFloats, func(c *Call) error {
		if c.Attrs.String("approximate") == "tanh" {
			if vecRunUnary(c, c.kernels().vec.GeluTanh) {
				return nil
			}
			k := math.Sqrt(2 / math.Pi)
			floatUnary(c, func(x float64) float64 {
				return 0.5 * x * (1 + math.Tanh(k*(x+op.GeluTanhKappa*x*x*x)))
			})
			return nil
		}
		if vecRunUnary(c, c.kernels().vec.Gelu) {
			return nil
		}
		floatUnary(c, func(x float64) float64 { return x * 0.5 * (1 + math.Erf(x/math.Sqrt2)) })
		return nil
	})
	reg(op.Logit, op.SetFloats, func(c *Call) error {
		lo, hi, clampIt := 0.0, 0.0, false
		if c.Attrs.Has("eps") && c.Attrs.Float("eps") >= 0 {
			e := c.Attrs.Float("eps")
			lo, hi, clampIt = e, 1-e, true
		}
		floatUnary(c, func(x float64) float64 {
			if clampIt {
				x = min(max(x, lo), hi)
			}
			return logf(x / (1 - x))
		})
		return nil
	})
	reg(op.Relu, op.SetNumeric, func(c *Call) error {
		if bf16RunUnary(c, c.kernels().vec.Relu) { // dense bf16: bf16_elem.go
			return nil
		}
		switch c.In[0].DType {
		case dtype.F32:
			if vecRunUnary(c, c.kernels().vec.Relu) {
				return nil
			}
			unaryLoop(c, func(x float32) float32 {
				if x < 0 {
					return 0
				}
				return x
			})
		default:
			numUnary(c, func(x float64) float64 {
				if x < 0 {
					return 0
				}
				return x
			}, func(x int64) int64 { return max(x, 0) })
		}
		return nil
	})
	reg(op.Relu6, op.SetNumeric, func(c *Call) error {
		return clampKernel(c, 0.0, 6.0)
	})
	reg(op.Hardtanh, op.SetNumeric, func(c *Call) error {
		lo, hi := op.HardtanhBounds(c.In[0].DType, c.Attrs)
		return clampKernel(c, lo, hi)
	})
	reg(op.Clamp, op.SetNumeric, func(c *Call) error {
		return clampKernel(c, c.Attrs["min"], c.Attrs["max"])
	})
	reg(op.Trunc, op.SetNumeric, func(c *Call) error { numUnary(c, math.Trunc, func(x int64) int64 { return x }); return nil })
	reg(op.Round, op.SetNumeric, func(c *Call) error {
		dt := c.In[0].DType
		d := c.Attrs.Int("decimals")
		if d == 0 || !dt.IsFloat() {
			numUnary(c, math.RoundToEven, func(x int64) int64 { return x })
			return nil
		}
		r := roundTo(dt)
		if d > 0 {
			p := r(math.Pow(10, float64(d)))
			floatUnary(c, func(x float64) float64 { return math.RoundToEven(r(x*p)) / p })
		} else {
			p := r(math.Pow(10, float64(-d)))
			floatUnary(c, func(x float64) float64 { return math.RoundToEven(r(x/p)) * p })
		}
		return nil
	})
	reg(op.NanToNum, op.SetFloats, func(c *Call) error {
		nan, pos, neg := op.NanToNumValues(c.In[0].DType, c.Attrs)
		floatUnary(c, func(x float64) float64 {
			switch {
			case x != x:
				return nan
			case math.IsInf(x, 1):
				return pos
			case math.IsInf(x, -1):
				return neg
			}
			return x
		})
		return nil
	})
	reg(op.Remainder, op.SetNumeric, func(c *Call) error { return intOrFloat(c, remainderF, remainderI) })
	reg(op.Hypot, op.SetFloats, func(c *Call) error { floatBinary(c, math.Hypot); return nil })
	reg(op.Copysign, op.SetFloats, func(c *Call) error { floatBinary(c, math.Copysign); return nil })
	reg(op.Fmax, op.SetAll, func(c *Call) error {
		numBinary(c, func(a, b float64) float64 {
			switch {
			case a != a:
				return b
			case b != b:
				return a
			}
			return maxNaN(a, b)
		}, func(a, b int64) int64 { return max(a, b) })
		return nil
	})
	reg(op.Fmin, op.SetAll, func(c *Call) error {
		numBinary(c, func(a, b float64) float64 {
			switch {
			case a != a:
				return b
			case b != b:
				return a
			}
			return minNaN(a, b)
		}, func(a, b int64) int64 { return min(a, b) })
		return nil
	})
	reg(op.Lerp, op.SetFloats, func(c *Call) error {
		if c.In[2].Buf != nil {
			floatTernary(c, lerp)
			return nil
		}
		w := c.Attrs.Float("weight")
		if c.In[0].DType != dtype.F64 {
			w = float64(float32(w)) // PyTorch's opmath type for f32, bf16 and f16
		}
		floatBinary(c, func(x, e float64) float64 { return lerp(x, e, w) })
		return nil
	})
	reg(op.Addcmul, op.SetNumeric, func(c *Call) error {
		dt := c.In[0].DType
		if dt.IsFloat() {
			v := op.ScalarAs(c.Attrs["value"], dt).(float64)
			floatTernary(c, func(x, a, b float64) float64 { return x + v*a*b })
			return nil
		}
		v := wrapInt(op.ScalarAs(c.Attrs["value"], dtype.I64).(int64), dt)
		intTernary(c, func(x, a, b int64) int64 { return x + v*a*b })
		return nil
	})
	reg(op.Addcdiv, op.SetFloats, func(c *Call) error {
		v := op.ScalarAs(c.Attrs["value"], c.In[0].DType).(float64)
		floatTernary(c, func(x, a, b float64) float64 { return x + v*a/b })
		return nil
	})
}

func lerp(x, e, w float64) float64 {
	if math.Abs(w) < 0.5 {
		return x + w*(e-x)
	}
	return e - (e-x)*(1-w)
}

// logf is math.Log, correct for subnormal inputs (Go's amd64 assembly
// returns about -709.09 for every subnormal).
func logf(x float64) float64 {
	if x > 0 && x < 0x1p-1022 {
		return math.Log(x*0x1p54) - 54*math.Ln2
	}
	return math.Log(x)
}

func elu(x, alpha, scale, inputScale float64) float64 {
	if x > 0 {
		return x * scale
	}
	return math.Expm1(x*inputScale) * alpha * scale
}

// clampKernel is min(max(x, lo), hi) with absent (nil) bounds skipped;
// bounds are scalars converted to the input dtype as PyTorch does (integer
// bounds wrap, float bounds round).
func clampKernel(c *Call, lo, hi any) error {
	dt := c.In[0].DType
	if dt.IsFloat() {
		r := roundTo(dt)
		l, h := math.Inf(-1), math.Inf(1)
		if lo != nil {
			l = r(op.ScalarAs(lo, dtype.F64).(float64))
		}
		if hi != nil {
			h = r(op.ScalarAs(hi, dtype.F64).(float64))
		}
		floatUnary(c, func(x float64) float64 {
			if x != x {
				return x
			}
			if x < l {
				x = l
			}
			if h < x {
				x = h
			}
			return x
		})
		return nil
	}
	l, h := int64(math.MinInt64), int64(math.MaxInt64)
	if lo != nil {
		l = wrapInt(op.ScalarAs(lo, dtype.I64).(int64), dt)
	}
	if hi != nil {
		h = wrapInt(op.ScalarAs(hi, dtype.I64).(int64), dt)
	}
	intUnary(c, func(x int64) int64 { return min(max(x, l), h) })
	return nil
}

// floatTernary runs f on three floating inputs of the same dtype, computing
// in float64 and rounding once.
func floatTernary(c *Call, f func(a, b, c float64) float64) {
	switch c.In[0].DType {
	case dtype.F32:
		ternaryLoop(c, func(a, b, d float32) float32 { return float32(f(float64(a), float64(b), float64(d))) })
	case dtype.F64:
		ternaryLoop(c, f)
	case dtype.BF16:
		ternaryLoop(c, func(a, b, d dtype.BFloat16) dtype.BFloat16 { return tobf(f(bf(a), bf(b), bf(d))) })
	case dtype.F16:
		ternaryLoop(c, func(a, b, d dtype.Float16) dtype.Float16 { return tohf(f(hf(a), hf(b), hf(d))) })
	default:
		panic("cpu: floatTernary on " + c.In[0].DType.String())
	}
}

// intTernary runs f on three integer inputs of the same dtype, wrapping the
// result to the dtype.
func intTernary(c *Call, f func(a, b, c int64) int64) {
	switch c.In[0].DType {
	case dtype.U8:
		ternaryLoop(c, func(a, b, d uint8) uint8 { return uint8(f(int64(a), int64(b), int64(d))) })
	case dtype.I8:
		ternaryLoop(c, func(a, b, d int8) int8 { return int8(f(int64(a), int64(b), int64(d))) })
	case dtype.I16:
		ternaryLoop(c, func(a, b, d int16) int16 { return int16(f(int64(a), int64(b), int64(d))) })
	case dtype.I32:
		ternaryLoop(c, func(a, b, d int32) int32 { return int32(f(int64(a), int64(b), int64(d))) })
	case dtype.I64:
		ternaryLoop(c, f)
	default:
		panic("cpu: intTernary on " + c.In[0].DType.String())
	}
}
