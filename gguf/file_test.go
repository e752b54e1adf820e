package gguf

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func mustParse(t *testing.T, data []byte) *File {
	t.Helper()
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSampleFile(t *testing.T) {
	spec := sampleFile()
	data := spec.encode()
	path := filepath.Join(t.TempDir(), "sample.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	opened, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	if runtime.GOOS == "linux" && !opened.Mapped() {
		t.Error("Open did not memory-map the file on Linux")
	}
	viaReaderAt, err := OpenReaderAt(bytes.NewReader(data), int64(len(data)), "sample")
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]*File{"Open": opened, "Parse": mustParse(t, data), "OpenReaderAt": viaReaderAt} {
		t.Run(name, func(t *testing.T) { checkSample(t, f, spec, data) })
	}
}

func checkSample(t *testing.T, f *File, spec tFile, data []byte) {
	if f.Version() != 3 || f.Alignment() != 32 || f.Size() != int64(len(data)) || f.DataOffset()%32 != 0 {
		t.Errorf("version %d alignment %d size %d data offset %d", f.Version(), f.Alignment(), f.Size(), f.DataOffset())
	}
	if f.Architecture() != "llama" {
		t.Errorf("Architecture() = %q", f.Architecture())
	}
	m := f.Metadata()
	if m.Len() != len(spec.kvs) {
		t.Errorf("%d keys, want %d", m.Len(), len(spec.kvs))
	}
	for i, kv := range m.All() {
		if kv.Key != spec.kvs[i].Key || !reflect.DeepEqual(kv.Value, spec.kvs[i].Value) {
			t.Errorf("pair %d: %s = %#v, want %s = %#v", i, kv.Key, kv.Value, spec.kvs[i].Key, spec.kvs[i].Value)
		}
	}
	if s, err := m.String("general.name"); err != nil || s != "sample ✓" {
		t.Errorf("String = %q, %v", s, err)
	}
	if n, err := m.Uint("llama.block_count"); err != nil || n != 2 {
		t.Errorf("Uint = %d, %v", n, err)
	}
	if n, err := m.Uint("llama.context_length"); err != nil || n != 4096 {
		t.Errorf("Uint(u64) = %d, %v", n, err)
	}
	if n, err := m.Int("test.i64"); err != nil || n != math.MinInt64 {
		t.Errorf("Int = %d, %v", n, err)
	}
	if n, err := m.Int("test.u16"); err != nil || n != 65535 {
		t.Errorf("Int(u16) = %d, %v", n, err)
	}
	if x, err := m.Float("llama.attention.layer_norm_rms_epsilon"); err != nil || x != float64(float32(1e-5)) {
		t.Errorf("Float = %g, %v", x, err)
	}
	if b, err := m.Bool("test.bool"); err != nil || !b {
		t.Errorf("Bool = %v, %v", b, err)
	}
	if s, err := m.Strings("tokenizer.ggml.tokens"); err != nil || !slices.Equal(s, []string{"<unk>", "<s>", "</s>", "hello", "▁world"}) {
		t.Errorf("Strings = %q, %v", s, err)
	}
	if s, err := m.Floats("tokenizer.ggml.scores"); err != nil || !slices.Equal(s, []float64{0, 0, 0, -1.5, -2.25}) {
		t.Errorf("Floats = %v, %v", s, err)
	}
	if s, err := m.Ints("tokenizer.ggml.token_type"); err != nil || !slices.Equal(s, []int64{2, 3, 3, 1, 1}) {
		t.Errorf("Ints = %v, %v", s, err)
	}
	if a, err := m.Array("test.nested"); err != nil || a.Elem() != TypeArray || a.Len() != 3 || a.TypeName() != "array[array[int32]]" {
		t.Errorf("nested: %v %v", a, err)
	} else if inner, ok := a.Index(0).Array(); !ok || !reflect.DeepEqual(inner.Values(), []int32{1, 2, 3}) {
		t.Errorf("nested[0] = %v", inner)
	}
	if v, _ := m.Get("test.nested_str"); v.TypeName() != "array[array[array[string]]]" {
		t.Errorf("TypeName = %s", v.TypeName())
	}

	infos := f.Tensors()
	if len(infos) != len(spec.tensors) || f.Len() != len(spec.tensors) {
		t.Fatalf("%d tensors, want %d", len(infos), len(spec.tensors))
	}
	for i, ti := range infos {
		want := spec.tensors[i]
		if ti.Name != want.name || ti.Type != want.typ || !slices.Equal(ti.Dims, want.dims) && len(want.dims) > 0 {
			t.Errorf("tensor %d = %+v, want %+v", i, ti, want)
		}
		if ti.Begin != f.DataOffset()+ti.Offset || ti.Begin%32 != 0 || ti.NumBytes() != int64(len(want.data)) {
			t.Errorf("%s: offset %d begin %d end %d", ti.Name, ti.Offset, ti.Begin, ti.End)
		}
		b, err := f.Bytes(ti.Name)
		if err != nil || !bytes.Equal(b, want.data) || !bytes.Equal(data[ti.Begin:ti.End], want.data) {
			t.Errorf("%s: Bytes = %v, %v", ti.Name, b, err)
		}
	}
	if !slices.IsSorted(f.Names()) || len(f.Names()) != len(infos) || !f.Has("scalar") || f.Has("nope") {
		t.Errorf("Names = %v", f.Names())
	}

	// Shapes come out in PyTorch order: Dims reversed.
	vals, shape, err := f.Float32("blk.0.attn_q.weight")
	if err != nil || !slices.Equal(shape, []int{2, 3}) || !slices.Equal(vals, []float32{0, 1, 2, 10, 11, 12}) {
		t.Errorf("Float32 = %v %v %v", vals, shape, err)
	}
	vals, shape, err = f.Float32("token_embd.weight")
	if err != nil || !slices.Equal(shape, []int{2, 32}) || vals[0] != -16 || vals[63] != 15 {
		t.Errorf("Float32(Q8_0) = %v %v %v", vals, shape, err)
	}
	vals, shape, err = f.Float32("blk.0.f16")
	if err != nil || !slices.Equal(shape, []int{2, 1, 1, 2}) || !slices.Equal(vals, []float32{1, 2, -2, float32(math.Inf(1))}) {
		t.Errorf("Float32(F16) = %v %v %v", vals, shape, err)
	}
	vals, shape, err = f.Float32("scalar")
	if err != nil || len(shape) != 0 || !slices.Equal(vals, []float32{7}) {
		t.Errorf("Float32(scalar) = %v %v %v", vals, shape, err)
	}
	vals, shape, err = f.Float32("empty")
	if err != nil || !slices.Equal(shape, []int{5, 0}) || len(vals) != 0 {
		t.Errorf("Float32(empty) = %v %v %v", vals, shape, err)
	}
	if err := f.Float32Into("output_norm.weight", make([]float32, 2)); err == nil {
		t.Error("Float32Into accepted a short buffer")
	}
	if _, _, err := f.Float32("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing tensor: %v", err)
	}
	if _, err := f.Bytes("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing tensor: %v", err)
	}
	sec, err := f.Section("output_norm.weight")
	if err != nil || sec.Size() != 12 {
		t.Errorf("Section: %v", err)
	}
}

