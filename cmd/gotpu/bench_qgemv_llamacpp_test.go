package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/gguf"
	"github.com/gotpu/gotpu/internal/quant"
)

// testBackendOpsSample is the stdout of
// `test-backend-ops perf -b CPU -o MUL_MAT -p '^type_a=q4_1,...' --output sql`
// (llama-cpp-python 0.3.36's llama.cpp, recorded on the 2-CPU EPYC VM).
const testBackendOpsSample = `CREATE TABLE IF NOT EXISTS test_backend_ops (
  test_time TEXT,
  build_commit TEXT,
  op_name TEXT,
  time_us REAL,
  n_runs INTEGER
);

INSERT INTO test_backend_ops (test_time, build_commit, backend_name, op_name, op_params, test_mode, supported, passed, error_message, time_us, flops, bandwidth_gb_s, memory_kb, n_runs, device_description, backend_reg_name) VALUES ('2026-12-04T16:58:03Z', 'unknown', 'CPU', 'MUL_MAT', 'type_a=q4_1,type_b=f32,m=4096,n=1,k=14336,bs=[1,1],nr=[1,1],per=[0,1,2,3],k_v=0,o=1,src_overlap=0,m_v=0,pad=0', 'perf', '1', '1', '', '6903.864734', '17010836179.413616', '0.000000', '35912', '207', '', '');
`

func TestParseTestBackendOpsSQL(t *testing.T) {
	prefix := llamaMulMatPrefix(quant.Q4_1, 4096, 14336)
	if prefix != "type_a=q4_1,type_b=f32,m=4096,n=1,k=14336,bs=[1,1],nr=[1,1]," {
		t.Fatalf("prefix %q", prefix)
	}
	p, err := parseTestBackendOpsSQL([]byte(testBackendOpsSample), prefix)
	if err != nil {
		t.Fatal(err)
	}
	if p.TimeUS != 6903.864734 || p.Runs != 207 || p.BuildCommit != "unknown" || !strings.HasPrefix(p.Params, prefix) {
		t.Errorf("parsed %+v", p)
	}
	if _, err := parseTestBackendOpsSQL([]byte(testBackendOpsSample), strings.Replace(prefix, "q4_1", "q8_0", 1)); err == nil ||
		!strings.Contains(err.Error(), "no MUL_MAT result") {
		t.Errorf("other type: err %v", err)
	}
	unsupported := strings.Replace(testBackendOpsSample, "'perf', '1', '1', ''", "'perf', '0', '0', 'not supported'", 1)
	if _, err := parseTestBackendOpsSQL([]byte(unsupported), prefix); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("unsupported: err %v", err)
	}
	broken := strings.Replace(testBackendOpsSample, "'6903.864734', ", "", 1)
	if _, err := parseTestBackendOpsSQL([]byte(broken), prefix); err == nil || !strings.Contains(err.Error(), "values") {
		t.Errorf("missing value: err %v", err)
	}
}

