package op

import (
	"fmt"
	"math"

	"github.com/gotpu/gotpu/dtype"
)

// Elementwise binary and ternary ops (group "elementwise"): arithmetic,
// comparisons, logical and bitwise ops, where, clamp, lerp, addcmul, addcdiv.

// binaryPrim registers a two-input broadcasting primitive whose output has
// the promoted dtype.
func binaryPrim(name, doc string, p Promotion, set Set) *Def {
	return Register(&Def{
		Name: name, Kind: Primitive, Group: Elementwise, Doc: doc,
		Inputs: []string{"input", "other"}, Promote: p, DTypes: set, Broadcast: true,
		Infer: InferBroadcast(name),
	})
}

// binaryComp registers a two-input broadcasting composite.
func binaryComp(name, doc string, p Promotion, set Set, dec DecomposeFunc) *Def {
	return Register(&Def{
		Name: name, Kind: Composite, Group: Elementwise, Doc: doc,
		Inputs: []string{"input", "other"}, Promote: p, DTypes: set, Broadcast: true,
		Infer: InferBroadcast(name), Decompose: dec,
	})
}

// compare registers a comparison primitive (bool output).
func compare(name, doc string) *Def {
	return Register(&Def{
		Name: name, Kind: Primitive, Group: Elementwise, Doc: doc,
		Inputs: []string{"input", "other"}, Promote: PromoteCommon, Broadcast: true,
		Infer: InferBroadcastTo(name, dtype.Bool),
	})
}

// checkAlpha validates add/sub's alpha against the promoted dtype as
// PyTorch does.
func checkAlpha(name string) func(in []Meta, a Attrs) error {
	return func(in []Meta, a Attrs) error {
		dt := in[0].DType
		if name == "sub" && dt == dtype.Bool {
			return fmt.Errorf("sub: subtraction, the `-` operator, with a bool tensor is not supported; use logical_xor or logical_not instead")
		}
		switch a["alpha"].(type) {
		case float64:
			if !dt.IsFloat() {
				return fmt.Errorf("%s: for integral input tensors, argument alpha must not be a floating point number", name)
			}
		case bool:
			if dt != dtype.Bool {
				return fmt.Errorf("%s: boolean alpha only supported for Boolean results", name)
			}
		}
		return nil
	}
}

// DivModes are div's rounding modes: "" (true division), "trunc", "floor".
var DivModes = []string{"", "trunc", "floor"}

// ScalarAs converts a scalar attribute (float64, int64 or bool) to the kind
// of dtype d: float64 for floats, int64 (truncated) for integers, bool for
// bool. It is how PyTorch casts a Scalar argument such as addcmul's value.
func ScalarAs(v any, d dtype.DType) any {
	var f float64
	var i int64
	switch x := v.(type) {
	case float64:
		f, i = x, int64(x)
	case int64:
		f, i = float64(x), x
	case int:
		f, i = float64(x), int64(x)
	case bool:
		if x {
			f, i = 1, 1
		}
	}
	switch {
	case d.IsFloat():
		return f
	case d == dtype.Bool:
		return f != 0
	}
	return i
}

