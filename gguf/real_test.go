package gguf

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/gotpu/gotpu/internal/testreq"
	"hash/crc32"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"
)

// realModel is one model of testdata/real.json (tools/gguf/gen_realref.py).
type realModel struct {
	File        string         `json:"file"`
	Version     uint32         `json:"version"`
	Alignment   int64          `json:"alignment"`
	DataOffset  int64          `json:"data_offset"`
	NumKV       int            `json:"num_kv"`
	NumTensors  int            `json:"num_tensors"`
	TensorTypes map[string]int `json:"tensor_types"`
	Metadata    map[string]struct {
		Type   string          `json:"type"`
		Value  json.RawMessage `json:"value"`
		Len    int             `json:"len"`
		SHA256 string          `json:"sha256"`
		Head   []any           `json:"head"`
	} `json:"metadata"`
	Tensors []struct {
		Name       string            `json:"name"`
		Type       string            `json:"type"`
		Dims       []int64           `json:"dims"`
		NumpyShape []int             `json:"numpy_shape"`
		Begin      int64             `json:"begin"`
		Bytes      int64             `json:"bytes"`
		CRC32      uint32            `json:"crc32"`
		SHA256     string            `json:"sha256"`
		Samples    map[string]string `json:"samples"`
	} `json:"tensors"`
}

// realPath returns where tools/gguf/fetch.sh puts a model. When the file is
// absent the test is skipped, except in CI (CI=true), where .ci/run fetches
// the models first and their absence is a failure.
func realPath(t *testing.T, file string) string {
	t.Helper()
	cache := os.Getenv("GOTPU_TESTDATA_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "gotpu-testdata")
	}
	path := filepath.Join(cache, "gguf", file)
	if _, err := os.Stat(path); err != nil {
		testreq.Missing(t, "%s not found; run tools/gguf/fetch.sh (honours GOTPU_TESTDATA_CACHE) to download it (%v)", path, err)
	}
	return path
}

// TestRealFiles opens SmolLM2-135M-Instruct (Q4_1) and Gemma-3-270M
// (Q4_K_M), checks their header and every metadata value against gguf-py's
// reading, and dequantizes every tensor, comparing each bit for bit (by
// CRC-32, and for one tensor per type by SHA-256 and sample values) with
// gguf.quants.dequantize.
func TestRealFiles(t *testing.T) {
	b, err := os.ReadFile("testdata/real.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Models map[string]realModel `json:"models"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"smollm2", "gemma3"} {
		t.Run(name, func(t *testing.T) {
			m := ref.Models[name]
			checkRealModel(t, realPath(t, m.File), m)
		})
	}
}

