//go:build amd64 && !purego

package vec

import (
	"unsafe"

	"github.com/gotpu/gotpu/dtype"
)

// bf16WidenAVX2 sets dst[i] to the float32 value of the bfloat16 src[i]
// for i < n, a multiple of 8.
//
//go:noescape
func bf16WidenAVX2(dst *float32, src *uint16, n int)

// bf16PackAVX2 sets dst[i] to the top 16 bits of src[i] for i < n, a
// multiple of 8: the bfloat16 of a value already rounded to bfloat16.
//
//go:noescape
func bf16PackAVX2(dst *uint16, src *float32, n int)

// bf16NarrowAVX512 sets dst[i] to dtype.BF16FromF32(src[i]) for i < n, a
// multiple of 16, in one pass (narrow_amd64.s).
//
//go:noescape
func bf16NarrowAVX512(dst *uint16, src *float32, n int)

// roundBF16AVX2 rounds n (a multiple of 8) f32 values at x in place to
// bfloat16 as dtype.BF16FromF32 (ties to even, NaN quieted): each becomes
// RoundBF16(x) when lo is 0, RoundBF16(x - RoundBF16(x)) when lo is 1
// (round_amd64.s).
//
//go:noescape
func roundBF16AVX2(x *float32, n int, lo int)

// ropeBF16AVX2 is RopeBF16's vector loop (rope_bf16_amd64.s): pairs j < n
// (a multiple of 8) of rotate-half rows of half-width h.
//
//go:noescape
func ropeBF16AVX2(dst, x, c, s *uint16, h, n int)

func u16p(b []dtype.BFloat16) *uint16 { return (*uint16)(unsafe.Pointer(&b[0])) }

// widenAsm widens the longest multiple-of-8 prefix and returns its
// length, 0 without assembly.
func (k *Kernels) widenAsm(dst []float32, src []dtype.BFloat16) int {
	n := len(dst) &^ 7
	if n == 0 || !k.Asm {
		return 0
	}
	bf16WidenAVX2(&dst[0], u16p(src), n)
	return n
}

// narrowAsm narrows the longest multiple-of-16 prefix in one pass
// (avx512), or rounds the longest multiple-of-8 prefix in place and packs
// it (avx2), and returns its length, 0 without assembly.
func (k *Kernels) narrowAsm(dst []dtype.BFloat16, src []float32) int {
	if !k.Asm {
		return 0
	}
	if n := len(src) &^ 15; n > 0 && k.z {
		bf16NarrowAVX512(u16p(dst), &src[0], n)
		return n
	}
	n := len(src) &^ 7
	if n > 0 {
		roundBF16AVX2(&src[0], n, 0)
		bf16PackAVX2(u16p(dst), &src[0], n)
	}
	return n
}

// roundAsm rounds the longest multiple-of-8 prefix of x (RoundHi for lo
// 0, RoundLo for lo 1) and returns its length, 0 without assembly.
func (k *Kernels) roundAsm(x []float32, lo int) int {
	n := len(x) &^ 7
	if n == 0 || !k.Asm {
		return 0
	}
	roundBF16AVX2(&x[0], n, lo)
	return n
}

// packAsm packs the longest multiple-of-8 prefix and returns its length,
// 0 without assembly.
func (k *Kernels) packAsm(dst []uint16, src []float32) int {
	n := len(src) &^ 7
	if n == 0 || !k.Asm {
		return 0
	}
	bf16PackAVX2(&dst[0], &src[0], n)
	return n
}

// ropeBF16Asm runs RopeBF16 on the vector kernel — the pairs j < h in
// groups of eight, the last h%8 through an eight-pair buffer so that
// every element sees the same arithmetic — and reports whether it did
// (false without assembly).
func (k *Kernels) ropeBF16Asm(dst, xr, cr, sr []dtype.BFloat16, h int) bool {
	if h == 0 || !k.Asm {
		return false
	}
	_, _, _, _ = dst[2*h-1], xr[2*h-1], cr[2*h-1], sr[2*h-1]
	n := h &^ 7
	if n > 0 {
		ropeBF16AVX2(u16p(dst), u16p(xr), u16p(cr), u16p(sr), h, n)
	}
	if r := h - n; r > 0 {
		var bx, bc, bs, bd [16]dtype.BFloat16
		copy(bx[:r], xr[n:h])
		copy(bx[8:8+r], xr[h+n:])
		copy(bc[:r], cr[n:h])
		copy(bc[8:8+r], cr[h+n:])
		copy(bs[:r], sr[n:h])
		copy(bs[8:8+r], sr[h+n:])
		ropeBF16AVX2(u16p(bd[:]), u16p(bx[:]), u16p(bc[:]), u16p(bs[:]), 8, 8)
		copy(dst[n:h], bd[:r])
		copy(dst[h+n:], bd[8:8+r])
	}
	return true
}
