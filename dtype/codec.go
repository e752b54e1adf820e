package dtype

import (
	"encoding/binary"
	"math"
)

// Float64At decodes element i of little-endian data of type d as a float64.
func Float64At(d DType, b []byte, i int) float64 {
	switch d {
	case Bool:
		if b[i] != 0 {
			return 1
		}
		return 0
	case U8:
		return float64(b[i])
	case I8:
		return float64(int8(b[i]))
	case I16:
		return float64(int16(binary.LittleEndian.Uint16(b[2*i:])))
	case I32:
		return float64(int32(binary.LittleEndian.Uint32(b[4*i:])))
	case I64:
		return float64(int64(binary.LittleEndian.Uint64(b[8*i:])))
	case F16:
		return float64(Float16(binary.LittleEndian.Uint16(b[2*i:])).F32())
	case BF16:
		return float64(BFloat16(binary.LittleEndian.Uint16(b[2*i:])).F32())
	case F32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	case F64:
		return math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	panic("dtype: Float64At on " + d.String())
}

// Int64At decodes element i as an int64 (floats truncate toward zero).
func Int64At(d DType, b []byte, i int) int64 {
	switch d {
	case I64:
		return int64(binary.LittleEndian.Uint64(b[8*i:]))
	case F16, BF16, F32, F64:
		return int64(Float64At(d, b, i))
	}
	return int64(Float64At(d, b, i))
}

// PutFloat64 encodes v as element i of type d, converting as a C cast does
// (floats to ints truncate; values out of an integer type's range wrap).
func PutFloat64(d DType, b []byte, i int, v float64) {
	switch d {
	case Bool:
		if v != 0 {
			b[i] = 1
		} else {
			b[i] = 0
		}
	case U8:
		b[i] = uint8(int64(v))
	case I8:
		b[i] = uint8(int8(int64(v)))
	case I16:
		binary.LittleEndian.PutUint16(b[2*i:], uint16(int64(v)))
	case I32:
		binary.LittleEndian.PutUint32(b[4*i:], uint32(int64(v)))
	case I64:
		binary.LittleEndian.PutUint64(b[8*i:], uint64(int64(v)))
	case F16:
		binary.LittleEndian.PutUint16(b[2*i:], uint16(F16FromF32(float32(v))))
	case BF16:
		binary.LittleEndian.PutUint16(b[2*i:], uint16(BF16FromF32(float32(v))))
	case F32:
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
	case F64:
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	default:
		panic("dtype: PutFloat64 on " + d.String())
	}
}

// PutInt64 encodes v as element i of type d.
func PutInt64(d DType, b []byte, i int, v int64) {
	switch d {
	case I64:
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	case I32:
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	case I16:
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	case I8, U8:
		b[i] = uint8(v)
	default:
		PutFloat64(d, b, i, float64(v))
	}
}
