package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
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
