//go:build amd64 && !purego

package cpu

// The AVX-512 (ZMM) GEMM micro-kernels, level avx512 (gemm512_amd64.s):
// the contract of gemmF32x6x16 on larger register tiles, so that every
// element is still one FMA chain over k in order and the bits equal the
// AVX2 kernels'.

// gemmF32x14x32z is gemmF32x6x16 on a 14x32 tile (28 ZMM accumulators).
//
//go:noescape
func gemmF32x14x32z(kc int, a, b, c *float32, ldc int, pf *float32, load int)

//go:noescape
func gemmF32x12x32z(kc int, a, b, c *float32, ldc int, pf *float32, load int)

//go:noescape
func gemmF32x6x64z(kc int, a, b, c *float32, ldc int, pf *float32, load int)

//go:noescape
func gemmF32x8x48z(kc int, a, b, c *float32, ldc int, pf *float32, load int)

// gemmF64x14x16z is gemmF64x6x8 on a 14x16 tile.
//
//go:noescape
func gemmF64x14x16z(kc int, a, b, c *float64, ldc int, pf *float64, load int)

// gemmPackNZF32 copies np panels of w = 16*nv columns: dst[q*dps + p*w +
// j] = src[p*lds + q*w + j] for p < kc, q < np, j < w.
//
//go:noescape
func gemmPackNZF32(dst, src *float32, lds, kc, np, dps, nv int)

var (
	asm512TileF32 = avx512Tile(newGemmTile(14, 32, gemmF32x14x32z))
	asm512TileF64 = avx512Tile(newGemmTile(14, 16, gemmF64x14x16z))
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
	}
}

//go:noescape
func gemmF32x14x32t1(kc int, a, b, c *float32, ldc int, pf *float32, load int)

//go:noescape
func gemmF32x14x32t1nb(kc int, a, b, c *float32, ldc int, pf *float32, load int)

//go:noescape
func gemmF32x14x32t0nb(kc int, a, b, c *float32, ldc int, pf *float32, load int)

//go:noescape
func gemmF32x14x32t2(kc int, a, b, c *float32, ldc int, pf *float32, load int)
