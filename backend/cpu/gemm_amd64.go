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

// haveAVX512 reports whether the CPU and OS support the AVX-512 kernels
// (F, BW, DQ and VL; x/sys/cpu's flags include the OS's ZMM state check).
func haveAVX512() bool {
	x := cpu.X86
	return haveAVX2() && x.HasAVX512F && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL
}

// haveAVX512BF16 reports whether the CPU also has AVX512_BF16 (VDPBF16PS)
// and AVX512_VNNI (VPDPBUSD).
func haveAVX512BF16() bool {
	return haveAVX512() && cpu.X86.HasAVX512BF16 && cpu.X86.HasAVX512VNNI
}

// Cache blocking, measured on this project's machines (AMD EPYC Zen 3,
// family 25 model 1, 2 vCPUs: L1d 32 KiB 8-way and L2 512 KiB 8-way per
// core, L3 32 MiB shared): TestBlockSweep, f32 1024^3 on one thread, thread
// CPU time (other processes' load excluded), configurations interleaved
// over 5 rounds, best round, GFLOP/s (L1-resident kernel alone: 80; FMA
// peak of one core measured with a register-only loop: 88):
//
//	kc \ mc     48     96    144    240    480     (nc 4080)
//	128        54.2   61.3   56.8   62.0   54.3
//	256        60.1   68.1   61.8   61.4   58.5
//	384        67.7   58.9   63.3   61.5   64.5
//	512        60.0   60.3   59.8   60.8   61.0
//	kc 256, mc 144: nc 256 49.3, nc 512 54.3, nc 4080 61.8
//
// The machine is shared and the spread between rounds (±10%) is as large
// as most differences, so the choice follows the cache sizes where the
// measurements do not separate: kc 256 keeps a 16-column B micro-panel
// (16 KiB f32) in half of L1 next to the A micro-panel; mc 144 keeps the
// A block (144 KiB f32) in under a third of L2; a small nc measurably
// loses (more barriers and A repacks), so nc is large (the packed B block,
// 4 MiB f32, twice for double buffering, lives in L3). f64 halves the
// element count per byte: mc 72 (the same 144 KiB), nc 2040.
var (
	asmTileF32 = &gemmTile[float32]{mr: 6, nr: 16, kc: 256, mc: 144, nc: 4080, kern: gemmF32x6x16}
	asmTileF64 = &gemmTile[float64]{mr: 6, nr: 8, kc: 256, mc: 72, nc: 2040, kern: gemmF64x6x8}
)
