package op

import (
	"math"

	"github.com/gotpu/gotpu/dtype"
)

// Gradients of the elementwise group, following PyTorch 1.13's
// derivatives.yaml (and the backward kernels it names) exactly, including
// its conventions at ties, kinks and special values.
//
// Composites get their own VJP where differentiating the decomposition
// would differ from PyTorch's convention (relu at 0, clamp at the bounds,
// fmax/fmin ties, logit outside [0, 1], ...) or would turn an unused
// overflowing branch into 0*inf = NaN (softplus, elu, mish). The others
// (leaky_relu, nan_to_num, addcmul, inverse trigonometric functions, ...)
// are differentiated through their decompositions, which already give
// PyTorch's gradients.

// ewWants reports whether input v can receive a gradient: a present, float,
// non-wrapped tensor (a wrapped Go scalar never requires grad).
func ewWants(b Builder, v Value) bool {
	if v == nil {
		return false
	}
	m := b.Meta(v)
	return !m.Wrapped && m.DType.IsFloat()
}

// ewTo reduces g to v's shape (undoing broadcasting), or returns nil when v
// gets no gradient.
func ewTo(b Builder, g, v Value) Value {
	if !ewWants(b, v) {
		return nil
	}
	return SumToShape(b, g, b.Meta(v).Shape)
}

// ewZeros returns zeros shaped like v (PyTorch's zeros_like for ops whose
// gradient is zero almost everywhere), or nil when v gets no gradient.
func ewZeros(b Builder, v Value) Value {
	if !ewWants(b, v) {
		return nil
	}
	m := b.Meta(v)
	return Zeros(b, m.Shape, m.DType)
}

// ewMask returns where(cond, 0, g): g with the positions where cond holds
// zeroed (masked_fill(cond, 0)).
func ewMask(b Builder, cond, g Value) Value { return where(b, cond, sc(b, 0.0, g), g) }

// ewKeep returns where(cond, g, 0).
func ewKeep(b Builder, cond, g Value) Value { return where(b, cond, g, sc(b, 0.0, g)) }

func ewCmp(b Builder, name string, x Value, v any) Value { return c1(b, name, nil, x, sc(b, v, x)) }
func ewOr(b Builder, x, y Value) Value                   { return c1(b, "bitwise_or", nil, x, y) }
func ewAnd(b Builder, x, y Value) Value                  { return c1(b, "bitwise_and", nil, x, y) }

// ewScale multiplies g by the scalar attribute v (add/sub's alpha, a Scalar
// of any kind) unless it is 1 (PyTorch's maybe_multiply).
func ewScale(b Builder, g Value, v any) Value {
	if v == nil {
		return g
	}
	f := ScalarAs(v, dtype.F64).(float64)
	if f == 1 {
		return g
	}
	return mulS(b, g, f)
}

// ewUnary registers the VJP of a one-input op computed from the input x,
// the output y and the output gradient g, all in opmath precision (half
// inputs are computed in f32; the runtime casts the result back).
func ewUnary(h *Def, f func(b Builder, x, y, g Value, a Attrs) Value) {
	DefVJP(h, func(b Builder, in, out, gout []Value, a Attrs) []Value {
		if !ewWants(b, in[0]) {
			return []Value{nil}
		}
		u, _ := Upcast(b, in[0], out[0], gout[0])
		return []Value{f(b, u[0], u[1], u[2], a)}
	})
}

// ewZeroGrad registers a VJP returning zeros: ops whose derivative is zero
// wherever it exists (PyTorch returns zeros_like(grad)).
func ewZeroGrad(h *Def) {
	DefVJP(h, func(b Builder, in, out, gout []Value, a Attrs) []Value {
		r := make([]Value, len(in))
		for i, v := range in {
			r[i] = ewZeros(b, v)
		}
		return r
	})
}

