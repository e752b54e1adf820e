package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// This file builds GGUF files for the tests: an encoder for the format, and
// constructors for metadata values.

func vU8(x uint8) Value   { return Value{typ: TypeUint8, bits: uint64(x)} }
func vI8(x int8) Value    { return Value{typ: TypeInt8, bits: uint64(int64(x))} }
func vU16(x uint16) Value { return Value{typ: TypeUint16, bits: uint64(x)} }
func vI16(x int16) Value  { return Value{typ: TypeInt16, bits: uint64(int64(x))} }
func vU32(x uint32) Value { return Value{typ: TypeUint32, bits: uint64(x)} }
func vI32(x int32) Value  { return Value{typ: TypeInt32, bits: uint64(int64(x))} }
func vU64(x uint64) Value { return Value{typ: TypeUint64, bits: x} }
func vI64(x int64) Value  { return Value{typ: TypeInt64, bits: uint64(x)} }
func vF32(x float32) Value {
	return Value{typ: TypeFloat32, bits: uint64(math.Float32bits(x))}
}
func vF64(x float64) Value { return Value{typ: TypeFloat64, bits: math.Float64bits(x)} }
func vBool(x bool) Value {
	if x {
		return Value{typ: TypeBool, bits: 1}
	}
	return Value{typ: TypeBool}
}
func vStr(s string) Value { return Value{typ: TypeString, str: s} }

// vArr makes an array value from a typed slice ([]uint8 ... []float64,
// []bool, []string, []*Array).
func vArr(vals any) Value { return Value{typ: TypeArray, arr: mkArr(vals)} }

func mkArr(vals any) *Array {
	a := &Array{vals: vals}
	switch s := vals.(type) {
	case []uint8:
		a.elem, a.n = TypeUint8, len(s)
	case []int8:
		a.elem, a.n = TypeInt8, len(s)
	case []uint16:
		a.elem, a.n = TypeUint16, len(s)
	case []int16:
		a.elem, a.n = TypeInt16, len(s)
	case []uint32:
		a.elem, a.n = TypeUint32, len(s)
	case []int32:
		a.elem, a.n = TypeInt32, len(s)
	case []float32:
		a.elem, a.n = TypeFloat32, len(s)
	case []bool:
		a.elem, a.n = TypeBool, len(s)
	case []string:
		a.elem, a.n = TypeString, len(s)
	case []*Array:
		a.elem, a.n = TypeArray, len(s)
	case []uint64:
		a.elem, a.n = TypeUint64, len(s)
	case []int64:
		a.elem, a.n = TypeInt64, len(s)
	case []float64:
		a.elem, a.n = TypeFloat64, len(s)
	default:
		panic("mkArr: unsupported slice type")
	}
	return a
}

// enc writes little-endian GGUF primitives.
type enc struct{ bytes.Buffer }

func (e *enc) u32(x uint32) { binary.Write(&e.Buffer, binary.LittleEndian, x) }
func (e *enc) u64(x uint64) { binary.Write(&e.Buffer, binary.LittleEndian, x) }
func (e *enc) str(s string) { e.u64(uint64(len(s))); e.WriteString(s) }

func (e *enc) value(v Value) {
	e.u32(uint32(v.typ))
	e.payload(v)
}

func (e *enc) payload(v Value) {
	switch v.typ {
	case TypeString:
		e.str(v.str)
	case TypeArray:
		e.array(v.arr)
	default:
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], v.bits)
		e.Write(b[:v.typ.size()])
	}
}

func (e *enc) array(a *Array) {
	e.u32(uint32(a.elem))
	e.u64(uint64(a.n))
	for i := range a.n {
		e.payload(a.Index(i))
	}
}

// tTensor is a tensor to encode; data must be its exact encoding.
type tTensor struct {
	name string
	typ  Type
	dims []int64
	data []byte
}

// tFile is a file to encode: header, metadata, tensor infos, then each
// tensor's data at the next multiple of the alignment (general.alignment
// when kvs hold a uint32 one, else 32).
type tFile struct {
	version uint32 // 0 means 3
	kvs     []KV
	tensors []tTensor
}

func (f tFile) alignment() int64 {
	for _, kv := range f.kvs {
		if kv.Key == "general.alignment" && kv.Value.typ == TypeUint32 && kv.Value.bits != 0 {
			return int64(kv.Value.bits)
		}
	}
	return DefaultAlignment
}

