package main

import (
	"bytes"
	"encoding/binary"
	"github.com/gotpu/gotpu/internal/testreq"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/gguf"
)

// ggufBytes writes a small GGUF v3 file: a string, a uint32, a NaN float32,
// a 40-entry token array, and one F32 tensor with dims [3, 2] (PyTorch
// shape [2, 3]) and one Q8_0 tensor with dims [32, 1].
func ggufBytes() []byte {
	var b bytes.Buffer
	w := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	str := func(s string) { w(uint64(len(s))); b.WriteString(s) }
	b.WriteString(gguf.Magic)
	w(uint32(3))
	w(uint64(2)) // tensors
	w(uint64(4)) // metadata pairs
	str("general.architecture")
	w(uint32(8))
	str("llama")
	str("llama.block_count")
	w(uint32(4))
	w(uint32(2))
	str("test.nan")
	w(uint32(6))
	w(math.Float32bits(float32(math.NaN())))
	str("tokenizer.ggml.tokens")
	w(uint32(9))
	w(uint32(8))
	w(uint64(40))
	for i := range 40 {
		str(strings.Repeat("t", i%3+1))
	}
	str("w")
	w(uint32(2))
	w(uint64(3))
	w(uint64(2))
	w(uint32(0)) // F32
	w(uint64(0))
	str("q")
	w(uint32(2))
	w(uint64(32))
	w(uint64(1))
	w(uint32(8)) // Q8_0
	w(uint64(32))
	for b.Len()%32 != 0 {
		b.WriteByte(0)
	}
	b.Write(make([]byte, 24+8)) // w, padded
	b.Write(make([]byte, 34))   // q
	return b.Bytes()
}

var ggufInspectKeys = []string{"config", "gguf", "has_tokenizer", "kind", "metadata", "num_tensors", "path", "tensors", "total_bytes"}