func TestSQLValues(t *testing.T) {
	got, err := sqlValues(`'a', 'b,c',  'it''s', ''`)
	if err != nil || !slices.Equal(got, []string{"a", "b,c", "it's", ""}) {
		t.Errorf("got %q, %v", got, err)
	}
	for _, bad := range []string{`'a`, `a`, `'a' 'b'`} {
		if _, err := sqlValues(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestGGMLTypeName(t *testing.T) {
	want := map[string]string{"Q4_0": "q4_0", "Q4_1": "q4_1", "Q5_0": "q5_0", "Q5_1": "q5_1", "Q8_0": "q8_0",
		"Q4_K": "q4_K", "Q5_K": "q5_K", "Q6_K": "q6_K"}
	for _, dt := range benchCases["qgemv"].DTypes {
		rep := benchJSON(t, "qgemv", "--dtype", dt, "--size", "1", "--k", "256", "--reps", "1", "--warmup", "0", "--ref", "none",
			"--memmove-mb", "0", "--stream-mb", "0", "--levels", "none")
		if got := resultImpls(rep); !slices.Equal(got, []string{"gotpu"}) {
			t.Errorf("%s --levels none: impls %v", dt, got)
		}
	}
	for _, dt := range benchCases["qgemv"].DTypes {
		gt, err := gguf.ParseType(dt)
		if err != nil {
			t.Fatal(err)
		}
		if got := ggmlTypeName(quant.Type(gt)); got != want[dt] {
			t.Errorf("ggmlTypeName(%s) = %q, want %q", dt, got, want[dt])
		}
	}
}

func TestCountCPUList(t *testing.T) {
	for s, want := range map[string]int{"0": 1, "0-1": 2, "0-3,8,10-11": 7} {
		if got, err := countCPUList(s); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", s, got, err, want)
		}
	}
	for _, bad := range []string{"", "a", "3-1"} {
		if _, err := countCPUList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if n := llamaCPUThreads(); n < 1 {
		t.Errorf("llamaCPUThreads() = %d", n)
	}
}

// TestBenchQGEMVLlamacppSkips checks that the llamacpp reference, when it
// cannot run, is reported in skipped with its reason and the run goes on.
func TestBenchQGEMVLlamacppSkips(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "test-backend-ops")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	base := []string{"qgemv", "--dtype", "Q8_0", "--reps", "1", "--warmup", "0", "--memmove-mb", "0", "--stream-mb", "0", "--levels", "none"}
	th := llamaCPUThreads()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--size", "8", "--k", "64", "--llamacpp-bin", fake}, "--size 4096 --k 14336"},
		{[]string{"--size", "8", "--k", "64", "--llamacpp-bin", ""}, "no test-backend-ops"},
		{[]string{"--size", "8", "--k", "64", "--llamacpp-bin", fake, "--ref", "llamacpp"}, "--size 4096"},
	} {
		rep := benchJSON(t, append(base, tc.args...)...)
		sk, _ := rep["skipped"].([]any)
		if len(sk) != 1 || sk[0].(map[string]any)["impl"] != "llamacpp" ||
			!strings.Contains(sk[0].(map[string]any)["reason"].(string), tc.want) {
			t.Errorf("%v: skipped %v, want llamacpp: ...%s...", tc.args, sk, tc.want)
		}
	}
	// At the perf shape (too big to quantize in a unit test, so through
	// the constructor): other threads, the cpu clock, no binary, a binary
	// that fails.
	run := &benchRun{}
	cfg := &benchConfig{Threads: th + 1}
	if s := llamacppQGEMV(t.Context(), cfg, run, fake, "wall", quant.Q8_0, llamaPerfM, llamaPerfK, 34); s != nil ||
		len(run.Skipped) != 1 || !strings.Contains(run.Skipped[0].Reason, "--threads") {
		t.Errorf("threads mismatch: stepper %v, skipped %v", s, run.Skipped)
	}
	run = &benchRun{}
	cfg.Threads = th
	if s := llamacppQGEMV(t.Context(), cfg, run, fake, "cpu", quant.Q8_0, llamaPerfM, llamaPerfK, 34); s != nil ||
		len(run.Skipped) != 1 || !strings.Contains(run.Skipped[0].Reason, "clock") {
		t.Errorf("cpu clock: stepper %v, skipped %v", s, run.Skipped)
	}
	run = &benchRun{}
	if s := llamacppQGEMV(t.Context(), cfg, run, fake+".missing", "wall", quant.Q8_0, llamaPerfM, llamaPerfK, 34); s != nil ||
		len(run.Skipped) != 1 || !strings.Contains(run.Skipped[0].Reason, "build.sh") {
		t.Errorf("missing binary: stepper %v, skipped %v", s, run.Skipped)
	}
	run = &benchRun{}
	s := llamacppQGEMV(t.Context(), cfg, run, fake, "wall", quant.Q8_0, llamaPerfM, llamaPerfK, 34)
	if s == nil {
		t.Fatalf("no stepper: skipped %v", run.Skipped)
	}
	if _, err := s.Timed(); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("failing binary: err %v", err)
	}
}
