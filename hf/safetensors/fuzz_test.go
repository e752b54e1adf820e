package safetensors

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// FuzzOpen feeds arbitrary bytes to the parser. Invariants: it never panics;
// every rejection is a format error (the input is in memory, so no I/O can
// fail); every accepted file has tensors that tile its data section, and
// re-encoding it and parsing again gives the same tensors and metadata.
// Seeds live in testdata/fuzz/FuzzOpen (go run ./hf/safetensors/internal/sttool seeds ...).
func FuzzOpen(f *testing.F) {
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, []byte{1, 2}))
	f.Add(rawFile(`{"__metadata__":{"k":"v"}}`, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		sf, err := Parse(data)
		sf2, err2 := OpenReaderAt(bytes.NewReader(data), int64(len(data)), "fuzz")
		if (err == nil) != (err2 == nil) {
			t.Fatalf("Parse error %v but OpenReaderAt error %v", err, err2)
		}
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("rejection is not a format error: %v", err)
			}
			return
		}
		infos := sf.Tensors()
		pos := sf.DataOffset()
		var tensors []Tensor
		for _, info := range infos {
			if info.Begin != pos || info.End < info.Begin || info.End > int64(len(data)) {
				t.Fatalf("tensor %q range [%d,%d) does not continue at %d", info.Name, info.Begin, info.End, pos)
			}
			pos = info.End
			b, err := sf.Bytes(info.Name)
			if err != nil {
				t.Fatal(err)
			}
			b2, err := sf2.Bytes(info.Name)
			if err != nil || !bytes.Equal(b, b2) {
				t.Fatalf("ReaderAt bytes differ for %q: %v", info.Name, err)
			}
			if int64(len(b)) != info.NumBytes() || info.NumBytes()*8 != info.NumElements()*int64(info.DType.Bits()) {
				t.Fatalf("tensor %q: %d bytes for %d elements of %v", info.Name, len(b), info.NumElements(), info.DType)
			}
			tensors = append(tensors, Tensor{Name: info.Name, DType: info.DType, Shape: info.Shape, Data: b})
		}
		if pos != int64(len(data)) {
			t.Fatalf("tensors end at %d, file at %d", pos, len(data))
		}
		var buf bytes.Buffer
		if _, err := Encode(&buf, tensors, sf.Metadata()); err != nil {
			t.Fatalf("re-encoding an accepted file: %v", err)
		}
		again, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("parsing our own encoding: %v", err)
		}
		if !reflect.DeepEqual(again.Metadata(), sf.Metadata()) || again.Len() != sf.Len() {
			t.Fatalf("round trip changed metadata or count")
		}
		for _, want := range tensors {
			got, err := again.Info(want.Name)
			if err != nil || got.DType != want.DType || !reflect.DeepEqual(got.Shape, want.Shape) {
				t.Fatalf("round trip changed %q: %+v %v", want.Name, got, err)
			}
			b, _ := again.Bytes(want.Name)
			if !bytes.Equal(b, want.Data) {
				t.Fatalf("round trip changed the data of %q", want.Name)
			}
		}
		// Encoding is canonical: encoding the re-parsed file is a fixed point.
		var buf2 bytes.Buffer
		if _, err := Encode(&buf2, tensors, again.Metadata()); err != nil || !bytes.Equal(buf.Bytes(), buf2.Bytes()) {
			t.Fatalf("encoding is not deterministic: %v", err)
		}
	})
}
