package tensor

import "github.com/gotpu/gotpu/op"

// Elementwise binary and ternary ops: thin calls of Apply on the op table's
// elementwise group (package op, binary.go). Inputs broadcast and promote as
// in PyTorch; the ...Scalar variants take a Go number that promotes like a
// Python scalar (t.AddScalar(2) keeps an integer t's dtype, t.MulScalar(2.5)
// turns it into the default float).

func (t *Tensor) binary(name string, other *Tensor, a op.Attrs) *Tensor {
	return Apply1(name, []*Tensor{t, other}, a)
}

// Add returns t + other (torch.add); bool + bool is logical or.
func (t *Tensor) Add(other *Tensor) *Tensor { return t.binary("add", other, nil) }

// AddScalar returns t + v for a Go number v (promoting like a Python scalar).
func (t *Tensor) AddScalar(v any) *Tensor { return t.binary("add", Scalar(v), nil) }

// AddAlpha returns t + alpha*other (torch.add(t, other, alpha=alpha)); alpha
// must not be a float for integer tensors.
func (t *Tensor) AddAlpha(other *Tensor, alpha any) *Tensor {
	return t.binary("add", other, op.Attrs{"alpha": alpha})
}

// Sub returns t - other (torch.sub); not defined for bool.
func (t *Tensor) Sub(other *Tensor) *Tensor { return t.binary("sub", other, nil) }

// SubScalar returns t - v for a Go number v.
func (t *Tensor) SubScalar(v any) *Tensor { return t.binary("sub", Scalar(v), nil) }

// SubAlpha returns t - alpha*other (torch.sub(t, other, alpha=alpha)).
func (t *Tensor) SubAlpha(other *Tensor, alpha any) *Tensor {
	return t.binary("sub", other, op.Attrs{"alpha": alpha})
}

// RSubScalar returns v - t for a Go number v (torch.rsub(t, v)).
func (t *Tensor) RSubScalar(v any) *Tensor { return Scalar(v).binary("sub", t, nil) }

// DivMode returns t / other with rounding mode "" (true division), "trunc"
// or "floor" (torch.div(t, other, rounding_mode=mode)); with a rounding mode
// integers stay integers and integer division by zero panics.
func (t *Tensor) DivMode(other *Tensor, mode string) *Tensor {
	return t.binary("div", other, op.Attrs{"rounding_mode": mode})
}

// PowScalar returns t ** v for a Go number v (torch.pow(t, v)). As in
// PyTorch, an integer tensor to a negative integer power panics.
func (t *Tensor) PowScalar(v any) *Tensor {
	if !t.dt.IsFloat() {
		neg := false
		switch x := v.(type) {
		case int:
			neg = x < 0
		case int64:
			neg = x < 0
		case int32:
			neg = x < 0
		}
		if neg {
			errorf("pow", []*Tensor{t}, "Integers to negative integer powers are not allowed (exponent %v)", v)
		}
	}
	return t.binary("pow", Scalar(v), nil)
}

// ScalarPow returns base ** exponent for a Go number base (torch.pow(base, exponent)).
func ScalarPow(base any, exponent *Tensor) *Tensor { return Scalar(base).binary("pow", exponent, nil) }

// Mul returns t * other (torch.mul); bool * bool is logical and.
func (t *Tensor) Mul(other *Tensor) *Tensor { return t.binary("mul", other, nil) }

// MulScalar is Mul with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) MulScalar(v any) *Tensor { return t.binary("mul", Scalar(v), nil) }

// Div returns the true quotient t / other (torch.div); integers promote to the default float.
func (t *Tensor) Div(other *Tensor) *Tensor { return t.binary("div", other, nil) }

// DivScalar is Div with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) DivScalar(v any) *Tensor { return t.binary("div", Scalar(v), nil) }

// FloorDivide returns floor(t / other) (torch.floor_divide); integer division by zero panics.
func (t *Tensor) FloorDivide(other *Tensor) *Tensor { return t.binary("floor_divide", other, nil) }

// FloorDivideScalar is FloorDivide with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) FloorDivideScalar(v any) *Tensor { return t.binary("floor_divide", Scalar(v), nil) }

// Remainder returns the Python-style remainder of t / other, with the sign of other (torch.remainder).
func (t *Tensor) Remainder(other *Tensor) *Tensor { return t.binary("remainder", other, nil) }

// RemainderScalar is Remainder with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) RemainderScalar(v any) *Tensor { return t.binary("remainder", Scalar(v), nil) }

