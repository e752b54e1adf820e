//go:build amd64 && !purego

package gemm

// F32x6x16 accumulates a packed 6xkc A panel times a packed kcx16 B
// panel into the 6x16 float32 tile at c (row stride ldc elements), one
// fused multiply-add per k step in k order, starting from the tile's
// values when load is 1 and from zero when load is 0 (c is then only
// written). kc may be 0. pf is the tile to be updated next, whose rows (at
// the same ldc) are prefetched.
//
//go:noescape
func F32x6x16(kc int, a, b, c *float32, ldc int, pf *float32, load int)

// F64x6x8 is F32x6x16 for float64 with a 6x8 tile.
//
//go:noescape
func F64x6x8(kc int, a, b, c *float64, ldc int, pf *float64, load int)
