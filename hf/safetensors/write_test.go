package safetensors

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func f32bytes(vals ...float32) []byte {
	b, _ := EncodeFloat32(F32, vals)
	return b
}

// TestEncodeReferenceBytes checks outputs given byte for byte in the
// reference implementation's own tests.
func TestEncodeReferenceBytes(t *testing.T) {
	data := f32bytes(0, 1, 2, 3, 4, 5)
	tests := []struct {
		name    string
		tensors []Tensor
		meta    map[string]string
		want    []byte
	}{
		{
			name:    "serialization",
			tensors: []Tensor{{Name: "attn.0", DType: F32, Shape: []int{1, 2, 3}, Data: data}},
			want: append([]byte{64, 0, 0, 0, 0, 0, 0, 0},
				append([]byte(`{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}`), data...)...),
		},
		{
			name:    "forced alignment",
			tensors: []Tensor{{Name: "attn0", DType: F32, Shape: []int{1, 1, 2, 3}, Data: data}},
			want: append([]byte{72, 0, 0, 0, 0, 0, 0, 0},
				append([]byte(`{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}       `), data...)...),
		},
		{
			name: "empty",
			want: []byte{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '},
		},
		{
			name: "empty with metadata",
			meta: map[string]string{"framework": "pt"},
			want: append([]byte{40, 0, 0, 0, 0, 0, 0, 0}, `{"__metadata__":{"framework":"pt"}}     `...),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			n, err := Encode(&buf, tc.tensors, tc.meta)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(buf.Len()) || !bytes.Equal(buf.Bytes(), tc.want) {
				t.Fatalf("Encode = %q (n=%d)\nwant     %q", buf.Bytes(), n, tc.want)
			}
			if _, err := Parse(buf.Bytes()); err != nil {
				t.Fatalf("Parse of encoded file: %v", err)
			}
		})
	}
}

