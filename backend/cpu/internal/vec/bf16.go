package vec

import (
	"math"

	"github.com/gotpu/gotpu/dtype"
)

// bfloat16 block conversions and row kernels: the first and last step of
// every bf16 fast path (elementwise ops, softmax, norms, GEMV, attention):
// PyTorch computes bf16 ops in float32 and rounds each result to bf16
// once, so a bf16 kernel is a widen, the float32 kernel, and a narrow. At
// the assembly levels the bulk of a block runs in bf16_amd64.s and
// round_amd64.s (one rounding pass and one pack at avx2, one pass at
// avx512); the Go loops give the same bits.

// Widen sets dst[i] to the float32 value of src[i] (exact: a bf16 is the
// top half of an f32) for i < len(dst); src must be at least as long.
func (k *Kernels) Widen(dst []float32, src []dtype.BFloat16) {
	n := len(dst)
	src = src[:n]
	for i := k.widenAsm(dst, src); i < n; i++ {
		dst[i] = src[i].F32()
	}
}

// Narrow sets dst[i] to dtype.BF16FromF32(src[i]) (round to nearest even,
// NaN kept with its quiet bit set) for i < len(src); dst must be at least
// as long. src is scratch: its contents are unspecified afterwards (the
// avx2 path rounds it in place, the avx512 one reads it only).
func (k *Kernels) Narrow(dst []dtype.BFloat16, src []float32) {
	n := len(src)
	dst = dst[:n]
	for i := k.narrowAsm(dst, src); i < n; i++ {
		dst[i] = dtype.BF16FromF32(src[i])
	}
}

// BF16Bits returns the float32 bits of the bfloat16 rounding of the f32
// bits b, as dtype.BF16FromF32 (ties to even, NaN quieted with its sign).
func BF16Bits(b uint32) uint32 {
	if b&0x7fffffff > 0x7f800000 { // NaN: keep sign, force quiet bit
		return (b | 0x00400000) &^ 0xffff
	}
	return (b + 0x7fff + (b>>16)&1) &^ 0xffff
}

// RoundHi replaces each value x by its bfloat16 rounding, RoundBF16(x).
func (k *Kernels) RoundHi(x []float32) {
	for i := k.roundAsm(x, 0); i < len(x); i++ {
		x[i] = math.Float32frombits(BF16Bits(math.Float32bits(x[i])))
	}
}

// RoundLo replaces each value x by RoundBF16(x - RoundBF16(x)): the second
// term of x's split into two bfloat16s.
func (k *Kernels) RoundLo(x []float32) {
	for i := k.roundAsm(x, 1); i < len(x); i++ {
		v := x[i]
		hi := math.Float32frombits(BF16Bits(math.Float32bits(v)))
		x[i] = math.Float32frombits(BF16Bits(math.Float32bits(v - hi)))
	}
}

// PackRounded sets dst[i] to the top 16 bits of src[i] for i < len(src):
// the bfloat16 of values already rounded to bfloat16 (RoundHi, RoundLo).
func (k *Kernels) PackRounded(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i := k.packAsm(dst, src); i < len(src); i++ {
		dst[i] = uint16(math.Float32bits(src[i]) >> 16)
	}
}

// RopeBF16 is Rope for bf16 rows with the arithmetic of the unfused bf16
// ops: each product and the sum computed in float32 from the widened
// operands and rounded to bf16 (a product of two bf16 values is exact in
// float32, so only those roundings happen). The vector kernel's products
// and sums take the x side's NaN when both operands are NaN, as the
// op-by-op vector kernels do; the Go loop leaves that order to the
// compiler.
func (k *Kernels) RopeBF16(dst, x, c, s []dtype.BFloat16, h int) {
	dst, x, c, s = dst[:2*h], x[:2*h], c[:2*h], s[:2*h]
	if k.ropeBF16Asm(dst, x, c, s, h) {
		return
	}
	round := func(v float32) float32 { return dtype.BF16FromF32(v).F32() }
	for j := 0; j < h; j++ {
		lo, hi := x[j].F32(), x[j+h].F32()
		dst[j] = dtype.BF16FromF32(round(float32(lo*c[j].F32())) + round(float32(-hi*s[j].F32())))
		dst[j+h] = dtype.BF16FromF32(round(float32(hi*c[j+h].F32())) + round(float32(lo*s[j+h].F32())))
	}
}
