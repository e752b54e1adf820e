//go:build amd64 && !purego

package quant

import "github.com/gotpu/gotpu/internal/cpulevel"

// quantQ8RowAVX2 quantizes nb blocks of 32 values of x as
// acts.quantizeQ8Row does, with its bits: the quants into qs, per block
// d, Σq into isum and, unless s is nil, s = Σq·d (act_amd64.s).
//
//go:noescape
func quantQ8RowAVX2(x *float32, nb int, qs *int8, d *float32, s *float32, isum *int32)

// quantQ8KRowAVX2 quantizes nb blocks of 256 values of x to Q8_K as
// quantQ8K does, with its bits: the quants into qs, per block d and the 16
// sums of 16 quants into bsum (act_amd64.s).
//
//go:noescape
func quantQ8KRowAVX2(x *float32, nb int, qs *int8, d *float32, bsum *int16)

// fillK6AVX2 writes n sub-blocks of 32 quants in acts.k6's order, as
// fillK6 does, and unless corr is nil their 32-fold pair sums
// (dotk_amd64.s).
//
//go:noescape
func fillK6AVX2(src, dst *int8, corr *int16, n int)

// finiteAVX2 reports whether x[0:n] holds no Inf or NaN.
//
//go:noescape
func finiteAVX2(x *float32, n int) bool

func init() {
	if cpulevel.Has(LevelAVX2) {
		quantQ8Row = quantQ8RowAVX2
		quantQ8KRow = quantQ8KRowAVX2
		fillK6Asm = fillK6AVX2
		finiteAsm = finiteAVX2
	}
}
