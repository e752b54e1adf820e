package mnist

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func idxBytes(typ byte, dims []uint32, data []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, typ, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, d)
	}
	b.Write(data)
	return b.Bytes()
}

func gz(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func TestParseIDX(t *testing.T) {
	good := idxBytes(TypeU8, []uint32{2, 3}, []byte{1, 2, 3, 4, 5, 6})
	tests := []struct {
		name    string
		in      []byte
		wantErr string
	}{
		{"ok", good, ""},
		{"gzip", gz(good), ""},
		{"empty", nil, "reading magic"},
		{"bad magic", []byte{1, 2, 8, 1, 0, 0, 0, 0}, "bad magic"},
		{"bad type", idxBytes(0x07, []uint32{1}, []byte{1}), "unknown element type"},
		{"no dims", idxBytes(TypeU8, nil, nil), "0 dimensions"},
		{"truncated dims", []byte{0, 0, 8, 2, 0, 0, 0, 1}, "reading dimension 1"},
		{"truncated data", idxBytes(TypeU8, []uint32{2, 3}, []byte{1, 2}), "data truncated"},
		{"trailing", append(good, 9), "trailing bytes"},
		{"huge", idxBytes(TypeF64, []uint32{1 << 31, 1 << 31}, nil), "more than"},
		{"bad gzip", []byte{0x1f, 0x8b, 0, 0}, "gzip"},
	}
	for _, tt := range tests {
		x, err := ParseIDX(bytes.NewReader(tt.in))
		if tt.wantErr == "" {
			if err != nil || x.Dims[0] != 2 || x.Dims[1] != 3 || len(x.Data) != 6 {
				t.Errorf("%s: %v %+v", tt.name, err, x)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.wantErr)
		}
	}
}

func FuzzParseIDX(f *testing.F) {
	f.Add(idxBytes(TypeU8, []uint32{2, 3}, []byte{1, 2, 3, 4, 5, 6}))
	f.Add(gz(idxBytes(TypeU8, []uint32{1, 2, 2}, []byte{1, 2, 3, 4})))
	f.Add(idxBytes(TypeF32, []uint32{1}, []byte{0, 0, 0x80, 0x3f}))
	f.Add([]byte{0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := ParseIDX(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error does not wrap ErrFormat: %v", err)
			}
			return
		}
		n := typeSize[x.Type]
		for _, d := range x.Dims {
			n *= d
		}
		if n != len(x.Data) {
			t.Fatalf("dims %v type %x but %d data bytes", x.Dims, x.Type, len(x.Data))
		}
	})
}

func TestLoadSetErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	img := write("img", idxBytes(TypeU8, []uint32{2, 1, 2}, []byte{0, 255, 10, 20}))
	lab := write("lab", idxBytes(TypeU8, []uint32{2}, []byte{3, 7}))
	s, err := LoadSet(img, lab)
	if err != nil || s.N != 2 || s.At(1).Label != 7 {
		t.Fatalf("LoadSet: %v", err)
	}
	if v := s.At(0).Image[1]; v < 2.82 || v > 2.83 { // (1 - 0.1307)/0.3081
		t.Fatalf("normalised pixel %v", v)
	}
	badLab := write("badlab", idxBytes(TypeU8, []uint32{2}, []byte{3, 12}))
	if _, err := LoadSet(img, badLab); err == nil || !strings.Contains(err.Error(), "not a digit") {
		t.Fatalf("label 12: %v", err)
	}
	short := write("short", idxBytes(TypeU8, []uint32{3}, []byte{1, 2, 3}))
	if _, err := LoadSet(img, short); err == nil || !strings.Contains(err.Error(), "2 images but 3 labels") {
		t.Fatalf("count mismatch: %v", err)
	}
	if _, err := LoadSet(filepath.Join(dir, "missing"), lab); err == nil {
		t.Fatal("missing file: no error")
	}
}

func TestLoadRealMNIST(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 60k images; skipped in -short")
	}
	dir, err := DefaultDir()
	if err != nil {
		t.Skip(err)
	}
	train, test, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.N != 60000 || test.N != 10000 || train.Rows != 28 || train.Cols != 28 {
		t.Fatalf("sizes %d %d %dx%d", train.N, test.N, train.Rows, train.Cols)
	}
}

func TestModuleVersionMatchesGoMod(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), Module+" "+ModuleVersion) {
		t.Fatalf("go.mod does not require %s %s", Module, ModuleVersion)
	}
}

// TestDefaultDirLookup: DefaultDir finds the files through GOTPU_MNIST_DIR
// or the module cache (GOMODCACHE, GOPATH's first entry, HOME/go) without
// running the go tool, and otherwise names how to get them.
func TestDefaultDirLookup(t *testing.T) {
	if got := escapeModulePath(Module); got != "github.com/petar/!go!m!n!i!s!t" {
		t.Fatalf("escapeModulePath(%s) = %s", Module, got)
	}
	// populate makes a module cache under root holding the GoMNIST data dir.
	populate := func(t *testing.T, root string) string {
		d := filepath.Join(root, "github.com", "petar", "!go!m!n!i!s!t@"+ModuleVersion, "data")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "train-images-idx3-ubyte.gz"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	tests := []struct {
		name string
		env  func(t *testing.T, tmp string) (vars map[string]string, want string)
	}{
		{"GOTPU_MNIST_DIR wins", func(t *testing.T, tmp string) (map[string]string, string) {
			populate(t, tmp)
			return map[string]string{"GOTPU_MNIST_DIR": "/some/dir", "GOMODCACHE": tmp}, "/some/dir"
		}},
		{"GOMODCACHE", func(t *testing.T, tmp string) (map[string]string, string) {
			return map[string]string{"GOMODCACHE": tmp}, populate(t, tmp)
		}},
		{"GOPATH first entry", func(t *testing.T, tmp string) (map[string]string, string) {
			gp := filepath.Join(tmp, "gp")
			return map[string]string{"GOPATH": gp + string(os.PathListSeparator) + "/elsewhere"}, populate(t, filepath.Join(gp, "pkg", "mod"))
		}},
		{"HOME/go", func(t *testing.T, tmp string) (map[string]string, string) {
			return map[string]string{"HOME": tmp, "USERPROFILE": tmp}, populate(t, filepath.Join(tmp, "go", "pkg", "mod"))
		}},
		{"not found", func(t *testing.T, tmp string) (map[string]string, string) {
			return map[string]string{"GOMODCACHE": tmp}, ""
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"GOTPU_MNIST_DIR", "GOMODCACHE", "GOPATH"} {
				t.Setenv(k, "")
			}
			vars, want := tc.env(t, t.TempDir())
			for k, v := range vars {
				t.Setenv(k, v)
			}
			got, err := DefaultDir()
			if want == "" {
				if !errors.Is(err, ErrNotFound) || !strings.Contains(fmt.Sprint(err), "go mod download "+Module) || !strings.Contains(fmt.Sprint(err), "GOTPU_MNIST_DIR") {
					t.Fatalf("DefaultDir() = %q, %v; want ErrNotFound saying how to get the files", got, err)
				}
				return
			}
			if err != nil || got != want {
				t.Fatalf("DefaultDir() = %q, %v; want %q", got, err, want)
			}
		})
	}
}
