package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
	match := func(p string) bool { return strings.HasPrefix(p, prefix) }
	p, err := parseTestBackendOpsSQL([]byte(testBackendOpsSample), match, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if p.TimeUS != 6903.864734 || p.Runs != 207 || p.BuildCommit != "unknown" || !strings.HasPrefix(p.Params, prefix) {
		t.Errorf("parsed %+v", p)
	}
	other := strings.Replace(prefix, "q4_1", "q8_0", 1)
	if _, err := parseTestBackendOpsSQL([]byte(testBackendOpsSample), func(p string) bool { return strings.HasPrefix(p, other) }, other); err == nil ||
		!strings.Contains(err.Error(), "no MUL_MAT result") {
		t.Errorf("other type: err %v", err)
	}
	unsupported := strings.Replace(testBackendOpsSample, "'perf', '1', '1', ''", "'perf', '0', '0', 'not supported'", 1)
	if _, err := parseTestBackendOpsSQL([]byte(unsupported), match, prefix); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("unsupported: err %v", err)
	}
	broken := strings.Replace(testBackendOpsSample, "'6903.864734', ", "", 1)
	if _, err := parseTestBackendOpsSQL([]byte(broken), match, prefix); err == nil || !strings.Contains(err.Error(), "values") {
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
		impls := []string{"gotpu"}
		gt, err := gguf.ParseType(dt)
		if err != nil {
			t.Fatal(err)
		}
		if quant.CanPack(quant.Type(gt)) {
			impls = append(impls, "gotpu.r16") // the interleaved layout too
		}
		if got := resultImpls(rep); !slices.Equal(got, impls) {
			t.Errorf("%s --levels none: impls %v, want %v", dt, got, impls)
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
	fake := filepath.Join(t.TempDir(), "bin", "test-backend-ops")
	if err := os.MkdirAll(filepath.Dir(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	th := fmt.Sprint(llamaCPUThreads())
	base := []string{"qgemv", "--dtype", "Q8_0", "--size", "8", "--k", "64", "--reps", "1", "--warmup", "0", "--memmove-mb", "0",
		"--stream-mb", "0", "--levels", "none"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--llamacpp-bin", fake, "--threads", th}, "ggml op enum"}, // no src/ggml/include/ggml.h next to bin/
		{[]string{"--llamacpp-bin", "", "--threads", th}, "no test-backend-ops"},
		{[]string{"--llamacpp-bin", fake + ".missing", "--threads", th, "--ref", "llamacpp"}, "build.sh"},
		{[]string{"--llamacpp-bin", fake, "--threads", th + "0"}, "--threads " + th},
	} {
		rep := benchJSON(t, append(base, tc.args...)...)
		sk, _ := rep["skipped"].([]any)
		if len(sk) != 1 || sk[0].(map[string]any)["impl"] != "llamacpp" ||
			!strings.Contains(sk[0].(map[string]any)["reason"].(string), tc.want) {
			t.Errorf("%v: skipped %v, want llamacpp: ...%s...", tc.args, sk, tc.want)
		}
		if got := resultImpls(rep); !slices.Equal(got, []string{"gotpu", "gotpu.r16"}) {
			t.Errorf("%v: impls %v", tc.args, got)
		}
	}
	if runtime.GOOS == "linux" {
		rep := benchJSON(t, append(base, "--llamacpp-bin", fake, "--threads", "1", "--clock", "cpu")...)
		if sk, _ := rep["skipped"].([]any); len(sk) != 1 || !strings.Contains(sk[0].(map[string]any)["reason"].(string), "clock") {
			t.Errorf("--clock cpu: skipped %v", sk)
		}
	}
	// A binary that fails is dropped as a failed reference.
	writeGGMLHeader(t, fake)
	rep := benchJSON(t, append(base, "--llamacpp-bin", fake, "--threads", th)...)
	if sk, _ := rep["skipped"].([]any); len(sk) != 1 || !strings.Contains(sk[0].(map[string]any)["reason"].(string), "exit status 3") {
		t.Errorf("failing binary: skipped %v", sk)
	}
}

// writeGGMLHeader writes a ggml.h where build.sh's layout has it for bin,
// with GGML_OP_MUL_MAT = 29 as in llama-cpp-python 0.3.36's ggml.
func writeGGMLHeader(t *testing.T, bin string) {
	t.Helper()
	h := llamaGGMLHeader(bin)
	if err := os.MkdirAll(filepath.Dir(h), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h, []byte(ggmlHeaderSample), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ggmlHeaderSample is the start of ggml.h's op enum (0.3.36), shortened
// where it counts up plainly, with the comments and blank lines kept.
const ggmlHeaderSample = `    enum ggml_type {
        GGML_TYPE_F32     = 0,
    };

    enum ggml_op {
        GGML_OP_NONE = 0,

        GGML_OP_DUP,
        GGML_OP_ADD,
        GGML_OP_ADD_ID,
        GGML_OP_ADD1,
        GGML_OP_ACC,
        GGML_OP_SUB,
        GGML_OP_MUL,
        GGML_OP_DIV,
        GGML_OP_SQR,
        GGML_OP_SQRT,
        GGML_OP_LOG,
        GGML_OP_SIN,
        GGML_OP_COS,
        GGML_OP_SUM,
        GGML_OP_SUM_ROWS,
        GGML_OP_CUMSUM,
        GGML_OP_MEAN,
        GGML_OP_ARGMAX,
        GGML_OP_COUNT_EQUAL,
        GGML_OP_REPEAT,
        GGML_OP_REPEAT_BACK,
        GGML_OP_CONCAT,
        GGML_OP_SILU_BACK,
        GGML_OP_NORM, // normalize
        GGML_OP_RMS_NORM,
        GGML_OP_RMS_NORM_BACK,
        GGML_OP_GROUP_NORM,
        GGML_OP_L2_NORM,

        GGML_OP_MUL_MAT,
        GGML_OP_MUL_MAT_ID,

        GGML_OP_COUNT,
    };
`

func TestParseGGMLOpEnum(t *testing.T) {
	if n, err := parseGGMLOpEnum(ggmlHeaderSample, "GGML_OP_MUL_MAT"); err != nil || n != 29 {
		t.Errorf("MUL_MAT = %d, %v; want 29", n, err)
	}
	if n, err := parseGGMLOpEnum("enum ggml_op {\n A_X,\n GGML_OP_A = 5,\n GGML_OP_B, // b\n};", "GGML_OP_B"); err == nil || n != 0 {
		t.Errorf("unreadable entry accepted: %d", n)
	}
	if n, err := parseGGMLOpEnum("enum ggml_op {\n GGML_OP_A = 5,\n\n GGML_OP_B, // b\n};", "GGML_OP_B"); err != nil || n != 6 {
		t.Errorf("B = %d, %v; want 6", n, err)
	}
	for _, bad := range []string{"", "enum ggml_op { GGML_OP_A,", "enum ggml_op {\n GGML_OP_A,\n};"} {
		if _, err := parseGGMLOpEnum(bad, "GGML_OP_MUL_MAT"); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
	if got := llamaTestFileLine(29, quant.Q4_1, 4096, 14336); got != "29 0 4096 1 1 1 0 2 3 14336 4096 1 1 0 0 0 0 0 14336 1 1 1 0 0 0 0 -\n" {
		t.Errorf("test file line %q", got)
	}
}

// TestBenchQGEMVLlamacppFake runs the llamacpp reference end to end on a
// script standing in for test-backend-ops: it checks the arguments and the
// test file, and prints a result row recorded from the real binary, so the
// report gets a llamacpp result and a gotpu/llamacpp ratio.
func TestBenchQGEMVLlamacppFake(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs a shell script")
	}
	fake := filepath.Join(t.TempDir(), "bin", "test-backend-ops")
	if err := os.MkdirAll(filepath.Dir(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	writeGGMLHeader(t, fake)
	// Recorded from test-backend-ops perf -b CPU -o MUL_MAT --test-file F --output sql
	// with F the line of Q4_0 576x576 (its time edited to 186 KiB at 10 GB/s).
	row := "INSERT INTO test_backend_ops (test_time, build_commit, backend_name, op_name, op_params, test_mode, supported, passed, " +
		"error_message, time_us, flops, bandwidth_gb_s, memory_kb, n_runs, device_description, backend_reg_name) VALUES " +
		"('2026-12-04T17:02:51Z', 'unknown', 'CPU', 'MUL_MAT', 'type=f32,ne=[576,1,1,1],op_params=[],sources=q4_0[576,576,1,1],f32[576,1,1,1]', " +
		"'perf', '1', '1', '', '18.662400', '0.000000', '9.945196', '186', '57344', '', '');"
	script := "#!/bin/sh\n" +
		"[ \"$1 $2 $3 $4 $5 $6\" = \"perf -b CPU -o MUL_MAT --test-file\" ] || { echo bad args \"$*\" >&2; exit 2; }\n" +
		"[ \"$(cat \"$7\")\" = \"29 0 576 1 1 1 0 2 2 576 576 1 1 0 0 0 0 0 576 1 1 1 0 0 0 0 -\" ] || { echo bad file >&2; exit 2; }\n" +
		"echo 'CREATE TABLE IF NOT EXISTS test_backend_ops (time_us REAL);'\n" +
		"echo \"" + row + "\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	rep := benchJSON(t, "qgemv", "--dtype", "Q4_0", "--size", "576", "--k", "576", "--reps", "2", "--warmup", "0", "--memmove-mb", "0",
		"--stream-mb", "0", "--levels", "none", "--llamacpp-bin", fake, "--threads", fmt.Sprint(llamaCPUThreads()))
	if sk, _ := rep["skipped"].([]any); len(sk) != 0 {
		t.Fatalf("skipped %v", sk)
	}
	if got := resultImpls(rep); !slices.Equal(got, []string{"gotpu", "gotpu.r16", "llamacpp"}) {
		t.Fatalf("impls %v", got)
	}
	ll := rep["results"].([]any)[2].(map[string]any)
	if ll["median_s"] != 18.6624e-6 || ll["dtype"] != "Q4_0" {
		t.Errorf("llamacpp result %v", ll)
	}
	// 576 rows of 18 blocks of 18 bytes in 18.6624 us: 10 GB/s.
	if g, _ := ll["gbps"].(float64); g < 9.99 || g > 10.01 {
		t.Errorf("llamacpp gbps %v, want 10", ll["gbps"])
	}
	if r, ok := rep["ratios"].(map[string]any)["gotpu/llamacpp"].(float64); !ok || r <= 0 {
		t.Errorf("ratios %v", rep["ratios"])
	}
	v := rep["versions"].(map[string]any)
	if v["llamacpp.test_backend_ops"] != fake || v["llamacpp.build_commit"] != "unknown" || v["llamacpp.threads"] != float64(llamaCPUThreads()) {
		t.Errorf("versions %v", v)
	}
}
