//go:build amd64 && !purego

package quant

import "golang.org/x/sys/cpu"

// cpuHas reports whether the CPU and OS support a level's instructions, as
// backend/cpu decides its levels: avx2 needs AVX2, FMA and F16C; avx512
// adds AVX-512 F, BW, DQ and VL; avx512bf16 adds AVX512_BF16 and
// AVX512_VNNI.
func cpuHas(level string) bool {
	x := cpu.X86
	avx2 := x.HasAVX && x.HasAVX2 && x.HasFMA && x.HasF16C
	avx512 := avx2 && x.HasAVX512F && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL
	switch level {
	case LevelGeneric:
		return true
	case LevelAVX2:
		return avx2
	case LevelAVX512:
		return avx512
	case LevelAVX512BF16:
		return avx512 && x.HasAVX512BF16 && x.HasAVX512VNNI
	}
	return false
}

// addLevel installs a level's own kernels into k and reports whether it
// has any.
func addLevel(k *Kernels, level string) bool { return false }
