//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// gemmF32x6x16 accumulates a packed 6xkc A panel times a packed kcx16 B
// panel into the 6x16 float32 tile at c (row stride ldc elements), one
// fused multiply-add per k step in k order, starting from the tile's
// values when load is 1 and from zero when load is 0 (c is then only
// written). kc may be 0. pf is the tile to be updated next, whose rows (at
// the same ldc) are prefetched.
//
//go:noescape
func gemmF32x6x16(kc int, a, b, c *float32, ldc int, pf *float32, load int)

// gemmF64x6x8 is gemmF32x6x16 for float64 with a 6x8 tile.
//
//go:noescape
func gemmF64x6x8(kc int, a, b, c *float64, ldc int, pf *float64, load int)

// haveAVX2 reports whether the CPU and OS support the AVX2+FMA kernels
// (x/sys/cpu's HasAVX already includes the OS's YMM state check).
func haveAVX2() bool { return cpu.X86.HasAVX && cpu.X86.HasAVX2 && cpu.X86.HasFMA }

var (
	asmTileF32 = &gemmTile[float32]{mr: 6, nr: 16, kc: 256, mc: 144, nc: 1024, kern: gemmF32x6x16}
	asmTileF64 = &gemmTile[float64]{mr: 6, nr: 8, kc: 256, mc: 72, nc: 512, kern: gemmF64x6x8}
)
