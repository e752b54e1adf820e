// Package cpulevel names gotpu's CPU kernel levels and says which ones this
// CPU runs. backend/cpu and internal/quant choose their kernels by these
// names, so GOTPU_CPU_LEVEL means the same to both.
package cpulevel

import "slices"

// The levels, from least to most capable. A level includes every kernel of
// the levels before it.
const (
	// Generic is the portable pure-Go code.
	Generic = "generic"
	// AVX2 is AVX2, FMA and F16C assembly (amd64).
	AVX2 = "avx2"
	// AVX512 adds AVX-512 F, BW, DQ and VL on ZMM registers.
	AVX512 = "avx512"
	// AVX512BF16 adds AVX512_BF16 (VDPBF16PS), AVX512_VNNI (VPDPBUSD) and
	// AVX512_VBMI (VPERMB). Every CPU with AVX512_BF16 has VBMI except
	// Cooper Lake, which runs the avx512 level.
	AVX512BF16 = "avx512bf16"
	// AMX adds the Advanced Matrix Extensions' tiles and their bf16
	// product (AMX-TILE, AMX-BF16), where the OS lets the process use
	// them (on Linux, granted by arch_prctl when the package loads).
	AMX = "amx"
)

var all = []string{Generic, AVX2, AVX512, AVX512BF16, AMX}

// All returns every level, least capable first.
func All() []string { return slices.Clone(all) }

// Rank returns a level's position in All, or -1 for an unknown name.
// It is a switch, not a search of All: kernels ask it on hot paths.
func Rank(level string) int {
	switch level {
	case Generic:
		return 0
	case AVX2:
		return 1
	case AVX512:
		return 2
	case AVX512BF16:
		return 3
	case AMX:
		return 4
	}
	return -1
}

// Supported returns the levels this CPU and build run, generic first.
func Supported() []string {
	var out []string
	for _, l := range all {
		if !Has(l) {
			break
		}
		out = append(out, l)
	}
	return out
}
