package op

import (
	"fmt"
	"math"

	"github.com/gotpu/gotpu/dtype"
)

// Elementwise unary ops (group "elementwise"). The primitives are close to
// StableHLO's elementwise ops; everything else (inverse trig and hyperbolic
// functions, activations, predicates, rounding with decimals, ...) is a
// composite whose decomposition is the reference for any direct kernel.
//
// Multi-step decompositions compute bf16 and f16 in f32 and round once at the
// end (PyTorch's "opmath"), so every backend rounds like PyTorch's CPU.

// Elementwise is the group name of the ops in this file and binary.go.
const Elementwise = "elementwise"

// Dtype sets used by elementwise ops.
const (
	// SetIntegral is the integer dtypes (no bool).
	SetIntegral = SetInts
	// SetBits is the dtypes bitwise ops accept: integers and bool.
	SetBits = SetIntBool
)

// unaryPrim registers a one-input elementwise primitive whose output has the
// input's (promoted) dtype.
func unaryPrim(name, doc string, p Promotion, set Set) *Def {
	return Register(&Def{
		Name: name, Kind: Primitive, Group: Elementwise, Doc: doc,
		Inputs: []string{"input"}, Promote: p, DTypes: set, Broadcast: true,
		Infer: InferBroadcast(name),
	})
}

// unaryComp registers a one-input elementwise composite.
func unaryComp(name, doc string, p Promotion, set Set, attrs []AttrSpec, dec DecomposeFunc) *Def {
	return Register(&Def{
		Name: name, Kind: Composite, Group: Elementwise, Doc: doc,
		Inputs: []string{"input"}, Attrs: attrs, Promote: p, DTypes: set, Broadcast: true,
		Infer: InferBroadcast(name), Decompose: dec,
	})
}

// predComp registers a one-input composite predicate (bool output).
func predComp(name, doc string, dec DecomposeFunc) *Def {
	return Register(&Def{
		Name: name, Kind: Composite, Group: Elementwise, Doc: doc,
		Inputs: []string{"input"}, Broadcast: true,
		Infer: InferBroadcastTo(name, dtype.Bool), Decompose: dec,
	})
}

// checked runs check before infer: value-independent argument errors.
func checked(infer InferFunc, check func(in []Meta, a Attrs) error) InferFunc {
	return func(in []Meta, a Attrs) ([]Meta, error) {
		if err := check(in, a); err != nil {
			return nil, err
		}
		return infer(in, a)
	}
}

// Helpers for decompositions.

// c1 applies op name to in and returns its single output.
func c1(b Builder, name string, a Attrs, in ...Value) Value { return Call1(b, name, a, in...) }

func sc(b Builder, v any, like Value) Value { return b.Scalar(v, like) }

// IsHalf reports whether d is a 16-bit float, which multi-step
// decompositions compute in f32.
func IsHalf(d dtype.DType) bool { return d == dtype.F16 || d == dtype.BF16 }

// Upcast converts half-precision floats to f32 (PyTorch's opmath type) and
// returns the values with the original dtype of the first one.
func Upcast(b Builder, in ...Value) ([]Value, dtype.DType) {
	dt := b.Meta(in[0]).DType
	out := make([]Value, len(in))
	for i, v := range in {
		out[i] = v
		if v != nil && IsHalf(b.Meta(v).DType) {
			out[i] = c1(b, "convert", Attrs{"dtype": dtype.F32}, v)
		}
	}
	return out, dt
}

// Downcast converts v back to dt if its dtype differs.
func Downcast(b Builder, v Value, dt dtype.DType) Value {
	if b.Meta(v).DType != dt {
		return c1(b, "convert", Attrs{"dtype": dt}, v)
	}
	return v
}

// opmath1 runs f on x computed in opmath precision and rounds back once.
func opmath1(f func(b Builder, x Value) Value) DecomposeFunc {
	return func(b Builder, in []Value, a Attrs) []Value {
		u, dt := Upcast(b, in[0])
		return []Value{Downcast(b, f(b, u[0]), dt)}
	}
}

// opmathA is opmath1 for decompositions that read attributes.
func opmathA(f func(b Builder, x Value, a Attrs) Value) DecomposeFunc {
	return func(b Builder, in []Value, a Attrs) []Value {
		u, dt := Upcast(b, in[0])
		return []Value{Downcast(b, f(b, u[0], a), dt)}
	}
}

