package cpu

import (
	"os"

	"github.com/gotpu/gotpu/backend/cpu/internal/vec"
	"github.com/gotpu/gotpu/internal/cpulevel"
	"github.com/gotpu/gotpu/internal/quant"
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

// kset is one CPU level's kernel table: which of the package's assembly
// paths may run (atLeast) and that level's vector and quantized-weight
// kernels. Every kernel reads the table of its call (Call.ks) and passes
// it down, so that one process may run several levels side by side (the
// tests run each kernel at every level the CPU supports, in parallel);
// nothing changes a table once made.
type kset struct {
	level string
	rank  int
	vec   *vec.Kernels
	quant quant.Kernels
}

// atLeast reports whether the table's level includes level l's kernels.
func (ks *kset) atLeast(l string) bool { return ks.rank >= levelRank(l) }

// ksets holds the table of every level, made once.
var ksets = func() map[string]*kset {
	m := make(map[string]*kset, len(allLevels))
	for i, l := range allLevels {
		m[l] = &kset{level: l, rank: i, vec: vec.For(l), quant: quant.For(l)}
	}
	return m
}()

// ksetFor returns level l's kernel table (generic's for an unknown name).
func ksetFor(l string) *kset {
	if ks, ok := ksets[l]; ok {
		return ks
	}
	return ksets[LevelGeneric]
}

// procKS is the process's kernel table: the best level the CPU supports,
// capped by GOTPU_CPU_LEVEL (generic forces the pure-Go kernels), chosen
// once at start. Asking for a level the CPU lacks gives the best one it
// has instead of faulting; an unknown name is ignored.
var procKS = ksetFor(pickLevel(os.Getenv("GOTPU_CPU_LEVEL")))

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

// CPULevel reports the kernel level in use (one of the Level constants).
func CPULevel() string { return procKS.level }
