package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/gotpu/gotpu/internal/testreq"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	st "github.com/gotpu/gotpu/hf/safetensors"
)

// runInspect executes "gotpu inspect ARGS" in process and returns its output.
func runInspect(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&out)
	defer func() { rootCmd.SetOut(nil); rootCmd.SetErr(nil) }()
	if cmd, _, err := rootCmd.Find([]string{"inspect"}); err == nil {
		cmd.Flags().Set("json", "false") // flags keep their value between Execute calls
	}
	rootCmd.SetArgs(append([]string{"inspect"}, args...))
	err := rootCmd.Execute()
	return out.String(), err
}

func inspectJSON(t *testing.T, path string) (map[string]any, inspectReport) {
	t.Helper()
	out, err := runInspect(t, "--json", path)
	if err != nil {
		t.Fatalf("inspect --json %s: %v\n%s", path, err, out)
	}
	var keys map[string]any
	if err := json.Unmarshal([]byte(out), &keys); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out)
	}
	var rep inspectReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	return keys, rep
}

var inspectKeys = []string{"config", "gguf", "has_tokenizer", "kind", "metadata", "num_tensors", "path", "tensors", "total_bytes"}

func sortedKeys(m map[string]any) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	sort.Strings(k)
	return k
}

func TestInspectFileJSON(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	w := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	b := []byte{9, 10}
	err := st.Write(path, []st.Tensor{
		{Name: "w", DType: st.F32, Shape: []int{1, 2}, Data: w},
		{Name: "b", DType: st.BF16, Shape: []int{1}, Data: b},
		{Name: "s", DType: st.I64, Data: make([]byte, 8)},
	}, map[string]string{"format": "pt"})
	if err != nil {
		t.Fatal(err)
	}
	keys, rep := inspectJSON(t, path)
	if got := sortedKeys(keys); !reflect.DeepEqual(got, inspectKeys) {
		t.Errorf("keys = %v, want %v", got, inspectKeys)
	}
	if keys["config"] != nil || keys["has_tokenizer"] != nil {
		t.Errorf("config/has_tokenizer should be null for a file: %v %v", keys["config"], keys["has_tokenizer"])
	}
	if rep.Kind != "file" || rep.Path != path || rep.NumTensors != 3 || rep.TotalBytes != 18 || rep.Metadata["format"] != "pt" {
		t.Errorf("report = %+v", rep)
	}
	raw, _ := os.ReadFile(path)
	want := map[string]struct {
		dtype string
		shape []int
		data  []byte
	}{"w": {"F32", []int{1, 2}, w}, "b": {"BF16", []int{1}, b}, "s": {"I64", []int{}, make([]byte, 8)}}
	var names []string
	for _, tt := range rep.Tensors {
		names = append(names, tt.Name)
		exp := want[tt.Name]
		if tt.DType != exp.dtype || !reflect.DeepEqual(tt.Shape, exp.shape) || tt.File != "model.safetensors" {
			t.Errorf("tensor %+v", tt)
		}
		if !bytes.Equal(raw[tt.Begin:tt.End], exp.data) {
			t.Errorf("%s: bytes [%d,%d) of the file are %v, want %v", tt.Name, tt.Begin, tt.End, raw[tt.Begin:tt.End], exp.data)
		}
	}
	if !reflect.DeepEqual(names, []string{"b", "s", "w"}) {
		t.Errorf("tensor order %v, want sorted names", names)
	}
	// A scalar's shape is [], not null.
	if !strings.Contains(fmt.Sprint(keys["tensors"]), "shape:[]") {
		t.Errorf("scalar shape not an empty list: %v", keys["tensors"])
	}
}

