//go:build amd64 && !purego

package cpu

import "github.com/gotpu/gotpu/internal/cpulevel"

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
func haveAVX2() bool { return cpulevel.Has(cpulevel.AVX2) }

// haveAVX512 reports whether the CPU and OS support the AVX-512 kernels.
func haveAVX512() bool { return cpulevel.Has(cpulevel.AVX512) }

// haveAVX512BF16 reports whether the CPU also has AVX512_BF16 (VDPBF16PS)
// and AVX512_VNNI (VPDPBUSD).
func haveAVX512BF16() bool { return cpulevel.Has(cpulevel.AVX512BF16) }

// Cache blocking: derived from this machine's caches (gemm_cache.go,
// where the measurements behind the rules are).
var (
	asmTileF32 = newGemmTile(6, 16, gemmF32x6x16)
	asmTileF64 = newGemmTile(6, 8, gemmF64x6x8)
)
