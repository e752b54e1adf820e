package cpu

// CPU kernel levels and the register-tiled kernels' description. The
// register-tiled GEMM itself (BLIS-style blocked driver, shared packed B,
// persistent worker pool) is in gemm_blis.go, the matrix-vector kernels
// in gemm_gemv.go and the unpacked small-shape path in gemm_small.go; the
// 4x4 pure-Go kernels in linalg.go are the portable fallback. Every path
// computes each output element as one FMA chain in k order (the pure-Go
// level emulating the f32 FMA in float64), so results
// are deterministic and independent of the path, the blocking, the edge
// handling and the number of threads.

// tileF32 and tileF64 return the assembly micro-kernels of ks's level, or
// nil for the pure-Go path.
func tileF32(ks *kset) *gemmTile[float32] {
	if asm512TileF32 != nil && ks.atLeast(LevelAVX512) {
		return asm512TileF32
	}
	if ks.atLeast(LevelAVX2) {
		return asmTileF32
	}
	return nil
}

func tileF64(ks *kset) *gemmTile[float64] {
	if asm512TileF64 != nil && ks.atLeast(LevelAVX512) {
		return asm512TileF64
	}
	if ks.atLeast(LevelAVX2) {
		return asmTileF64
	}
	return nil
}

// gemmTile is a register-tiled micro-kernel with its cache blocking: kern
// accumulates a packed mr x kc A panel times a packed kc x nr B panel into
// the mr x nr tile at c (row stride ldc elements), which it loads first
// when load is 1 and treats as zero when load is 0, prefetching the tile
// at pf, the one it will be called on next. kc, mc and nc are the blocking
// of k (a B micro-panel, kc x nr, stays in L1), of the rows packed at once
// (the A block, mc x kc, stays in L2) and of the columns of one packed B
// block (kc x nc, in L3), derived from this machine's cache sizes
// (gemm_cache.go).
//
// pairs marks a kernel on the bf16 pair layout (packPairs, the VDPBF16PS
// kernel of bf16_gemm.go): its panels hold ceil(kc/2) packed steps of
// 32-bit words instead of kc values, and kc must be even so that the
// pairs fall on the same k steps whatever the blocking.
type gemmTile[T gemmNum] struct {
	mr, nr, kc, mc, nc int
	kern               func(kc int, a, b, c *T, ldc int, pf *T, load int)
	pairs              bool
	// amx marks the AMX kernel (amx.go): pairs, with A packed in tile
	// rows and both sides' panels padded to whole chunks of 16 pairs, and
	// kc a multiple of 32.
	amx bool
}

func roundUp(a, b int) int { return ceilDiv(a, b) * b }