func TestInspectGGUF(t *testing.T) {
	dir := t.TempDir()
	// Recognised by magic without the extension, and by extension.
	for _, name := range []string{"model.gguf", "model.bin"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, ggufBytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		keys, rep := inspectJSON(t, path)
		if got := sortedKeys(keys); !reflect.DeepEqual(got, ggufInspectKeys) {
			t.Errorf("keys = %v, want %v", got, ggufInspectKeys)
		}
		if rep.Kind != "gguf" || rep.NumTensors != 2 || rep.TotalBytes != 24+34 || rep.Config != nil || rep.HasTokenizer != nil {
			t.Errorf("report = %+v", rep)
		}
		want := []inspectTensor{
			{Name: "q", DType: "Q8_0", Shape: []int{1, 32}, Begin: rep.GGUF.DataOffset + 32, End: rep.GGUF.DataOffset + 66, Bytes: 34, File: name},
			{Name: "w", DType: "F32", Shape: []int{2, 3}, Begin: rep.GGUF.DataOffset, End: rep.GGUF.DataOffset + 24, Bytes: 24, File: name},
		}
		if !reflect.DeepEqual(rep.Tensors, want) {
			t.Errorf("tensors = %+v\nwant %+v", rep.Tensors, want)
		}
		g := rep.GGUF
		if g == nil || g.Version != 3 || g.Architecture != "llama" || g.Alignment != 32 || g.DataOffset%32 != 0 ||
			!reflect.DeepEqual(g.TensorTypes, map[string]int{"F32": 1, "Q8_0": 1}) || len(g.Metadata) != 4 {
			t.Fatalf("gguf = %+v", g)
		}
		tok := g.Metadata[3]
		if tok.Key != "tokenizer.ggml.tokens" || tok.Type != "array[string]" || tok.Len == nil || *tok.Len != 40 || !tok.Truncated ||
			!reflect.DeepEqual(tok.Value, []any{"t", "tt", "ttt", "t", "tt", "ttt", "t", "tt"}) {
			t.Errorf("tokens = %+v", tok)
		}
		if m := g.Metadata[1]; m.Type != "uint32" || m.Len != nil || m.Value != float64(2) || m.Truncated {
			t.Errorf("block_count = %+v", m)
		}
		if m := g.Metadata[2]; m.Value != "NaN" {
			t.Errorf("NaN = %+v", m)
		}
		if rep.Metadata["llama.block_count"] != "2" || !strings.Contains(rep.Metadata["tokenizer.ggml.tokens"], "(40 entries)") {
			t.Errorf("metadata = %v", rep.Metadata)
		}
		// Each tensor object has the same keys as for safetensors.
		tensors := keys["tensors"].([]any)
		if got := sortedKeys(tensors[0].(map[string]any)); !reflect.DeepEqual(got, []string{"begin", "bytes", "dtype", "end", "file", "name", "shape"}) {
			t.Errorf("tensor keys = %v", got)
		}
		m := keys["gguf"].(map[string]any)["metadata"].([]any)[0].(map[string]any)
		if got := sortedKeys(m); !reflect.DeepEqual(got, []string{"key", "len", "truncated", "type", "value"}) {
			t.Errorf("metadata entry keys = %v", got)
		}
	}

	out, err := runInspect(t, filepath.Join(dir, "model.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind:      gguf v3 (llama)", "F32 ×1, Q8_0 ×1", "llama.block_count", `["t", "tt", "ttt", "t", ... (40 entries)]`,
		"NAME", "[2 3]", "[1 32]"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

// TestInspectGGUFPythonWriter inspects the file gguf-py wrote (every value
// type, nested arrays): the JSON has each key with gguf-py's type name.
func TestInspectGGUFPythonWriter(t *testing.T) {
	_, rep := inspectJSON(t, "../../gguf/testdata/pywriter.gguf")
	types := map[string]string{}
	for _, m := range rep.GGUF.Metadata {
		types[m.Key] = m.Type
	}
	for key, typ := range map[string]string{"test.u64": "uint64", "test.f32_inf": "float32", "test.nested3": "array[array[array[float32]]]", "test.arr_bool": "array[bool]"} {
		if types[key] != typ {
			t.Errorf("%s: type %q, want %q", key, types[key], typ)
		}
	}
	if rep.GGUF.Alignment != 64 || rep.NumTensors != 7 {
		t.Errorf("alignment %d, %d tensors", rep.GGUF.Alignment, rep.NumTensors)
	}
	out, err := runInspect(t, "../../gguf/testdata/pywriter.gguf")
	if err != nil || !strings.Contains(out, `[[1, 2, 3], [4], [5, 6]]`) || !strings.Contains(out, "+Inf") {
		t.Errorf("text output (%v):\n%s", err, out)
	}
}

func TestInspectGGUFErrors(t *testing.T) {
	dir := t.TempDir()
	good := ggufBytes()
	cases := map[string]struct {
		data    []byte
		mention string
	}{
		"truncated.gguf":  {good[:100], "truncated"},
		"bad-magic.gguf":  {append([]byte("GGUX"), good[4:]...), "not a GGUF file"},
		"version1.gguf":   {append([]byte("GGUF\x01\x00\x00\x00"), good[8:]...), "version 1"},
		"no-data.gguf":    {good[:len(good)-1], "run past the end"},
		"huge-array.gguf": {bytes.Replace(good, []byte{40, 0, 0, 0, 0, 0, 0, 0}, []byte{0, 0, 0, 0, 0, 0, 0, 16}, 1), "elements"},
	}
	for name, c := range cases {
		path := filepath.Join(dir, name)
		os.WriteFile(path, c.data, 0o644)
		out, err := runInspect(t, path)
		if err == nil {
			t.Errorf("%s: accepted:\n%s", name, out)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.mention) || !strings.Contains(msg, path) || strings.Contains(msg, "\n") {
			t.Errorf("%s: error %q, want one line naming the file and %q", name, msg, c.mention)
		}
	}
}

// TestInspectGGUFReal inspects the real models that tools/gguf/fetch.sh
// downloads; skipped when they are absent (unless CI=true).
func TestInspectGGUFReal(t *testing.T) {
	for _, c := range []struct {
		file, arch string
		tensors    int
	}{{"SmolLM2-135M-Instruct.Q4_1.gguf", "llama", 272}, {"gemma-3-270m-q4_k_m.gguf", "gemma3", 236}} {
		path := filepath.Join(ggufCacheDir(), c.file)
		if _, err := os.Stat(path); err != nil {
			testreq.Missing(t, "%s not found; run tools/gguf/fetch.sh (honours GOTPU_TESTDATA_CACHE) to download it", path)
		}
		_, rep := inspectJSON(t, path)
		if rep.Kind != "gguf" || rep.GGUF.Architecture != c.arch || rep.NumTensors != c.tensors {
			t.Errorf("%s: kind %s arch %s tensors %d", c.file, rep.Kind, rep.GGUF.Architecture, rep.NumTensors)
		}
		for _, m := range rep.GGUF.Metadata {
			if m.Key == "tokenizer.ggml.tokens" && (m.Len == nil || *m.Len < 49152 || !m.Truncated) {
				t.Errorf("%s: tokens %+v", c.file, m)
			}
		}
	}
}

// ggufCacheDir is where tools/gguf/fetch.sh puts the real GGUF models.
func ggufCacheDir() string {
	cache := os.Getenv("GOTPU_TESTDATA_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "gotpu-testdata")
	}
	return filepath.Join(cache, "gguf")
}