func checkRealModel(t *testing.T, path string, m realModel) {
	start := time.Now()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opened := time.Since(start)
	if f.Version() != m.Version || f.Alignment() != m.Alignment || f.DataOffset() != m.DataOffset ||
		f.Metadata().Len() != m.NumKV || f.Len() != m.NumTensors {
		t.Errorf("version %d alignment %d data offset %d keys %d tensors %d; want %d %d %d %d %d",
			f.Version(), f.Alignment(), f.DataOffset(), f.Metadata().Len(), f.Len(),
			m.Version, m.Alignment, m.DataOffset, m.NumKV, m.NumTensors)
	}

	// Every metadata value as gguf-py read it.
	md := f.Metadata()
	for key, want := range m.Metadata {
		v, ok := md.Get(key)
		if !ok {
			t.Errorf("missing key %s", key)
			continue
		}
		if v.TypeName() != want.Type {
			t.Errorf("%s: type %s, want %s", key, v.TypeName(), want.Type)
			continue
		}
		a, isArr := v.Array()
		if !isArr {
			var w any
			if err := json.Unmarshal(want.Value, &w); err != nil {
				t.Fatal(err)
			}
			if x, ok := v.Float(); ok {
				if x != w.(float64) {
					t.Errorf("%s = %v, want %v", key, x, w)
				}
			} else if fmt.Sprint(v.Any()) != fmt.Sprint(w) {
				t.Errorf("%s = %v, want %v", key, v.Any(), w)
			}
			continue
		}
		if a.Len() != want.Len {
			t.Errorf("%s: %d elements, want %d", key, a.Len(), want.Len)
		}
		h := sha256.New()
		for i := range a.Len() {
			h.Write(elementBytes(a.Index(i)))
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != want.SHA256 {
			t.Errorf("%s: elements hash %s, want %s", key, got, want.SHA256)
		}
		for i, w := range want.Head {
			got := a.Index(i).Any()
			if fmt.Sprint(got) != fmt.Sprint(w) {
				t.Errorf("%s[%d] = %v, want %v", key, i, got, w)
			}
		}
	}

	// Every tensor: description, shape, and dequantized values. Tensors up
	// to chunk elements go through Float32Into; larger ones (the embedding
	// tables) are dequantized a chunk at a time to bound the test's memory.
	const chunk = 1 << 22
	infos := f.Tensors()
	types := map[string]int{}
	buf := make([]float32, chunk)
	var elems int64
	for i, want := range m.Tensors {
		ti := infos[i]
		types[ti.Type.String()]++
		if ti.Name != want.Name || ti.Type.String() != want.Type || !slices.Equal(ti.Dims, want.Dims) ||
			!slices.Equal(ti.Shape(), want.NumpyShape) || ti.Begin != want.Begin || ti.NumBytes() != want.Bytes {
			t.Errorf("tensor %d: %+v shape %v, want %+v", i, ti, ti.Shape(), want)
			continue
		}
		n := int(ti.NumElements())
		elems += int64(n)
		crc, sha := uint32(0), sha256.New()
		check := func(vals []float32, off int) {
			raw := leBytes(vals)
			crc = crc32.Update(crc, crc32.IEEETable, raw)
			if want.SHA256 != "" {
				sha.Write(raw)
			}
			for idx, bits := range want.Samples {
				k, _ := strconv.Atoi(idx)
				if k >= off && k < off+len(vals) {
					if got := fmt.Sprintf("%08x", math.Float32bits(vals[k-off])); got != bits {
						t.Errorf("%s[%d] = %s, want %s", ti.Name, k, got, bits)
					}
				}
			}
		}
		if n <= chunk {
			if err := f.Float32Into(ti.Name, buf[:n]); err != nil {
				t.Fatal(err)
			}
			check(buf[:n], 0)
		} else {
			raw, err := f.Bytes(ti.Name)
			if err != nil {
				t.Fatal(err)
			}
			bs, ts := ti.Type.BlockSize(), ti.Type.TypeSize()
			for off := 0; off < n; off += chunk {
				k := min(chunk, n-off)
				if err := dequantizeParallel(ti.Type, raw[off/bs*ts:(off+k)/bs*ts], buf[:k]); err != nil {
					t.Fatal(err)
				}
				check(buf[:k], off)
			}
		}
		if crc != want.CRC32 {
			t.Errorf("%s (%v): CRC-32 of the dequantized values %08x, gguf-py's %08x", ti.Name, ti.Type, crc, want.CRC32)
		}
		if want.SHA256 != "" && hex.EncodeToString(sha.Sum(nil)) != want.SHA256 {
			t.Errorf("%s: SHA-256 of the dequantized values differs", ti.Name)
		}
	}
	if !maps.Equal(types, m.TensorTypes) {
		t.Errorf("tensor types %v, want %v", types, m.TensorTypes)
	}
	t.Logf("%s: opened in %v; dequantized %d tensors, %d values, in %v", filepath.Base(path), opened.Round(time.Millisecond), len(infos), elems, time.Since(start).Round(time.Millisecond))
}

// elementBytes is an array element's GGUF encoding (as gen_realref.py hashes it).
func elementBytes(v Value) []byte {
	if s, ok := v.Str(); ok {
		return append(binary.LittleEndian.AppendUint64(nil, uint64(len(s))), s...)
	}
	b := binary.LittleEndian.AppendUint64(nil, v.bits)
	return b[:v.typ.size()]
}

// leBytes views float32 values as their little-endian bytes (a copy on a
// big-endian machine).
func leBytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	var one uint16 = 1
	if *(*byte)(unsafe.Pointer(&one)) == 1 {
		return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}
