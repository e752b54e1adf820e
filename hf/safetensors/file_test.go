package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// rawFile builds a file from a literal header and data section.
func rawFile(header string, data []byte) []byte {
	out := make([]byte, 8, 8+len(header)+len(data))
	binary.LittleEndian.PutUint64(out, uint64(len(header)))
	out = append(out, header...)
	return append(out, data...)
}

func TestParseValid(t *testing.T) {
	tests := []struct {
		name  string
		file  []byte
		infos []TensorInfo // storage order; Begin/End relative to the data section
		meta  map[string]string
	}{
		{
			name:  "reference example",
			file:  rawFile(`{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}`, make([]byte, 16)),
			infos: []TensorInfo{{Name: "test", DType: I32, Shape: []int{2, 2}, Begin: 0, End: 16}},
		},
		{
			name: "header order differs from offset order, zero-size tensors, scalar",
			file: rawFile(`{"b":{"dtype":"U8","shape":[2],"data_offsets":[8,10]},"z":{"dtype":"F32","shape":[0,3],"data_offsets":[8,8]},"a":{"dtype":"F64","shape":[],"data_offsets":[0,8]}}`+"   ", make([]byte, 10)),
			infos: []TensorInfo{
				{Name: "a", DType: F64, Shape: []int{}, Begin: 0, End: 8},
				{Name: "z", DType: F32, Shape: []int{0, 3}, Begin: 8, End: 8},
				{Name: "b", DType: U8, Shape: []int{2}, Begin: 8, End: 10},
			},
		},
		{
			name:  "metadata, whitespace, unknown keys",
			file:  rawFile(" {\n \"__metadata__\" : {\"format\":\"pt\",\"x\":\"\"},\n \"w\": {\"shape\": [ 3 ], \"dtype\":\"BF16\", \"extra\": {\"k\": [1]}, \"data_offsets\":[0, 6]} }\n", make([]byte, 6)),
			infos: []TensorInfo{{Name: "w", DType: BF16, Shape: []int{3}, Begin: 0, End: 6}},
			meta:  map[string]string{"format": "pt", "x": ""},
		},
		{
			name: "null metadata and empty file",
			file: rawFile(`{"__metadata__":null}`, nil),
		},
		{
			name: "sub-byte dtypes that fill whole bytes",
			file: rawFile(`{"f4":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3]},"f6":{"dtype":"F6_E3M2","shape":[4],"data_offsets":[3,6]}}`, make([]byte, 6)),
			infos: []TensorInfo{
				{Name: "f4", DType: F4, Shape: []int{2, 3}, Begin: 0, End: 3},
				{Name: "f6", DType: F6E3M2, Shape: []int{4}, Begin: 3, End: 6},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := 8 + int64(binary.LittleEndian.Uint64(tc.file))
			f, err := Parse(tc.file)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got := f.Tensors()
			if len(got) != len(tc.infos) {
				t.Fatalf("got %d tensors, want %d", len(got), len(tc.infos))
			}
			for i, want := range tc.infos {
				g := got[i]
				want.Begin += start
				want.End += start
				if g.Name != want.Name || g.DType != want.DType || !reflect.DeepEqual(g.Shape, want.Shape) ||
					g.Begin != want.Begin || g.End != want.End {
					t.Errorf("tensor %d = %+v, want %+v", i, g, want)
				}
				b, err := f.Bytes(g.Name)
				if err != nil || int64(len(b)) != g.NumBytes() {
					t.Errorf("Bytes(%q) = %d bytes, %v", g.Name, len(b), err)
				}
				info, err := f.Info(g.Name)
				if err != nil || !reflect.DeepEqual(info, g) {
					t.Errorf("Info(%q) = %+v, %v; want %+v", g.Name, info, err, g)
				}
			}
			if !reflect.DeepEqual(f.Metadata(), tc.meta) {
				t.Errorf("Metadata() = %v, want %v", f.Metadata(), tc.meta)
			}
			if _, err := f.Info("missing"); !errors.Is(err, ErrNotFound) {
				t.Errorf("Info(missing) error = %v, want ErrNotFound", err)
			}
		})
	}
}

