//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/gotpu/gotpu/dtype"
)

// ropeBF16AVX2 is ropeRowBF16's vector loop (rope_bf16_amd64.s).
//
//go:noescape
func ropeBF16AVX2(dst, x, c, s *uint16, h, n int)

// ropeBF16Asm runs ropeRowBF16 on AVX2 — the pairs j < h in groups of
// eight, the last h%8 through an eight-pair buffer so that every element
// sees the same arithmetic — and reports whether it did (false without
// AVX2).
func ropeBF16Asm(dst, xr, cr, sr []dtype.BFloat16, h int) bool {
	if h == 0 || !vecAsm() {
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

func u16p(b []dtype.BFloat16) *uint16 { return (*uint16)(unsafe.Pointer(&b[0])) }
