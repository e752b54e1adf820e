//go:build !amd64 || purego

package quant

// cpuHas reports whether the CPU runs a level's kernels; without amd64
// assembly there are only the generic ones.
func cpuHas(level string) bool { return level == LevelGeneric }

// addLevel installs a level's own kernels into k and reports whether it
// has any.
func addLevel(k *Kernels, level string) bool { return false }
