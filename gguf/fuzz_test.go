package gguf

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// fuzzSeeds are small valid files and some of their truncations.
func fuzzSeeds(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{}
	sample := sampleFile()
	seeds["sample_v3"] = sample.encode()
	sample.version = 2
	seeds["sample_v2"] = sample.encode()
	seeds["header_only"] = tFile{}.encode()
	seeds["metadata_only"] = tFile{kvs: []KV{
		{"general.architecture", vStr("gemma3")},
		{"tokenizer.ggml.tokens", vArr([]string{"a", "b"})},
		{"n", vArr([]*Array{mkArr([]uint16{1}), mkArr([]*Array{mkArr([]bool{true})})})},
	}}.encode()
	seeds["aligned_64_quants"] = tFile{
		kvs: []KV{{"general.alignment", vU32(64)}},
		tensors: []tTensor{
			{"q4_k", Q4_K, []int64{256}, bytes.Repeat([]byte{0x11}, 144)},
			{"q6_k", Q6_K, []int64{256}, bytes.Repeat([]byte{0x22}, 210)},
			{"q5_0", Q5_0, []int64{32, 2}, bytes.Repeat([]byte{0x33}, 44)},
			{"bf16", BF16, []int64{2}, []byte{0x80, 0x3f, 0x00, 0x40}},
		},
	}.encode()
	py, err := os.ReadFile("testdata/pywriter.gguf")
	if err != nil {
		t.Fatal(err)
	}
	seeds["pywriter"] = py
	full := seeds["sample_v3"]
	for _, n := range []int{3, 4, 8, 20, 24, 40, len(full) / 2, len(full) - 1} {
		seeds[fmt.Sprintf("sample_v3_cut%d", n)] = full[:n]
	}
	return seeds
}

// TestWriteFuzzSeeds writes the seed corpus to testdata/fuzz/FuzzOpen when
// GGUF_WRITE_FUZZ_SEEDS=1 (committed; rerun after changing the seeds).
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("GGUF_WRITE_FUZZ_SEEDS") != "1" {
		t.Skip("set GGUF_WRITE_FUZZ_SEEDS=1 to rewrite testdata/fuzz/FuzzOpen")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzOpen")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range fuzzSeeds(t) {
		content := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, "seed_"+name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzOpen feeds arbitrary bytes to the parser. Invariants: it never panics
// and never allocates beyond the input's size bounds; Parse and OpenReaderAt
// agree; every rejection is a format error (the input is in memory, so no
// I/O can fail); every accepted file has aligned, in-bounds, non-overlapping
// tensors whose bytes and dequantized values can be read; and re-encoding
// it gives a file that parses to the same header, whose encoding is a fixed
// point. Seeds: fuzzSeeds, committed under testdata/fuzz/FuzzOpen.
func FuzzOpen(f *testing.F) {
	for _, data := range fuzzSeeds(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := Parse(data)
		rf, err2 := OpenReaderAt(bytes.NewReader(data), int64(len(data)), "fuzz")
		if (err == nil) != (err2 == nil) {
			t.Fatalf("Parse error %v but OpenReaderAt error %v", err, err2)
		}
		if err != nil {
			if !errors.Is(err, ErrFormat) || !errors.Is(err2, ErrFormat) {
				t.Fatalf("rejection is not a format error: %v / %v", err, err2)
			}
			return
		}
		infos := pf.Tensors()
		if !slices.EqualFunc(infos, rf.Tensors(), func(a, b TensorInfo) bool {
			return a.Name == b.Name && a.Type == b.Type && slices.Equal(a.Dims, b.Dims) && a.Begin == b.Begin && a.End == b.End
		}) {
			t.Fatal("Parse and OpenReaderAt see different tensors")
		}
		ends := map[int64]int64{}
		for _, ti := range infos {
			if ti.Begin < pf.DataOffset() || ti.End > int64(len(data)) || ti.End < ti.Begin || ti.Offset%pf.Alignment() != 0 {
				t.Fatalf("tensor %q range [%d,%d) outside the data section [%d,%d)", ti.Name, ti.Begin, ti.End, pf.DataOffset(), len(data))
			}
			if nb, err := ti.Type.ByteSize(ti.NumElements()); err != nil || nb != ti.NumBytes() {
				t.Fatalf("tensor %q: %d bytes for %d %v elements (%v)", ti.Name, ti.NumBytes(), ti.NumElements(), ti.Type, err)
			}
			if ti.NumBytes() > 0 {
				ends[ti.Begin] = max(ends[ti.Begin], ti.End)
			}
			b, err := pf.Bytes(ti.Name)
			if err != nil {
				t.Fatal(err)
			}
			b2, err := rf.Bytes(ti.Name)
			if err != nil || !bytes.Equal(b, b2) {
				t.Fatalf("ReaderAt bytes differ for %q: %v", ti.Name, err)
			}
			if ti.Type.CanDequantize() {
				vals, shape, err := pf.Float32(ti.Name)
				if err != nil || int64(len(vals)) != ti.NumElements() || len(shape) != len(ti.Dims) {
					t.Fatalf("Float32(%q): %d values, shape %v, %v", ti.Name, len(vals), shape, err)
				}
			}
		}
		begins := slices.Sorted(func(yield func(int64) bool) {
			for b := range ends {
				if !yield(b) {
					return
				}
			}
		})
		for i := 1; i < len(begins); i++ {
			if ends[begins[i-1]] > begins[i] {
				t.Fatalf("tensors overlap at %d", begins[i])
			}
		}
		if len(begins) != len(slices.Compact(slices.Clone(begins))) {
			t.Fatal("two non-empty tensors start at the same offset")
		}

		again := reencode(t, pf)
		pf2, err := Parse(again)
		if err != nil {
			t.Fatalf("parsing our own encoding: %v", err)
		}
		if !slices.Equal(pf2.Metadata().Keys(), pf.Metadata().Keys()) || pf2.Len() != pf.Len() || pf2.Version() != pf.Version() {
			t.Fatal("round trip changed the keys or the tensor count")
		}
		for i, ti := range pf2.Tensors() {
			want := infos[i]
			if ti.Name != want.Name || ti.Type != want.Type || !slices.Equal(ti.Dims, want.Dims) {
				t.Fatalf("round trip changed tensor %d: %+v, want %+v", i, ti, want)
			}
			b, _ := pf2.Bytes(ti.Name)
			w, _ := pf.Bytes(ti.Name)
			if !bytes.Equal(b, w) {
				t.Fatalf("round trip changed the data of %q", ti.Name)
			}
		}
		if third := reencode(t, pf2); sha256.Sum256(third) != sha256.Sum256(again) {
			t.Fatal("encoding is not a fixed point")
		}
	})
}
