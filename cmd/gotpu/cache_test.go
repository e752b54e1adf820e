package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/cache"
)

// runCacheCmd runs "gotpu cache ARGS" with the subcommand's flags reset
// (cobra keeps values between Execute calls).
func runCacheCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	full := append([]string{"cache"}, args...)
	if cmd, _, err := rootCmd.Find(full); err == nil {
		for _, name := range []string{"json", "verify"} {
			if f := cmd.Flags().Lookup(name); f != nil {
				f.Value.Set(f.DefValue)
			}
		}
	}
	if cmd, _, err := rootCmd.Find([]string{"cache"}); err == nil {
		if f := cmd.PersistentFlags().Lookup("dir"); f != nil {
			f.Value.Set("")
		}
	}
	return runCmd(t, full...)
}

// populateCache compiles n keys into a cache in dir and returns their hashes.
func populateCache(t *testing.T, dir string, n int) []string {
	t.Helper()
	c, err := cache.New(context.Background(), cache.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var hashes []string
	for i := 0; i < n; i++ {
		k := cache.Key{
			Fingerprint: []string{"aa01", "bb02", "cc03"}[i%3] + strings.Repeat("00", i),
			Inputs:      []cache.Input{{DType: "f32", Dims: []int{8, i + 1}}},
			Options:     map[string]string{"precision": "high"},
			Backend:     "cpu", BackendVersion: "1", GotpuVersion: "test",
		}
		if _, _, err := c.Get(context.Background(), k, func(context.Context) ([]byte, error) {
			return []byte(strings.Repeat("x", 100*(i+1))), nil
		}); err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, k.Hash())
	}
	return hashes
}

func TestCacheCLIJSON(t *testing.T) {
	dir := t.TempDir()
	hashes := populateCache(t, dir, 3)

	out, err := runCacheCmd(t, "stats", "--json", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("stats --json is not JSON: %v\n%s", err, out)
	}
	for _, k := range []string{"dir", "entries", "bytes", "temp_files", "temp_bytes", "lock_files"} {
		if _, ok := st[k]; !ok {
			t.Fatalf("stats lacks key %q: %v", k, st)
		}
	}
	if st["entries"].(float64) != 3 || st["bytes"].(float64) < 600 || st["dir"] != dir {
		t.Fatalf("stats %v", st)
	}

	// Corrupt one entry: ls lists it as invalid with --verify.
	victim := filepath.Join(dir, "v1", hashes[1][:2], hashes[1]+".gce")
	b, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	if err := os.WriteFile(victim, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(cache.EnvDir, dir) // ls and clear find it through the environment
	out, err = runCacheCmd(t, "ls", "--json", "--verify")
	if err != nil {
		t.Fatal(err)
	}
	var ls struct {
		Dir     string           `json:"dir"`
		Entries []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &ls); err != nil {
		t.Fatalf("ls --json: %v\n%s", err, out)
	}
	if len(ls.Entries) != 3 {
		t.Fatalf("ls lists %d entries, want 3", len(ls.Entries))
	}
	invalid := 0
	for _, e := range ls.Entries {
		for _, k := range []string{"key_hash", "path", "size_bytes", "payload_bytes", "mtime", "fingerprint", "inputs", "options", "backend", "backend_version", "gotpu_version", "created", "compile_ns", "verified"} {
			if _, ok := e[k]; !ok {
				t.Fatalf("ls entry lacks %q: %v", k, e)
			}
		}
		if e["key_hash"] == hashes[1] {
			if e["verified"] != false || !strings.Contains(e["error"].(string), "checksum") {
				t.Fatalf("corrupt entry listed as %v", e)
			}
			invalid++
			continue
		}
		if e["verified"] != true || e["backend"] != "cpu" || e["options"].(map[string]any)["precision"] != "high" {
			t.Fatalf("valid entry listed as %v", e)
		}
	}
	if invalid != 1 {
		t.Fatal("corrupt entry not listed")
	}
	out, err = runCacheCmd(t, "stats", "--json", "--verify")
	if err != nil || !strings.Contains(out, `"corrupt": 1`) {
		t.Fatalf("stats --verify: %v\n%s", err, out)
	}
	// Text form.
	out, err = runCacheCmd(t, "ls")
	if err != nil || !strings.Contains(out, hashes[0][:16]) || !strings.Contains(out, "f32[8,1]") || !strings.Contains(out, "precision=high") {
		t.Fatalf("ls: %v\n%s", err, out)
	}

	// A file someone else put in the directory survives clear.
	other := filepath.Join(dir, "v1", "README")
	if err := os.WriteFile(other, []byte("not ours"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runCacheCmd(t, "clear", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var cl map[string]any
	if err := json.Unmarshal([]byte(out), &cl); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"dir", "removed_entries", "removed_bytes", "removed_temp_files", "removed_lock_files", "errors"} {
		if _, ok := cl[k]; !ok {
			t.Fatalf("clear lacks %q: %v", k, cl)
		}
	}
	if cl["removed_entries"].(float64) != 3 || cl["removed_lock_files"].(float64) != 3 || st["bytes"] != cl["removed_bytes"] {
		t.Fatalf("clear %v (stats said %v bytes)", cl, st["bytes"])
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("clear removed a foreign file: %v", err)
	}
	out, err = runCacheCmd(t, "stats", "--json")
	if err != nil || !strings.Contains(out, `"entries": 0`) {
		t.Fatalf("after clear: %v\n%s", err, out)
	}
}

func TestCacheCLIErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  string
		args []string
		want string
	}{
		{"dir is a file", "", []string{"ls", "--dir", file}, "not a directory"},
		{"disk tier off", "off", []string{"stats"}, "disabled"},
		{"extra argument", "", []string{"stats", "--dir", file, "extra"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(cache.EnvDir, tt.env)
			_, err := runCacheCmd(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want a one-line error containing %q", err, tt.want)
			}
		})
	}
	// A missing directory is an empty cache.
	out, err := runCacheCmd(t, "stats", "--json", "--dir", filepath.Join(t.TempDir(), "none"))
	if err != nil || !strings.Contains(out, `"entries": 0`) {
		t.Fatalf("missing dir: %v\n%s", err, out)
	}
}