func init() {
	// Arithmetic primitives.
	alpha := []AttrSpec{{Name: "alpha", Type: AttrScalar, Default: int64(1)}}
	Register(&Def{
		Name: "add", Kind: Primitive, Group: Elementwise,
		Doc:    "Returns input + alpha*other (torch.add); bool + bool is logical or.",
		Inputs: []string{"input", "other"}, Attrs: alpha, Promote: PromoteCommon, Broadcast: true,
		Infer: checked(InferBroadcast("add"), checkAlpha("add")),
	})
	Register(&Def{
		Name: "sub", Kind: Primitive, Group: Elementwise,
		Doc:    "Returns input - alpha*other (torch.sub); not defined for bool.",
		Inputs: []string{"input", "other"}, Attrs: alpha, Promote: PromoteCommon, Broadcast: true,
		Infer: checked(InferBroadcast("sub"), checkAlpha("sub")),
	})
	binaryPrim("mul", "Returns input * other (torch.mul); bool * bool is logical and.", PromoteCommon, SetAll)
	Register(&Def{
		Name: "div", Kind: Primitive, Group: Elementwise,
		Doc: "Divides input by other (torch.div): rounding_mode \"\" is true division (integers promote to the default float), " +
			"\"trunc\" rounds toward zero and \"floor\" rounds down (integers stay integers; integer division by zero is an error).",
		Inputs: []string{"input", "other"},
		Attrs:  []AttrSpec{{Name: "rounding_mode", Type: AttrString, Default: ""}},
		// Promote is PromoteCommon; PromoteWith makes true division PromoteToFloat.
		Promote: PromoteCommon, DTypes: SetNumeric, Broadcast: true,
		PromoteWith: func(a Attrs) (Promotion, []any) {
			if m, _ := a["rounding_mode"].(string); m == "" {
				return PromoteToFloat, nil
			}
			return PromoteCommon, nil
		},
		Infer: checked(InferBroadcast("div"), func(in []Meta, a Attrs) error {
			switch m := a.String("rounding_mode"); m {
			case "", "trunc", "floor":
			default:
				return fmt.Errorf("div: expected rounding_mode to be one of None, 'trunc', or 'floor' but found %q", m)
			}
			return nil
		}),
	})
	binaryPrim("fmod", "Returns the C fmod remainder of input/other, with the sign of input (torch.fmod); integer division by zero is an error.", PromoteCommon, SetNumeric)
	binaryPrim("pow", "Returns input**other (torch.pow); integers use exact wrapping integer powers, negative exponents giving 0 unless the base is ±1.", PromoteCommon, SetNumeric)
	binaryPrim("atan2", "Returns the arctangent of input/other using both signs for the quadrant (torch.atan2).", PromoteToFloat, SetFloats)
	binaryPrim("maximum", "Returns the elementwise maximum (torch.maximum); NaN propagates.", PromoteCommon, SetAll)
	binaryPrim("minimum", "Returns the elementwise minimum (torch.minimum); NaN propagates.", PromoteCommon, SetAll)
	binaryPrim("bitwise_and", "Returns the bitwise AND (logical for bool) (torch.bitwise_and).", PromoteCommon, SetBits)
	binaryPrim("bitwise_or", "Returns the bitwise OR (logical for bool) (torch.bitwise_or).", PromoteCommon, SetBits)
	binaryPrim("bitwise_xor", "Returns the bitwise XOR (logical for bool) (torch.bitwise_xor).", PromoteCommon, SetBits)
	binaryPrim("bitwise_left_shift", "Shifts input left by other bits (torch.bitwise_left_shift); shifts outside [0, bits) give 0.", PromoteCommon, SetIntegral)
	binaryPrim("bitwise_right_shift", "Shifts input right by other bits, arithmetic for signed types (torch.bitwise_right_shift); shifts outside [0, bits) fill with the sign.", PromoteCommon, SetIntegral)
	compare("eq", "Reports input == other (torch.eq).")
	compare("ne", "Reports input != other (torch.ne); NaN != NaN.")
	compare("lt", "Reports input < other (torch.lt).")
	compare("le", "Reports input <= other (torch.le).")
	compare("gt", "Reports input > other (torch.gt).")
	compare("ge", "Reports input >= other (torch.ge).")
	Register(&Def{
		Name: "where", Kind: Primitive, Group: Elementwise,
		Doc:    "Selects input where condition is true and other elsewhere (torch.where); condition must be bool; input and other promote together and all three broadcast.",
		Inputs: []string{"condition", "input", "other"}, Promote: PromoteCommon, PromoteArgs: []int{1, 2}, Broadcast: true,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if in[0].DType != dtype.Bool {
				return nil, fmt.Errorf("where: expected condition to be a boolean tensor, but got a tensor with dtype %s", in[0].DType)
			}
			s, err := BroadcastShapes("where", in[0].Shape, in[1].Shape, in[2].Shape)
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: s, DType: in[1].DType}}, nil
		},
	})

	// Arithmetic composites.
	binaryComp("floor_divide", "Returns floor(input/other) (torch.floor_divide, div with rounding_mode \"floor\").", PromoteCommon, SetNumeric,
		func(b Builder, in []Value, a Attrs) []Value {
			return []Value{c1(b, "div", Attrs{"rounding_mode": "floor"}, in[0], in[1])}
		})
	binaryComp("remainder", "Returns the Python-style remainder, with the sign of other (torch.remainder); integer division by zero is an error.", PromoteCommon, SetNumeric,
		func(b Builder, in []Value, a Attrs) []Value {
			x, y := in[0], in[1]
			r := c1(b, "fmod", nil, x, y)
			zero := sc(b, 0, r)
			fix := c1(b, "bitwise_and", nil, c1(b, "ne", nil, r, zero),
				c1(b, "ne", nil, c1(b, "lt", nil, r, zero), c1(b, "lt", nil, y, zero)))
			return []Value{where(b, fix, add(b, r, y), r)}
		})
	binaryComp("fmax", "Returns the elementwise maximum, ignoring NaN unless both are NaN (torch.fmax).", PromoteCommon, SetAll,
		func(b Builder, in []Value, a Attrs) []Value { return []Value{fmaxmin(b, "maximum", in[0], in[1])} })
	binaryComp("fmin", "Returns the elementwise minimum, ignoring NaN unless both are NaN (torch.fmin).", PromoteCommon, SetAll,
		func(b Builder, in []Value, a Attrs) []Value { return []Value{fmaxmin(b, "minimum", in[0], in[1])} })
	binaryComp("hypot", "Returns sqrt(input² + other²) without undue overflow (torch.hypot).", PromoteCommon, SetFloats,
		func(b Builder, in []Value, a Attrs) []Value {
			u, dt := Upcast(b, in[0], in[1])
			x, y := un(b, "abs", u[0]), un(b, "abs", u[1])
			hi := c1(b, "maximum", nil, x, y)
			lo := c1(b, "minimum", nil, x, y)
			zero := c1(b, "eq", nil, hi, sc(b, 0.0, hi))
			q := div(b, lo, where(b, zero, sc(b, 1.0, hi), hi))
			r := mul(b, hi, un(b, "sqrt", addS(b, mul(b, q, q), 1)))
			inf := c1(b, "bitwise_or", nil, c1(b, "eq", nil, x, sc(b, math.Inf(1), x)), c1(b, "eq", nil, y, sc(b, math.Inf(1), y)))
			return []Value{Downcast(b, where(b, inf, sc(b, math.Inf(1), r), r), dt)}
		})
	binaryComp("copysign", "Returns |input| with the sign bit of other (torch.copysign).", PromoteToFloat, SetFloats,
		func(b Builder, in []Value, a Attrs) []Value {
			m := un(b, "abs", in[0])
			return []Value{where(b, un(b, "signbit", in[1]), un(b, "neg", m), m)}
		})

	// Logical ops read each input as bool (nonzero is true); no promotion.
	for _, l := range []struct{ name, prim, doc string }{
		{"logical_and", "bitwise_and", "Returns the logical AND of the inputs read as bool (torch.logical_and)."},
		{"logical_or", "bitwise_or", "Returns the logical OR of the inputs read as bool (torch.logical_or)."},
		{"logical_xor", "bitwise_xor", "Returns the logical XOR of the inputs read as bool (torch.logical_xor)."},
	} {
		prim := l.prim
		Register(&Def{
			Name: l.name, Kind: Composite, Group: Elementwise, Doc: l.doc,
			Inputs: []string{"input", "other"}, Broadcast: true,
			Infer: InferBroadcastTo(l.name, dtype.Bool),
			Decompose: func(b Builder, in []Value, a Attrs) []Value {
				x := c1(b, "ne", nil, in[0], sc(b, false, in[0]))
				y := c1(b, "ne", nil, in[1], sc(b, false, in[1]))
				return []Value{c1(b, prim, nil, x, y)}
			},
		})
	}

	// Ternary ops.
	clampBounds := []AttrSpec{{Name: "min", Type: AttrScalar, Optional: true}, {Name: "max", Type: AttrScalar, Optional: true}}
	Register(&Def{
		Name: "clamp", Kind: Composite, Group: Elementwise,
		Doc: "Clamps input to [min, max] (torch.clamp with Python-number bounds; either may be absent); " +
			"the bounds take part in type promotion as Python scalars (an integer input clamped with a float bound becomes the default float); if min > max every element is max; NaN input propagates.",
		Inputs: []string{"input"}, Attrs: clampBounds, Promote: PromoteCommon, DTypes: SetNumeric, Broadcast: true,
		PromoteWith: func(a Attrs) (Promotion, []any) { return PromoteCommon, []any{a["min"], a["max"]} },
		Infer: checked(InferBroadcast("clamp"), func(in []Meta, a Attrs) error {
			if !a.Has("min") && !a.Has("max") {
				return fmt.Errorf("clamp: at least one of 'min' or 'max' must not be None")
			}
			return nil
		}),
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			r := in[0]
			dt := b.Meta(r).DType
			if a.Has("min") {
				r = c1(b, "maximum", nil, r, sc(b, ScalarAs(a["min"], dt), r))
			}
			if a.Has("max") {
				r = c1(b, "minimum", nil, r, sc(b, ScalarAs(a["max"], dt), r))
			}
			return []Value{r}
		},
	})
	Register(&Def{
		Name: "clamp_tensor", Kind: Composite, Group: Elementwise,
		Doc:    "Clamps input to tensor bounds min and max, either absent (torch.clamp with tensor bounds); all three promote together; NaN in any propagates.",
		Inputs: []string{"input", "min?", "max?"}, Promote: PromoteCommon, DTypes: SetNumeric, Broadcast: true,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if in[1].DType == dtype.Invalid && in[2].DType == dtype.Invalid {
				return nil, fmt.Errorf("clamp_tensor: at least one of 'min' or 'max' must not be None")
			}
			return broadcastMeta("clamp_tensor", in, dtype.Invalid)
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			r := in[0]
			if in[1] != nil {
				r = c1(b, "maximum", nil, r, in[1])
			}
			if in[2] != nil {
				r = c1(b, "minimum", nil, r, in[2])
			}
			if r == in[0] {
				r = copyOf(b, r)
			}
			return []Value{r}
		},
	})
	Register(&Def{
		Name: "lerp", Kind: Composite, Group: Elementwise,
		Doc: "Returns the linear interpolation input + weight*(end-input) (torch.lerp), evaluated as end - (end-input)*(1-weight) when |weight| >= 0.5; " +
			"the weight is a tensor, or else the float attribute weight (kept in f32 for half inputs, as PyTorch does).",
		Inputs: []string{"input", "end", "weight?"}, Attrs: []AttrSpec{{Name: "weight", Type: AttrFloat, Optional: true}},
		Promote: PromoteCommon, DTypes: SetFloats, Broadcast: true,
		Infer: checked(InferBroadcast("lerp"), func(in []Meta, a Attrs) error {
			if (in[2].DType == dtype.Invalid) == !a.Has("weight") {
				return fmt.Errorf("lerp: exactly one of the weight tensor and the weight attribute must be given")
			}
			return nil
		}),
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			u, dt := Upcast(b, in[0], in[1], in[2])
			x, e, w := u[0], u[1], u[2]
			if w == nil {
				w = sc(b, a.Float("weight"), x)
			}
			d := sub(b, e, x)
			small := c1(b, "lt", nil, un(b, "abs", w), sc(b, 0.5, w))
			lo := add(b, x, mul(b, w, d))
			hi := sub(b, e, mul(b, d, rsub1(b, w)))
			return []Value{Downcast(b, where(b, small, lo, hi), dt)}
		},
	})
	value := []AttrSpec{{Name: "value", Type: AttrScalar, Default: int64(1)}}
	Register(&Def{
		Name: "addcmul", Kind: Composite, Group: Elementwise,
		Doc:    "Returns input + value*tensor1*tensor2 (torch.addcmul); value is cast to the result dtype.",
		Inputs: []string{"input", "tensor1", "tensor2"}, Attrs: value, Promote: PromoteCommon, DTypes: SetNumeric, Broadcast: true,
		Infer: InferBroadcast("addcmul"),
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			u, dt := Upcast(b, in[0], in[1], in[2])
			v := sc(b, ScalarAs(a["value"], dt), u[1])
			return []Value{Downcast(b, add(b, u[0], mul(b, mul(b, v, u[1]), u[2])), dt)}
		},
	})
	Register(&Def{
		Name: "addcdiv", Kind: Composite, Group: Elementwise,
		Doc:    "Returns input + value*tensor1/tensor2 (torch.addcdiv); integer inputs are an error, as in PyTorch.",
		Inputs: []string{"input", "tensor1", "tensor2"}, Attrs: value, Promote: PromoteCommon, Broadcast: true,
		Infer: checked(InferBroadcast("addcdiv"), func(in []Meta, a Attrs) error {
			if !in[0].DType.IsFloat() {
				return fmt.Errorf("addcdiv: integer division with addcdiv is no longer supported (dtype %s); use input + value*trunc(tensor1/tensor2) or true division", in[0].DType)
			}
			return nil
		}),
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			u, dt := Upcast(b, in[0], in[1], in[2])
			v := sc(b, ScalarAs(a["value"], dt), u[1])
			return []Value{Downcast(b, add(b, u[0], div(b, mul(b, v, u[1]), u[2])), dt)}
		},
	})
}

// fmaxmin is fmax/fmin: the NaN-propagating op, then NaN operands replaced
// by the other operand.
func fmaxmin(b Builder, prim string, x, y Value) Value {
	m := c1(b, prim, nil, x, y)
	if !b.Meta(m).DType.IsFloat() {
		return m
	}
	m = where(b, c1(b, "ne", nil, x, x), y, m)
	return where(b, c1(b, "ne", nil, y, y), x, m)
}
