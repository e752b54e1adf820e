package gguf

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// rewrite writes f's metadata and tensors back through Write.
func rewrite(t *testing.T, f *File) []byte {
	t.Helper()
	var ts []WriteTensor
	for _, ti := range f.Tensors() {
		name := ti.Name
		ts = append(ts, WriteTensor{Name: name, Type: ti.Type, Dims: ti.Dims, Data: func() ([]byte, error) { return f.Bytes(name) }})
	}
	var buf bytes.Buffer
	if err := Write(&buf, f.Metadata().All(), ts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestWriteRoundTrip rewrites files made by the gguf Python package's
// writer (every metadata value type, arrays of arrays, the tiny models'
// tensors) and checks that Write reproduces them byte for byte.
func TestWriteRoundTrip(t *testing.T) {
	paths := []string{filepath.Join("testdata", "pywriter.gguf")}
	tiny, _ := filepath.Glob(filepath.Join("..", "testdata", "gguf", "tiny", "*.gguf"))
	paths = append(paths, tiny...)
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			want, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got := rewrite(t, f)
			if !bytes.Equal(got, want) {
				n := 0
				for n < min(len(got), len(want)) && got[n] == want[n] {
					n++
				}
				t.Fatalf("rewritten file differs from the original at byte %d (%d bytes, original %d)", n, len(got), len(want))
			}
		})
	}
}

// TestWriteErrors checks Write's argument checks.
func TestWriteErrors(t *testing.T) {
	var buf bytes.Buffer
	for _, tc := range []struct {
		name string
		kvs  []KV
		ts   []WriteTensor
	}{
		{"bad alignment", []KV{{"general.alignment", Uint32Value(24)}}, nil},
		{"short data", nil, []WriteTensor{{Name: "x", Type: Q8_0, Dims: []int64{32}, Data: func() ([]byte, error) { return make([]byte, 33), nil }}}},
		{"partial block", nil, []WriteTensor{{Name: "x", Type: Q8_0, Dims: []int64{31}, Data: func() ([]byte, error) { return nil, nil }}}},
		{"invalid type", nil, []WriteTensor{{Name: "x", Type: Type(4), Dims: []int64{1}, Data: func() ([]byte, error) { return nil, nil }}}},
	} {
		if err := Write(&buf, tc.kvs, tc.ts); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
