package dtype

import "math"

// This file is gotpu's one half-precision codec: every package that
// converts between float32 and binary16 or bfloat16 bits (the CPU backend,
// the GGUF dequantizers and quantizers, the safetensors reader and writer)
// goes through it.

// BFloat16 is the bit pattern of a bfloat16 value: the top 16 bits of an IEEE f32.
type BFloat16 uint16

// Float16 is the bit pattern of an IEEE 754 binary16 value.
type Float16 uint16

// BF16FromF32 rounds f to bfloat16 with round-to-nearest-even; NaNs stay NaN
// (quiet) and infinities stay infinite.
func BF16FromF32(f float32) BFloat16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep sign, force quiet bit
		return BFloat16(b>>16 | 0x0040)
	}
	b += 0x7fff + (b>>16)&1
	return BFloat16(b >> 16)
}

// F32 returns the float32 value of a bfloat16 (exact).
func (h BFloat16) F32() float32 { return math.Float32frombits(uint32(h) << 16) }

// RoundBF16 rounds f to the nearest bfloat16 and returns it as a float32.
func RoundBF16(f float32) float32 { return BF16FromF32(f).F32() }

// F16FromF32 rounds f to IEEE binary16 with round-to-nearest-even, producing
// subnormals, infinities on overflow and quiet NaNs as hardware does.
func F16FromF32(f float32) Float16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	switch {
	case exp == 0xff: // inf or nan
		if man != 0 {
			return Float16(sign | 0x7e00 | uint16(man>>13))
		}
		return Float16(sign | 0x7c00)
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return Float16(sign | 0x7c00)
	}
	if e <= 0 {
		// Subnormal (or zero) in f16.
		if e < -10 {
			return Float16(sign)
		}
		m := man | 0x800000
		shift := uint32(14 - e)
		half := uint32(1) << (shift - 1)
		rem := m & ((1 << shift) - 1)
		r := m >> shift
		if rem > half || (rem == half && r&1 == 1) {
			r++
		}
		return Float16(sign | uint16(r))
	}
	r := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++ // may carry into the exponent, which is correct (up to inf)
	}
	return Float16(sign | uint16(r))
}

// F32 returns the float32 value of a binary16 (exact): normal values by
// rebiasing the exponent (integer arithmetic only), subnormals as
// mantissa × 2^-24 (exact; no float32 subnormal is ever an operand, which
// would be slow on x86), infinities and NaNs keeping their payload, as
// ggml's scalar conversion and numpy do.
func (h Float16) F32() float32 {
	sign := uint32(h&0x8000) << 16
	em := uint32(h & 0x7fff)
	switch {
	case em >= 0x7c00: // Inf, NaN
		return math.Float32frombits(sign | 0x7f800000 | (em&0x3ff)<<13)
	case em >= 0x0400: // normal: exponent bias 15 -> 127
		return math.Float32frombits(sign | (em<<13 + (127-15)<<23))
	}
	return math.Float32frombits(sign | math.Float32bits(float32(em)*0x1p-24))
}

// RoundF16 rounds f to the nearest binary16 and returns it as a float32.
func RoundF16(f float32) float32 { return F16FromF32(f).F32() }
