package tensor

import "github.com/gotpu/gotpu/op"

// Elementwise unary ops: thin calls of Apply on the op table's elementwise
// group (see package op, unary.go). Integer and bool inputs of ops that are
// only defined on floats (Exp, Sin, Sigmoid, ...) promote to the default
// float dtype as in PyTorch; activations that PyTorch defines only on floats
// (Gelu, Silu, ...) panic for integer inputs.

func (t *Tensor) unary(name string, a op.Attrs) *Tensor { return Apply1(name, []*Tensor{t}, a) }

// Neg returns -t (torch.neg); integers wrap around; bool is an error.
func (t *Tensor) Neg() *Tensor { return t.unary("neg", nil) }

// Abs returns |t| (torch.abs).
func (t *Tensor) Abs() *Tensor { return t.unary("abs", nil) }

// Sign returns the sign of each element, -1, 0 or 1 (torch.sign); NaN gives 0.
func (t *Tensor) Sign() *Tensor { return t.unary("sign", nil) }

// Exp returns e**t (torch.exp).
func (t *Tensor) Exp() *Tensor { return t.unary("exp", nil) }

// Exp2 returns 2**t (torch.exp2).
func (t *Tensor) Exp2() *Tensor { return t.unary("exp2", nil) }

// Expm1 returns e**t - 1, accurate near zero (torch.expm1).
func (t *Tensor) Expm1() *Tensor { return t.unary("expm1", nil) }

// Log returns the natural logarithm (torch.log).
func (t *Tensor) Log() *Tensor { return t.unary("log", nil) }

// Log2 returns the base-2 logarithm (torch.log2).
func (t *Tensor) Log2() *Tensor { return t.unary("log2", nil) }

// Log10 returns the base-10 logarithm (torch.log10).
func (t *Tensor) Log10() *Tensor { return t.unary("log10", nil) }

// Log1p returns log(1 + t), accurate near zero (torch.log1p).
func (t *Tensor) Log1p() *Tensor { return t.unary("log1p", nil) }

// Sqrt returns the square root (torch.sqrt).
func (t *Tensor) Sqrt() *Tensor { return t.unary("sqrt", nil) }

// Rsqrt returns 1/sqrt(t) (torch.rsqrt).
func (t *Tensor) Rsqrt() *Tensor { return t.unary("rsqrt", nil) }

// Reciprocal returns 1/t (torch.reciprocal).
func (t *Tensor) Reciprocal() *Tensor { return t.unary("reciprocal", nil) }

// Square returns t*t (torch.square); bool tensors give i64.
func (t *Tensor) Square() *Tensor { return t.unary("square", nil) }

// Sin returns the sine (torch.sin).
func (t *Tensor) Sin() *Tensor { return t.unary("sin", nil) }

// Cos returns the cosine (torch.cos).
func (t *Tensor) Cos() *Tensor { return t.unary("cos", nil) }

// Tan returns the tangent (torch.tan).
func (t *Tensor) Tan() *Tensor { return t.unary("tan", nil) }

// Asin returns the arcsine (torch.asin).
func (t *Tensor) Asin() *Tensor { return t.unary("asin", nil) }

// Acos returns the arccosine (torch.acos).
func (t *Tensor) Acos() *Tensor { return t.unary("acos", nil) }

// Atan returns the arctangent (torch.atan).
func (t *Tensor) Atan() *Tensor { return t.unary("atan", nil) }

// Sinh returns the hyperbolic sine (torch.sinh).
func (t *Tensor) Sinh() *Tensor { return t.unary("sinh", nil) }

// Cosh returns the hyperbolic cosine (torch.cosh).
func (t *Tensor) Cosh() *Tensor { return t.unary("cosh", nil) }

// Tanh returns the hyperbolic tangent (torch.tanh).
func (t *Tensor) Tanh() *Tensor { return t.unary("tanh", nil) }

// Asinh returns the inverse hyperbolic sine (torch.asinh).
func (t *Tensor) Asinh() *Tensor { return t.unary("asinh", nil) }

// Acosh returns the inverse hyperbolic cosine (torch.acosh).
func (t *Tensor) Acosh() *Tensor { return t.unary("acosh", nil) }

// Atanh returns the inverse hyperbolic tangent (torch.atanh).
func (t *Tensor) Atanh() *Tensor { return t.unary("atanh", nil) }

// Sigmoid returns the logistic function 1/(1+e**-t) (torch.sigmoid).
func (t *Tensor) Sigmoid() *Tensor { return t.unary("sigmoid", nil) }

// Logit returns log(t/(1-t)) (torch.logit).
func (t *Tensor) Logit() *Tensor { return t.unary("logit", nil) }

// Erf returns the error function (torch.erf).
func (t *Tensor) Erf() *Tensor { return t.unary("erf", nil) }

// Erfc returns the complementary error function (torch.erfc).
func (t *Tensor) Erfc() *Tensor { return t.unary("erfc", nil) }

// Erfinv returns the inverse error function (torch.erfinv).
func (t *Tensor) Erfinv() *Tensor { return t.unary("erfinv", nil) }

// Floor returns t rounded down (torch.floor); integers are unchanged.
func (t *Tensor) Floor() *Tensor { return t.unary("floor", nil) }

// Ceil returns t rounded up (torch.ceil); integers are unchanged.
func (t *Tensor) Ceil() *Tensor { return t.unary("ceil", nil) }

// Round returns t rounded half to even (torch.round).
func (t *Tensor) Round() *Tensor { return t.unary("round", nil) }

// Trunc returns t rounded toward zero (torch.trunc).
func (t *Tensor) Trunc() *Tensor { return t.unary("trunc", nil) }

