// Package dtype defines gotpu's element types, their sizes and names, and
// PyTorch's type-promotion lattice.
package dtype

import "fmt"

// DType is a tensor element type.
type DType uint8

// The element types gotpu supports. Invalid is the zero value and never names a
// real tensor's type.
const (
	Invalid DType = iota
	Bool
	U8
	I8
	I16
	I32
	I64
	F16
	BF16
	F32
	F64
	numDTypes
)

// All lists every valid dtype in promotion order.
var All = []DType{Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64}

var names = [...]string{Invalid: "invalid", Bool: "bool", U8: "u8", I8: "i8", I16: "i16", I32: "i32", I64: "i64", F16: "f16", BF16: "bf16", F32: "f32", F64: "f64"}

var torchNames = [...]string{Invalid: "invalid", Bool: "torch.bool", U8: "torch.uint8", I8: "torch.int8", I16: "torch.int16", I32: "torch.int32", I64: "torch.int64", F16: "torch.float16", BF16: "torch.bfloat16", F32: "torch.float32", F64: "torch.float64"}

var sizes = [...]int{Invalid: 0, Bool: 1, U8: 1, I8: 1, I16: 2, I32: 4, I64: 8, F16: 2, BF16: 2, F32: 4, F64: 8}

// String returns the short name ("f32", "i64", ...).
func (d DType) String() string {
	if d >= numDTypes {
		return fmt.Sprintf("dtype(%d)", uint8(d))
	}
	return names[d]
}

// TorchName returns PyTorch's name for d ("torch.float32", ...).
func (d DType) TorchName() string {
	if d >= numDTypes {
		return d.String()
	}
	return torchNames[d]
}

// Size returns the size of one element in bytes.
func (d DType) Size() int {
	if d >= numDTypes {
		return 0
	}
	return sizes[d]
}

// Valid reports whether d is one of the supported dtypes.
func (d DType) Valid() bool { return d > Invalid && d < numDTypes }

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == F16 || d == BF16 || d == F32 || d == F64 }

// IsInt reports whether d is an integer type (bool excluded).
func (d DType) IsInt() bool { return d >= U8 && d <= I64 }

// IsSigned reports whether d can hold negative values.
func (d DType) IsSigned() bool { return d.IsFloat() || (d >= I8 && d <= I64) }

// Parse returns the dtype named s. It accepts the short names ("f32"),
// PyTorch's names with or without the "torch." prefix ("float32", "torch.long")
// and common aliases.
func Parse(s string) (DType, error) {
	switch s {
	case "bool", "torch.bool":
		return Bool, nil
	case "u8", "uint8", "torch.uint8":
		return U8, nil
	case "i8", "int8", "torch.int8":
		return I8, nil
	case "i16", "int16", "short", "torch.int16", "torch.short":
		return I16, nil
	case "i32", "int32", "int", "torch.int32", "torch.int":
		return I32, nil
	case "i64", "int64", "long", "torch.int64", "torch.long":
		return I64, nil
	case "f16", "float16", "half", "torch.float16", "torch.half":
		return F16, nil
	case "bf16", "bfloat16", "torch.bfloat16":
		return BF16, nil
	case "f32", "float32", "float", "torch.float32", "torch.float":
		return F32, nil
	case "f64", "float64", "double", "torch.float64", "torch.double":
		return F64, nil
	}
	return Invalid, fmt.Errorf("dtype: unknown dtype %q", s)
}

// MarshalText implements encoding.TextMarshaler.
func (d DType) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *DType) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
