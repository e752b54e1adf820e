package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/gguf"
	"github.com/gotpu/gotpu/internal/quant"
)

const tinyLlamaGGUF = "../../testdata/gguf/tiny/llama.gguf"

// TestQuantizeRoundTrip quantizes the tiny llama GGUF to every type and
// reads the result back with gotpu's reader: metadata equal but for
// general.file_type, every matrix encoded exactly as quant.QuantizeRow
// encodes the source's rows (the K types through llama.cpp's fallback,
// the tiny rows being 32 wide), every other tensor the source's f32 bytes,
// and no temporary file left behind.
func TestQuantizeRoundTrip(t *testing.T) {
	src, err := gguf.Open(tinyLlamaGGUF)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for name, qt := range quantizeTypes {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out.gguf")
			rep, err := runQuantize(context.Background(), tinyLlamaGGUF, name, out)
			if err != nil {
				t.Fatal(err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("%d files in the output directory, want 1", len(ents))
			}
			f, err := gguf.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if ft, err := f.Metadata().Uint("general.file_type"); err != nil || uint32(ft) != qt.ft {
				t.Errorf("general.file_type %d (%v), want %d", ft, err, qt.ft)
			}
			for _, kv := range src.Metadata().All() {
				if kv.Key == "general.file_type" {
					continue
				}
				v, ok := f.Metadata().Get(kv.Key)
				if !ok || v.Any() == nil || !sameValue(v, kv.Value) {
					t.Errorf("metadata %s: %v, source %v", kv.Key, v.Any(), kv.Value.Any())
				}
			}
			if rep.Quantized != 16 || len(rep.Kept) != 0 {
				t.Errorf("report: %d quantized, kept %v", rep.Quantized, rep.Kept)
			}
			for _, ti := range src.Tensors() {
				got, err := f.Info(ti.Name)
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := f.Bytes(ti.Name)
				vals, _, _ := src.Float32(ti.Name)
				if len(ti.Dims) != 2 {
					if got.Type != gguf.F32 || !bytes.Equal(raw, f32Bytes(vals)) {
						t.Errorf("%s: %v, want the source's f32 values", ti.Name, got.Type)
					}
					continue
				}
				want := qt.t
				if want.BlockSize() == 256 {
					want = map[gguf.Type]gguf.Type{gguf.Q4_K: gguf.Q5_0, gguf.Q5_K: gguf.Q5_1, gguf.Q6_K: gguf.Q8_0}[want]
				}
				if got.Type != want || !slicesEqual(got.Dims, ti.Dims) {
					t.Fatalf("%s: %v %v, want %v %v", ti.Name, got.Type, got.Dims, want, ti.Dims)
				}
				enc, err := quantizeRows(quant.Type(want), vals, int(ti.Dims[0]))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(raw, enc) {
					t.Errorf("%s: blocks differ from quant.QuantizeRow's", ti.Name)
				}
			}
		})
	}
}

func slicesEqual(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameValue(a, b gguf.Value) bool {
	ja, _ := json.Marshal(a.Any())
	jb, _ := json.Marshal(b.Any())
	if arr, ok := a.Array(); ok {
		ja, _ = json.Marshal(arr.Values())
	}
	if arr, ok := b.Array(); ok {
		jb, _ = json.Marshal(arr.Values())
	}
	return a.Type() == b.Type() && bytes.Equal(ja, jb)
}

// TestQuantizeErrors checks the command's argument errors.
func TestQuantizeErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ model, typ, out, want string }{
		{tinyLlamaGGUF, "q3_k", filepath.Join(dir, "x.gguf"), "unknown --type"},
		{tinyLlamaGGUF, "q8_0", tinyLlamaGGUF, "must differ"},
		{filepath.Join(dir, "missing.gguf"), "q8_0", filepath.Join(dir, "x.gguf"), "no such file"},
		{dir, "q8_0", filepath.Join(dir, "x.gguf"), "is a directory"},
		{tinyLlamaGGUF, "", filepath.Join(dir, "x.gguf"), "required"},
	} {
		if _, err := runQuantize(context.Background(), tc.model, tc.typ, tc.out); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("quantize %s %s %s: %v, want an error containing %q", tc.model, tc.typ, tc.out, err, tc.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("failed runs left %d files", len(ents))
	}
}

