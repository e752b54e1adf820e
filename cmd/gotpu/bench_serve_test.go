package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/internal/testreq"
)

// TestBenchServeLoad runs gotpu bench serve --load against the tiny Llama
// served in process: every request must complete with its tokens, all KV
// blocks must be free and no goroutine left afterwards. -short runs 48
// requests, 12 at a time; without -short 1,000 requests, 64 at a time.
func TestBenchServeLoad(t *testing.T) {
	dir := chatModelDir(t)
	requests, conc := "1000", "64"
	if testing.Short() {
		requests, conc = "48", "12"
	}
	out, err := runBench(t, "serve", "--load", "--model", dir, "--mode", "strict", "--requests", requests, "--concurrency", conc,
		"--prompt", "8", "--tokens", "6", "--time-limit", "5m", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := []string{"cpu_level", "dtype", "goroutines_after", "goroutines_before", "gotpu_mode", "kv_blocks_total", "kv_blocks_used_after",
		"leaked_goroutines", "load", "load_avg", "mode", "model", "ok", "threads"}
	if got := sortedKeys(rep); !reflect.DeepEqual(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	load := rep["load"].(map[string]any)
	wantLoad := []string{"completed", "completion_tokens", "concurrency", "decode_tokens_per_s", "errors", "failed", "itl", "latency",
		"prompt_tokens", "requests", "requests_per_s", "tokens_per_s", "ttft", "wall_s"}
	if got := sortedKeys(load); !reflect.DeepEqual(got, wantLoad) {
		t.Errorf("load keys %v, want %v", got, wantLoad)
	}
	n := load["requests"].(float64)
	if rep["ok"] != true || load["completed"] != n || load["completion_tokens"] != 6*n || load["prompt_tokens"] != 8*n || rep["kv_blocks_used_after"] != 0.0 {
		t.Errorf("report %s", out)
	}
	ttft := load["ttft"].(map[string]any)
	if ttft["n"] != n || ttft["p99_s"].(float64) < ttft["p50_s"].(float64) || ttft["p50_s"].(float64) <= 0 {
		t.Errorf("ttft %v", ttft)
	}
}

// TestBenchServeCompareJSON runs the comparison without llama-server (the
// tiny model is no GGUF, so it is reported skipped) and checks the keys.
func TestBenchServeCompareJSON(t *testing.T) {
	dir := chatModelDir(t)
	out, err := runBench(t, "serve", "--model", dir, "--mode", "strict", "--streams", "1,3", "--reps", "1", "--prompt", "8", "--tokens", "5", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rep struct {
		Mode    string           `json:"mode"`
		Results []map[string]any `json:"results"`
		Ratios  []map[string]any `json:"ratios"`
		Skipped []map[string]any `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Mode != "compare" || len(rep.Results) != 2 || len(rep.Ratios) != 0 || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0]["reason"].(string), "GGUF") {
		t.Fatalf("report %s", out)
	}
	want := []string{"decode_tokens_per_s", "failed", "impl", "itl_p50_s", "itl_p99_s", "rounds_tokens_per_s", "streams", "tokens_per_s", "ttft_s"}
	for i, r := range rep.Results {
		if got := sortedKeys(r); !reflect.DeepEqual(got, want) {
			t.Errorf("result keys %v, want %v", got, want)
		}
		if r["impl"] != "gotpu" || r["failed"] != 0.0 || r["tokens_per_s"].(float64) <= 0 || r["streams"] != []float64{1, 3}[i] {
			t.Errorf("result %v", r)
		}
	}
}

// fakeServeRef is a stand-in for tools/modelref/bench_ref.py --serve that
// answers "batch N" with fixed timings (0.5 s to the first tokens, then
// 0.1 s a token), or an error for N = 3: it checks bench serve's side of
// the protocol and its arithmetic, not transformers.
const fakeServeRef = `import json, sys
args = sys.argv[1:]
new = int(args[args.index("--new-tokens") + 1])
assert args[args.index("--dtype") + 1] == "f32"
print(json.dumps({"ready": True, "versions": {"torch": "fake"}, "load": {}}), flush=True)
for line in sys.stdin:
    w = line.split()
    if w[1] == "3":
        print(json.dumps({"error": "out of memory"}), flush=True)
        continue
    print(json.dumps({"batch": int(w[1]), "prefill_s": 0.5, "decode_s": 0.1 * (new - 1),
                      "step_s": [0.1] * (new - 1), "new_tokens": new}), flush=True)
`

// TestBenchServeReference runs the comparison with --reference against
// fakeServeRef: the transformers rows and ratios_transformers follow from
// its timings, a failed batch is reported skipped for that stream count,
// and a missing Python skips the reference with the reason.
func TestBenchServeReference(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		testreq.Missing(t, "python3: %v", err)
	}
	dir := chatModelDir(t)
	script := filepath.Join(t.TempDir(), "ref.py")
	if err := os.WriteFile(script, []byte(fakeServeRef), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runBench(t, "serve", "--model", dir, "--mode", "strict", "--streams", "2,3", "--reps", "2", "--prompt", "8", "--tokens", "5",
		"--reference", "--python", py, "--ref-script", script, "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rep struct {
		Results  []benchServeResult `json:"results"`
		RatiosTF []benchServeRatio  `json:"ratios_transformers"`
		Skipped  []benchSkipped     `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var tf *benchServeResult
	for i, r := range rep.Results {
		if r.Impl == "transformers" {
			if tf != nil {
				t.Fatalf("two transformers rows: %s", out)
			}
			tf = &rep.Results[i]
		}
	}
	// 2 streams x 5 tokens over 0.5 + 0.4 s; 4 decode steps in 0.4 s.
	if tf == nil || tf.Streams != 2 || math.Abs(tf.TokensPerS-10/0.9) > 1e-9 || math.Abs(tf.DecodeTokensPerS-10) > 1e-9 ||
		tf.TTFTS != 0.5 || tf.ITLP50S != 0.1 || tf.ITLP99S != 0.1 || len(tf.RoundsTokensPerS) != 2 {
		t.Fatalf("transformers row %+v\n%s", tf, out)
	}
	if len(rep.RatiosTF) != 1 || rep.RatiosTF[0].Streams != 2 || rep.RatiosTF[0].TTFT <= 0 {
		t.Errorf("ratios_transformers %+v", rep.RatiosTF)
	}
	found := false
	for _, s := range rep.Skipped {
		found = found || s.Impl == "transformers@3" && strings.Contains(s.Reason, "out of memory")
	}
	if !found {
		t.Errorf("skipped %+v: want transformers@3 (out of memory)", rep.Skipped)
	}

	out, err = runBench(t, "serve", "--model", dir, "--mode", "strict", "--streams", "1", "--reps", "1", "--prompt", "8", "--tokens", "3",
		"--reference", "--python", filepath.Join(t.TempDir(), "no-python"), "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, `"impl":"transformers"`) && !strings.Contains(out, `"impl": "transformers"`) {
		t.Errorf("a missing Python is not reported skipped: %s", out)
	}
}