func add(b Builder, x, y Value) Value { return c1(b, "add", nil, x, y) }
func sub(b Builder, x, y Value) Value { return c1(b, "sub", nil, x, y) }
func mul(b Builder, x, y Value) Value { return c1(b, "mul", nil, x, y) }
func div(b Builder, x, y Value) Value { return c1(b, "div", nil, x, y) }
func where(b Builder, c, x, y Value) Value {
	return c1(b, "where", nil, c, x, y)
}
func addS(b Builder, x Value, v float64) Value { return add(b, x, sc(b, v, x)) }
func mulS(b Builder, x Value, v float64) Value { return mul(b, x, sc(b, v, x)) }
func un(b Builder, name string, x Value) Value { return c1(b, name, nil, x) }

// rsub1 returns 1 - x for a float x.
func rsub1(b Builder, x Value) Value { return sub(b, sc(b, 1.0, x), x) }

// copyOf returns a fresh copy of x (a composite never returns its input).
func copyOf(b Builder, x Value) Value { return c1(b, "copy", nil, x) }

// selectNeg returns where(x < 0, -r, r): the sign of odd functions computed
// on |x|.
func selectNeg(b Builder, x, r Value) Value {
	return where(b, c1(b, "lt", nil, x, sc(b, 0, x)), un(b, "neg", r), r)
}

// Float limits used by nan_to_num's defaults.
var maxFinite = map[dtype.DType]float64{
	dtype.F16:  65504,
	dtype.BF16: float64(math.Float32frombits(0x7f7f0000)),
	dtype.F32:  math.MaxFloat32,
	dtype.F64:  math.MaxFloat64,
}

// MaxFinite returns the largest finite value of float dtype d.
func MaxFinite(d dtype.DType) float64 { return maxFinite[d] }

// Constants of the activations.
const (
	// SeluAlpha and SeluScale are SELU's constants (Klambauer et al.).
	SeluAlpha = 1.6732632423543772848170429916717
	SeluScale = 1.0507009873554804934193349852946
	// GeluTanhKappa is the cubic coefficient of gelu's tanh approximation.
	GeluTanhKappa = 0.044715
)

