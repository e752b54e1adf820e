package gguf

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestNoFusedMultiplyAdd compiles the package for the architectures whose Go
// compiler fuses multiply-adds and fails if the dequantizers contain one: a
// fused multiply-add skips the rounding of the product, and the results
// would then differ from ggml's reference in the last bit. (amd64 does not
// fuse float32 arithmetic, so the bit-exact tests there cannot see this.)
func TestNoFusedMultiplyAdd(t *testing.T) {
	archs := []string{"arm64", "ppc64le", "s390x", "riscv64", "loong64"}
	if testing.Short() {
		archs = archs[:1] // the common one; about a second
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goTool); err != nil {
		t.Skipf("no go command: %v", err)
	}
	fused := regexp.MustCompile(`\b(F|VF)N?M(ADD|SUB)[A-Z0-9]*\b`)
	for _, arch := range archs {
		cmd := exec.Command(goTool, "build", "-gcflags=github.com/gotpu/gotpu/gguf=-S", ".")
		cmd.Env = append(cmd.Environ(), "GOARCH="+arch, "GOOS=linux", "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("GOARCH=%s go build: %v\n%s", arch, err, out)
		}
		n := 0
		for line := range strings.Lines(string(out)) {
			if strings.Contains(line, "dequant.go:") && fused.MatchString(line) {
				t.Errorf("GOARCH=%s: fused multiply-add in a dequantizer: %s", arch, strings.TrimSpace(line))
			}
			if strings.Contains(line, "dequant.go:") {
				n++
			}
		}
		if n == 0 {
			t.Errorf("GOARCH=%s: no assembly listed for dequant.go", arch)
		}
	}
}