// Fmod returns the C-style remainder of t / other, with the sign of t (torch.fmod).
func (t *Tensor) Fmod(other *Tensor) *Tensor { return t.binary("fmod", other, nil) }

// FmodScalar is Fmod with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) FmodScalar(v any) *Tensor { return t.binary("fmod", Scalar(v), nil) }

// Pow returns t ** other (torch.pow).
func (t *Tensor) Pow(other *Tensor) *Tensor { return t.binary("pow", other, nil) }

// Atan2 returns the four-quadrant arctangent of t / other (torch.atan2).
func (t *Tensor) Atan2(other *Tensor) *Tensor { return t.binary("atan2", other, nil) }

// Maximum returns the elementwise maximum, propagating NaN (torch.maximum).
func (t *Tensor) Maximum(other *Tensor) *Tensor { return t.binary("maximum", other, nil) }

// Minimum returns the elementwise minimum, propagating NaN (torch.minimum).
func (t *Tensor) Minimum(other *Tensor) *Tensor { return t.binary("minimum", other, nil) }

// Fmax returns the elementwise maximum, ignoring a NaN operand (torch.fmax).
func (t *Tensor) Fmax(other *Tensor) *Tensor { return t.binary("fmax", other, nil) }

// Fmin returns the elementwise minimum, ignoring a NaN operand (torch.fmin).
func (t *Tensor) Fmin(other *Tensor) *Tensor { return t.binary("fmin", other, nil) }

// Hypot returns sqrt(t² + other²) without undue overflow (torch.hypot).
func (t *Tensor) Hypot(other *Tensor) *Tensor { return t.binary("hypot", other, nil) }

// Copysign returns |t| with the sign bit of other (torch.copysign).
func (t *Tensor) Copysign(other *Tensor) *Tensor { return t.binary("copysign", other, nil) }

// CopysignScalar is Copysign with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) CopysignScalar(v any) *Tensor { return t.binary("copysign", Scalar(v), nil) }

// Eq returns a bool tensor that is true where t == other (torch.eq).
func (t *Tensor) Eq(other *Tensor) *Tensor { return t.binary("eq", other, nil) }

// EqScalar is Eq with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) EqScalar(v any) *Tensor { return t.binary("eq", Scalar(v), nil) }

// Ne returns a bool tensor that is true where t != other (torch.ne).
func (t *Tensor) Ne(other *Tensor) *Tensor { return t.binary("ne", other, nil) }

// NeScalar is Ne with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) NeScalar(v any) *Tensor { return t.binary("ne", Scalar(v), nil) }

// Lt returns a bool tensor that is true where t < other (torch.lt).
func (t *Tensor) Lt(other *Tensor) *Tensor { return t.binary("lt", other, nil) }

// LtScalar is Lt with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) LtScalar(v any) *Tensor { return t.binary("lt", Scalar(v), nil) }

// Le returns a bool tensor that is true where t <= other (torch.le).
func (t *Tensor) Le(other *Tensor) *Tensor { return t.binary("le", other, nil) }

// LeScalar is Le with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) LeScalar(v any) *Tensor { return t.binary("le", Scalar(v), nil) }

// Gt returns a bool tensor that is true where t > other (torch.gt).
func (t *Tensor) Gt(other *Tensor) *Tensor { return t.binary("gt", other, nil) }

// GtScalar is Gt with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) GtScalar(v any) *Tensor { return t.binary("gt", Scalar(v), nil) }

// Ge returns a bool tensor that is true where t >= other (torch.ge).
func (t *Tensor) Ge(other *Tensor) *Tensor { return t.binary("ge", other, nil) }

// GeScalar is Ge with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) GeScalar(v any) *Tensor { return t.binary("ge", Scalar(v), nil) }

// LogicalAnd returns the logical AND of t and other read as bool (torch.logical_and).
func (t *Tensor) LogicalAnd(other *Tensor) *Tensor { return t.binary("logical_and", other, nil) }

// LogicalOr returns the logical OR of t and other read as bool (torch.logical_or).
func (t *Tensor) LogicalOr(other *Tensor) *Tensor { return t.binary("logical_or", other, nil) }

// LogicalXor returns the logical XOR of t and other read as bool (torch.logical_xor).
func (t *Tensor) LogicalXor(other *Tensor) *Tensor { return t.binary("logical_xor", other, nil) }

// BitwiseAnd returns the bitwise AND of integer or bool tensors (torch.bitwise_and).
func (t *Tensor) BitwiseAnd(other *Tensor) *Tensor { return t.binary("bitwise_and", other, nil) }