func TestInspectShardedDir(t *testing.T) {
	dir := t.TempDir()
	cfg, err := os.ReadFile("../../hf/config/testdata/qwen3-0.6b/config.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{}"), 0o644)
	shards := map[string][]st.Tensor{
		"model-00001-of-00002.safetensors": {{Name: "model.embed_tokens.weight", DType: st.BF16, Shape: []int{2, 2}, Data: make([]byte, 8)}},
		"model-00002-of-00002.safetensors": {{Name: "model.norm.weight", DType: st.F32, Shape: []int{2}, Data: make([]byte, 8)}},
	}
	weightMap := map[string]string{}
	for file, ts := range shards {
		if err := st.Write(filepath.Join(dir, file), ts, map[string]string{"format": "pt"}); err != nil {
			t.Fatal(err)
		}
		for _, tt := range ts {
			weightMap[tt.Name] = file
		}
	}
	index, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 16}, "weight_map": weightMap})
	os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), index, 0o644)

	keys, rep := inspectJSON(t, dir)
	if got := sortedKeys(keys); !reflect.DeepEqual(got, inspectKeys) {
		t.Errorf("keys = %v", got)
	}
	if rep.Kind != "dir" || rep.NumTensors != 2 || rep.TotalBytes != 16 || rep.Metadata["total_size"] != "16" {
		t.Errorf("report = %+v", rep)
	}
	if rep.HasTokenizer == nil || !*rep.HasTokenizer {
		t.Error("has_tokenizer is not true")
	}
	c := rep.Config
	if c == nil || c.ModelType != "qwen3" || c.Family != "qwen3" || c.HiddenSize != 1024 || c.NumKVHeads != 8 || c.HeadDim != 128 ||
		!reflect.DeepEqual(c.Architectures, []string{"Qwen3ForCausalLM"}) || !reflect.DeepEqual(c.EOSTokenIDs, []int{151645}) {
		t.Errorf("config = %+v", c)
	}
	for _, tt := range rep.Tensors {
		if weightMap[tt.Name] != tt.File {
			t.Errorf("%s: file %q, want %q", tt.Name, tt.File, weightMap[tt.Name])
		}
	}
	// The index file itself is kind "index" with the same tensors.
	_, irep := inspectJSON(t, filepath.Join(dir, "model.safetensors.index.json"))
	if irep.Kind != "index" || irep.Config != nil || !reflect.DeepEqual(irep.Tensors, rep.Tensors) {
		t.Errorf("index report = %+v", irep)
	}
	// Human-readable output.
	out, err := runInspect(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind:      dir", "qwen3 (Qwen3ForCausalLM", "tokenizer: yes", "model.norm.weight", "model-00002-of-00002.safetensors", "NAME"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

func TestInspectErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
		return p
	}
	good := filepath.Join(dir, "good", "model.safetensors")
	os.MkdirAll(filepath.Dir(good), 0o755)
	st.Write(good, []st.Tensor{{Name: "a", DType: st.U8, Shape: []int{1}, Data: []byte{1}}}, nil)
	tests := []struct {
		name    string
		args    []string
		mention string
	}{
		{"garbage file", []string{write("garbage.safetensors", "this is not a safetensors file at all")}, "header too large"},
		{"truncated file", []string{write("trunc.safetensors", "\x40\x00\x00\x00\x00\x00\x00\x00{\"a\":")}, "exceeds"},
		{"bad offsets", []string{write("off.safetensors", stFile(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, "\x01"))}, `tensor "a"`},
		{"bad index", []string{write("idx/model.safetensors.index.json", `{"weight_map": 3}`)}, "weight_map"},
		{"index with missing shard", []string{write("idx2/model.safetensors.index.json", `{"weight_map": {"a": "gone.safetensors"}}`)}, "gone.safetensors"},
		{"bad config in dir", []string{filepath.Dir(write("good/config.json", `{"model_type": "llama", "hidden_size": 8}`))}, `missing required field: "vocab_size"`},
		{"missing path", []string{filepath.Join(dir, "nope")}, "no such file"},
		{"text file", []string{write("notes.txt", "hello, this is text\n")}, "not a safetensors or GGUF file"},
		{"text .safetensors", []string{write("text.safetensors", "hello, this is text\n")}, "not a safetensors file"},
		{"text .gguf", []string{write("text.gguf", "hello, this is text\n")}, "not a GGUF file"},
		{"empty file", []string{write("empty", "")}, "not a safetensors or GGUF file (the file is empty)"},
		{"empty .gguf", []string{write("empty.gguf", "")}, "not a GGUF file (the file is empty)"},
		{"dir without weights", []string{filepath.Dir(write("noweights/README", "x"))}, "not a model directory"},
		{"no args", []string{}, "accepts 1 arg"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runInspect(t, tc.args...)
			if err == nil {
				t.Fatalf("inspect %v succeeded:\n%s", tc.args, out)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.mention) || strings.Contains(msg, "\n") || strings.Contains(out, "goroutine") {
				t.Errorf("error %q (output %q): want one line mentioning %q", msg, out, tc.mention)
			}
		})
	}
}

// stFile builds a safetensors file from a literal header and data section.
func stFile(header, data string) string {
	n := len(header)
	prefix := []byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24), 0, 0, 0, 0}
	return string(prefix) + header + data
}

// TestInspectExitStatus runs the real main in a child process: a malformed
// file gives exit status 1 and a one-line message on stderr, no stack trace.
func TestInspectExitStatus(t *testing.T) {
	if os.Getenv("GOTPU_INSPECT_CHILD") == "1" {
		os.Args = []string{"gotpu", "inspect", os.Getenv("GOTPU_INSPECT_PATH")}
		main()
		os.Exit(0)
	}
	bad := filepath.Join(t.TempDir(), "bad.safetensors")
	os.WriteFile(bad, []byte("\x02\x00\x00\x00\x00\x00\x00\x00[]"), 0o644)
	cmd := exec.Command(os.Args[0], "-test.run=^TestInspectExitStatus$")
	cmd.Env = append(os.Environ(), "GOTPU_INSPECT_CHILD=1", "GOTPU_INSPECT_PATH="+bad)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v (stderr %q)", err, stderr.String())
	}
	msg := strings.TrimSpace(stderr.String())
	if strings.Count(msg, "\n") != 0 || !strings.HasPrefix(msg, "gotpu: inspect: ") || !strings.Contains(msg, "not a JSON object") {
		t.Errorf("stderr = %q, want one line 'gotpu: inspect: ... not a JSON object'", msg)
	}
}