func (f tFile) encode() []byte {
	var e enc
	e.WriteString(Magic)
	v := f.version
	if v == 0 {
		v = 3
	}
	e.u32(v)
	e.u64(uint64(len(f.tensors)))
	e.u64(uint64(len(f.kvs)))
	for _, kv := range f.kvs {
		e.str(kv.Key)
		e.value(kv.Value)
	}
	align := f.alignment()
	pad := func(n int64) int64 { return (n + align - 1) / align * align }
	off := int64(0)
	for _, t := range f.tensors {
		e.str(t.name)
		e.u32(uint32(len(t.dims)))
		for _, d := range t.dims {
			e.u64(uint64(d))
		}
		e.u32(uint32(t.typ))
		e.u64(uint64(off))
		off = pad(off + int64(len(t.data)))
	}
	if len(f.tensors) == 0 {
		return e.Bytes()
	}
	for int64(e.Len())%align != 0 {
		e.WriteByte(0)
	}
	start := int64(e.Len())
	for _, t := range f.tensors {
		for int64(e.Len())-start != pad(int64(e.Len())-start) {
			e.WriteByte(0)
		}
		e.Write(t.data)
	}
	return e.Bytes()
}

// reencode encodes an opened file again: same version, metadata and tensors
// (in file order, at fresh offsets).
func reencode(t testing.TB, f *File) []byte {
	spec := tFile{version: f.Version(), kvs: f.Metadata().All()}
	for _, ti := range f.Tensors() {
		b, err := f.Bytes(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		spec.tensors = append(spec.tensors, tTensor{ti.Name, ti.Type, ti.Dims, b})
	}
	return spec.encode()
}

// f32Bytes encodes float32 values.
func f32Bytes(vals ...float32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// sampleFile is a small valid file using every value type, nested arrays,
// and tensors of several types and ranks.
func sampleFile() tFile {
	q8 := make([]byte, 2*34) // two Q8_0 blocks: d = 1.0 (0x3c00), q = i-16
	for b := range 2 {
		binary.LittleEndian.PutUint16(q8[b*34:], 0x3c00)
		for i := range 32 {
			q8[b*34+2+i] = byte(int8(i - 16))
		}
	}
	return tFile{
		kvs: []KV{
			{"general.architecture", vStr("llama")},
			{"general.name", vStr("sample ✓")},
			{"llama.block_count", vU32(2)},
			{"llama.context_length", vU64(4096)},
			{"llama.rope.freq_base", vF32(10000)},
			{"llama.attention.layer_norm_rms_epsilon", vF32(1e-5)},
			{"test.u8", vU8(255)}, {"test.i8", vI8(-128)}, {"test.u16", vU16(65535)}, {"test.i16", vI16(-32768)},
			{"test.i32", vI32(-7)}, {"test.i64", vI64(math.MinInt64)}, {"test.u64big", vU64(math.MaxUint64)},
			{"test.f64", vF64(math.Pi)}, {"test.bool", vBool(true)}, {"test.empty", vStr("")},
			{"tokenizer.ggml.tokens", vArr([]string{"<unk>", "<s>", "</s>", "hello", "▁world"})},
			{"tokenizer.ggml.scores", vArr([]float32{0, 0, 0, -1.5, -2.25})},
			{"tokenizer.ggml.token_type", vArr([]int32{2, 3, 3, 1, 1})},
			{"test.arr_u8", vArr([]uint8{1, 2})}, {"test.arr_i8", vArr([]int8{-1})}, {"test.arr_u16", vArr([]uint16{9})},
			{"test.arr_i16", vArr([]int16{-9})}, {"test.arr_u32", vArr([]uint32{1 << 31})}, {"test.arr_u64", vArr([]uint64{1 << 63})},
			{"test.arr_i64", vArr([]int64{-1, 1})}, {"test.arr_f64", vArr([]float64{0.5})}, {"test.arr_bool", vArr([]bool{true, false})},
			{"test.arr_empty", vArr([]int32{})},
			{"test.nested", vArr([]*Array{mkArr([]int32{1, 2, 3}), mkArr([]int32{}), mkArr([]int32{4})})},
			{"test.nested_str", vArr([]*Array{mkArr([]*Array{mkArr([]string{"a", "b"})}), mkArr([]*Array{})})},
		},
		tensors: []tTensor{
			{"token_embd.weight", Q8_0, []int64{32, 2}, q8},
			{"output_norm.weight", F32, []int64{3}, f32Bytes(1, 2, 3)},
			{"blk.0.attn_q.weight", F32, []int64{3, 2}, f32Bytes(0, 1, 2, 10, 11, 12)},
			{"scalar", F32, nil, f32Bytes(7)},
			{"blk.0.f16", F16, []int64{2, 1, 1, 2}, []byte{0x00, 0x3c, 0x00, 0x40, 0x00, 0xc0, 0x00, 0x7c}},
			{"empty", F32, []int64{0, 5}, nil},
		},
	}
}