func TestParseOffsetsAreAbsolute(t *testing.T) {
	hdr := `{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U16","shape":[1],"data_offsets":[2,4]}}`
	file := rawFile(hdr, []byte{10, 11, 12, 13})
	f, err := Parse(file)
	if err != nil {
		t.Fatal(err)
	}
	start := int64(8 + len(hdr))
	if f.DataOffset() != start {
		t.Fatalf("DataOffset = %d, want %d", f.DataOffset(), start)
	}
	a, _ := f.Info("a")
	b, _ := f.Info("b")
	if a.Begin != start || a.End != start+2 || b.Begin != start+2 || b.End != start+4 {
		t.Fatalf("offsets a=[%d,%d] b=[%d,%d], data starts at %d", a.Begin, a.End, b.Begin, b.End, start)
	}
	got, _ := f.Bytes("b")
	if !bytes.Equal(got, []byte{12, 13}) || !bytes.Equal(file[b.Begin:b.End], got) {
		t.Fatalf("Bytes(b) = %v", got)
	}
	if names := f.Names(); !reflect.DeepEqual(names, []string{"a", "b"}) {
		t.Fatalf("Names = %v", names)
	}
}

func TestParseInvalid(t *testing.T) {
	u8 := func(name string, b, e int) string {
		return `"` + name + `":{"dtype":"U8","shape":[` + itoa(e-b) + `],"data_offsets":[` + itoa(b) + `,` + itoa(e) + `]}`
	}
	tests := []struct {
		name    string
		file    []byte
		want    error
		mention string // must appear in the message (the tensor name or the problem)
	}{
		{"too short", []byte{1, 2, 3}, ErrInvalidHeader, "shorter than the 8-byte"},
		{"header past end", append([]byte{100, 0, 0, 0, 0, 0, 0, 0}, "{}"...), ErrInvalidHeader, "exceeds"},
		{"header too large", append([]byte{0, 0, 0, 0, 1, 0, 0, 0}, "{}"...), ErrHeaderTooLarge, "limit"},
		{"max uint64 length", append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "{}"...), ErrHeaderTooLarge, "limit"},
		{"empty header", rawFile("", nil), ErrInvalidHeader, "not JSON"},
		{"not utf-8", rawFile("{\"\xff\":1}", nil), ErrInvalidHeader, "UTF-8"},
		{"array", rawFile(`[]`, nil), ErrInvalidHeader, "not a JSON object"},
		{"truncated json", rawFile(`{"a":{"dtype":"U8"`, nil), ErrInvalidHeader, `"a"`},
		{"trailing junk", rawFile(`{}x`, nil), ErrInvalidHeader, "trailing"},
		{"two objects", rawFile(`{} {}`, nil), ErrInvalidHeader, "trailing"},
		{"entry not object", rawFile(`{"w":5}`, nil), ErrInvalidHeader, `"w"`},
		{"entry null", rawFile(`{"w":null}`, nil), ErrInvalidHeader, `"w"`},
		{"missing dtype", rawFile(`{"w":{"shape":[1],"data_offsets":[0,1]}}`, []byte{1}), ErrInvalidHeader, `tensor "w": missing "dtype"`},
		{"missing shape", rawFile(`{"w":{"dtype":"U8","data_offsets":[0,1]}}`, []byte{1}), ErrInvalidHeader, `tensor "w": missing "shape"`},
		{"missing offsets", rawFile(`{"w":{"dtype":"U8","shape":[1]}}`, []byte{1}), ErrInvalidHeader, `tensor "w": missing "data_offsets"`},
		{"case-different key", rawFile(`{"w":{"DTYPE":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{1}), ErrInvalidHeader, `missing "dtype"`},
		{"null shape", rawFile(`{"w":{"dtype":"U8","shape":null,"data_offsets":[0,1]}}`, []byte{1}), ErrInvalidHeader, `"shape" is null`},
		{"dtype not string", rawFile(`{"w":{"dtype":8,"shape":[1],"data_offsets":[0,1]}}`, []byte{1}), ErrInvalidHeader, `"dtype"`},
		{"unknown dtype", rawFile(`{"w":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}`, make([]byte, 16)), ErrDType, `tensor "w": `},
		{"lowercase dtype", rawFile(`{"w":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)), ErrDType, `"f32"`},
		{"negative dim", rawFile(`{"w":{"dtype":"U8","shape":[2,-1],"data_offsets":[0,0]}}`, nil), ErrShape, `tensor "w": shape[1] is negative`},
		{"float dim", rawFile(`{"w":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}`, []byte{1}), ErrShape, "not a non-negative integer"},
		{"exponent dim", rawFile(`{"w":{"dtype":"U8","shape":[1e0],"data_offsets":[0,1]}}`, []byte{1}), ErrShape, "not a non-negative integer"},
		{"string dim", rawFile(`{"w":{"dtype":"U8","shape":["1"],"data_offsets":[0,1]}}`, []byte{1}), ErrShape, "not a non-negative integer"},
		{"dim beyond uint64", rawFile(`{"w":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,0]}}`, nil), ErrShape, "out of range"},
		{"dim beyond int64", rawFile(`{"w":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0]}}`, nil), ErrShape, "too large"},
		{"shape product overflow", rawFile(`{"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil), ErrShape, "overflows"},
		{"bytes overflow", rawFile(`{"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]}}`, nil), ErrShape, "overflows"},
		{"overflow hidden by zero dim", rawFile(`{"w":{"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}`, nil), ErrShape, "overflows"},
		{"sub-byte not whole bytes", rawFile(`{"w":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}`, []byte{1, 2}), ErrShape, "whole number of bytes"},
		{"size mismatch", rawFile(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)), ErrShape, `tensor "w": shape [2] of F32 needs 8 bytes`},
		{"one offset", rawFile(`{"w":{"dtype":"U8","shape":[1],"data_offsets":[0]}}`, []byte{1}), ErrOffsets, "has 1 elements"},
		{"negative offset", rawFile(`{"w":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}}`, []byte{1}), ErrOffsets, "negative"},
		{"reversed offsets", rawFile(`{"w":{"dtype":"U8","shape":[0],"data_offsets":[1,0]}}`, []byte{1}), ErrOffsets, "end before they begin"},
		{"past data end", rawFile(`{"w":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}}`, []byte{1, 2}), ErrOffsets, "run past the 2-byte data section"},
		{"overlap", rawFile(`{`+u8("a", 0, 2)+`,`+u8("b", 1, 3)+`}`, []byte{1, 2, 3}), ErrOffsets, `tensor "b" data_offsets [1, 3] overlap tensor "a"`},
		{"identical ranges", rawFile(`{`+u8("a", 0, 2)+`,`+u8("b", 0, 2)+`}`, []byte{1, 2}), ErrOffsets, "overlap"},
		{"gap at start", rawFile(`{`+u8("a", 1, 2)+`}`, []byte{1, 2}), ErrOffsets, `tensor "a" starts at data offset 1`},
		{"gap in middle", rawFile(`{`+u8("a", 0, 1)+`,`+u8("b", 2, 3)+`}`, []byte{1, 2, 3}), ErrOffsets, "leaving bytes [1, 2)"},
		{"trailing data", rawFile(`{`+u8("a", 0, 1)+`}`, []byte{1, 2}), ErrOffsets, "cover 1 bytes but the data section has 2"},
		{"data without tensors", rawFile(`{}`, []byte{1}), ErrOffsets, "cover 0 bytes"},
		{"duplicate tensor", rawFile(`{`+u8("a", 0, 1)+`,`+u8("a", 1, 2)+`}`, []byte{1, 2}), ErrDuplicate, `tensor "a" appears twice`},
		{"duplicate metadata", rawFile(`{"__metadata__":{},"__metadata__":{}}`, nil), ErrDuplicate, "__metadata__ appears twice"},
		{"duplicate metadata key", rawFile(`{"__metadata__":{"k":"1","k":"2"}}`, nil), ErrDuplicate, `key "k"`},
		{"metadata value not string", rawFile(`{"__metadata__":{"total":12}}`, nil), ErrInvalidHeader, `__metadata__["total"] is a number`},
		{"metadata not object", rawFile(`{"__metadata__":["a"]}`, nil), ErrInvalidHeader, "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.file)
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrFormat) {
				t.Errorf("error %q does not wrap %v and ErrFormat", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
			// The same bytes through a ReaderAt give the same verdict.
			if _, err2 := OpenReaderAt(bytes.NewReader(tc.file), int64(len(tc.file)), "x.safetensors"); !errors.Is(err2, tc.want) {
				t.Errorf("OpenReaderAt error = %v, want %v", err2, tc.want)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestOpenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	tensors := []Tensor{
		{Name: "w", DType: F32, Shape: []int{2, 2}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
		{Name: "b", DType: U8, Shape: []int{3}, Data: []byte{7, 8, 9}},
	}
	if err := Write(path, tensors, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Path() != path || f.Len() != 2 {
		t.Errorf("Path %q Len %d", f.Path(), f.Len())
	}
	if !f.Mapped() && isLinux {
		t.Error("file is not memory-mapped on linux")
	}
	for _, want := range tensors {
		got, err := f.Bytes(want.Name)
		if err != nil || !bytes.Equal(got, want.Data) {
			t.Errorf("Bytes(%q) = %v, %v", want.Name, got, err)
		}
		info, _ := f.Info(want.Name)
		if info.File != "m.safetensors" {
			t.Errorf("Info(%q).File = %q", want.Name, info.File)
		}
		dst := make([]byte, len(want.Data))
		if err := f.ReadInto(want.Name, dst); err != nil || !bytes.Equal(dst, want.Data) {
			t.Errorf("ReadInto(%q) = %v, %v", want.Name, dst, err)
		}
		sec, err := f.Section(want.Name)
		if err != nil {
			t.Fatal(err)
		}
		all := make([]byte, sec.Size())
		if _, err := sec.ReadAt(all, 0); err != nil || !bytes.Equal(all, want.Data) {
			t.Errorf("Section(%q) read %v, %v", want.Name, all, err)
		}
	}
	if err := f.ReadInto("w", make([]byte, 3)); err == nil {
		t.Error("ReadInto with a short buffer succeeded")
	}
	var order []string
	for tensor, err := range f.All() {
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, tensor.Name)
	}
	if !reflect.DeepEqual(order, []string{"w", "b"}) { // F32 before U8: descending alignment
		t.Errorf("All() order = %v", order)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := f.Bytes("w"); !errors.Is(err, ErrClosed) {
		t.Errorf("Bytes after Close: %v, want ErrClosed", err)
	}

	// The ReadAt fallback returns copies of the same bytes.
	raw, _ := os.ReadFile(path)
	rf, err := OpenReaderAt(bytes.NewReader(raw), int64(len(raw)), path)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := rf.Bytes("b"); !bytes.Equal(got, []byte{7, 8, 9}) || rf.Mapped() {
		t.Errorf("ReaderAt Bytes(b) = %v", got)
	}

	for _, bad := range []string{filepath.Join(dir, "missing.safetensors"), dir} {
		if _, err := Open(bad); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
	empty := filepath.Join(dir, "empty.safetensors")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Open(empty); !errors.Is(err, ErrInvalidHeader) || !strings.Contains(err.Error(), empty) {
		t.Errorf("Open(empty) = %v, want ErrInvalidHeader naming the file", err)
	}
}

// TestRelease checks that Release leaves a mapped tensor readable and
// unchanged (its pages fault back in from the file), and that it leaves
// the memory given to Parse alone (dropping pages of anonymous memory
// would zero them).
func TestRelease(t *testing.T) {
	big := make([]byte, 4*100000)
	for i := range big {
		big[i] = byte(i*7 + i>>9)
	}
	ts := []Tensor{{Name: "big", DType: F32, Shape: []int{100000}, Data: big}, {Name: "small", DType: F32, Shape: []int{2}, Data: big[:8]}}
	path := filepath.Join(t.TempDir(), "r.safetensors")
	if err := Write(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*File{f, p} {
		for _, c := range ts {
			b, err := r.Bytes(c.Name)
			if err != nil {
				t.Fatal(err)
			}
			r.Release(c.Name)
			again, err := r.Bytes(c.Name)
			if err != nil || !bytes.Equal(b, c.Data) || !bytes.Equal(again, c.Data) {
				t.Fatalf("%s (mapped %v): bytes after Release differ (err %v)", c.Name, r == f, err)
			}
		}
		r.Release("missing")
	}
}
