package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tinyLlama is a random-weight Llama from tools/modelref/gen.py with
// transformers' greedy continuation of its input_ids in expected.json.
const tinyLlama = "../../testdata/models/llama"

type tinyRef struct {
	InputIDs [][]int `json:"input_ids"`
	Greedy   []int   `json:"greedy"`
}

func readTinyRef(t *testing.T) tinyRef {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tinyLlama, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r tinyRef
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func idList(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = itoa(id)
	}
	return strings.Join(s, ",")
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestGenerateGreedyJSON(t *testing.T) {
	ref := readTinyRef(t)
	for _, mode := range []string{"strict", "debug", "fused", "compiled"} {
		out, err := runCmd(t, "generate", "--model", tinyLlama, "--ids", idList(ref.InputIDs[0]),
			"--max-new-tokens", "16", "--mode", mode, "--json")
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: %v in %q", mode, err, out)
		}
		for _, k := range []string{"model", "device", "dtype", "mode", "prompt_ids", "ids", "text", "finish_reason",
			"prefill_tokens", "prefill_seconds", "prefill_tokens_per_second", "decode_tokens", "decode_seconds",
			"decode_tokens_per_second", "compiled_programs", "compiled_steps_replayed"} {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: key %q missing from %v", mode, k, got)
			}
		}
		var ids []int
		for _, v := range got["ids"].([]any) {
			ids = append(ids, int(v.(float64)))
		}
		if !slices.Equal(ids, ref.Greedy) {
			t.Errorf("%s: ids %v, transformers' greedy %v", mode, ids, ref.Greedy)
		}
		if got["finish_reason"] != "length" || got["decode_tokens"].(float64) != 15 {
			t.Errorf("%s: finish_reason %v decode_tokens %v", mode, got["finish_reason"], got["decode_tokens"])
		}
	}
}

func TestGenerateSeeded(t *testing.T) {
	run := func(mode, seed string) string {
		out, err := runCmd(t, "generate", "--model", tinyLlama, "--ids", "5,6,7", "--max-new-tokens", "12",
			"--temperature", "0.9", "--top-k", "40", "--top-p", "0.95", "--seed", seed, "--mode", mode, "--json")
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ IDs []int }
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		return itoa(len(got.IDs)) + idList(got.IDs)
	}
	a, b, c := run("strict", "7"), run("compiled", "7"), run("strict", "8")
	if a != b {
		t.Errorf("seed 7: strict %s, compiled %s", a, b)
	}
	if a == c {
		t.Errorf("seeds 7 and 8 gave the same tokens %s", a)
	}
}

