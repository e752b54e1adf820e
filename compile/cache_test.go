package compile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gotpu/gotpu/cache"
	"github.com/gotpu/gotpu/cache/cachetest"
	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/tensor"
)

const envChild = "GOTPU_COMPILE_TEST_CHILD"

// TestHelperProcess is not a test: it is the child process of
// TestProgramsSharedAcrossProcesses. It runs a compiled training step four
// times with the cache from the environment and prints the tiers that
// served its programs as JSON.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(envChild) == "" {
		t.Skip("helper process for the multi-process cache test")
	}
	if err := runChild(); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

func runChild() error {
	c, p, err := compile.EnableCacheFromEnv(context.Background())
	if err != nil {
		return err
	}
	defer c.Close()
	s := newSetup("adamw")
	fn := compile.Fn(s.step, compile.Name("child-step"))
	for i := range 4 {
		x, y := batch(i)
		if _, err := fn.Call(x, y); err != nil {
			return err
		}
	}
	return json.NewEncoder(os.Stdout).Encode(p.Tiers())
}

func child(t *testing.T, dir, remote string) map[string]int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), envChild+"=1", "GOTPU_CACHE_DIR="+dir, "GOTPU_CACHE_REMOTE="+remote)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("child: %v\n%s", err, stderr)
	}
	var tiers map[string]int
	if err := json.Unmarshal(out, &tiers); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	return tiers
}

// TestProgramsSharedAcrossProcesses: a second process running the same
// compiled function compiles nothing (its programs come from the disk
// tier), and a third with an empty disk tier gets them from the remote
// tier — over file:// and over s3:// (an S3-protocol server in this test).
// The "disk" case has no remote tier at all.
func TestProgramsSharedAcrossProcesses(t *testing.T) {
	for _, r := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"disk", func(*testing.T) string { return "" }},
		{"file", func(t *testing.T) string { return "file://" + filepath.ToSlash(t.TempDir()) }},
		{"s3", cachetest.S3Remote},
	} {
		t.Run(r.name, func(t *testing.T) {
			remote := r.url(t)
			dir := t.TempDir()
			first := child(t, dir, remote)
			if first["compiled"] == 0 || first["disk"] != 0 || first["remote"] != 0 {
				t.Fatalf("first process: %v, want compiles only", first)
			}
			second := child(t, dir, remote)
			if second["compiled"] != 0 || second["disk"] != first["compiled"] {
				t.Fatalf("second process: %v, want every program (%d) from disk", second, first["compiled"])
			}
			if remote == "" {
				return
			}
			third := child(t, t.TempDir(), remote)
			if third["compiled"] != 0 || third["remote"] != first["compiled"] {
				t.Fatalf("third process, empty disk tier: %v, want every program from the remote tier", third)
			}
		})
	}
}

// TestCorruptEntryNeverRuns: a corrupted disk entry is discarded and the
// program compiled again; the results stay right.
func TestCorruptEntryNeverRuns(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GOTPU_CACHE_DIR", dir)
	t.Setenv("GOTPU_CACHE_REMOTE", "")
	run := func() (map[string]int, float64) {
		c, p, err := compile.EnableCacheFromEnv(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		defer p.Restore()
		fn := compile.Fn(func(in ...*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{in[0].Exp().Mul(in[0]).Sum(nil, false)}
		})
		x, _ := batch(0)
		out, err := fn.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		return p.Tiers(), out[0].Item()
	}
	tiers, want := run()
	if tiers["compiled"] != 1 {
		t.Fatalf("first run: %v", tiers)
	}
	n := 0
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() && info.Size() > 64 {
			b, _ := os.ReadFile(path)
			b[len(b)/2] ^= 0xff
			n++
			return os.WriteFile(path, b, 0o644)
		}
		return err
	})
	if err != nil || n == 0 {
		t.Fatalf("corrupting the disk tier: %d files, %v", n, err)
	}
	tiers, got := run()
	if tiers["compiled"] != 1 || got != want {
		t.Fatalf("after corruption: tiers %v, result %v (want a recompile and %v)", tiers, got, want)
	}
}

// TestUseCacheNests: installs of the process-wide program provider nest;
// Restore puts back exactly the provider that was there before, twice is
// harmless, and a provider that was never installed restores nothing.
func TestUseCacheNests(t *testing.T) {
	ctx := context.Background()
	open := func() *cache.Cache {
		c, err := cache.New(ctx, cache.Options{NoDisk: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	outer, _ := compile.UseCache(open())
	defer outer.Restore()
	inner, _ := compile.UseCache(open())
	compile.NewProvider(open()).Restore() // never installed: no effect
	fn := compile.Fn(func(in ...*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{in[0].Exp().Sum(nil, false)}
	}, compile.Name("nest"))
	x, _ := batch(0)
	if _, err := fn.Call(x); err != nil {
		t.Fatal(err)
	}
	if inner.Tiers()["compiled"] == 0 || len(outer.Tiers()) != 0 {
		t.Fatalf("inner %v outer %v: the inner provider should serve", inner.Tiers(), outer.Tiers())
	}
	inner.Restore()
	inner.Restore()
	y, _ := batch(1)
	fn2 := compile.Fn(func(in ...*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{in[0].Tanh().Sum(nil, false)}
	}, compile.Name("nest2"))
	if _, err := fn2.Call(y); err != nil {
		t.Fatal(err)
	}
	if outer.Tiers()["compiled"] == 0 {
		t.Fatalf("after inner.Restore the outer provider should serve: outer %v", outer.Tiers())
	}
}
