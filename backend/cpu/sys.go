package cpu

import (
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/cpu"
)

// Features lists the SIMD features detected on this CPU.
func Features() []string { return append([]string(nil), features()...) }

var features = sync.OnceValue(detectFeatures)

func detectFeatures() []string {
	var f []string
	add := func(ok bool, name string) {
		if ok {
			f = append(f, name)
		}
	}
	add(cpu.X86.HasAVX2, "avx2")
	add(cpu.X86.HasFMA, "fma")
	add(cpu.X86.HasF16C, "f16c")
	add(cpu.X86.HasAVX512F, "avx512f")
	add(cpu.X86.HasAVX512BW, "avx512bw")
	add(cpu.X86.HasAVX512VL, "avx512vl")
	add(cpu.X86.HasAVX512DQ, "avx512dq")
	add(cpu.X86.HasAVX512BF16, "avx512bf16")
	add(cpu.X86.HasAVX512VNNI, "avx512vnni")
	add(cpu.X86.HasAVX512VBMI, "avx512vbmi")
	add(cpu.X86.HasAMXTile, "amx-tile")
	add(cpu.X86.HasAMXBF16, "amx-bf16")
	add(cpu.X86.HasAMXInt8, "amx-int8")
	add(cpu.ARM64.HasASIMD, "asimd")
	return f
}

// totalMemory is read once: Properties is called on every launch.
var totalMemory = sync.OnceValue(readTotalMemory)

func readTotalMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			fs := strings.Fields(rest)
			if len(fs) > 0 {
				kb, _ := strconv.ParseInt(fs[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}