func TestMetadataErrors(t *testing.T) {
	f := mustParse(t, sampleFile().encode())
	m := f.Metadata()
	tests := []struct {
		call    func() error
		is      error
		mention []string
	}{
		{func() error { _, err := m.String("nope"); return err }, ErrKeyNotFound, []string{`"nope"`}},
		{func() error { _, err := m.String("llama.block_count"); return err }, ErrValueType, []string{`"llama.block_count"`, "uint32", "not string"}},
		{func() error { _, err := m.Uint("general.name"); return err }, ErrValueType, []string{`"general.name"`, "is string"}},
		{func() error { _, err := m.Uint("test.i8"); return err }, ErrValueType, []string{"int8 -128"}},
		{func() error { _, err := m.Int("test.u64big"); return err }, ErrValueType, []string{"uint64 18446744073709551615"}},
		{func() error { _, err := m.Float("llama.block_count"); return err }, ErrValueType, []string{"uint32"}},
		{func() error { _, err := m.Bool("test.u8"); return err }, ErrValueType, []string{"uint8", "not bool"}},
		{func() error { _, err := m.Strings("tokenizer.ggml.scores"); return err }, ErrValueType, []string{"array[float32]", "not array[string]"}},
		{func() error { _, err := m.Ints("tokenizer.ggml.tokens"); return err }, ErrValueType, []string{"array[string]"}},
		{func() error { _, err := m.Ints("test.arr_u64"); return err }, ErrValueType, []string{"above the int64 range"}},
		{func() error { _, err := m.Floats("test.nested"); return err }, ErrValueType, []string{"array[array[int32]]"}},
		{func() error { _, err := m.Array("test.bool"); return err }, ErrValueType, []string{"bool"}},
	}
	for i, tc := range tests {
		err := tc.call()
		if !errors.Is(err, tc.is) {
			t.Errorf("%d: %v does not wrap %v", i, err, tc.is)
			continue
		}
		for _, s := range tc.mention {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%d: %q does not mention %q", i, err, s)
			}
		}
	}
}