// TestGenerateStop gives the tiny model a byte-level tokenizer (GPT-2's,
// whose first 128 ids are single characters) and stops on the text of the
// greedy output's third token.
func TestGenerateStop(t *testing.T) {
	ref := readTinyRef(t)
	dir := t.TempDir()
	copyModelFiles(t, tinyLlama, dir)
	tok, err := os.ReadFile("../../testdata/tokenizers/gpt2/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644)
	full, err := runCmd(t, "generate", "--model", dir, "--ids", idList(ref.InputIDs[0]), "--max-new-tokens", "16", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var all struct{ Text string }
	json.Unmarshal([]byte(full), &all)
	runes := []rune(all.Text)
	if len(runes) < 4 {
		t.Fatalf("text %q too short to cut", all.Text)
	}
	stopAt := string(runes[2:4])
	cut := all.Text[:strings.Index(all.Text, stopAt)]
	out, err := runCmd(t, "generate", "--model", dir, "--ids", idList(ref.InputIDs[0]), "--max-new-tokens", "16", "--stop", stopAt, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Text         string
		IDs          []int
		FinishReason string `json:"finish_reason"`
	}
	json.Unmarshal([]byte(out), &got)
	if got.Text != cut || got.FinishReason != "stop" || len(got.IDs) >= 16 {
		t.Errorf("stop %q: text %q (want %q), finish %s, %d ids", stopAt, got.Text, cut, got.FinishReason, len(got.IDs))
	}
	// Streaming prints the same text.
	stream, err := runCmd(t, "generate", "--model", dir, "--ids", idList(ref.InputIDs[0]), "--max-new-tokens", "16", "--stop", stopAt)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stream, cut+"\n") {
		t.Errorf("streamed %q, want %q first", stream, cut)
	}
}

func TestLogitsJSON(t *testing.T) {
	ref := readTinyRef(t)
	out, err := runCmd(t, "logits", "--model", tinyLlama, "--ids", idList(ref.InputIDs[0]), "--all-positions", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		IDs       []int       `json:"ids"`
		Positions []int       `json:"positions"`
		Logits    [][]float64 `json:"logits"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Logits) != len(ref.InputIDs[0]) || len(got.Logits[0]) != 128 || got.Positions[0] != 0 {
		t.Fatalf("logits %d x %d, positions %v", len(got.Logits), len(got.Logits[0]), got.Positions)
	}
	// The argmax of the last position is the first greedy token.
	row := got.Logits[len(got.Logits)-1]
	best := 0
	for i, v := range row {
		if v > row[best] || math.IsNaN(v) {
			best = i
		}
	}
	if best != ref.Greedy[0] {
		t.Errorf("argmax %d, want %d", best, ref.Greedy[0])
	}
}

func TestModelCommandErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"generate", "--ids", "1,2"}, "--model PATH is required"},
		{[]string{"generate", "--model", tinyLlama}, "exactly one of"},
		{[]string{"generate", "--model", tinyLlama, "--ids", "1,x"}, `"x" is not a token id`},
		{[]string{"generate", "--model", tinyLlama, "--ids", "1,999"}, "outside the vocabulary"},
		{[]string{"generate", "--model", tinyLlama, "--ids", "1", "--mode", "warp"}, "unknown --mode"},
		{[]string{"generate", "--model", tinyLlama, "--ids", "1", "--dtype", "f8"}, "unknown --dtype"},
		{[]string{"generate", "--model", tinyLlama, "--ids", "1", "--top-p", "0"}, "top_p"},
		{[]string{"generate", "--model", tinyLlama, "--prompt", "hi"}, "no tokenizer.json"},
		{[]string{"generate", "--model", "/nonexistent", "--ids", "1"}, "config.json"},
		{[]string{"logits", "--model", tinyLlama}, "exactly one of"},
	}
	for _, tc := range tests {
		_, err := runCmd(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("gotpu %v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

func TestVerifyJSON(t *testing.T) {
	out, err := runCmd(t, "verify", "--model", tinyLlama, "--devices", "cpu", "--ids", "1,2,3,4,5", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Model     string           `json:"model"`
		PromptIDs []int            `json:"prompt_ids"`
		Reference string           `json:"reference"`
		AllWithin *bool            `json:"all_within_tolerance"`
		Results   []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.AllWithin == nil || len(got.Results) != 12 || len(got.PromptIDs) != 5 {
		t.Fatalf("verify: %+v", got)
	}
	for _, r := range got.Results {
		for _, k := range []string{"device", "mode", "dtype", "precision", "max_abs_diff", "max_rel_diff", "atol", "rtol", "within_tolerance", "seconds"} {
			if _, ok := r[k]; !ok {
				t.Errorf("result %v lacks %q", r, k)
			}
		}
		if r["dtype"] == "f32" && r["precision"] == "highest" && r["within_tolerance"] != true {
			t.Errorf("f32 highest outside f32 tolerance of f64: %v", r)
		}
	}
}

// TestGenerateGenerationConfig: with no decoding flag, a
// generation_config.json that sets do_sample decides the decoding, as in
// transformers; any decoding flag overrides it.
func TestGenerateGenerationConfig(t *testing.T) {
	dir := t.TempDir()
	copyModelFiles(t, tinyLlama, dir)
	os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"do_sample": true, "temperature": 1.5, "top_k": 0, "top_p": 0.9}`), 0o644)
	ids := func(args ...string) string {
		out, err := runCmd(t, append([]string{"generate", "--model", dir, "--ids", "5,6,7", "--max-new-tokens", "12", "--seed", "3", "--json"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ IDs []int }
		json.Unmarshal([]byte(out), &got)
		return idList(got.IDs)
	}
	cfg, flags, greedy := ids(), ids("--temperature", "1.5", "--top-p", "0.9"), ids("--temperature", "0")
	plain, err := runCmd(t, "generate", "--model", tinyLlama, "--ids", "5,6,7", "--max-new-tokens", "12", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var want struct{ IDs []int }
	json.Unmarshal([]byte(plain), &want)
	if cfg != flags {
		t.Errorf("generation_config sampling %s, the same as flags %s", cfg, flags)
	}
	if greedy != idList(want.IDs) || cfg == greedy {
		t.Errorf("--temperature 0 %s, greedy %s, sampled %s", greedy, idList(want.IDs), cfg)
	}
}

// copyModelFiles copies a checkpoint's config.json and model.safetensors
// from src into dir (a test then adds or changes the other files).
func copyModelFiles(t *testing.T, src, dir string) {
	t.Helper()
	for _, f := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