// BitwiseAndScalar is BitwiseAnd with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) BitwiseAndScalar(v any) *Tensor { return t.binary("bitwise_and", Scalar(v), nil) }

// BitwiseOr returns the bitwise OR of integer or bool tensors (torch.bitwise_or).
func (t *Tensor) BitwiseOr(other *Tensor) *Tensor { return t.binary("bitwise_or", other, nil) }

// BitwiseOrScalar is BitwiseOr with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) BitwiseOrScalar(v any) *Tensor { return t.binary("bitwise_or", Scalar(v), nil) }

// BitwiseXor returns the bitwise XOR of integer or bool tensors (torch.bitwise_xor).
func (t *Tensor) BitwiseXor(other *Tensor) *Tensor { return t.binary("bitwise_xor", other, nil) }

// BitwiseXorScalar is BitwiseXor with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) BitwiseXorScalar(v any) *Tensor { return t.binary("bitwise_xor", Scalar(v), nil) }

// BitwiseLeftShift returns t shifted left by other bits (torch.bitwise_left_shift); shifts outside [0, bits) give 0.
func (t *Tensor) BitwiseLeftShift(other *Tensor) *Tensor {
	return t.binary("bitwise_left_shift", other, nil)
}

// BitwiseLeftShiftScalar is BitwiseLeftShift with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) BitwiseLeftShiftScalar(v any) *Tensor {
	return t.binary("bitwise_left_shift", Scalar(v), nil)
}

// BitwiseRightShift returns t shifted right by other bits, arithmetically for signed types (torch.bitwise_right_shift).
func (t *Tensor) BitwiseRightShift(other *Tensor) *Tensor {
	return t.binary("bitwise_right_shift", other, nil)
}

// BitwiseRightShiftScalar is BitwiseRightShift with a Go number (float64, int, bool, ...) that
// promotes like a Python scalar.
func (t *Tensor) BitwiseRightShiftScalar(v any) *Tensor {
	return t.binary("bitwise_right_shift", Scalar(v), nil)
}

// Where returns x where cond is true and y elsewhere (torch.where(cond, x,
// y)); cond must be bool; x and y (either may be a Scalar) promote together
// and all three broadcast.
func Where(cond, x, y *Tensor) *Tensor { return Apply1("where", []*Tensor{cond, x, y}, nil) }

// Clamp returns t clamped to [lo, hi] (torch.clamp(t, min=lo, max=hi)); lo
// and hi are Go numbers, either may be nil (absent) but not both. The bounds
// take part in promotion as Python scalars: an integer tensor clamped with a
// float bound becomes the default float. If lo > hi every element is hi.
func (t *Tensor) Clamp(lo, hi any) *Tensor {
	return t.unary("clamp", op.Attrs{"min": lo, "max": hi})
}

// ClampMin returns max(t, lo) (torch.clamp_min).
func (t *Tensor) ClampMin(lo any) *Tensor { return t.Clamp(lo, nil) }

// ClampMax returns min(t, hi) (torch.clamp_max).
func (t *Tensor) ClampMax(hi any) *Tensor { return t.Clamp(nil, hi) }

// ClampTensor returns t clamped to tensor bounds lo and hi (torch.clamp with
// tensor min and max); either may be nil but not both; all three promote
// together and broadcast.
func (t *Tensor) ClampTensor(lo, hi *Tensor) *Tensor {
	return Apply1("clamp_tensor", []*Tensor{t, lo, hi}, nil)
}

// Lerp returns t + weight*(end - t) (torch.lerp) for a tensor weight.
func (t *Tensor) Lerp(end, weight *Tensor) *Tensor {
	return Apply1("lerp", []*Tensor{t, end, weight}, nil)
}

// LerpScalar returns t + weight*(end - t) (torch.lerp) for a number weight.
func (t *Tensor) LerpScalar(end *Tensor, weight float64) *Tensor {
	return Apply1("lerp", []*Tensor{t, end, nil}, op.Attrs{"weight": weight})
}

// Addcmul returns t + value*t1*t2 (torch.addcmul); value is a Go number
// cast to the result dtype.
func (t *Tensor) Addcmul(t1, t2 *Tensor, value any) *Tensor {
	return Apply1("addcmul", []*Tensor{t, t1, t2}, op.Attrs{"value": value})
}

// Addcdiv returns t + value*t1/t2 (torch.addcdiv); integer inputs panic, as
// in PyTorch.
func (t *Tensor) Addcdiv(t1, t2 *Tensor, value any) *Tensor {
	return Apply1("addcdiv", []*Tensor{t, t1, t2}, op.Attrs{"value": value})
}