func TestEncodeOrderAndRoundTrip(t *testing.T) {
	tensors := []Tensor{
		{Name: "b_u8", DType: U8, Shape: []int{3}, Data: []byte{1, 2, 3}},
		{Name: "a_u8", DType: U8, Shape: []int{1}, Data: []byte{4}},
		{Name: "h", DType: F16, Shape: []int{2}, Data: []byte{0, 0x3c, 0, 0xc0}},
		{Name: "d", DType: F64, Shape: nil, Data: make([]byte, 8)},
		{Name: "e", DType: F32, Shape: []int{0, 5}},
		{Name: "bool", DType: Bool, Shape: []int{2}, Data: []byte{1, 0}},
		{Name: "f4", DType: F4, Shape: []int{4}, Data: []byte{0x21, 0x43}},
		{Name: "i64", DType: I64, Shape: []int{1}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
	}
	var buf bytes.Buffer
	if _, err := Encode(&buf, tensors, map[string]string{"z": "1", "a": "2"}); err != nil {
		t.Fatal(err)
	}
	hdrLen := int(buf.Bytes()[0])
	if hdrLen%8 != 0 {
		t.Errorf("header length %d is not a multiple of 8", hdrLen)
	}
	if !bytes.HasPrefix(buf.Bytes()[8:], []byte(`{"__metadata__":{"a":"2","z":"1"},"i64":`)) {
		t.Errorf("header starts %q", buf.Bytes()[8:60])
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, info := range f.Tensors() {
		order = append(order, info.Name)
		if info.DType.Size() > 0 && (info.Begin-f.DataOffset())%int64(info.DType.Size()) != 0 {
			t.Errorf("tensor %q at data offset %d is not aligned to %d", info.Name, info.Begin-f.DataOffset(), info.DType.Size())
		}
	}
	// Descending dtype order (U64 > I64 > F64 > ... > U8 > F4 > BOOL), then by name.
	want := []string{"i64", "d", "e", "h", "a_u8", "b_u8", "f4", "bool"}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("storage order %v, want %v", order, want)
	}
	for _, tt := range tensors {
		got, err := f.Bytes(tt.Name)
		if err != nil || !bytes.Equal(got, tt.Data) {
			t.Errorf("Bytes(%q) = %v, %v; want %v", tt.Name, got, err, tt.Data)
		}
	}
	if !reflect.DeepEqual(f.Metadata(), map[string]string{"z": "1", "a": "2"}) {
		t.Errorf("Metadata = %v", f.Metadata())
	}
}

func TestEncodeInvalid(t *testing.T) {
	tests := []struct {
		name    string
		tensors []Tensor
		meta    map[string]string
		want    error
		mention string
	}{
		{"short data", []Tensor{{Name: "w", DType: F32, Shape: []int{2}, Data: make([]byte, 7)}}, nil, ErrShape, `tensor "w": shape [2] of F32 needs 8 bytes, data has 7`},
		{"negative dim", []Tensor{{Name: "w", DType: U8, Shape: []int{-1}}}, nil, ErrShape, "negative"},
		{"overflow", []Tensor{{Name: "w", DType: U8, Shape: []int{math.MaxInt, 4}}}, nil, ErrShape, "overflows"},
		{"sub-byte", []Tensor{{Name: "w", DType: F4, Shape: []int{3}, Data: make([]byte, 2)}}, nil, ErrShape, "whole number of bytes"},
		{"invalid dtype", []Tensor{{Name: "w", Shape: []int{1}, Data: []byte{1}}}, nil, ErrDType, `"w"`},
		{"duplicate", []Tensor{{Name: "w", DType: U8, Shape: []int{1}, Data: []byte{1}}, {Name: "w", DType: U8, Shape: []int{1}, Data: []byte{1}}}, nil, ErrDuplicate, `"w"`},
		{"reserved name", []Tensor{{Name: "__metadata__", DType: U8, Shape: []int{1}, Data: []byte{1}}}, nil, ErrInvalidHeader, "__metadata__"},
		{"bad utf-8 name", []Tensor{{Name: "\xff", DType: U8, Shape: []int{1}, Data: []byte{1}}}, nil, ErrInvalidHeader, "UTF-8"},
		{"bad utf-8 metadata", nil, map[string]string{"k": "\xfe"}, ErrInvalidHeader, "UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			_, err := Encode(&buf, tc.tensors, tc.meta)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("Encode error = %v, want %v mentioning %q", err, tc.want, tc.mention)
			}
			if buf.Len() != 0 {
				t.Errorf("Encode wrote %d bytes before failing", buf.Len())
			}
			path := filepath.Join(t.TempDir(), "x.safetensors")
			if err := Write(path, tc.tensors, tc.meta); !errors.Is(err, tc.want) {
				t.Errorf("Write error = %v, want %v", err, tc.want)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("failed Write left %s behind", path)
			}
		})
	}
}

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	v1 := []Tensor{{Name: "w", DType: U8, Shape: []int{2}, Data: []byte{1, 2}}}
	v2 := []Tensor{{Name: "w", DType: U8, Shape: []int{3}, Data: []byte{3, 4, 5}}}
	if err := Write(path, v1, nil); err != nil {
		t.Fatal(err)
	}
	// A failing write (invalid tensor) leaves the old file intact.
	if err := Write(path, []Tensor{{Name: "w", DType: U8, Shape: []int{9}}}, nil); err == nil {
		t.Fatal("invalid Write succeeded")
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := f.Bytes("w")
	if !bytes.Equal(got, []byte{1, 2}) {
		t.Fatalf("old content damaged: %v", got)
	}
	f.Close()
	// Overwriting replaces the file as a whole.
	if err := Write(path, v2, nil); err != nil {
		t.Fatal(err)
	}
	f, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, _ := f.Bytes("w"); !bytes.Equal(got, []byte{3, 4, 5}) {
		t.Fatalf("new content %v", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only the checkpoint (no temp files)", names)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	if err := Write(filepath.Join(dir, "no", "such", "dir.safetensors"), v1, nil); err == nil {
		t.Error("Write into a missing directory succeeded")
	}
}
