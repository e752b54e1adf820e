package gguf

import (
	"fmt"
	"math"
)

// ValueType is the type of a metadata value (enum gguf_type).
type ValueType uint32

// The metadata value types; the numbers are part of the file format.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{
	TypeUint8: "uint8", TypeInt8: "int8", TypeUint16: "uint16", TypeInt16: "int16",
	TypeUint32: "uint32", TypeInt32: "int32", TypeFloat32: "float32", TypeBool: "bool",
	TypeString: "string", TypeArray: "array", TypeUint64: "uint64", TypeInt64: "int64",
	TypeFloat64: "float64",
}

// Valid reports whether t is one of the thirteen value types.
func (t ValueType) Valid() bool { return t <= TypeFloat64 }

// String returns the type's name ("uint32", "string", "array"), or
// "value_type(N)" for an unknown number.
func (t ValueType) String() string {
	if t.Valid() {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("value_type(%d)", uint32(t))
}

// size returns the encoded size of a fixed-size scalar type, or 0 for
// strings and arrays.
func (t ValueType) size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

func (t ValueType) isSigned() bool {
	return t == TypeInt8 || t == TypeInt16 || t == TypeInt32 || t == TypeInt64
}

func (t ValueType) isUnsigned() bool {
	return t == TypeUint8 || t == TypeUint16 || t == TypeUint32 || t == TypeUint64
}

// Value is one metadata value: a scalar, a string or an Array. The zero
// Value is an invalid placeholder (Type reports uint8 but nothing was read).
type Value struct {
	typ  ValueType
	bits uint64 // integers (signed ones sign-extended), bools (0/1), float32 or float64 bits
	str  string
	arr  *Array
}

// Type returns the value's type.
func (v Value) Type() ValueType { return v.typ }

// TypeName describes the type, spelling out arrays: "uint32",
// "array[string]", "array[array[int32]]".
func (v Value) TypeName() string {
	if v.typ == TypeArray && v.arr != nil {
		return v.arr.TypeName()
	}
	return v.typ.String()
}

// Uint returns an integer value of any integer type as uint64; ok is false
// for other types and for negative values.
func (v Value) Uint() (x uint64, ok bool) {
	switch {
	case v.typ.isUnsigned():
		return v.bits, true
	case v.typ.isSigned() && int64(v.bits) >= 0:
		return v.bits, true
	}
	return 0, false
}

// Int returns an integer value of any integer type as int64; ok is false
// for other types and for uint64 values above math.MaxInt64.
func (v Value) Int() (x int64, ok bool) {
	switch {
	case v.typ.isSigned():
		return int64(v.bits), true
	case v.typ.isUnsigned() && v.bits <= math.MaxInt64:
		return int64(v.bits), true
	}
	return 0, false
}

// Float returns a float32 or float64 value as float64 (float32 widens
// exactly); ok is false for other types.
func (v Value) Float() (x float64, ok bool) {
	switch v.typ {
	case TypeFloat32:
		return float64(math.Float32frombits(uint32(v.bits))), true
	case TypeFloat64:
		return math.Float64frombits(v.bits), true
	}
	return 0, false
}

// Bool returns a bool value; ok is false for other types.
func (v Value) Bool() (x bool, ok bool) {
	if v.typ == TypeBool {
		return v.bits != 0, true
	}
	return false, false
}

// Str returns a string value (GGUF strings are UTF-8 by convention, but
// their bytes are returned as stored); ok is false for other types.
func (v Value) Str() (s string, ok bool) {
	if v.typ == TypeString {
		return v.str, true
	}
	return "", false
}

// Array returns an array value; ok is false for other types.
func (v Value) Array() (a *Array, ok bool) {
	if v.typ == TypeArray && v.arr != nil {
		return v.arr, true
	}
	return nil, false
}

// Any returns the value as the Go type of its GGUF type: uint8, int8,
// uint16, int16, uint32, int32, float32, bool, string, *Array, uint64,
// int64 or float64.
func (v Value) Any() any {
	switch v.typ {
	case TypeUint8:
		return uint8(v.bits)
	case TypeInt8:
		return int8(v.bits)
	case TypeUint16:
		return uint16(v.bits)
	case TypeInt16:
		return int16(v.bits)
	case TypeUint32:
		return uint32(v.bits)
	case TypeInt32:
		return int32(v.bits)
	case TypeFloat32:
		return math.Float32frombits(uint32(v.bits))
	case TypeBool:
		return v.bits != 0
	case TypeString:
		return v.str
	case TypeArray:
		return v.arr
	case TypeUint64:
		return v.bits
	case TypeInt64:
		return int64(v.bits)
	case TypeFloat64:
		return math.Float64frombits(v.bits)
	}
	return nil
}

// Array is a metadata array: Len elements of one type Elem, which may itself
// be TypeArray (nested arrays, each with its own element type and length).
// Its elements are held as one typed Go slice; an Array is read-only.
type Array struct {
	elem ValueType
	// vals is []uint8, []int8, []uint16, []int16, []uint32, []int32,
	// []float32, []bool, []string, []*Array, []uint64, []int64 or []float64
	// according to elem.
	vals any
	n    int
}

// Elem returns the element type.
func (a *Array) Elem() ValueType { return a.elem }

// Len returns the number of elements.
func (a *Array) Len() int { return a.n }

// TypeName describes the array's type: "array[string]", and for nested
// arrays the type of the first element ("array[array[int32]]"; "array[array]"
// when empty).
func (a *Array) TypeName() string {
	if a.elem == TypeArray {
		if inner := a.vals.([]*Array); len(inner) > 0 {
			return "array[" + inner[0].TypeName() + "]"
		}
	}
	return "array[" + a.elem.String() + "]"
}

// Values returns the elements as the typed slice for the element type:
// []uint8, []int8, []uint16, []int16, []uint32, []int32, []float32, []bool,
// []string, []*Array (nested arrays), []uint64, []int64 or []float64. The
// slice is shared: do not modify it.
func (a *Array) Values() any { return a.vals }

// Index returns element i as a Value (it panics if i is out of range).
func (a *Array) Index(i int) Value {
	switch s := a.vals.(type) {
	case []uint8:
		return Value{typ: TypeUint8, bits: uint64(s[i])}
	case []int8:
		return Value{typ: TypeInt8, bits: uint64(int64(s[i]))}
	case []uint16:
		return Value{typ: TypeUint16, bits: uint64(s[i])}
	case []int16:
		return Value{typ: TypeInt16, bits: uint64(int64(s[i]))}
	case []uint32:
		return Value{typ: TypeUint32, bits: uint64(s[i])}
	case []int32:
		return Value{typ: TypeInt32, bits: uint64(int64(s[i]))}
	case []float32:
		return Value{typ: TypeFloat32, bits: uint64(math.Float32bits(s[i]))}
	case []bool:
		b := uint64(0)
		if s[i] {
			b = 1
		}
		return Value{typ: TypeBool, bits: b}
	case []string:
		return Value{typ: TypeString, str: s[i]}
	case []*Array:
		return Value{typ: TypeArray, arr: s[i]}
	case []uint64:
		return Value{typ: TypeUint64, bits: s[i]}
	case []int64:
		return Value{typ: TypeInt64, bits: uint64(s[i])}
	case []float64:
		return Value{typ: TypeFloat64, bits: math.Float64bits(s[i])}
	}
	panic("gguf: array holds no values")
}

// Strings returns the elements of a string array (shared; do not modify).
func (a *Array) Strings() ([]string, bool) {
	s, ok := a.vals.([]string)
	return s, ok
}

// Ints returns the elements of an array of any integer type as int64s
// (a new slice); ok is false for other element types and when a uint64
// element exceeds math.MaxInt64.
func (a *Array) Ints() ([]int64, bool) {
	if !a.elem.isSigned() && !a.elem.isUnsigned() {
		return nil, false
	}
	out := make([]int64, a.n)
	for i := range out {
		x, ok := a.Index(i).Int()
		if !ok {
			return nil, false
		}
		out[i] = x
	}
	return out, true
}

// Floats returns the elements of a float32 or float64 array as float64s (a
// new slice); ok is false for other element types.
func (a *Array) Floats() ([]float64, bool) {
	out := make([]float64, 0, a.n)
	switch s := a.vals.(type) {
	case []float32:
		for _, x := range s {
			out = append(out, float64(x))
		}
	case []float64:
		out = append(out, s...)
	default:
		return nil, false
	}
	return out, true
}
