package main

import (
	"encoding/json"
	"github.com/gotpu/gotpu/internal/testreq"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func runEmbed(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	return runWithInput(t, stdin, append([]string{"embed"}, args...)...)
}

var embedKeys = []string{"count", "dim", "embeddings", "model", "seconds"}

// parseEmbedJSON checks the --json object's keys and decodes it.
func parseEmbedJSON(t *testing.T, out string) embedReport {
	t.Helper()
	var keys map[string]any
	if err := json.Unmarshal([]byte(out), &keys); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out)
	}
	if got := sortedKeys(keys); !reflect.DeepEqual(got, embedKeys) {
		t.Errorf("keys = %v, want %v", got, embedKeys)
	}
	var rep embedReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// parsePlain reads the plain output: one line of numbers per embedding.
func parsePlain(t *testing.T, out string) [][]float32 {
	t.Helper()
	var vecs [][]float32
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var v []float32
		for _, f := range strings.Fields(line) {
			x, err := strconv.ParseFloat(f, 32)
			if err != nil {
				t.Fatalf("%q: %v", f, err)
			}
			v = append(v, float32(x))
		}
		vecs = append(vecs, v)
	}
	return vecs
}

// tinyEmbedModel makes a sentence-transformers directory from the tiny
// random BERT checkpoint (testdata/models/bert), a word-level tokenizer
// ("wN" is token N, framed by w3 … w4), mean pooling and Normalize.
func tinyEmbedModel(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "testdata", "models", "bert")
	dir := t.TempDir()
	copyModelFiles(t, src, dir)
	vocab := map[string]int{}
	for i := 0; i < 128; i++ {
		vocab["w"+strconv.Itoa(i)] = i
	}
	special := func(id string) map[string]any {
		return map[string]any{"SpecialToken": map[string]any{"id": id, "type_id": 0}}
	}
	tok := map[string]any{
		"version": "1.0", "normalizer": nil, "decoder": nil, "added_tokens": []any{}, "truncation": nil, "padding": nil,
		"pre_tokenizer": map[string]any{"type": "WhitespaceSplit"},
		"model":         map[string]any{"type": "WordLevel", "vocab": vocab, "unk_token": "w0"},
		"post_processor": map[string]any{
			"type":   "TemplateProcessing",
			"single": []any{special("[CLS]"), map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, special("[SEP]")},
			"pair":   []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
			"special_tokens": map[string]any{
				"[CLS]": map[string]any{"id": "[CLS]", "ids": []int{3}, "tokens": []string{"w3"}},
				"[SEP]": map[string]any{"id": "[SEP]", "ids": []int{4}, "tokens": []string{"w4"}},
			},
		},
	}
	files := map[string]any{
		"tokenizer.json": tok,
		"modules.json": []any{
			map[string]any{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
			map[string]any{"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
			map[string]any{"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
		},
		"1_Pooling/config.json":     map[string]any{"word_embedding_dimension": 32, "pooling_mode_mean_tokens": true},
		"sentence_bert_config.json": map[string]any{"max_seq_length": 16, "do_lower_case": false},
	}
	for name, v := range files {
		data, _ := json.Marshal(v)
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestEmbedTiny(t *testing.T) {
	dir := tinyEmbedModel(t)
	in := "w5 w6 w7\n\nw9 w10 w11 w12 w13 w14 w15 w16 w17 w18 w19 w20 w21 w22 w23 w24 w25\r\nw5 w6 w7\n"
	out, err := runEmbed(t, in, "--model", dir, "--json", "--batch-size", "2")
	if err != nil {
		t.Fatal(err, out)
	}
	rep := parseEmbedJSON(t, out)
	if rep.Model != dir || rep.Dim != 32 || rep.Count != 4 || len(rep.Embeddings) != 4 || rep.Seconds < 0 {
		t.Fatalf("report %+v", rep)
	}
	for i, v := range rep.Embeddings {
		var ss float64
		for _, x := range v {
			ss += float64(x) * float64(x)
		}
		if len(v) != 32 || math.Abs(ss-1) > 1e-5 {
			t.Errorf("embedding %d: %d values, |v|² %g", i, len(v), ss)
		}
	}
	if !reflect.DeepEqual(rep.Embeddings[0], rep.Embeddings[3]) {
		t.Error("the same line embedded differently")
	}
	plain, err := runEmbed(t, in, "--model", dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := parsePlain(t, plain); !reflect.DeepEqual(got, rep.Embeddings) {
		t.Errorf("plain output differs from --json:\n%s", plain)
	}
	if n := strings.Count(plain, "\n"); n != 4 {
		t.Errorf("%d lines, want 4", n)
	}
	// No input: no embeddings.
	out, err = runEmbed(t, "", "--model", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	if rep := parseEmbedJSON(t, out); rep.Count != 0 || rep.Embeddings == nil || rep.Dim != 32 {
		t.Errorf("empty input: %s", out)
	}
	// bf16 stays close to f32.
	out, err = runEmbed(t, "w5 w6 w7\n", "--model", dir, "--json", "--dtype", "bf16")
	if err != nil {
		t.Fatal(err)
	}
	if c := cos32(parseEmbedJSON(t, out).Embeddings[0], rep.Embeddings[0]); c < 0.99 {
		t.Errorf("bf16 cosine %g", c)
	}
}

func cos32(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

func TestEmbedErrors(t *testing.T) {
	dir := tinyEmbedModel(t)
	noTok := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors"} {
		data, _ := os.ReadFile(filepath.Join(dir, f))
		os.WriteFile(filepath.Join(noTok, f), data, 0o644)
	}
	badPool := tinyEmbedModel(t)
	os.WriteFile(filepath.Join(badPool, "1_Pooling", "config.json"), []byte(`{"pooling_mode": "median"}`), 0o644)
	for _, tc := range []struct {
		args    []string
		mention string
	}{
		{nil, "--model"},
		{[]string{"--model", filepath.Join(dir, "absent")}, "absent"},
		{[]string{"--model", dir, "--batch-size", "0"}, "--batch-size"},
		{[]string{"--model", dir, "--device", "nosuchdevice"}, "--device"},
		{[]string{"--model", dir, "--dtype", "f7"}, "--dtype"},
		{[]string{"--model", dir, "--dtype", "i32"}, "dtype"},
		{[]string{"--model", noTok}, "tokenizer"},
		{[]string{"--model", badPool}, "median"},
		{[]string{"--model", dir, "extra"}, "extra"},
	} {
		out, err := runEmbed(t, "w1\n", tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%v: err %v, want one mentioning %q (output %q)", tc.args, err, tc.mention, out)
		}
	}
}

// TestEmbedMiniLMCLI runs `gotpu embed` on the real all-MiniLM-L6-v2 and
// compares with sentence-transformers (testdata/models/minilm_expected.json):
// cosine ≥ 0.99999 for every sentence. Under CI (CI=true) a missing model
// fails, since .ci/run fetches it; elsewhere the test skips.
func TestEmbedMiniLMCLI(t *testing.T) {
	dir := miniLMDir()
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err != nil {
		msg := "all-MiniLM-L6-v2 not found in " + dir + "; run tools/stref/fetch_minilm.sh (honours GOTPU_TESTDATA_CACHE) to download it"
		testreq.Missing(t, "%s", msg)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "models", "minilm_expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Sentences  []string    `json:"sentences"`
		Embeddings [][]float64 `json:"embeddings"`
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	// One sentence per line: the reference's sentences hold no newline.
	var in strings.Builder
	var sents []string
	for i, s := range ref.Sentences {
		if strings.ContainsAny(s, "\r\n") {
			continue
		}
		in.WriteString(s + "\n")
		sents = append(sents, strconv.Itoa(i))
	}
	out, err := runEmbed(t, in.String(), "--model", dir, "--json", "--batch-size", "4")
	if err != nil {
		t.Fatal(err)
	}
	rep := parseEmbedJSON(t, out)
	if rep.Dim != 384 || rep.Count != len(sents) {
		t.Fatalf("dim %d count %d, want 384 and %d", rep.Dim, rep.Count, len(sents))
	}
	worst := 1.0
	for k, is := range sents {
		i, _ := strconv.Atoi(is)
		want := make([]float32, len(ref.Embeddings[i]))
		for j, x := range ref.Embeddings[i] {
			want[j] = float32(x)
		}
		c := cos32(rep.Embeddings[k], want)
		if !(c >= 0.99999) {
			t.Errorf("sentence %d %.40q: cosine %.7f", i, ref.Sentences[i], c)
		}
		worst = min(worst, c)
	}
	t.Logf("%d sentences in %.2fs, min cosine %.8f", rep.Count, rep.Seconds, worst)
}
