//go:build amd64 && !purego

package cpulevel

import "golang.org/x/sys/cpu"

// Has reports whether the CPU and OS support a level's instructions
// (x/sys/cpu's AVX and AVX-512 flags include the OS's register-state
// checks; AMX also needs the OS's permission, amxGranted). Unknown names
// are not supported.
func Has(level string) bool {
	x := cpu.X86
	avx2 := x.HasAVX && x.HasAVX2 && x.HasFMA && x.HasF16C
	avx512 := avx2 && x.HasAVX512F && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL
	switch level {
	case Generic:
		return true
	case AVX2:
		return avx2
	case AVX512:
		return avx512
	case AVX512BF16:
		return avx512 && x.HasAVX512BF16 && x.HasAVX512VNNI && x.HasAVX512VBMI
	case AMX:
		return avx512 && x.HasAVX512BF16 && x.HasAVX512VNNI && x.HasAVX512VBMI && x.HasAMXTile && x.HasAMXBF16 && amxGranted
	}
	return false
}