func TestVersions(t *testing.T) {
	spec := sampleFile()
	for _, v := range []uint32{2, 3} {
		spec.version = v
		f := mustParse(t, spec.encode())
		if f.Version() != v || f.Len() != len(spec.tensors) {
			t.Errorf("version %d: read %d with %d tensors", v, f.Version(), f.Len())
		}
	}
}

func TestAlignment(t *testing.T) {
	for _, align := range []uint32{1, 8, 64, 4096} {
		spec := tFile{
			kvs: []KV{{"general.alignment", vU32(align)}},
			tensors: []tTensor{
				{"a", F32, []int64{3}, f32Bytes(1, 2, 3)},
				{"b", F32, []int64{1}, f32Bytes(4)},
			},
		}
		f := mustParse(t, spec.encode())
		if f.Alignment() != int64(align) || f.DataOffset()%int64(align) != 0 {
			t.Errorf("alignment %d: got %d, data at %d", align, f.Alignment(), f.DataOffset())
		}
		b, _ := f.Bytes("b")
		if !bytes.Equal(b, f32Bytes(4)) {
			t.Errorf("alignment %d: b = %v", align, b)
		}
	}
	// No tensors: no padding needed after the header.
	f := mustParse(t, tFile{kvs: []KV{{"general.architecture", vStr("x")}}}.encode())
	if f.Len() != 0 {
		t.Error("tensors in an empty file")
	}
}

// TestPythonWriterFile reads a file written by gguf-py's GGUFWriter (made by
// tools/gguf/gen_files.py) and checks everything against what gguf-py's
// GGUFReader read back.
func TestPythonWriterFile(t *testing.T) {
	var want struct {
		Version    uint32 `json:"version"`
		Alignment  int64  `json:"alignment"`
		DataOffset int64  `json:"data_offset"`
		Metadata   []struct {
			Key   string `json:"key"`
			Type  string `json:"type"`
			Value any    `json:"value"`
		} `json:"metadata"`
		Tensors []struct {
			Name       string  `json:"name"`
			Type       string  `json:"type"`
			Dims       []int64 `json:"dims"`
			NumpyShape []int   `json:"numpy_shape"`
			Begin      int64   `json:"begin"`
			NBytes     int64   `json:"n_bytes"`
			RawSHA256  string  `json:"raw_sha256"`
			F32SHA256  string  `json:"f32_sha256"`
		} `json:"tensors"`
	}
	b, err := os.ReadFile("testdata/pywriter.gguf.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&want); err != nil {
		t.Fatal(err)
	}
	f, err := Open("testdata/pywriter.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Version() != want.Version || f.Alignment() != want.Alignment || f.DataOffset() != want.DataOffset {
		t.Errorf("version %d alignment %d data offset %d, want %d %d %d", f.Version(), f.Alignment(), f.DataOffset(), want.Version, want.Alignment, want.DataOffset)
	}
	m := f.Metadata()
	if !slices.Equal(m.Keys(), func() (k []string) {
		for _, w := range want.Metadata {
			k = append(k, w.Key)
		}
		return
	}()) {
		t.Errorf("keys %v", m.Keys())
	}
	for _, w := range want.Metadata {
		v, ok := m.Get(w.Key)
		if !ok {
			t.Errorf("missing key %s", w.Key)
			continue
		}
		if v.TypeName() != w.Type {
			t.Errorf("%s: type %s, want %s", w.Key, v.TypeName(), w.Type)
		}
		if got, exp := jsonText(valueJSON(v)), jsonText(w.Value); got != exp {
			t.Errorf("%s: value %s, want %s", w.Key, got, exp)
		}
	}
	tensors := f.Tensors()
	if len(tensors) != len(want.Tensors) {
		t.Fatalf("%d tensors, want %d", len(tensors), len(want.Tensors))
	}
	for i, w := range want.Tensors {
		ti := tensors[i]
		if ti.Name != w.Name || ti.Type.String() != w.Type || !slices.Equal(ti.Dims, w.Dims) || !slices.Equal(ti.Shape(), w.NumpyShape) ||
			ti.Begin != w.Begin || ti.NumBytes() != w.NBytes {
			t.Errorf("tensor %d = %+v (shape %v), want %+v", i, ti, ti.Shape(), w)
		}
		raw, _ := f.Bytes(ti.Name)
		if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != w.RawSHA256 {
			t.Errorf("%s: raw bytes differ", ti.Name)
		}
		vals, shape, err := f.Float32(ti.Name)
		if err != nil || !slices.Equal(shape, w.NumpyShape) {
			t.Errorf("%s: Float32 shape %v, %v", ti.Name, shape, err)
		}
		if sum := sha256.Sum256(f32LE(vals)); hex.EncodeToString(sum[:]) != w.F32SHA256 {
			t.Errorf("%s: dequantized values differ from gguf.quants.dequantize", ti.Name)
		}
	}
}

