//go:build amd64 && !purego

package cpu

import (
	"github.com/gotpu/gotpu/internal/cpulevel"

	"github.com/gotpu/gotpu/backend/cpu/internal/gemm"
)

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
	asmTileF32 = newGemmTile(6, 16, gemm.F32x6x16)
	asmTileF64 = newGemmTile(6, 8, gemm.F64x6x8)
)
