//go:build amd64 && !purego

package cpu

// The AVX-512 (ZMM) GEMM micro-kernels, level avx512 (gemm512_amd64.s):
// the contract of gemmF32x6x16 on larger register tiles, so that every
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

// gemmF32x6x64z is gemmF32x6x16 on a 6x64 tile (24 ZMM accumulators).
//
//go:noescape
func gemmF32x6x64z(kc int, a, b, c *float32, ldc int, pf *float32, load int)

// gemmF64x6x32z is gemmF64x6x8 on a 6x32 tile.
//
//go:noescape
func gemmF64x6x32z(kc int, a, b, c *float64, ldc int, pf *float64, load int)

// gemmF32x6x16sz is gemmF32x6x16s (the unpacked 6x16 kernel of the small
// and streaming paths) on ZMM registers: one 16-lane accumulator per row.
//
//go:noescape
func gemmF32x6x16sz(kc int, a *float32, rsa, csa int, b *float32, rsb int, c *float32, ldc int, load int)

// gemmF32x6x64sz is gemmF32x6x16sz on a 6x64 tile (24 accumulators); B's
// 16-column vector v of row p is at b + p*rsb + v*bvs.
//
//go:noescape
func gemmF32x6x64sz(kc int, a *float32, rsa, csa int, b *float32, rsb, bvs int, c *float32, ldc int, load int)

// gemmPackNZF32 copies np panels of w = 16*nv columns: dst[q*dps + p*w +
// j] = src[p*lds + q*w + j] for p < kc, q < np, j < w.
//
//go:noescape
func gemmPackNZF32(dst, src *float32, lds, kc, np, dps, nv int)

var (
	asm512TileF32 = avx512Tile(newGemmTile(6, 64, gemmF32x6x64z))
	asm512TileF64 = avx512Tile(newGemmTile(6, 32, gemmF64x6x32z))
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
		packNZAsm = gemmPackNZF32
		smallKernF32Z = gemmF32x6x16sz
		smallKern64F32Z = gemmF32x6x64sz
	}
}