func f32LE(vals []float32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// valueJSON renders a value as the generator's JSON does: non-finite floats
// and negative zero as strings.
func valueJSON(v Value) any {
	if a, ok := v.Array(); ok {
		out := []any{}
		for i := range a.Len() {
			out = append(out, valueJSON(a.Index(i)))
		}
		return out
	}
	if x, ok := v.Float(); ok {
		switch {
		case math.IsInf(x, 1):
			return "+Inf"
		case math.IsInf(x, -1):
			return "-Inf"
		case math.IsNaN(x):
			return "NaN"
		case x == 0 && math.Signbit(x):
			return "-0"
		}
		return x
	}
	return v.Any()
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.gguf")); err == nil || errors.Is(err, ErrFormat) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrFormat) {
		t.Errorf("directory: %v", err)
	}
	path := filepath.Join(dir, "bad.gguf")
	os.WriteFile(path, []byte("GGUF\x03\x00\x00\x00"), 0o644)
	_, err := Open(path)
	if !errors.Is(err, ErrHeader) || !strings.Contains(err.Error(), path) {
		t.Errorf("short file: %v", err)
	}
	os.WriteFile(path, []byte{}, 0o644)
	if _, err := Open(path); !errors.Is(err, ErrHeader) {
		t.Errorf("empty file: %v", err)
	}
}

func TestClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.gguf")
	os.WriteFile(path, sampleFile().encode(), 0o644)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := f.Bytes("scalar"); !errors.Is(err, ErrClosed) {
		t.Errorf("Bytes after Close: %v", err)
	}
	if _, _, err := f.Float32("scalar"); !errors.Is(err, ErrClosed) {
		t.Errorf("Float32 after Close: %v", err)
	}
	if f.Len() != 6 || f.Metadata().Len() == 0 {
		t.Error("header gone after Close")
	}
}

// TestRelease checks that Release leaves a tensor's bytes readable and
// unchanged (a mapped file faults the released pages back in), for a
// tensor of many pages and one smaller than a page, and that an unknown
// name or a closed file is no error.
func TestRelease(t *testing.T) {
	big := make([]byte, 4*100000)
	for i := range big {
		big[i] = byte(i*7 + i>>9)
	}
	small := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	var buf bytes.Buffer
	ts := []WriteTensor{
		{Name: "big", Type: F32, Dims: []int64{100000}, Data: func() ([]byte, error) { return big, nil }},
		{Name: "small", Type: F32, Dims: []int64{2}, Data: func() ([]byte, error) { return small, nil }},
	}
	if err := Write(&buf, nil, ts); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "r.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want []byte
	}{{"big", big}, {"small", small}} {
		b, err := f.Bytes(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, c.want) {
			t.Fatalf("%s: bytes differ before Release", c.name)
		}
		f.Release(c.name)
		if !bytes.Equal(b, c.want) {
			t.Fatalf("%s: the view differs after Release", c.name)
		}
		again, err := f.Bytes(c.name)
		if err != nil || !bytes.Equal(again, c.want) {
			t.Fatalf("%s: Bytes after Release: %v, equal %v", c.name, err, bytes.Equal(again, c.want))
		}
	}
	f.Release("missing")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f.Release("big")
}
