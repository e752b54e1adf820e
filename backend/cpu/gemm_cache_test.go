package cpu

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDetectCaches reads a fake sysfs cache directory: data and unified
// caches are taken, instruction caches and unreadable entries ignored,
// and a directory without entries gives the defaults.
func TestDetectCaches(t *testing.T) {
	dir := t.TempDir()
	write := func(idx, level, typ, size string) {
		d := filepath.Join(dir, idx)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]string{"level": level, "type": typ, "size": size} {
			if v == "" {
				continue
			}
			if err := os.WriteFile(filepath.Join(d, name), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("index0", "1", "Data", "48K")
	write("index1", "1", "Instruction", "32K")
	write("index2", "2", "Unified", "1024K")
	write("index3", "3", "Unified", "32M")
	write("index4", "4", "Unified", "") // no size: ignored
	got := detectCaches(dir)
	want := CacheSizes{L1d: 48 << 10, L2: 1 << 20, L3: 32 << 20, Source: "sysfs"}
	if got != want {
		t.Errorf("detectCaches = %+v, want %+v", got, want)
	}
	if got := detectCaches(filepath.Join(dir, "missing")); got != defaultCaches {
		t.Errorf("missing dir: %+v, want the defaults %+v", got, defaultCaches)
	}
	t.Logf("this machine: %+v", gemmCaches)
}

// TestGEMMBlockFor checks the blocking rules and the environment
// overrides (rounded to the tile).
func TestGEMMBlockFor(t *testing.T) {
	zen5 := CacheSizes{L1d: 48 << 10, L2: 1 << 20, L3: 32 << 20}
	zen3 := CacheSizes{L1d: 32 << 10, L2: 512 << 10, L3: 32 << 20}
	noEnv := func(string) (string, bool) { return "", false }
	tests := []struct {
		name       string
		c          CacheSizes
		mr, nr, es int
		env        func(string) (string, bool)
		kc, mc, nc int
	}{
		{"zen5 f32 6x64", zen5, 6, 64, 4, noEnv, 256, 252, 4096},
		{"zen5 f32 6x16", zen5, 6, 16, 4, noEnv, 384, 168, 2720},
		{"zen5 f64 6x32", zen5, 6, 32, 8, noEnv, 384, 84, 1344},
		{"zen3 f32 6x16", zen3, 6, 16, 4, noEnv, 256, 126, 4096},
		{"zen3 f64 6x8", zen3, 6, 8, 8, noEnv, 256, 60, 2048},
		{"tiny caches clamp", CacheSizes{L1d: 1 << 10, L2: 1 << 10, L3: 1 << 10}, 6, 64, 4, noEnv, 64, 6, 64},
		{"zen3 f32 6x64", zen3, 6, 64, 4, noEnv, 168, 192, 6208},
		{"overrides", zen5, 6, 64, 4, func(k string) (string, bool) {
			return map[string]string{"GOTPU_GEMM_KC": "100", "GOTPU_GEMM_MC": "50", "GOTPU_GEMM_NC": "1000"}[k], true
		}, 100, 48, 960},
		{"bad overrides ignored", zen5, 6, 64, 4, func(string) (string, bool) { return "x", true }, 256, 252, 4096},
	}
	for _, tc := range tests {
		kc, mc, nc := gemmBlockFor(tc.c, tc.mr, tc.nr, tc.es, tc.env)
		if kc != tc.kc || mc != tc.mc || nc != tc.nc {
			t.Errorf("%s: kc %d mc %d nc %d, want %d %d %d", tc.name, kc, mc, nc, tc.kc, tc.mc, tc.nc)
		}
	}
	caches, blocks := GEMMBlocking()
	t.Logf("caches %+v, blocking %+v", caches, blocks)
}
