package cpu

import (
	"bytes"
	"os"
	"testing"
)

// TestAsmHeaderCopies checks that the assembly headers internal packages
// carry a copy of are the same as backend/cpu's: the go command tracks
// only a package's own headers, so each package keeps one, and they must
// not drift apart.
func TestAsmHeaderCopies(t *testing.T) {
	for _, c := range [][2]string{
		{"transpose8_amd64.h", "internal/gemm/transpose8_amd64.h"},
	} {
		a, err1 := os.ReadFile(c[0])
		b, err2 := os.ReadFile(c[1])
		if err1 != nil || err2 != nil {
			t.Fatalf("reading %s and %s: %v %v", c[0], c[1], err1, err2)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s: edit both", c[1], c[0])
		}
	}
}
