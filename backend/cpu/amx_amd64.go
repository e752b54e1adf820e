//go:build amd64 && !purego

package cpu

import (
	"github.com/gotpu/gotpu/internal/cpulevel"

	"github.com/gotpu/gotpu/backend/cpu/internal/gemm"
)

func init() {
	if cpulevel.Has(cpulevel.AMX) {
		asmTileAMX = &gemmTile[float32]{mr: 32, nr: 32, kc: 512, mc: 256, nc: 4096, kern: gemm.AMX32x32, pairs: true, amx: true}
	}
	if haveAVX512() {
		pairRowsAsm = gemm.PairRowsAMX
	}
}