// Frac returns the fractional part t - trunc(t) (torch.frac).
func (t *Tensor) Frac() *Tensor { return t.unary("frac", nil) }

// Relu returns max(t, 0) (torch.relu).
func (t *Tensor) Relu() *Tensor { return t.unary("relu", nil) }

// Relu6 returns min(max(t, 0), 6) (torch.nn.functional.relu6).
func (t *Tensor) Relu6() *Tensor { return t.unary("relu6", nil) }

// Gelu returns the exact GELU t*Φ(t) (torch.nn.functional.gelu).
func (t *Tensor) Gelu() *Tensor { return t.unary("gelu", nil) }

// Silu returns t*sigmoid(t) (torch.nn.functional.silu).
func (t *Tensor) Silu() *Tensor { return t.unary("silu", nil) }

// Mish returns t*tanh(softplus(t)) (torch.nn.functional.mish).
func (t *Tensor) Mish() *Tensor { return t.unary("mish", nil) }

// Selu returns SELU (torch.nn.functional.selu).
func (t *Tensor) Selu() *Tensor { return t.unary("selu", nil) }

// Hardsigmoid returns min(max(t+3, 0), 6)/6 (torch.nn.functional.hardsigmoid).
func (t *Tensor) Hardsigmoid() *Tensor { return t.unary("hardsigmoid", nil) }

// Hardswish returns t*min(max(t+3, 0), 6)/6 (torch.nn.functional.hardswish).
func (t *Tensor) Hardswish() *Tensor { return t.unary("hardswish", nil) }

// IsNaN returns a bool tensor that is true where t is NaN (torch.isnan).
func (t *Tensor) IsNaN() *Tensor { return t.unary("isnan", nil) }

// IsInf returns a bool tensor that is true where t is ±inf (torch.isinf).
func (t *Tensor) IsInf() *Tensor { return t.unary("isinf", nil) }

// IsFinite returns a bool tensor that is true where t is finite (torch.isfinite).
func (t *Tensor) IsFinite() *Tensor { return t.unary("isfinite", nil) }

// IsPosInf returns a bool tensor that is true where t is +inf (torch.isposinf).
func (t *Tensor) IsPosInf() *Tensor { return t.unary("isposinf", nil) }

// IsNegInf returns a bool tensor that is true where t is -inf (torch.isneginf).
func (t *Tensor) IsNegInf() *Tensor { return t.unary("isneginf", nil) }

// LogicalNot returns the logical NOT of t read as bool (torch.logical_not).
func (t *Tensor) LogicalNot() *Tensor { return t.unary("logical_not", nil) }

// BitwiseNot returns the bitwise NOT of an integer or bool tensor (torch.bitwise_not).
func (t *Tensor) BitwiseNot() *Tensor { return t.unary("bitwise_not", nil) }

// Signbit returns a bool tensor that is true where t's sign bit is set, -0.0 included (torch.signbit).
func (t *Tensor) Signbit() *Tensor { return t.unary("signbit", nil) }

// LogitEps returns log(p/(1-p)) with p = clamp(t, eps, 1-eps) (torch.logit(t, eps)).
func (t *Tensor) LogitEps(eps float64) *Tensor { return t.unary("logit", op.Attrs{"eps": eps}) }

// RoundDecimals returns t rounded half to even to the given number of
// decimal places; negative decimals round to the left of the point
// (torch.round(t, decimals=d)). Integer tensors only accept decimals == 0.
func (t *Tensor) RoundDecimals(decimals int) *Tensor {
	return t.unary("round", op.Attrs{"decimals": decimals})
}

// GeluTanh returns GELU with the tanh approximation
// (torch.nn.functional.gelu(t, approximate="tanh")).
func (t *Tensor) GeluTanh() *Tensor { return t.unary("gelu", op.Attrs{"approximate": "tanh"}) }

// Softplus returns log(1+exp(beta*t))/beta, or t where beta*t > threshold
// (torch.nn.functional.softplus; PyTorch's defaults are beta 1, threshold 20).
func (t *Tensor) Softplus(beta, threshold float64) *Tensor {
	return t.unary("softplus", op.Attrs{"beta": beta, "threshold": threshold})
}

// Elu returns t for t > 0, else alpha*(exp(t)-1) (torch.nn.functional.elu;
// PyTorch's default alpha is 1).
func (t *Tensor) Elu(alpha float64) *Tensor { return t.unary("elu", op.Attrs{"alpha": alpha}) }

// LeakyRelu returns t for t > 0, else negativeSlope*t
// (torch.nn.functional.leaky_relu; PyTorch's default slope is 0.01).
func (t *Tensor) LeakyRelu(negativeSlope float64) *Tensor {
	return t.unary("leaky_relu", op.Attrs{"negative_slope": negativeSlope})
}

// Hardtanh returns t clamped to [minVal, maxVal]
// (torch.nn.functional.hardtanh; PyTorch's defaults are -1 and 1).
func (t *Tensor) Hardtanh(minVal, maxVal float64) *Tensor {
	return t.unary("hardtanh", op.Attrs{"min_val": minVal, "max_val": maxVal})
}

// NanToNum replaces NaN with nan, +inf with the dtype's largest finite value
// and -inf with its lowest (torch.nan_to_num(t, nan)).
func (t *Tensor) NanToNum(nan float64) *Tensor {
	return t.unary("nan_to_num", op.Attrs{"nan": nan})
}

// NanToNumWith replaces NaN with nan, +inf with posinf and -inf with neginf
// (torch.nan_to_num(t, nan, posinf, neginf)).
func (t *Tensor) NanToNumWith(nan, posinf, neginf float64) *Tensor {
	return t.unary("nan_to_num", op.Attrs{"nan": nan, "posinf": posinf, "neginf": neginf})
}