func init() {
	// Unary primitives.
	ewUnary(Neg, func(b Builder, x, y, g Value, a Attrs) Value { return un(b, "neg", g) })
	ewUnary(Abs, func(b Builder, x, y, g Value, a Attrs) Value { return mul(b, g, un(b, "sign", x)) })
	ewUnary(Exp, func(b Builder, x, y, g Value, a Attrs) Value { return mul(b, g, y) })
	ewUnary(Expm1, func(b Builder, x, y, g Value, a Attrs) Value { return mul(b, g, addS(b, y, 1)) })
	ewUnary(Log, func(b Builder, x, y, g Value, a Attrs) Value { return div(b, g, x) })
	ewUnary(Log1p, func(b Builder, x, y, g Value, a Attrs) Value { return div(b, g, addS(b, x, 1)) })
	ewUnary(Sqrt, func(b Builder, x, y, g Value, a Attrs) Value { return div(b, g, mulS(b, y, 2)) })
	ewUnary(Rsqrt, func(b Builder, x, y, g Value, a Attrs) Value {
		return mul(b, mulS(b, g, -0.5), mul(b, mul(b, y, y), y))
	})
	ewUnary(Sin, func(b Builder, x, y, g Value, a Attrs) Value { return mul(b, g, un(b, "cos", x)) })
	ewUnary(Cos, func(b Builder, x, y, g Value, a Attrs) Value { return mul(b, g, un(b, "neg", un(b, "sin", x))) })
	ewUnary(Tan, func(b Builder, x, y, g Value, a Attrs) Value { return mul(b, g, addS(b, mul(b, y, y), 1)) })
	ewUnary(Tanh, func(b Builder, x, y, g Value, a Attrs) Value { return mul(b, g, rsub1(b, mul(b, y, y))) })
	ewUnary(Sigmoid, func(b Builder, x, y, g Value, a Attrs) Value { return mul(b, mul(b, g, rsub1(b, y)), y) })
	ewUnary(Erf, func(b Builder, x, y, g Value, a Attrs) Value {
		return mul(b, mulS(b, un(b, "exp", un(b, "neg", mul(b, x, x))), 2/math.SqrtPi), g)
	})
	ewUnary(Erfc, func(b Builder, x, y, g Value, a Attrs) Value {
		return mul(b, mulS(b, un(b, "exp", un(b, "neg", mul(b, x, x))), -2/math.SqrtPi), g)
	})
	ewUnary(Erfinv, func(b Builder, x, y, g Value, a Attrs) Value {
		return mul(b, mulS(b, un(b, "exp", mul(b, y, y)), 0.5*math.Sqrt(math.Pi)), g)
	})
	// Piecewise constant ops; trunc and round are composites whose
	// decompositions would give the same zeros through several ops.
	for _, h := range []*Def{Sign, Floor, Ceil, RoundNearestEven, Trunc, Round} {
		ewZeroGrad(h)
	}

	// Binary primitives.
	DefVJP(Add, func(b Builder, in, out, g []Value, a Attrs) []Value {
		return []Value{ewTo(b, g[0], in[0]), ewTo(b, ewScale(b, g[0], a["alpha"]), in[1])}
	})
	DefVJP(Sub, func(b Builder, in, out, g []Value, a Attrs) []Value {
		var gy Value
		if ewWants(b, in[1]) {
			gy = ewTo(b, ewScale(b, un(b, "neg", g[0]), a["alpha"]), in[1])
		}
		return []Value{ewTo(b, g[0], in[0]), gy}
	})
	DefVJP(Mul, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x, y := in[0], in[1]
		var gx, gy Value
		if ewWants(b, x) {
			gx = ewTo(b, mul(b, g[0], y), x)
		}
		if ewWants(b, y) {
			gy = ewTo(b, mul(b, g[0], x), y)
		}
		return []Value{gx, gy}
	})
	DefVJP(Div, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x, y := in[0], in[1]
		if a.String("rounding_mode") != "" {
			// Rounded division is piecewise constant.
			return []Value{ewZeros(b, x), ewZeros(b, y)}
		}
		var gx, gy Value
		if ewWants(b, x) {
			gx = ewTo(b, div(b, g[0], y), x)
		}
		if ewWants(b, y) {
			gy = ewTo(b, mul(b, un(b, "neg", g[0]), div(b, div(b, x, y), y)), y)
		}
		return []Value{gx, gy}
	})
	// fmod: input gets grad, other gets -grad * trunc(input/other).
	DefVJP(Fmod, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x, y := in[0], in[1]
		var gy Value
		if ewWants(b, y) {
			q := c1(b, "div", Attrs{"rounding_mode": "trunc"}, x, y)
			gy = ewTo(b, mul(b, un(b, "neg", g[0]), q), y)
		}
		return []Value{ewTo(b, g[0], x), gy}
	})
	// pow: input's gradient is 0 where the exponent is 0; the exponent's
	// gradient result*log(input) is 0 where input == 0 and exponent >= 0.
	DefVJP(Pow, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x, e, y := in[0], in[1], out[0]
		var gx, ge Value
		if ewWants(b, x) {
			d := mul(b, g[0], mul(b, e, c1(b, "pow", nil, x, addS(b, e, -1))))
			gx = ewTo(b, ewMask(b, ewCmp(b, "eq", e, 0.0), d), x)
		}
		if ewWants(b, e) {
			zero := ewAnd(b, ewCmp(b, "ge", e, 0.0), ewCmp(b, "eq", x, 0.0))
			ge = ewTo(b, mul(b, g[0], ewMask(b, zero, mul(b, y, un(b, "log", x)))), e)
		}
		return []Value{gx, ge}
	})
	DefVJP(Atan2, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x, y := in[0], in[1]
		recip := div(b, sc(b, 1.0, x), add(b, mul(b, x, x), mul(b, y, y)))
		var gx, gy Value
		if ewWants(b, x) {
			gx = ewTo(b, mul(b, mul(b, g[0], y), recip), x)
		}
		if ewWants(b, y) {
			gy = ewTo(b, mul(b, mul(b, g[0], un(b, "neg", x)), recip), y)
		}
		return []Value{gx, gy}
	})
	// maximum/minimum: ties split the gradient in half; NaN (no order)
	// passes it to both.
	minmax := func(lose string) VJPFunc {
		win := map[string]string{"lt": "gt", "gt": "lt"}[lose]
		return func(b Builder, in, out, g []Value, a Attrs) []Value {
			x, y := in[0], in[1]
			if !ewWants(b, x) && !ewWants(b, y) {
				return []Value{nil, nil}
			}
			half := where(b, c1(b, "eq", nil, x, y), mulS(b, g[0], 0.5), g[0])
			var gx, gy Value
			if ewWants(b, x) {
				gx = ewTo(b, ewMask(b, c1(b, lose, nil, x, y), half), x)
			}
			if ewWants(b, y) {
				gy = ewTo(b, ewMask(b, c1(b, win, nil, x, y), half), y)
			}
			return []Value{gx, gy}
		}
	}
	DefVJP(Maximum, minmax("lt"))
	DefVJP(Minimum, minmax("gt"))
	DefVJP(Where, func(b Builder, in, out, g []Value, a Attrs) []Value {
		c := in[0]
		var gx, gy Value
		if ewWants(b, in[1]) {
			gx = ewTo(b, ewKeep(b, c, g[0]), in[1])
		}
		if ewWants(b, in[2]) {
			gy = ewTo(b, ewMask(b, c, g[0]), in[2])
		}
		return []Value{nil, gx, gy}
	})

	// Composites whose decomposition's gradient differs from PyTorch's
	// convention or is needlessly slow or NaN-prone.

	// relu: threshold_backward(grad, result, 0): zero where result <= 0.
	ewUnary(Relu, func(b Builder, x, y, g Value, a Attrs) Value { return ewMask(b, ewCmp(b, "le", y, 0.0), g) })
	// hardtanh (and relu6 through it): zero at and beyond the bounds.
	ewUnary(Hardtanh, func(b Builder, x, y, g Value, a Attrs) Value {
		out := ewOr(b, ewCmp(b, "le", x, a.Float("min_val")), ewCmp(b, "ge", x, a.Float("max_val")))
		return ewMask(b, out, g)
	})
	// clamp: gradient where min <= x <= max (NaN input gets none).
	DefVJP(Clamp, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x := in[0]
		if !ewWants(b, x) {
			return []Value{nil}
		}
		dt := b.Meta(x).DType
		var keep Value
		if a.Has("min") {
			keep = ewCmp(b, "ge", x, ScalarAs(a["min"], dt))
		}
		if a.Has("max") {
			le := ewCmp(b, "le", x, ScalarAs(a["max"], dt))
			if keep == nil {
				keep = le
			} else {
				keep = ewAnd(b, keep, le)
			}
		}
		return []Value{ewKeep(b, keep, g[0])}
	})
	// clamp_tensor: the input gets the gradient where min <= x <= max; min
	// where x < min (and min < max when both are given); max where x > max
	// (or max < min).
	DefVJP(ClampTensor, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x, lo, hi := in[0], in[1], in[2]
		gy := g[0]
		var gx, glo, ghi Value
		switch {
		case lo != nil && hi != nil:
			gx = ewKeep(b, ewAnd(b, c1(b, "ge", nil, x, lo), c1(b, "le", nil, x, hi)), gy)
			if ewWants(b, lo) {
				glo = ewKeep(b, ewAnd(b, c1(b, "lt", nil, x, lo), c1(b, "lt", nil, lo, hi)), gy)
			}
			if ewWants(b, hi) {
				ghi = ewKeep(b, ewOr(b, c1(b, "gt", nil, x, hi), c1(b, "lt", nil, hi, lo)), gy)
			}
		case lo != nil:
			gx = ewKeep(b, c1(b, "ge", nil, x, lo), gy)
			if ewWants(b, lo) {
				glo = ewKeep(b, c1(b, "lt", nil, x, lo), gy)
			}
		default:
			gx = ewKeep(b, c1(b, "le", nil, x, hi), gy)
			if ewWants(b, hi) {
				ghi = ewKeep(b, c1(b, "gt", nil, x, hi), gy)
			}
		}
		r := []Value{ewTo(b, gx, x), nil, nil}
		if glo != nil {
			r[1] = ewTo(b, glo, lo)
		}
		if ghi != nil {
			r[2] = ewTo(b, ghi, hi)
		}
		return r
	})
	// hardsigmoid: grad/6 strictly inside (-3, 3).
	ewUnary(Hardsigmoid, func(b Builder, x, y, g Value, a Attrs) Value {
		in := ewAnd(b, ewCmp(b, "gt", x, -3.0), ewCmp(b, "lt", x, 3.0))
		return ewKeep(b, in, div(b, g, sc(b, 6.0, g)))
	})
	// hardswish: 0 below -3, grad*(x/3 + 1/2) on [-3, 3], grad above.
	ewUnary(Hardswish, func(b Builder, x, y, g Value, a Attrs) Value {
		mid := mul(b, g, addS(b, div(b, x, sc(b, 3.0, x)), 0.5))
		r := where(b, ewCmp(b, "le", x, 3.0), mid, g)
		return ewMask(b, ewCmp(b, "lt", x, -3.0), r)
	})
	// gelu: grad*(Φ(x) + x*φ(x)), or the tanh formula's derivative.
	ewUnary(Gelu, func(b Builder, x, y, g Value, a Attrs) Value {
		if a.String("approximate") == "tanh" {
			beta := math.Sqrt2 * (2 / math.SqrtPi) * 0.5
			x2 := mul(b, x, x)
			inner := mulS(b, add(b, x, mulS(b, mul(b, x2, x), GeluTanhKappa)), beta)
			t := un(b, "tanh", inner)
			left := mulS(b, x, 0.5)
			dleft := mulS(b, addS(b, t, 1), 0.5)
			dright := mul(b, left, rsub1(b, mul(b, t, t)))
			dinner := mulS(b, addS(b, mulS(b, x2, 3*GeluTanhKappa), 1), beta)
			return mul(b, g, add(b, dleft, mul(b, dright, dinner)))
		}
		cdf := mulS(b, addS(b, un(b, "erf", mulS(b, x, 1/math.Sqrt2)), 1), 0.5)
		pdf := mulS(b, un(b, "exp", mulS(b, mul(b, x, x), -0.5)), (2/math.SqrtPi)/math.Sqrt2*0.5)
		return mul(b, g, add(b, cdf, mul(b, x, pdf)))
	})
	// silu: grad*s*(1 + x*(1-s)) with s = sigmoid(x).
	ewUnary(Silu, func(b Builder, x, y, g Value, a Attrs) Value {
		s := un(b, "sigmoid", x)
		return mul(b, mul(b, g, s), addS(b, mul(b, x, rsub1(b, s)), 1))
	})
	// mish: grad*(t + x*s*(1-t²)) with t = tanh(softplus(x)), s = sigmoid(x).
	ewUnary(Mish, func(b Builder, x, y, g Value, a Attrs) Value {
		s := un(b, "sigmoid", x)
		t := un(b, "tanh", un(b, "log1p", un(b, "exp", x)))
		return mul(b, g, add(b, t, mul(b, mul(b, x, s), rsub1(b, mul(b, t, t)))))
	})
	// softplus: grad where beta*x > threshold, else grad*z/(z+1), z = exp(beta*x).
	ewUnary(Softplus, func(b Builder, x, y, g Value, a Attrs) Value {
		xb := mulS(b, x, a.Float("beta"))
		z := un(b, "exp", xb)
		soft := div(b, mul(b, g, z), addS(b, z, 1))
		return where(b, ewCmp(b, "gt", xb, a.Float("threshold")), g, soft)
	})
	// elu/selu: grad*scale for x > 0, else grad*input_scale*alpha*scale*exp(x*input_scale).
	eluGrad := func(b Builder, x, g Value, alpha, scale, inputScale float64) Value {
		neg := mul(b, g, mulS(b, un(b, "exp", mulS(b, x, inputScale)), inputScale*alpha*scale))
		return where(b, ewCmp(b, "le", x, 0.0), neg, mulS(b, g, scale))
	}
	ewUnary(Elu, func(b Builder, x, y, g Value, a Attrs) Value {
		return eluGrad(b, x, g, a.Float("alpha"), a.Float("scale"), a.Float("input_scale"))
	})
	ewUnary(Selu, func(b Builder, x, y, g Value, a Attrs) Value {
		return eluGrad(b, x, g, SeluAlpha, SeluScale, 1)
	})
	// logit: grad/(x(1-x)); with eps >= 0 zero outside [eps, 1-eps],
	// without it NaN outside [0, 1].
	ewUnary(Logit, func(b Builder, x, y, g Value, a Attrs) Value {
		lo, hi, fill := 0.0, 1.0, math.NaN()
		if a.Has("eps") && a.Float("eps") >= 0 {
			lo, hi, fill = a.Float("eps"), 1-a.Float("eps"), 0
		}
		d := div(b, g, mul(b, x, rsub1(b, x)))
		outside := ewOr(b, ewCmp(b, "lt", x, lo), ewCmp(b, "gt", x, hi))
		return where(b, outside, sc(b, fill, d), d)
	})
	// reciprocal: -grad * result².
	ewUnary(Reciprocal, func(b Builder, x, y, g Value, a Attrs) Value {
		return mul(b, un(b, "neg", g), mul(b, y, y))
	})
	// Inverse trigonometric and hyperbolic functions: PyTorch's closed
	// forms (the decompositions through atan2, log1p and sqrt give NaN
	// instead of PyTorch's inf at the branch points ±1).
	ewUnary(Asin, func(b Builder, x, y, g Value, a Attrs) Value {
		return mul(b, g, un(b, "rsqrt", rsub1(b, mul(b, x, x))))
	})
	ewUnary(Acos, func(b Builder, x, y, g Value, a Attrs) Value {
		return mul(b, g, un(b, "neg", un(b, "rsqrt", rsub1(b, mul(b, x, x)))))
	})
	ewUnary(Atan, func(b Builder, x, y, g Value, a Attrs) Value {
		return div(b, g, addS(b, mul(b, x, x), 1))
	})
	ewUnary(Sinh, func(b Builder, x, y, g Value, a Attrs) Value { return mul(b, g, un(b, "cosh", x)) })
	ewUnary(Cosh, func(b Builder, x, y, g Value, a Attrs) Value { return mul(b, g, un(b, "sinh", x)) })
	ewUnary(Asinh, func(b Builder, x, y, g Value, a Attrs) Value {
		return mul(b, g, un(b, "rsqrt", addS(b, mul(b, x, x), 1)))
	})
	ewUnary(Acosh, func(b Builder, x, y, g Value, a Attrs) Value {
		return mul(b, g, un(b, "rsqrt", addS(b, mul(b, x, x), -1)))
	})
	ewUnary(Atanh, func(b Builder, x, y, g Value, a Attrs) Value {
		return mul(b, g, div(b, sc(b, 1.0, x), rsub1(b, mul(b, x, x))))
	})
	// remainder: input gets grad, other gets -grad * floor(input/other).
	DefVJP(Remainder, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x, y := in[0], in[1]
		var gy Value
		if ewWants(b, y) {
			q := c1(b, "div", Attrs{"rounding_mode": "floor"}, x, y)
			gy = ewTo(b, mul(b, un(b, "neg", g[0]), q), y)
		}
		return []Value{ewTo(b, g[0], x), gy}
	})
	// copysign: grad*result/input (0 where input == 0) to input, zeros to
	// other (PyTorch returns zeros, so other's output still requires grad).
	DefVJP(Copysign, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x, y := in[0], in[1]
		var gx Value
		if ewWants(b, x) {
			ratio := ewMask(b, ewCmp(b, "eq", x, 0.0), div(b, out[0], x))
			gx = ewTo(b, mul(b, g[0], ratio), x)
		}
		return []Value{gx, ewZeros(b, y)}
	})
	// hypot: grad*input/result and grad*other/result.
	DefVJP(Hypot, func(b Builder, in, out, g []Value, a Attrs) []Value {
		u, _ := Upcast(b, in[0], in[1], out[0], g[0])
		x, y, r, gy := u[0], u[1], u[2], u[3]
		var gx, gz Value
		if ewWants(b, in[0]) {
			gx = ewTo(b, div(b, mul(b, gy, x), r), in[0])
		}
		if ewWants(b, in[1]) {
			gz = ewTo(b, div(b, mul(b, gy, y), r), in[1])
		}
		return []Value{gx, gz}
	})
	// fmax/fmin: the whole gradient goes to input where it wins or ties or
	// other is NaN, to other elsewhere.
	fmGrad := func(cmp string) VJPFunc {
		return func(b Builder, in, out, g []Value, a Attrs) []Value {
			x, y := in[0], in[1]
			if !ewWants(b, x) && !ewWants(b, y) {
				return []Value{nil, nil}
			}
			toX := ewOr(b, c1(b, cmp, nil, x, y), c1(b, "ne", nil, y, y))
			var gx, gy Value
			if ewWants(b, x) {
				gx = ewTo(b, ewKeep(b, toX, g[0]), x)
			}
			if ewWants(b, y) {
				gy = ewTo(b, ewMask(b, toX, g[0]), y)
			}
			return []Value{gx, gy}
		}
	}
	DefVJP(Fmax, fmGrad("ge"))
	DefVJP(Fmin, fmGrad("le"))
	// lerp: grad*(1-weight) to input, grad*weight to end, grad*(end-input)
	// to a weight tensor.
	DefVJP(Lerp, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x, e, w := in[0], in[1], in[2]
		gy := g[0]
		var gx, ge, gw Value
		if w == nil {
			wf := a.Float("weight")
			if ewWants(b, x) {
				gx = ewTo(b, mulS(b, gy, 1-wf), x)
			}
			if ewWants(b, e) {
				ge = ewTo(b, mulS(b, gy, wf), e)
			}
			return []Value{gx, ge, nil}
		}
		if ewWants(b, x) {
			gx = ewTo(b, mul(b, gy, rsub1(b, w)), x)
		}
		if ewWants(b, e) {
			ge = ewTo(b, mul(b, gy, w), e)
		}
		if ewWants(b, w) {
			gw = ewTo(b, mul(b, gy, sub(b, e, x)), w)
		}
		return []Value{gx, ge, gw}
	})
}
