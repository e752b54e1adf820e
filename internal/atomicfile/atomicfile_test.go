package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	errFill := errors.New("fill failed")
	tests := []struct {
		name    string
		old     string // existing content; "" for none
		fill    func(w io.Writer) error
		want    string // content afterwards
		wantErr error
	}{
		{"new file", "", func(w io.Writer) error { _, err := io.WriteString(w, "hello"); return err }, "hello", nil},
		{"replace", "old content", func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }, "new", nil},
		{"large", "", func(w io.Writer) error { _, err := w.Write(make([]byte, 3<<20)); return err }, strings.Repeat("\x00", 3<<20), nil},
		{"failed fill keeps the old file", "old", func(w io.Writer) error {
			io.WriteString(w, "partial")
			return errFill
		}, "old", errFill},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.bin")
			if tc.old != "" {
				if err := os.WriteFile(path, []byte(tc.old), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			n, err := Write(path, 0o644, tc.fill)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err == nil && n != int64(len(tc.want)) {
				t.Errorf("n = %d, want %d", n, len(tc.want))
			}
			got, rerr := os.ReadFile(path)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if string(got) != tc.want {
				t.Errorf("content %.20q (%d bytes), want %.20q (%d bytes)", got, len(got), tc.want, len(tc.want))
			}
			if err == nil {
				if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
					t.Errorf("mode %v, want 0644", st.Mode().Perm())
				}
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), TempPrefix) {
					t.Errorf("temporary file %s left behind", e.Name())
				}
			}
		})
	}
}

func TestWriteBytesAndMkdirAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "c")
	if err := MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(dir); err != nil {
		t.Fatalf("second MkdirAll: %v", err)
	}
	p := filepath.Join(dir, "x")
	if err := WriteBytes(p, 0o600, []byte("ab"), nil, []byte("cd")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != "abcd" {
		t.Fatalf("content %q", got)
	}
	if _, err := Write(filepath.Join(t.TempDir(), "missing", "x"), 0o644, func(io.Writer) error { return nil }); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}
