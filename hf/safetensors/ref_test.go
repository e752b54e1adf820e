package safetensors

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// refExpected mirrors testdata/ref/expected.json, written by tools/stref/gen.py
// with the Python safetensors library (the Rust reference implementation).
type refExpected map[string]struct {
	Metadata map[string]string `json:"metadata"`
	Tensors  map[string]struct {
		DType  string `json:"dtype"`
		Shape  []int  `json:"shape"`
		Hex    string `json:"hex"`
		Values []any  `json:"values"` // numbers, or "nan" / "inf" / "-inf"
	} `json:"tensors"`
}

func TestReferenceFiles(t *testing.T) {
	raw, err := os.ReadFile("testdata/ref/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var want refExpected
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) < 6 {
		t.Fatalf("expected.json lists only %d files", len(want))
	}
	for file, exp := range want {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join("testdata/ref", file)
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if got := f.Metadata(); !reflect.DeepEqual(got, exp.Metadata) {
				t.Errorf("Metadata = %#v, want %#v", got, exp.Metadata)
			}
			if f.Len() != len(exp.Tensors) {
				t.Errorf("%d tensors, want %d", f.Len(), len(exp.Tensors))
			}
			var tensors []Tensor
			for name, et := range exp.Tensors {
				info, err := f.Info(name)
				if err != nil {
					t.Errorf("Info(%q): %v", name, err)
					continue
				}
				if info.DType.String() != et.DType || !reflect.DeepEqual(info.Shape, et.Shape) {
					t.Errorf("%q: %v %v, want %s %v", name, info.DType, info.Shape, et.DType, et.Shape)
				}
				data, err := f.Bytes(name)
				if err != nil || hex.EncodeToString(data) != et.Hex {
					t.Errorf("%q: bytes %x (%v), want %s", name, data, err, et.Hex)
				}
				tensors = append(tensors, Tensor{Name: name, DType: info.DType, Shape: info.Shape, Data: data})
				if et.Values == nil {
					continue
				}
				vals, err := DecodeFloat64(info.DType, data)
				if err != nil {
					t.Errorf("%q: DecodeFloat64: %v", name, err)
					continue
				}
				if len(vals) != len(et.Values) {
					t.Errorf("%q: %d values, want %d", name, len(vals), len(et.Values))
					continue
				}
				for i, v := range et.Values {
					if !sameValue(vals[i], v) {
						t.Errorf("%q[%d] (byte %#x) = %v, want %v", name, i, data[i*info.DType.Size()], vals[i], v)
					}
				}
			}
			// The reference writer's output is deterministic when metadata has
			// at most one key (it iterates a hash map); ours must match it byte for byte.
			if len(exp.Metadata) <= 1 {
				var buf bytes.Buffer
				if _, err := Encode(&buf, tensors, exp.Metadata); err != nil {
					t.Fatal(err)
				}
				orig, _ := os.ReadFile(path)
				if !bytes.Equal(buf.Bytes(), orig) {
					t.Errorf("Encode differs from the reference file:\n got %q\nwant %q", buf.Bytes()[:min(buf.Len(), 300)], orig[:min(len(orig), 300)])
				}
			}
		})
	}
}

func sameValue(got float64, want any) bool {
	switch w := want.(type) {
	case float64:
		return got == w
	case string:
		switch w {
		case "nan":
			return math.IsNaN(got)
		case "inf":
			return math.IsInf(got, 1)
		case "-inf":
			return math.IsInf(got, -1)
		}
	}
	return false
}
