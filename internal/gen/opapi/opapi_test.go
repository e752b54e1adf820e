package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/gotpu/gotpu/op"
)

const root = "../../.."

// TestGeneratedFilesAreCurrent fails when the committed tensor/*_gen.go
// files differ from what the generator writes now: after a change to an
// op's declaration (its Doc, inputs or attributes) or to specs.go, run
// go generate ./tensor and commit the result.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Errorf("%v (run go generate ./tensor)", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not current: run go generate ./tensor", name)
		}
	}
	old, _ := filepath.Glob(filepath.Join(root, "tensor", "*_gen.go"))
	for _, p := range old {
		if _, ok := files["tensor/"+filepath.Base(p)]; !ok && isGenerated(p) {
			t.Errorf("tensor/%s is no longer generated: run go generate ./tensor", filepath.Base(p))
		}
	}
}

// TestEveryOpIsAccountedFor fails for an op that has neither a generated
// wrapper nor an entry in handWritten saying why its API is written by
// hand, and for stale handWritten entries.
func TestEveryOpIsAccountedFor(t *testing.T) {
	generated := map[string]bool{}
	for _, w := range wrappers {
		generated[w.Op] = true
	}
	for _, d := range op.All() {
		_, hand := handWritten[d.Name]
		switch {
		case generated[d.Name] && hand:
			t.Errorf("op %s has generated wrappers and a handWritten entry; keep one", d.Name)
		case !generated[d.Name] && !hand:
			t.Errorf("op %s has no typed wrapper: add one to specs.go, or an entry to handWritten with the reason", d.Name)
		}
	}
	for n := range handWritten {
		if _, ok := op.Lookup(n); !ok {
			t.Errorf("handWritten names op %s, which does not exist", n)
		}
	}
}
