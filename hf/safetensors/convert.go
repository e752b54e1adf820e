package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gotpu/gotpu/dtype"
)

// F16ToFloat32 converts IEEE half-precision bits to float32 exactly
// (subnormals, infinities and NaN payloads included); it is
// dtype.Float16.F32.
func F16ToFloat32(h uint16) float32 { return dtype.Float16(h).F32() }

// Float32ToF16 converts f to IEEE half-precision bits with round-to-nearest-even;
// values too large become ±Inf and NaN stays a (quiet) NaN; it is
// dtype.F16FromF32.
func Float32ToF16(f float32) uint16 { return uint16(dtype.F16FromF32(f)) }

// BF16ToFloat32 converts bfloat16 bits to float32 exactly; it is
// dtype.BFloat16.F32.
func BF16ToFloat32(h uint16) float32 { return dtype.BFloat16(h).F32() }

// Float32ToBF16 converts f to bfloat16 bits with round-to-nearest-even;
// NaN stays a (quiet) NaN; it is dtype.BF16FromF32.
func Float32ToBF16(f float32) uint16 { return uint16(dtype.BF16FromF32(f)) }

// F8E4M3ToFloat32 converts float8_e4m3fn bits (bias 7, no infinities,
// S.1111.111 is NaN, max ±448) to float32.
func F8E4M3ToFloat32(x uint8) float32 {
	e, m := int(x>>3)&0xf, int(x&7)
	var v float64
	switch {
	case e == 0xf && m == 7:
		v = math.NaN()
	case e == 0:
		v = math.Ldexp(float64(m), -9)
	default:
		v = math.Ldexp(float64(8+m), e-10)
	}
	return signed(x, v)
}

// F8E5M2ToFloat32 converts float8_e5m2 bits (bias 15, IEEE-like with
// infinities and NaNs) to float32.
func F8E5M2ToFloat32(x uint8) float32 {
	e, m := int(x>>2)&0x1f, int(x&3)
	var v float64
	switch {
	case e == 0x1f && m == 0:
		v = math.Inf(1)
	case e == 0x1f:
		v = math.NaN()
	case e == 0:
		v = math.Ldexp(float64(m), -16)
	default:
		v = math.Ldexp(float64(4+m), e-17)
	}
	return signed(x, v)
}

// F8E4M3FNUZToFloat32 converts float8_e4m3fnuz bits (bias 8, 0x80 is the only
// NaN, no infinities, no negative zero) to float32.
func F8E4M3FNUZToFloat32(x uint8) float32 {
	if x == 0x80 {
		return float32(math.NaN())
	}
	e, m := int(x>>3)&0xf, int(x&7)
	var v float64
	if e == 0 {
		v = math.Ldexp(float64(m), -10)
	} else {
		v = math.Ldexp(float64(8+m), e-11)
	}
	return signed(x, v)
}

// F8E5M2FNUZToFloat32 converts float8_e5m2fnuz bits (bias 16, 0x80 is the
// only NaN, no infinities, no negative zero) to float32.
func F8E5M2FNUZToFloat32(x uint8) float32 {
	if x == 0x80 {
		return float32(math.NaN())
	}
	e, m := int(x>>2)&0x1f, int(x&3)
	var v float64
	if e == 0 {
		v = math.Ldexp(float64(m), -17)
	} else {
		v = math.Ldexp(float64(4+m), e-18)
	}
	return signed(x, v)
}

// F8E8M0ToFloat32 converts float8_e8m0fnu bits (an unsigned power of two
// 2^(x-127); 0xFF is NaN) to float32.
func F8E8M0ToFloat32(x uint8) float32 {
	if x == 0xff {
		return float32(math.NaN())
	}
	return float32(math.Ldexp(1, int(x)-127))
}

func signed(x uint8, v float64) float32 {
	if x&0x80 != 0 {
		v = -v
	}
	return float32(v)
}

// DecodeFloat64 converts little-endian elements of type dt to float64.
// Every real numeric dtype with a byte-sized element is supported (integers
// beyond 2^53 round); C64 and the packed sub-byte types return ErrDType.
func DecodeFloat64(dt DType, data []byte) ([]float64, error) {
	size := dt.Size()
	if size == 0 || dt == C64 {
		return nil, fmt.Errorf("%w: conversion of %v to float is not supported", ErrDType, dt)
	}
	if len(data)%size != 0 {
		return nil, fmt.Errorf("%w: %d bytes is not a whole number of %v elements", ErrShape, len(data), dt)
	}
	n := len(data) / size
	out := make([]float64, n)
	le := binary.LittleEndian
	for i := range out {
		p := data[i*size:]
		var v float64
		switch dt {
		case Bool:
			if p[0] != 0 {
				v = 1
			}
		case U8:
			v = float64(p[0])
		case I8:
			v = float64(int8(p[0]))
		case F8E5M2:
			v = float64(F8E5M2ToFloat32(p[0]))
		case F8E4M3:
			v = float64(F8E4M3ToFloat32(p[0]))
		case F8E8M0:
			v = float64(F8E8M0ToFloat32(p[0]))
		case F8E4M3FNUZ:
			v = float64(F8E4M3FNUZToFloat32(p[0]))
		case F8E5M2FNUZ:
			v = float64(F8E5M2FNUZToFloat32(p[0]))
		case I16:
			v = float64(int16(le.Uint16(p)))
		case U16:
			v = float64(le.Uint16(p))
		case F16:
			v = float64(F16ToFloat32(le.Uint16(p)))
		case BF16:
			v = float64(BF16ToFloat32(le.Uint16(p)))
		case I32:
			v = float64(int32(le.Uint32(p)))
		case U32:
			v = float64(le.Uint32(p))
		case F32:
			v = float64(math.Float32frombits(le.Uint32(p)))
		case F64:
			v = math.Float64frombits(le.Uint64(p))
		case I64:
			v = float64(int64(le.Uint64(p)))
		case U64:
			v = float64(le.Uint64(p))
		}
		out[i] = v
	}
	return out, nil
}

// DecodeFloat32 converts little-endian elements of type dt to float32, as
// DecodeFloat64 does (F64 and wide integers round to the nearest float32).
func DecodeFloat32(dt DType, data []byte) ([]float32, error) {
	if dt == F32 {
		if len(data)%4 != 0 {
			return nil, fmt.Errorf("%w: %d bytes is not a whole number of F32 elements", ErrShape, len(data))
		}
		out := make([]float32, len(data)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		return out, nil
	}
	f64, err := DecodeFloat64(dt, data)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(f64))
	for i, v := range f64 {
		out[i] = float32(v)
	}
	return out, nil
}

// EncodeFloat32 converts values to little-endian elements of type dt, which
// must be F32, F64, F16 or BF16 (F16 and BF16 round to nearest even).
func EncodeFloat32(dt DType, values []float32) ([]byte, error) {
	le := binary.LittleEndian
	switch dt {
	case F32:
		out := make([]byte, 4*len(values))
		for i, v := range values {
			le.PutUint32(out[4*i:], math.Float32bits(v))
		}
		return out, nil
	case F64:
		out := make([]byte, 8*len(values))
		for i, v := range values {
			le.PutUint64(out[8*i:], math.Float64bits(float64(v)))
		}
		return out, nil
	case F16, BF16:
		out := make([]byte, 2*len(values))
		for i, v := range values {
			if dt == F16 {
				le.PutUint16(out[2*i:], Float32ToF16(v))
			} else {
				le.PutUint16(out[2*i:], Float32ToBF16(v))
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: encoding float32 as %v is not supported", ErrDType, dt)
}
