//go:build amd64 && !purego

package gemm

// F32x6x64z is F32x6x16 on a 6x64 tile (24 ZMM accumulators).
//
//go:noescape
func F32x6x64z(kc int, a, b, c *float32, ldc int, pf *float32, load int)

// F64x6x32z is F64x6x8 on a 6x32 tile.
//
//go:noescape
func F64x6x32z(kc int, a, b, c *float64, ldc int, pf *float64, load int)

// F32x6x16sz is F32x6x16s (the unpacked 6x16 kernel of the small
// and streaming paths) on ZMM registers: one 16-lane accumulator per row.
//
//go:noescape
func F32x6x16sz(kc int, a *float32, rsa, csa int, b *float32, rsb int, c *float32, ldc int, load int)

// F32x6x64sz is F32x6x16sz on a 6x64 tile (24 accumulators); B's
// 16-column vector v of row p is at b + p*rsb + v*bvs.
//
//go:noescape
func F32x6x64sz(kc int, a *float32, rsa, csa int, b *float32, rsb, bvs int, c *float32, ldc int, load int)

// PackNZF32 copies np panels of w = 16*nv columns: dst[q*dps + p*w +
// j] = src[p*lds + q*w + j] for p < kc, q < np, j < w.
//
//go:noescape
func PackNZF32(dst, src *float32, lds, kc, np, dps, nv int)
