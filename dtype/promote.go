package dtype

// Category orders dtypes by kind for promotion: bool < integer < floating.
type Category uint8

// The promotion categories.
const (
	CatBool Category = iota
	CatInt
	CatFloat
)

// Category returns d's promotion category.
func (d DType) Category() Category {
	switch {
	case d == Bool:
		return CatBool
	case d.IsFloat():
		return CatFloat
	default:
		return CatInt
	}
}

// Promote returns the smallest dtype both a and b convert to without losing
// their kind, following torch.promote_types: bool < ints < floats, u8 with a
// signed int widens to the signed type (u8+i8 -> i16), and f16 with bf16 -> f32.
func Promote(a, b DType) DType {
	if a == b {
		return a
	}
	if a > b {
		a, b = b, a
	}
	// Now a < b in the enum order Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64.
	switch {
	case a == Bool:
		return b
	case a == U8 && b == I8:
		return I16
	case a == F16 && b == BF16:
		return F32
	}
	return b
}

// Operand describes one input of a promoting op for ResultType: its dtype, whether
// it has dimensions, and whether it is a wrapped Go scalar (like a Python number).
type Operand struct {
	DType   DType
	Dim     int
	Wrapped bool
}

// ResultType implements torch.result_type over operands: dimensioned tensors take
// precedence over zero-dim tensors, which take precedence over wrapped scalars,
// unless a lower-priority operand is of a higher category (bool < int < float),
// in which case the result is that category's default (a wrapped float with int
// tensors gives defaultFloat; a zero-dim float tensor with int tensors keeps its
// own dtype).
func ResultType(defaultFloat DType, ops ...Operand) DType {
	var dimRes, zeroRes, wrapRes DType
	for _, o := range ops {
		switch {
		case o.Wrapped:
			// A wrapped scalar contributes only its category's default type:
			// bool, i64 or the default float.
			t := o.DType
			switch t.Category() {
			case CatFloat:
				t = defaultFloat
			case CatInt:
				t = I64
			}
			wrapRes = promoteMaybe(wrapRes, t)
		case o.Dim == 0:
			zeroRes = promoteMaybe(zeroRes, o.DType)
		default:
			dimRes = promoteMaybe(dimRes, o.DType)
		}
	}
	res := dimRes
	res = combine(res, zeroRes)
	res = combine(res, wrapRes)
	return res
}

func promoteMaybe(a, b DType) DType {
	if a == Invalid {
		return b
	}
	return Promote(a, b)
}

// combine merges a lower-priority group's result into a higher-priority one: the
// lower group only matters when it is of a higher category.
func combine(high, low DType) DType {
	if high == Invalid {
		return low
	}
	if low == Invalid {
		return high
	}
	if low.Category() > high.Category() {
		return low
	}
	return high
}
