//go:build amd64 && !purego

package cpu

import "github.com/gotpu/gotpu/backend/cpu/internal/gemm"

// The AVX-512 (ZMM) GEMM micro-kernels, level avx512 (internal/gemm/tile512_amd64.s):
// the contract of gemm.F32x6x16 on larger register tiles, so that every
// element is still one FMA chain over k in order and the bits equal the
// AVX2 kernels'.
//
// The tile is 6 rows by four ZMM vectors (6x64 f32, 6x32 f64): 24
// accumulators, four B vectors and four broadcast registers. Measured
// against 14x32, 12x32 and 8x48 f32 tiles (BenchmarkBlockSweep512, one thread,
// 1536^3, Zen 5, each at its best kc/mc): 6x64 213, 14x32 196, 12x32 186,
// 8x48 200 GFLOP/s (AVX2 6x16: 118). Per k step it issues 6 broadcasts and
// 4 loads for 24 FMAs (14x32: 14 and 2 for 28), its A panels use the
// 6-row packing the AVX2 tile has, and 6-row panels waste less of the
// few-row products' m (128 rows: 132 computed, against 140 in 14-row
// panels).

var (
	asm512TileF32 = avx512Tile(newGemmTile(6, 64, gemm.F32x6x64z))
	asm512TileF64 = avx512Tile(newGemmTile(6, 32, gemm.F64x6x32z))
)

// avx512Tile returns t, or nil when the CPU lacks AVX-512.
func avx512Tile[T gemmNum](t *gemmTile[T]) *gemmTile[T] {
	if !haveAVX512() {
		return nil
	}
	return t
}

func init() {
	if haveAVX512() {
		packNZAsm = gemm.PackNZF32
		smallKernF32Z = gemm.F32x6x16sz
		smallKern64F32Z = gemm.F32x6x64sz
	}
}