// miniLMDir is where tools/stref/fetch_minilm.sh puts all-MiniLM-L6-v2.
func miniLMDir() string {
	if d := os.Getenv("GOTPU_MINILM_DIR"); d != "" {
		return d
	}
	cache := os.Getenv("GOTPU_TESTDATA_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "gotpu-testdata")
	}
	return filepath.Join(cache, "all-MiniLM-L6-v2")
}

// TestInspectMiniLM inspects a real BERT checkpoint end to end: the config
// parses as BERT, every tensor validates and reads, and the names and shapes
// are BERT's.
func TestInspectMiniLM(t *testing.T) {
	dir := miniLMDir()
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err != nil {
		testreq.Missing(t, "all-MiniLM-L6-v2 not found in %s; run tools/stref/fetch_minilm.sh (honours GOTPU_TESTDATA_CACHE) to download it", dir)
	}
	_, rep := inspectJSON(t, dir)
	c := rep.Config
	if c == nil || c.Family != "bert" || c.HiddenSize != 384 || c.NumLayers != 6 || c.NumHeads != 12 || c.IntermediateSize != 1536 || c.VocabSize != 30522 {
		t.Fatalf("config = %+v", c)
	}
	if rep.HasTokenizer == nil || !*rep.HasTokenizer || rep.Kind != "dir" {
		t.Errorf("kind %q has_tokenizer %v", rep.Kind, rep.HasTokenizer)
	}
	shapes := map[string][]int{
		"embeddings.word_embeddings.weight":       {30522, 384},
		"embeddings.position_embeddings.weight":   {512, 384},
		"embeddings.token_type_embeddings.weight": {2, 384},
		"embeddings.LayerNorm.weight":             {384},
		"embeddings.LayerNorm.bias":               {384},
		"embeddings.position_ids":                 {1, 512},
		"pooler.dense.weight":                     {384, 384},
		"pooler.dense.bias":                       {384},
	}
	for i := 0; i < 6; i++ {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		for _, m := range []string{"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"} {
			shapes[p+m+".weight"] = []int{384, 384}
			shapes[p+m+".bias"] = []int{384}
		}
		shapes[p+"intermediate.dense.weight"] = []int{1536, 384}
		shapes[p+"intermediate.dense.bias"] = []int{1536}
		shapes[p+"output.dense.weight"] = []int{384, 1536}
		shapes[p+"output.dense.bias"] = []int{384}
		for _, ln := range []string{"attention.output.LayerNorm", "output.LayerNorm"} {
			shapes[p+ln+".weight"] = []int{384}
			shapes[p+ln+".bias"] = []int{384}
		}
	}
	var got []string
	for _, tt := range rep.Tensors {
		got = append(got, tt.Name)
		want, ok := shapes[tt.Name]
		if !ok {
			t.Errorf("unexpected tensor %q", tt.Name)
			continue
		}
		if !reflect.DeepEqual(tt.Shape, want) {
			t.Errorf("%s: shape %v, want %v", tt.Name, tt.Shape, want)
		}
	}
	if len(got) != len(shapes) {
		t.Errorf("%d tensors, want %d", len(got), len(shapes))
	}

	// Read every tensor: floats are finite and LayerNorm weights are near 1.
	f, err := st.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for tensor, err := range f.All() {
		if err != nil {
			t.Fatal(err)
		}
		if tensor.DType != st.F32 {
			if tensor.Name != "embeddings.position_ids" || tensor.DType != st.I64 {
				t.Errorf("%s: dtype %v", tensor.Name, tensor.DType)
			}
			ids, _ := st.DecodeFloat64(tensor.DType, tensor.Data)
			if ids[0] != 0 || ids[511] != 511 {
				t.Errorf("position_ids = %v...%v", ids[0], ids[511])
			}
			continue
		}
		vals, err := st.DecodeFloat32(tensor.DType, tensor.Data)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for _, v := range vals {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("%s holds a non-finite value", tensor.Name)
			}
			sum += float64(v)
		}
		if strings.HasSuffix(tensor.Name, "LayerNorm.weight") {
			if mean := sum / float64(len(vals)); mean < 0.2 || mean > 3 {
				t.Errorf("%s: mean %g, not LayerNorm-like", tensor.Name, mean)
			}
		}
	}
	if !slices.IsSorted(got) {
		t.Error("tensors not sorted by name")
	}
}
