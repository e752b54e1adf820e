package cpu

import "os"

// The register-tiled GEMM path (BLIS-style loop nest around an assembly
// micro-kernel), used when the CPU level allows it; the 4x4 pure-Go kernels
// in linalg.go are the portable fallback.
//
// Loop nest per work unit (batch, NC columns, a block of rows):
//
//	for each KC slice of k (in order):     pack B (KC x NC) into NR-wide panels
//	    for each MC block of the unit's rows: pack A (MC x KC) into MR-high panels
//	        for each NR panel, each MR panel: micro-kernel on an MR x NR tile of C
//
// The tile of C lives in a per-unit buffer that the kernel loads, updates
// with one FMA per k step and stores, so every output element is a single
// FMA chain in k order whatever the blocking, the edge handling or the
// number of threads: results are deterministic and independent of them.

// CPU kernel levels (GOTPU_CPU_LEVEL).
const (
	// LevelGeneric is the portable pure-Go GEMM.
	LevelGeneric = "generic"
	// LevelAVX2 is the AVX2+FMA assembly GEMM (amd64).
	LevelAVX2 = "avx2"
)

// cpuLevel is the active level: GOTPU_CPU_LEVEL=generic forces the pure-Go
// kernels; otherwise (avx2, empty or unknown) the best level the CPU
// supports is used, so asking for avx2 on a CPU without it falls back to
// generic instead of faulting.
var cpuLevel = pickLevel(os.Getenv("GOTPU_CPU_LEVEL"))

func pickLevel(env string) string {
	if env != LevelGeneric && haveAVX2() {
		return LevelAVX2
	}
	return LevelGeneric
}

// CPULevel reports the GEMM kernel level in use ("generic" or "avx2").
func CPULevel() string { return cpuLevel }

// tileF32 and tileF64 return the assembly micro-kernels for the active
// level, or nil for the pure-Go path.
func tileF32() *gemmTile[float32] {
	if cpuLevel == LevelAVX2 {
		return asmTileF32
	}
	return nil
}

func tileF64() *gemmTile[float64] {
	if cpuLevel == LevelAVX2 {
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
// block (kc x nc, in L3). See gemm_amd64.go for the measured choice.
type gemmTile[T gemmNum] struct {
	mr, nr, kc, mc, nc int
	kern               func(kc int, a, b, c *T, ldc int, pf *T, load int)
}

func roundUp(a, b int) int { return ceilDiv(a, b) * b }
