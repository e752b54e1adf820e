//go:build amd64 && !purego

package quant

import "github.com/gotpu/gotpu/internal/cpulevel"

// quantQ8RowAVX2 quantizes nb blocks of 32 values of x as
// acts.quantizeQ8Row does, with its bits: the quants into qs, per block
// d, Σq into isum and, unless s is nil, s = Σq·d (act_amd64.s).
//
//go:noescape
func quantQ8RowAVX2(x *float32, nb int, qs *int8, d *float32, s *float32, isum *int32)

// finiteAVX2 reports whether x[0:n] holds no Inf or NaN.
//
//go:noescape
func finiteAVX2(x *float32, n int) bool

func init() {
	if cpulevel.Has(LevelAVX2) {
		quantQ8Row = quantQ8RowAVX2
		finiteAsm = finiteAVX2
	}
}