func init() {
	// Primitives.
	Register(&Def{
		Name: "neg", Kind: Primitive, Group: Elementwise,
		Doc:    "Returns -input (torch.neg); integers wrap around; bool is an error.",
		Inputs: []string{"input"}, Promote: PromoteCommon, Broadcast: true,
		Infer: checked(InferBroadcast("neg"), func(in []Meta, a Attrs) error {
			if in[0].DType == dtype.Bool {
				return fmt.Errorf("neg: negation, the `-` operator, on a bool tensor is not supported; use logical_not instead")
			}
			return nil
		}),
	})
	unaryPrim("abs", "Returns |input| (torch.abs); the most negative integer stays negative.", PromoteCommon, SetNumeric)
	unaryPrim("sign", "Returns -1, 0 or 1 by the sign of input (torch.sign); NaN gives 0.", PromoteCommon, SetAll)
	unaryPrim("exp", "Returns e**input (torch.exp).", PromoteToFloat, SetFloats)
	unaryPrim("expm1", "Returns e**input - 1, accurate near 0 (torch.expm1).", PromoteToFloat, SetFloats)
	unaryPrim("log", "Returns the natural logarithm (torch.log).", PromoteToFloat, SetFloats)
	unaryPrim("log1p", "Returns log(1 + input), accurate near 0 (torch.log1p).", PromoteToFloat, SetFloats)
	unaryPrim("sqrt", "Returns the square root (torch.sqrt).", PromoteToFloat, SetFloats)
	unaryPrim("rsqrt", "Returns 1/sqrt(input) (torch.rsqrt).", PromoteToFloat, SetFloats)
	unaryPrim("sin", "Returns the sine (torch.sin).", PromoteToFloat, SetFloats)
	unaryPrim("cos", "Returns the cosine (torch.cos).", PromoteToFloat, SetFloats)
	unaryPrim("tan", "Returns the tangent (torch.tan).", PromoteToFloat, SetFloats)
	unaryPrim("tanh", "Returns the hyperbolic tangent (torch.tanh).", PromoteToFloat, SetFloats)
	unaryPrim("sigmoid", "Returns the logistic function 1/(1+exp(-input)) (torch.sigmoid).", PromoteToFloat, SetFloats)
	unaryPrim("erf", "Returns the error function (torch.erf).", PromoteToFloat, SetFloats)
	unaryPrim("erfc", "Returns the complementary error function 1 - erf(input), accurate in the tails (torch.erfc).", PromoteToFloat, SetFloats)
	unaryPrim("erfinv", "Returns the inverse error function (torch.erfinv).", PromoteToFloat, SetFloats)
	unaryPrim("floor", "Rounds down to an integral value (torch.floor); integers are unchanged.", PromoteCommon, SetNumeric)
	unaryPrim("ceil", "Rounds up to an integral value (torch.ceil); integers are unchanged.", PromoteCommon, SetNumeric)
	unaryPrim("round_nearest_even", "Rounds to the nearest integral value, ties to even (StableHLO round_nearest_even; torch.round without decimals).", PromoteCommon, SetNumeric)
	unaryPrim("bitwise_not", "Returns the bitwise NOT of integers, logical NOT of bools (torch.bitwise_not).", PromoteCommon, SetBits)
	Register(&Def{
		Name: "signbit", Kind: Primitive, Group: Elementwise,
		Doc:    "Reports whether the sign bit is set (torch.signbit): true for -0.0 and negative NaNs.",
		Inputs: []string{"input"}, Broadcast: true,
		Infer: InferBroadcastTo("signbit", dtype.Bool),
	})

	// Composites: exponentials and logarithms.
	unaryComp("exp2", "Returns 2**input (torch.exp2).", PromoteToFloat, SetFloats, nil,
		func(b Builder, in []Value, a Attrs) []Value {
			return []Value{c1(b, "pow", nil, sc(b, 2.0, in[0]), in[0])}
		})
	unaryComp("log2", "Returns the base-2 logarithm (torch.log2).", PromoteToFloat, SetFloats, nil,
		opmath1(func(b Builder, x Value) Value { return mulS(b, un(b, "log", x), 1/math.Ln2) }))
	unaryComp("log10", "Returns the base-10 logarithm (torch.log10).", PromoteToFloat, SetFloats, nil,
		opmath1(func(b Builder, x Value) Value { return mulS(b, un(b, "log", x), 1/math.Ln10) }))
	unaryComp("reciprocal", "Returns 1/input (torch.reciprocal).", PromoteToFloat, SetFloats, nil,
		func(b Builder, in []Value, a Attrs) []Value { return []Value{div(b, sc(b, 1.0, in[0]), in[0])} })
	Register(&Def{
		Name: "square", Kind: Composite, Group: Elementwise,
		Doc:    "Returns input*input (torch.square); bool promotes to i64 as torch.pow(x, 2) does.",
		Inputs: []string{"input"}, Promote: PromoteCommon, Broadcast: true,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			dt := in[0].DType
			if dt == dtype.Bool {
				dt = dtype.I64
			}
			return []Meta{{Shape: in[0].Shape, DType: dt}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x := in[0]
			if b.Meta(x).DType == dtype.Bool {
				x = c1(b, "convert", Attrs{"dtype": dtype.I64}, x)
			}
			return []Value{mul(b, x, x)}
		},
	})

	// Inverse trigonometric and hyperbolic functions.
	unaryComp("asin", "Returns the arcsine (torch.asin).", PromoteToFloat, SetFloats, nil,
		opmath1(func(b Builder, x Value) Value {
			return c1(b, "atan2", nil, x, un(b, "sqrt", mul(b, rsub1(b, x), addS(b, x, 1))))
		}))
	unaryComp("acos", "Returns the arccosine (torch.acos).", PromoteToFloat, SetFloats, nil,
		opmath1(func(b Builder, x Value) Value {
			return c1(b, "atan2", nil, un(b, "sqrt", mul(b, rsub1(b, x), addS(b, x, 1))), x)
		}))
	unaryComp("atan", "Returns the arctangent (torch.atan).", PromoteToFloat, SetFloats, nil,
		func(b Builder, in []Value, a Attrs) []Value {
			return []Value{c1(b, "atan2", nil, in[0], sc(b, 1.0, in[0]))}
		})
	unaryComp("sinh", "Returns the hyperbolic sine (torch.sinh).", PromoteToFloat, SetFloats, nil,
		opmath1(func(b Builder, x Value) Value {
			return mulS(b, sub(b, un(b, "expm1", x), un(b, "expm1", un(b, "neg", x))), 0.5)
		}))
	unaryComp("cosh", "Returns the hyperbolic cosine (torch.cosh).", PromoteToFloat, SetFloats, nil,
		opmath1(func(b Builder, x Value) Value {
			return mulS(b, add(b, un(b, "exp", x), un(b, "exp", un(b, "neg", x))), 0.5)
		}))
	unaryComp("asinh", "Returns the inverse hyperbolic sine (torch.asinh).", PromoteToFloat, SetFloats, nil,
		opmath1(func(b Builder, x Value) Value {
			// asinh(a) = log1p(a + a²/(1+sqrt(1+a²))) for a = |x|; log(a)+ln2 once a² would overflow.
			ax := un(b, "abs", x)
			big := c1(b, "gt", nil, ax, sc(b, 1e8, ax))
			as := where(b, big, sc(b, 0.0, ax), ax)
			a2 := mul(b, as, as)
			small := un(b, "log1p", add(b, as, div(b, a2, addS(b, un(b, "sqrt", addS(b, a2, 1)), 1))))
			large := addS(b, un(b, "log", ax), math.Ln2)
			return selectNeg(b, x, where(b, big, large, small))
		}))
	unaryComp("acosh", "Returns the inverse hyperbolic cosine (torch.acosh).", PromoteToFloat, SetFloats, nil,
		opmath1(func(b Builder, x Value) Value {
			// acosh(x) = log1p(t + sqrt(t(t+2))) for t = x-1; log(x)+ln2 for large x.
			big := c1(b, "gt", nil, x, sc(b, 1e8, x))
			t := addS(b, where(b, big, sc(b, 1.0, x), x), -1)
			small := un(b, "log1p", add(b, t, un(b, "sqrt", mul(b, t, addS(b, t, 2)))))
			large := addS(b, un(b, "log", x), math.Ln2)
			r := where(b, big, large, small)
			return where(b, c1(b, "lt", nil, x, sc(b, 1.0, x)), sc(b, math.NaN(), x), r)
		}))
	unaryComp("atanh", "Returns the inverse hyperbolic tangent (torch.atanh).", PromoteToFloat, SetFloats, nil,
		opmath1(func(b Builder, x Value) Value {
			// atanh(a) = log1p(2a/(1-a))/2 for a = |x|, odd in x.
			ax := un(b, "abs", x)
			r := mulS(b, un(b, "log1p", div(b, mulS(b, ax, 2), rsub1(b, ax))), 0.5)
			return selectNeg(b, x, r)
		}))
	Register(&Def{
		Name: "logit", Kind: Composite, Group: Elementwise,
		Doc:    "Returns log(p/(1-p)) (torch.logit); with eps >= 0, input is first clamped to [eps, 1-eps].",
		Inputs: []string{"input"}, Attrs: []AttrSpec{{Name: "eps", Type: AttrFloat, Optional: true}},
		Promote: PromoteToFloat, DTypes: SetFloats, Broadcast: true,
		Infer: InferBroadcast("logit"),
		Decompose: opmathA(func(b Builder, x Value, a Attrs) Value {
			if a.Has("eps") && a.Float("eps") >= 0 {
				e := a.Float("eps")
				x = c1(b, "clamp", Attrs{"min": e, "max": 1 - e}, x)
			}
			return un(b, "log", div(b, x, rsub1(b, x)))
		}),
	})

	// Rounding.
	Register(&Def{
		Name: "round", Kind: Composite, Group: Elementwise,
		Doc:    "Rounds half to even (torch.round); with decimals, to that many decimal places (negative: left of the point).",
		Inputs: []string{"input"}, Attrs: []AttrSpec{{Name: "decimals", Type: AttrInt, Default: 0}},
		Promote: PromoteCommon, DTypes: SetNumeric, Broadcast: true,
		Infer: checked(InferBroadcast("round"), func(in []Meta, a Attrs) error {
			if a.Int("decimals") != 0 && !in[0].DType.IsFloat() {
				return fmt.Errorf("round: decimals is not supported for dtype %s", in[0].DType)
			}
			return nil
		}),
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x := in[0]
			d := a.Int("decimals")
			if d == 0 {
				return []Value{un(b, "round_nearest_even", x)}
			}
			// As PyTorch: the power of ten and the products are in the input dtype.
			if d > 0 {
				p := math.Pow(10, float64(d))
				return []Value{div(b, un(b, "round_nearest_even", mulS(b, x, p)), sc(b, p, x))}
			}
			p := math.Pow(10, float64(-d))
			return []Value{mulS(b, un(b, "round_nearest_even", div(b, x, sc(b, p, x))), p)}
		},
	})
	unaryComp("trunc", "Rounds toward zero (torch.trunc); integers are unchanged.", PromoteCommon, SetNumeric, nil,
		func(b Builder, in []Value, a Attrs) []Value {
			x := in[0]
			if !b.Meta(x).DType.IsFloat() {
				return []Value{copyOf(b, x)}
			}
			return []Value{where(b, c1(b, "lt", nil, x, sc(b, 0.0, x)), un(b, "ceil", x), un(b, "floor", x))}
		})
	unaryComp("frac", "Returns the fractional part input - trunc(input) (torch.frac).", PromoteCommon, SetFloats, nil,
		func(b Builder, in []Value, a Attrs) []Value {
			return []Value{sub(b, in[0], un(b, "trunc", in[0]))}
		})

	// Activations.
	unaryComp("relu", "Returns max(input, 0) (torch.relu); NaN propagates.", PromoteCommon, SetNumeric, nil,
		func(b Builder, in []Value, a Attrs) []Value {
			return []Value{c1(b, "maximum", nil, in[0], sc(b, 0, in[0]))}
		})
	unaryComp("relu6", "Returns min(max(input, 0), 6) (torch.nn.functional.relu6).", PromoteCommon, SetNumeric, nil,
		func(b Builder, in []Value, a Attrs) []Value {
			return []Value{c1(b, "hardtanh", Attrs{"min_val": 0.0, "max_val": 6.0}, in[0])}
		})
	Register(&Def{
		Name: "hardtanh", Kind: Composite, Group: Elementwise,
		Doc:    "Clamps input to [min_val, max_val] (torch.nn.functional.hardtanh); integer inputs use the bounds truncated to integers.",
		Inputs: []string{"input"}, Attrs: []AttrSpec{{Name: "min_val", Type: AttrFloat, Default: -1.0}, {Name: "max_val", Type: AttrFloat, Default: 1.0}},
		Promote: PromoteCommon, DTypes: SetNumeric, Broadcast: true,
		Infer: checked(InferBroadcast("hardtanh"), func(in []Meta, a Attrs) error {
			if in[0].DType == dtype.U8 && (a.Float("min_val") < 0 || a.Float("max_val") < 0) {
				return fmt.Errorf("hardtanh: cannot do hardtanh on an unsigned type with negative limits")
			}
			return nil
		}),
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x := in[0]
			lo, hi := HardtanhBounds(b.Meta(x).DType, a)
			r := c1(b, "maximum", nil, x, sc(b, lo, x))
			return []Value{c1(b, "minimum", nil, r, sc(b, hi, x))}
		},
	})
	Register(&Def{
		Name: "gelu", Kind: Composite, Group: Elementwise,
		Doc:    "Returns the Gaussian error linear unit x*Φ(x) (torch.nn.functional.gelu); approximate \"tanh\" uses the tanh formula.",
		Inputs: []string{"input"}, Attrs: []AttrSpec{{Name: "approximate", Type: AttrString, Default: "none"}},
		Promote: PromoteCommon, DTypes: SetFloats, Broadcast: true,
		Infer: checked(InferBroadcast("gelu"), func(in []Meta, a Attrs) error {
			if s := a.String("approximate"); s != "none" && s != "tanh" {
				return fmt.Errorf("gelu: approximate argument must be either none or tanh, got %q", s)
			}
			return nil
		}),
		Decompose: opmathA(func(b Builder, x Value, a Attrs) Value {
			if a.String("approximate") == "tanh" {
				// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³)))
				x3 := mul(b, mul(b, x, x), x)
				inner := mulS(b, add(b, x, mulS(b, x3, GeluTanhKappa)), math.Sqrt(2/math.Pi))
				return mul(b, mulS(b, x, 0.5), addS(b, un(b, "tanh", inner), 1))
			}
			// x 0.5 (1 + erf(x/sqrt(2)))
			return mul(b, mulS(b, x, 0.5), addS(b, un(b, "erf", mulS(b, x, 1/math.Sqrt2)), 1))
		}),
	})
	unaryComp("silu", "Returns x*sigmoid(x) (torch.nn.functional.silu).", PromoteCommon, SetFloats, nil,
		opmath1(func(b Builder, x Value) Value {
			return div(b, x, addS(b, un(b, "exp", un(b, "neg", x)), 1))
		}))
	unaryComp("mish", "Returns x*tanh(softplus(x)) (torch.nn.functional.mish).", PromoteCommon, SetFloats, nil,
		opmath1(func(b Builder, x Value) Value {
			return mul(b, x, un(b, "tanh", un(b, "log1p", un(b, "exp", x))))
		}))
	unaryComp("softplus", "Returns log(1+exp(beta*x))/beta, or x where beta*x > threshold (torch.nn.functional.softplus).",
		PromoteCommon, SetFloats,
		[]AttrSpec{{Name: "beta", Type: AttrFloat, Default: 1.0}, {Name: "threshold", Type: AttrFloat, Default: 20.0}},
		opmathA(func(b Builder, x Value, a Attrs) Value {
			beta, th := a.Float("beta"), a.Float("threshold")
			xb := mulS(b, x, beta)
			soft := div(b, un(b, "log1p", un(b, "exp", xb)), sc(b, beta, x))
			return where(b, c1(b, "gt", nil, xb, sc(b, th, xb)), x, soft)
		}))
	unaryComp("elu", "Returns scale*x for x > 0, else alpha*scale*(exp(input_scale*x)-1) (torch.nn.functional.elu; aten::elu's scale and input_scale).",
		PromoteCommon, SetFloats,
		[]AttrSpec{{Name: "alpha", Type: AttrFloat, Default: 1.0}, {Name: "scale", Type: AttrFloat, Default: 1.0}, {Name: "input_scale", Type: AttrFloat, Default: 1.0}},
		opmathA(func(b Builder, x Value, a Attrs) Value {
			return eluDecomp(b, x, a.Float("alpha"), a.Float("scale"), a.Float("input_scale"))
		}))
	unaryComp("selu", "Returns elu with SELU's fixed alpha and scale (torch.nn.functional.selu).", PromoteCommon, SetFloats, nil,
		opmath1(func(b Builder, x Value) Value { return eluDecomp(b, x, SeluAlpha, SeluScale, 1) }))
	unaryComp("leaky_relu", "Returns x for x > 0, else negative_slope*x (torch.nn.functional.leaky_relu).", PromoteCommon, SetFloats,
		[]AttrSpec{{Name: "negative_slope", Type: AttrFloat, Default: 0.01}},
		func(b Builder, in []Value, a Attrs) []Value {
			x := in[0]
			return []Value{where(b, c1(b, "gt", nil, x, sc(b, 0.0, x)), x, mulS(b, x, a.Float("negative_slope")))}
		})
	unaryComp("hardsigmoid", "Returns min(max(x+3, 0), 6)/6 (torch.nn.functional.hardsigmoid).", PromoteCommon, SetFloats, nil,
		opmath1(func(b Builder, x Value) Value {
			return div(b, c1(b, "clamp", Attrs{"min": 0.0, "max": 6.0}, addS(b, x, 3)), sc(b, 6.0, x))
		}))
	unaryComp("hardswish", "Returns x*min(max(x+3, 0), 6)/6 (torch.nn.functional.hardswish).", PromoteCommon, SetFloats, nil,
		opmath1(func(b Builder, x Value) Value {
			return div(b, mul(b, x, c1(b, "clamp", Attrs{"min": 0.0, "max": 6.0}, addS(b, x, 3))), sc(b, 6.0, x))
		}))

	// Predicates and special values.
	predComp("isnan", "Reports which elements are NaN (torch.isnan).", func(b Builder, in []Value, a Attrs) []Value {
		return []Value{c1(b, "ne", nil, in[0], in[0])}
	})
	predComp("isinf", "Reports which elements are +inf or -inf (torch.isinf).", func(b Builder, in []Value, a Attrs) []Value {
		x := in[0]
		if !b.Meta(x).DType.IsFloat() {
			return []Value{c1(b, "ne", nil, x, x)}
		}
		return []Value{c1(b, "eq", nil, un(b, "abs", x), sc(b, math.Inf(1), x))}
	})
	predComp("isfinite", "Reports which elements are neither infinite nor NaN (torch.isfinite).", func(b Builder, in []Value, a Attrs) []Value {
		x := in[0]
		if !b.Meta(x).DType.IsFloat() {
			return []Value{c1(b, "eq", nil, x, x)}
		}
		return []Value{c1(b, "lt", nil, un(b, "abs", x), sc(b, math.Inf(1), x))}
	})
	predComp("isposinf", "Reports which elements are +inf (torch.isposinf).", func(b Builder, in []Value, a Attrs) []Value {
		x := in[0]
		if !b.Meta(x).DType.IsFloat() {
			return []Value{c1(b, "ne", nil, x, x)}
		}
		return []Value{c1(b, "eq", nil, x, sc(b, math.Inf(1), x))}
	})
	predComp("isneginf", "Reports which elements are -inf (torch.isneginf).", func(b Builder, in []Value, a Attrs) []Value {
		x := in[0]
		if !b.Meta(x).DType.IsFloat() {
			return []Value{c1(b, "ne", nil, x, x)}
		}
		return []Value{c1(b, "eq", nil, x, sc(b, math.Inf(-1), x))}
	})
	predComp("logical_not", "Returns the logical NOT of input read as bool (nonzero is true) (torch.logical_not).", func(b Builder, in []Value, a Attrs) []Value {
		return []Value{c1(b, "eq", nil, in[0], sc(b, false, in[0]))}
	})
	Register(&Def{
		Name: "nan_to_num", Kind: Composite, Group: Elementwise,
		Doc:    "Replaces NaN with nan, +inf with posinf and -inf with neginf (torch.nan_to_num); absent posinf/neginf mean the dtype's largest/lowest finite value.",
		Inputs: []string{"input"},
		Attrs: []AttrSpec{{Name: "nan", Type: AttrFloat, Default: 0.0},
			{Name: "posinf", Type: AttrFloat, Optional: true}, {Name: "neginf", Type: AttrFloat, Optional: true}},
		Promote: PromoteCommon, Broadcast: true,
		Infer: InferBroadcast("nan_to_num"),
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x := in[0]
			dt := b.Meta(x).DType
			if !dt.IsFloat() {
				return []Value{copyOf(b, x)}
			}
			nan, pos, neg := NanToNumValues(dt, a)
			r := where(b, c1(b, "ne", nil, x, x), sc(b, nan, x), x)
			r = where(b, c1(b, "eq", nil, x, sc(b, math.Inf(1), x)), sc(b, pos, x), r)
			r = where(b, c1(b, "eq", nil, x, sc(b, math.Inf(-1), x)), sc(b, neg, x), r)
			return []Value{r}
		},
	})
}

func eluDecomp(b Builder, x Value, alpha, scale, inputScale float64) Value {
	pos := mulS(b, x, scale)
	neg := mulS(b, un(b, "expm1", mulS(b, x, inputScale)), alpha*scale)
	return where(b, c1(b, "gt", nil, x, sc(b, 0.0, x)), pos, neg)
}

// HardtanhBounds returns hardtanh's bounds as scalars of the right kind for
// dtype d: integer inputs use the bounds truncated toward zero.
func HardtanhBounds(d dtype.DType, a Attrs) (lo, hi any) {
	l, h := a.Float("min_val"), a.Float("max_val")
	if d.IsFloat() {
		return l, h
	}
	return int64(l), int64(h)
}

// NanToNumValues returns nan_to_num's replacement values for float dtype d.
func NanToNumValues(d dtype.DType, a Attrs) (nan, posinf, neginf float64) {
	nan = a.Float("nan")
	posinf, neginf = MaxFinite(d), -MaxFinite(d)
	if a.Has("posinf") {
		posinf = a.Float("posinf")
	}
	if a.Has("neginf") {
		neginf = a.Float("neginf")
	}
	return nan, posinf, neginf
}
