// Command sttool is a development helper for hf/safetensors:
//
//	go run ./hf/safetensors/internal/sttool seeds DIR  # write the FuzzOpen seed corpus into DIR
//	go run ./hf/safetensors/internal/sttool write DIR  # write Go-made files + manifest.json for tools/stref/gen.py --check-go
package main

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	st "github.com/gotpu/gotpu/hf/safetensors"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: sttool seeds|write DIR")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "seeds":
		err = writeSeeds(os.Args[2])
	case "write":
		err = writeFiles(os.Args[2])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sttool:", err)
		os.Exit(1)
	}
}

// sample returns one small tensor of each dtype with deterministic data.
func sample() []st.Tensor {
	var out []st.Tensor
	for i, dt := range st.DTypes() {
		shape := []int{2, 3}
		if dt.Bits() < 8 {
			shape = []int{2, 4}
		}
		n := dt.Bits() * 2 * shape[1] / 8
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(j*37 + i*11)
			if dt == st.Bool {
				data[j] &= 1
			}
		}
		out = append(out, st.Tensor{Name: "t_" + dt.String(), DType: dt, Shape: shape, Data: data})
	}
	return out
}

func encode(tensors []st.Tensor, meta map[string]string) []byte {
	var buf bytesBuffer
	if _, err := st.Encode(&buf, tensors, meta); err != nil {
		panic(err) // sample data is valid by construction
	}
	return buf
}

type bytesBuffer []byte

func (b *bytesBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }

func rawFile(header string, data []byte) []byte {
	out := make([]byte, 8, 8+len(header)+len(data))
	binary.LittleEndian.PutUint64(out, uint64(len(header)))
	out = append(out, header...)
	return append(out, data...)
}

func writeSeeds(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f32 := make([]byte, 24)
	for i := 0; i < 6; i++ {
		binary.LittleEndian.PutUint32(f32[4*i:], math.Float32bits(float32(i)))
	}
	valid := encode([]st.Tensor{{Name: "attn.0", DType: st.F32, Shape: []int{1, 2, 3}, Data: f32}}, nil)
	seeds := map[string][]byte{
		"valid_f32":        valid,
		"valid_meta":       encode([]st.Tensor{{Name: "w", DType: st.BF16, Shape: []int{2}, Data: []byte{1, 2, 3, 4}}}, map[string]string{"format": "pt", "k": "v"}),
		"empty":            encode(nil, nil),
		"empty_meta":       encode(nil, map[string]string{}),
		"scalar_and_zero":  encode([]st.Tensor{{Name: "s", DType: st.F64, Data: make([]byte, 8)}, {Name: "z", DType: st.F32, Shape: []int{0, 4}}}, nil),
		"truncated":        valid[:len(valid)-3],
		"truncated_header": valid[:20],
		"short":            {1, 2, 3},
		"bad_json":         rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]`, []byte{1}),
		"not_object":       rawFile(`[1,2,3]  `, nil),
		"trailing":         rawFile(`{}x`, nil),
		"overlap":          rawFile(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, []byte{1, 2, 3}),
		"gap":              rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, []byte{1, 2}),
		"reversed":         rawFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[2,1]}}`, []byte{1, 2}),
		"past_end":         rawFile(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, []byte{1, 2}),
		"size_mismatch":    rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,2]}}`, []byte{1, 2}),
		"negative_dim":     rawFile(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`, nil),
		"float_dim":        rawFile(`{"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}`, []byte{1}),
		"overflow_shape":   rawFile(`{"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil),
		"huge_dim":         rawFile(`{"a":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,0]}}`, nil),
		"unknown_dtype":    rawFile(`{"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}`, make([]byte, 16)),
		"duplicate":        rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, []byte{1, 2}),
		"missing_field":    rawFile(`{"a":{"dtype":"U8","data_offsets":[0,1]}}`, []byte{1}),
		"meta_not_string":  rawFile(`{"__metadata__":{"a":1}}`, nil),
		"meta_null":        rawFile(`{"__metadata__":null}`, nil),
		"huge_header_len":  append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "{}"...),
		"f4_odd":           rawFile(`{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}`, []byte{1, 2}),
		"f6_ok":            rawFile(`{"a":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[0,3]}}`, []byte{1, 2, 3}),
		"invalid_utf8":     rawFile("{\"\xff\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", []byte{1}),
		"leading_space":    rawFile(` {"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{7}),
		"extra_fields":     rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[1,{}]}}`, []byte{7}),
		"three_offsets":    rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,1]}}`, []byte{7}),
		"null_entry":       rawFile(`{"a":null}`, nil),
		"escapes":          rawFile(`{"a\"\u00e9\n":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{7}),
	}
	for _, t := range sample() {
		seeds["dtype_"+t.DType.String()] = encode([]st.Tensor{t}, nil)
	}
	seeds["all_dtypes"] = encode(sample(), map[string]string{"format": "pt"})
	for name, data := range seeds {
		content := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("wrote %d seeds to %s\n", len(seeds), dir)
	return nil
}

type manifestTensor struct {
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
	Hex   string `json:"hex"`
}

type manifestFile struct {
	Metadata map[string]string         `json:"metadata"`
	Tensors  map[string]manifestTensor `json:"tensors"`
}

// writeFiles writes files with the Go writer for gen.py --check-go to verify.
func writeFiles(dir string) error {
	all := sample()
	var byteSized []st.Tensor
	for _, t := range all {
		if t.DType.Bits() >= 8 { // the Python checker re-serializes these
			byteSized = append(byteSized, t)
		}
	}
	files := map[string]struct {
		tensors []st.Tensor
		meta    map[string]string
	}{
		"all_dtypes.safetensors": {byteSized, map[string]string{"format": "pt"}},
		"no_meta.safetensors":    {byteSized[:3], nil},
		"empty_meta.safetensors": {[]st.Tensor{{Name: "s", DType: st.F64, Data: make([]byte, 8)}, {Name: "z", DType: st.F32, Shape: []int{0, 2}}}, map[string]string{}},
		"escapes.safetensors": {[]st.Tensor{
			{Name: "q\"b\\s\t\x01\x7f", DType: st.U8, Shape: []int{1}, Data: []byte{1}},
			{Name: "ñ/𝔘/\u2028", DType: st.U8, Shape: []int{1}, Data: []byte{2}},
		}, map[string]string{"k\"\n": "v</script>é"}},
		"multi_meta.safetensors": {byteSized[3:6], map[string]string{"a": "1", "b": "2", "c": "3"}},
		"empty.safetensors":      {nil, nil},
	}
	manifest := map[string]manifestFile{}
	for name, f := range files {
		if err := st.Write(filepath.Join(dir, name), f.tensors, f.meta); err != nil {
			return err
		}
		m := manifestFile{Metadata: f.meta, Tensors: map[string]manifestTensor{}}
		for _, t := range f.tensors {
			shape := t.Shape
			if shape == nil {
				shape = []int{}
			}
			m.Tensors[t.Name] = manifestTensor{DType: t.DType.String(), Shape: shape, Hex: hex.EncodeToString(t.Data)}
		}
		manifest[name] = m
	}
	b, err := json.MarshalIndent(manifest, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644)
}
