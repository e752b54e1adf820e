//go:build amd64 && !purego

package cpulevel

// cpuidVendor returns CPUID leaf 0's vendor string registers (EBX, EDX,
// ECX: "Auth" "enti" "cAMD" on AMD).
func cpuidVendor() (ebx, edx, ecx uint32)

// AMD reports whether the CPU's vendor string is AuthenticAMD (kernels
// whose best memory access pattern differs between AMD's and Intel's
// cores ask).
func AMD() bool {
	b, d, c := cpuidVendor()
	return b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163
}