// pyReadGGUF is run by the gguf Python package (llama.cpp's gguf-py): it
// prints each tensor's type, dims and the SHA-256 of its dequantized f32
// values, and general.file_type.
const pyReadGGUF = `
import sys, json, hashlib, numpy as np, gguf
r = gguf.GGUFReader(sys.argv[1])
out = {"tensors": {}}
for t in r.tensors:
    v = np.ascontiguousarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
    out["tensors"][t.name] = {"type": t.tensor_type.name, "dims": [int(x) for x in t.shape], "sha": hashlib.sha256(v.tobytes()).hexdigest()}
f = r.fields["general.file_type"]
out["file_type"] = int(f.parts[f.data[0]][0])
print(json.dumps(out))
`

// TestQuantizeReadByGGUFPy checks that the gguf Python package reads what
// quantize writes, with the same types and dims and dequantized values
// equal bit for bit to gotpu's reader's. Skipped without the modelref
// venv (or GOTPU_MODELREF_PYTHON) and its gguf package.
func TestQuantizeReadByGGUFPy(t *testing.T) {
	py := os.Getenv("GOTPU_MODELREF_PYTHON")
	if py == "" {
		home, _ := os.UserHomeDir()
		py = filepath.Join(home, ".cache", "gotpu-modelref", "venv", "bin", "python")
	}
	if err := exec.Command(py, "-c", "import gguf, numpy").Run(); err != nil {
		t.Skipf("no Python with the gguf package (%s): %v", py, err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "read.py")
	if err := os.WriteFile(script, []byte(pyReadGGUF), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file with 512-wide rows, for the K types' super-blocks.
	wide := filepath.Join(dir, "wide.gguf")
	writeWideGGUF(t, wide)
	for _, tc := range []struct{ name, src string }{
		{"q8_0", tinyLlamaGGUF}, {"q4_0", tinyLlamaGGUF}, {"q4_1", tinyLlamaGGUF}, {"q5_0", tinyLlamaGGUF}, {"q5_1", tinyLlamaGGUF},
		{"q4_k", wide}, {"q5_k", wide}, {"q6_k", wide},
	} {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(dir, name+".gguf")
			if _, err := runQuantize(context.Background(), tc.src, name, out); err != nil {
				t.Fatal(err)
			}
			raw, err := exec.Command(py, script, out).Output()
			if err != nil {
				t.Fatalf("gguf-py: %v", err)
			}
			var res struct {
				Tensors map[string]struct {
					Type string  `json:"type"`
					Dims []int64 `json:"dims"`
					SHA  string  `json:"sha"`
				} `json:"tensors"`
				FileType uint32 `json:"file_type"`
			}
			if err := json.Unmarshal(raw, &res); err != nil {
				t.Fatal(err)
			}
			if res.FileType != quantizeTypes[name].ft {
				t.Errorf("gguf-py reads general.file_type %d, want %d", res.FileType, quantizeTypes[name].ft)
			}
			f, err := gguf.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if len(res.Tensors) != f.Len() {
				t.Fatalf("gguf-py reads %d tensors, gotpu %d", len(res.Tensors), f.Len())
			}
			for _, ti := range f.Tensors() {
				p := res.Tensors[ti.Name]
				vals, _, err := f.Float32(ti.Name)
				if err != nil {
					t.Fatal(err)
				}
				b := make([]byte, 4*len(vals))
				for i, v := range vals {
					binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
				}
				sum := sha256.Sum256(b)
				if p.Type != ti.Type.String() || !slicesEqual(p.Dims, ti.Dims) || p.SHA != hex.EncodeToString(sum[:]) {
					t.Errorf("%s: gguf-py %s %v %s…, gotpu %v %v %x…", ti.Name, p.Type, p.Dims, p.SHA[:min(12, len(p.SHA))], ti.Type, ti.Dims, sum[:6])
				}
			}
		})
	}
}

// writeWideGGUF writes a GGUF file holding a [6, 512] f32 matrix of
// normal values and a 512-element norm.
func writeWideGGUF(t *testing.T, path string) {
	t.Helper()
	vals := make([]float32, 6*512)
	for i := range vals {
		vals[i] = float32(math.Sin(float64(i)*0.37) * math.Exp(math.Cos(float64(i)*0.11)))
	}
	norm := make([]float32, 512)
	for i := range norm {
		norm[i] = 1 + float32(i)/512
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kvs := []gguf.KV{{Key: "general.architecture", Value: gguf.StringValue("llama")}}
	ts := []gguf.WriteTensor{
		{Name: "blk.0.ffn_down.weight", Type: gguf.F32, Dims: []int64{512, 6}, Data: func() ([]byte, error) { return f32Bytes(vals), nil }},
		{Name: "blk.0.ffn_norm.weight", Type: gguf.F32, Dims: []int64{512}, Data: func() ([]byte, error) { return f32Bytes(norm), nil }},
	}
	if err := gguf.Write(f, kvs, ts); err != nil {
		t.Fatal(err)
	}
}
