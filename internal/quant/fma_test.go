package quant

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestNoFusedMultiplyAdd compiles the package for the architectures whose Go
// compiler fuses multiply-adds and fails if the reference quantizers or
// generic dot products contain one: a fused multiply-add skips a rounding
// that ggml's reference (built without contraction) does, and the results
// would differ from it and from the amd64 kernels in the last bit.
func TestNoFusedMultiplyAdd(t *testing.T) {
	archs := []string{"arm64", "ppc64le", "s390x", "riscv64", "loong64"}
	if testing.Short() {
		archs = archs[:1]
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goTool); err != nil {
		t.Skipf("no go command: %v", err)
	}
	fused := regexp.MustCompile(`\b(F|VF)N?M(ADD|SUB)[A-Z0-9]*\b`)
	files := []string{"quantize_ref.go:", "dot_generic.go:", "act.go:", "quant.go:"}
	for _, arch := range archs {
		cmd := exec.Command(goTool, "build", "-gcflags=github.com/gotpu/gotpu/internal/quant=-S", ".")
		cmd.Env = append(cmd.Environ(), "GOARCH="+arch, "GOOS=linux", "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("GOARCH=%s go build: %v\n%s", arch, err, out)
		}
		n := 0
		for line := range strings.Lines(string(out)) {
			for _, f := range files {
				if strings.Contains(line, f) {
					n++
					if fused.MatchString(line) {
						t.Errorf("GOARCH=%s: fused multiply-add: %s", arch, strings.TrimSpace(line))
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("GOARCH=%s: no assembly listed for the reference files", arch)
		}
	}
}
