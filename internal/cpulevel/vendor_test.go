package cpulevel

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestAMD checks AMD against the kernel's account of the CPU vendor.
func TestAMD(t *testing.T) {
	if runtime.GOARCH != "amd64" || runtime.GOOS != "linux" {
		t.Skip("compares with /proc/cpuinfo on linux/amd64")
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip(err)
	}
	var vendor string
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "vendor_id" {
			vendor = strings.TrimSpace(v)
			break
		}
	}
	if vendor == "" {
		t.Skip("no vendor_id in /proc/cpuinfo")
	}
	if got, want := AMD(), vendor == "AuthenticAMD"; got != want && Has(AVX2) {
		t.Fatalf("AMD() = %v, /proc/cpuinfo vendor_id %q", got, vendor)
	}
}
