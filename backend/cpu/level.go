package cpu

import (
	"os"

	"github.com/gotpu/gotpu/internal/cpulevel"
)

// CPU kernel levels (GOTPU_CPU_LEVEL), from least to most capable. A
// level includes every kernel of the levels before it: where no kernel of
// its own exists for an operation, the best one of a lower level runs.
const (
	// LevelGeneric is the portable pure-Go code.
	LevelGeneric = cpulevel.Generic
	// LevelAVX2 is the AVX2+FMA assembly (amd64).
	LevelAVX2 = cpulevel.AVX2
	// LevelAVX512 adds AVX-512 F, BW, DQ and VL kernels on ZMM registers.
	LevelAVX512 = cpulevel.AVX512
	// LevelAVX512BF16 adds AVX512_BF16 (VDPBF16PS) and AVX512_VNNI
	// (VPDPBUSD) kernels.
	LevelAVX512BF16 = cpulevel.AVX512BF16
	// LevelAMX adds the AMX tile kernels (AMX-TILE, AMX-BF16; amx.go).
	LevelAMX = cpulevel.AMX
)

// allLevels orders the levels; a level's rank is its index.
var allLevels = cpulevel.All()

// cpuLevel is the active level: the best the CPU supports, capped by
// GOTPU_CPU_LEVEL (generic forces the pure-Go kernels). Asking for a level
// the CPU lacks gives the best one it has instead of faulting; an unknown
// name is ignored.
var cpuLevel = pickLevel(os.Getenv("GOTPU_CPU_LEVEL"))

func pickLevel(env string) string {
	sup := SupportedLevels()
	best := sup[len(sup)-1]
	if want := levelRank(env); want >= 0 && want < levelRank(best) {
		return env
	}
	return best
}

// levelRank returns the rank of a level name, or -1 for an unknown one.
func levelRank(l string) int { return cpulevel.Rank(l) }

// SupportedLevels returns the levels this CPU can run, from generic up.
func SupportedLevels() []string { return cpulevel.Supported() }

// atLeast reports whether the active level includes level l's kernels.
func atLeast(l string) bool { return levelRank(cpuLevel) >= levelRank(l) }

// CPULevel reports the kernel level in use (one of the Level constants).
func CPULevel() string { return cpuLevel }
