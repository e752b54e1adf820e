package safetensors

import (
	"fmt"
)

// DType is the element type of a tensor stored in a safetensors file.
//
// The numeric order of the constants is the reference implementation's dtype
// order (increasing alignment); the writer sorts tensors by descending DType
// and then by name exactly as the reference does, so data stays aligned.
type DType uint8

// The safetensors element types. Their String forms are the names used in
// headers ("BOOL", "F8_E4M3", ...).
const (
	// Invalid is the zero DType; it never appears in a valid file.
	Invalid DType = iota
	// Bool is a boolean stored in one byte (0 or 1).
	Bool
	// F4 is the 4-bit float E2M1 (two elements per byte).
	F4
	// F6E2M3 is the 6-bit float E2M3 (packed; four elements per three bytes).
	F6E2M3
	// F6E3M2 is the 6-bit float E3M2 (packed; four elements per three bytes).
	F6E3M2
	// U8 is an unsigned 8-bit integer.
	U8
	// I8 is a signed 8-bit integer.
	I8
	// F8E5M2 is the 8-bit float E5M2 (IEEE-like, with infinities and NaNs).
	F8E5M2
	// F8E4M3 is the 8-bit float E4M3FN (no infinities, NaN is S.1111.111), PyTorch's float8_e4m3fn.
	F8E4M3
	// F8E8M0 is the 8-bit exponent-only scale type E8M0FNU (2^(e-127), 0xFF is NaN).
	F8E8M0
	// F8E4M3FNUZ is the 8-bit float E4M3FNUZ (bias 8, single NaN 0x80, no negative zero).
	F8E4M3FNUZ
	// F8E5M2FNUZ is the 8-bit float E5M2FNUZ (bias 16, single NaN 0x80, no negative zero).
	F8E5M2FNUZ
	// I16 is a signed 16-bit integer.
	I16
	// U16 is an unsigned 16-bit integer.
	U16
	// F16 is the IEEE 754 half-precision float.
	F16
	// BF16 is bfloat16 (the upper half of an IEEE float32).
	BF16
	// I32 is a signed 32-bit integer.
	I32
	// U32 is an unsigned 32-bit integer.
	U32
	// F32 is the IEEE 754 single-precision float.
	F32
	// C64 is a complex number made of two float32 (real, imaginary).
	C64
	// F64 is the IEEE 754 double-precision float.
	F64
	// I64 is a signed 64-bit integer.
	I64
	// U64 is an unsigned 64-bit integer.
	U64

	numDTypes
)

var dtypeNames = [numDTypes]string{
	Invalid:    "INVALID",
	Bool:       "BOOL",
	F4:         "F4",
	F6E2M3:     "F6_E2M3",
	F6E3M2:     "F6_E3M2",
	U8:         "U8",
	I8:         "I8",
	F8E5M2:     "F8_E5M2",
	F8E4M3:     "F8_E4M3",
	F8E8M0:     "F8_E8M0",
	F8E4M3FNUZ: "F8_E4M3FNUZ",
	F8E5M2FNUZ: "F8_E5M2FNUZ",
	I16:        "I16",
	U16:        "U16",
	F16:        "F16",
	BF16:       "BF16",
	I32:        "I32",
	U32:        "U32",
	F32:        "F32",
	C64:        "C64",
	F64:        "F64",
	I64:        "I64",
	U64:        "U64",
}

var dtypeBits = [numDTypes]int{
	Bool: 8, F4: 4, F6E2M3: 6, F6E3M2: 6,
	U8: 8, I8: 8, F8E5M2: 8, F8E4M3: 8, F8E8M0: 8, F8E4M3FNUZ: 8, F8E5M2FNUZ: 8,
	I16: 16, U16: 16, F16: 16, BF16: 16,
	I32: 32, U32: 32, F32: 32,
	C64: 64, F64: 64, I64: 64, U64: 64,
}

// DTypes lists every valid DType in reference order.
func DTypes() []DType {
	out := make([]DType, 0, numDTypes-1)
	for d := Bool; d < numDTypes; d++ {
		out = append(out, d)
	}
	return out
}

// ParseDType returns the DType whose header name is s (for example "BF16").
// Names are case-sensitive, as in the reference implementation.
func ParseDType(s string) (DType, error) {
	for d := Bool; d < numDTypes; d++ {
		if dtypeNames[d] == s {
			return d, nil
		}
	}
	return Invalid, fmt.Errorf("%w: unknown dtype %q", ErrDType, s)
}

// Valid reports whether d is one of the defined element types.
func (d DType) Valid() bool { return d > Invalid && d < numDTypes }

// String returns the header name of d ("F32", "F8_E4M3", ...).
func (d DType) String() string {
	if d < numDTypes {
		return dtypeNames[d]
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// Bits returns the storage size of one element in bits (4 for F4, 6 for the
// F6 types, 8 or more for every other type), or 0 for an invalid DType.
func (d DType) Bits() int {
	if d < numDTypes {
		return dtypeBits[d]
	}
	return 0
}

// Size returns the size of one element in bytes, or 0 for the sub-byte types
// (F4, F6E2M3, F6E3M2) and for an invalid DType; use Bits for those.
func (d DType) Size() int {
	b := d.Bits()
	if b%8 != 0 {
		return 0
	}
	return b / 8
}

// IsFloat reports whether d is a floating-point (or complex) type.
func (d DType) IsFloat() bool {
	switch d {
	case F4, F6E2M3, F6E3M2, F8E5M2, F8E4M3, F8E8M0, F8E4M3FNUZ, F8E5M2FNUZ, F16, BF16, F32, C64, F64:
		return true
	}
	return false
}

// MarshalText implements encoding.TextMarshaler with the header name.
func (d DType) MarshalText() ([]byte, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("%w: cannot marshal %v", ErrDType, d)
	}
	return []byte(d.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler from the header name.
func (d *DType) UnmarshalText(b []byte) error {
	v, err := ParseDType(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
