package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Uint32Value returns a uint32 metadata value (for Write).
func Uint32Value(x uint32) Value { return Value{typ: TypeUint32, bits: uint64(x)} }

// StringValue returns a string metadata value (for Write).
func StringValue(s string) Value { return Value{typ: TypeString, str: s} }

// WriteTensor is one tensor for Write: its name, ggml type, dimensions in
// GGUF order (ne[0] first) and a function returning its data, exactly
// Type.ByteSize(elements) bytes, called once, in file order.
type WriteTensor struct {
	Name string
	Type Type
	Dims []int64
	Data func() ([]byte, error)
}

// Write writes a GGUF version 3 file to w: the metadata kvs in order, the
// tensor infos, then each tensor's data at the file's alignment (the
// general.alignment value when kvs hold one, else DefaultAlignment),
// zero-padded as llama.cpp's writer does. Tensor data is asked for one
// tensor at a time, so a file larger than memory can be written.
func Write(w io.Writer, kvs []KV, tensors []WriteTensor) error {
	align := int64(DefaultAlignment)
	for _, kv := range kvs {
		if kv.Key == "general.alignment" {
			a, ok := kv.Value.Uint()
			if !ok || a == 0 || a&(a-1) != 0 || a > 1<<20 {
				return fmt.Errorf("gguf: write: general.alignment %s is not a power of two", describe(kv.Value))
			}
			align = int64(a)
		}
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	e := &encoder{w: bw}
	e.bytes([]byte(Magic))
	e.u32(3)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.typ))
		if err := e.value(kv.Value); err != nil {
			return fmt.Errorf("gguf: write: key %s: %w", kv.Key, err)
		}
	}
	sizes := make([]int64, len(tensors))
	var off int64
	for i, t := range tensors {
		if !t.Type.Valid() {
			return fmt.Errorf("gguf: write: tensor %s: invalid type %v", t.Name, t.Type)
		}
		if len(t.Dims) > MaxDims {
			return fmt.Errorf("gguf: write: tensor %s has %d dimensions (at most %d)", t.Name, len(t.Dims), MaxDims)
		}
		n := int64(1)
		for _, d := range t.Dims {
			n *= d
		}
		size, err := t.Type.ByteSize(n)
		if err != nil {
			return fmt.Errorf("gguf: write: tensor %s: %w", t.Name, err)
		}
		sizes[i] = size
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(uint64(d))
		}
		e.u32(uint32(t.Type))
		e.u64(uint64(off))
		off += (size + align - 1) / align * align
	}
	e.pad(align)
	for i, t := range tensors {
		data, err := t.Data()
		if err != nil {
			return fmt.Errorf("gguf: write: tensor %s: %w", t.Name, err)
		}
		if int64(len(data)) != sizes[i] {
			return fmt.Errorf("gguf: write: tensor %s: %d bytes of data, %v %v takes %d", t.Name, len(data), t.Type, t.Dims, sizes[i])
		}
		e.bytes(data)
		e.pad(align)
	}
	if e.err != nil {
		return fmt.Errorf("gguf: write: %w", e.err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("gguf: write: %w", err)
	}
	return nil
}

// encoder writes little-endian GGUF fields and remembers the first error
// and the number of bytes written.
type encoder struct {
	w   io.Writer
	n   int64
	err error
	tmp [8]byte
}

func (e *encoder) bytes(b []byte) {
	if e.err != nil {
		return
	}
	var n int
	n, e.err = e.w.Write(b)
	e.n += int64(n)
}

func (e *encoder) u32(x uint32) {
	binary.LittleEndian.PutUint32(e.tmp[:4], x)
	e.bytes(e.tmp[:4])
}

func (e *encoder) u64(x uint64) {
	binary.LittleEndian.PutUint64(e.tmp[:8], x)
	e.bytes(e.tmp[:8])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.bytes([]byte(s))
}

func (e *encoder) pad(align int64) {
	if r := e.n % align; r != 0 {
		e.bytes(make([]byte, align-r))
	}
}

// scalar writes the low size bytes of a scalar's bits.
func (e *encoder) scalar(t ValueType, bits uint64) {
	binary.LittleEndian.PutUint64(e.tmp[:8], bits)
	e.bytes(e.tmp[:t.size()])
}

func (e *encoder) value(v Value) error {
	switch v.typ {
	case TypeString:
		e.str(v.str)
	case TypeArray:
		if v.arr == nil {
			return fmt.Errorf("array value without elements")
		}
		return e.array(v.arr)
	default:
		if !v.typ.Valid() {
			return fmt.Errorf("invalid value type %d", v.typ)
		}
		e.scalar(v.typ, v.bits)
	}
	return nil
}

func (e *encoder) array(a *Array) error {
	e.u32(uint32(a.elem))
	e.u64(uint64(a.n))
	switch vs := a.vals.(type) {
	case []uint8:
		e.bytes(vs)
	case []int8:
		for _, x := range vs {
			e.scalar(TypeInt8, uint64(x))
		}
	case []uint16:
		for _, x := range vs {
			e.scalar(TypeUint16, uint64(x))
		}
	case []int16:
		for _, x := range vs {
			e.scalar(TypeInt16, uint64(x))
		}
	case []uint32:
		for _, x := range vs {
			e.u32(x)
		}
	case []int32:
		for _, x := range vs {
			e.u32(uint32(x))
		}
	case []float32:
		for _, x := range vs {
			e.u32(math.Float32bits(x))
		}
	case []bool:
		for _, x := range vs {
			b := uint64(0)
			if x {
				b = 1
			}
			e.scalar(TypeBool, b)
		}
	case []string:
		for _, s := range vs {
			e.str(s)
		}
	case []*Array:
		for _, s := range vs {
			if err := e.array(s); err != nil {
				return err
			}
		}
	case []uint64:
		for _, x := range vs {
			e.u64(x)
		}
	case []int64:
		for _, x := range vs {
			e.u64(uint64(x))
		}
	case []float64:
		for _, x := range vs {
			e.u64(math.Float64bits(x))
		}
	default:
		return fmt.Errorf("array of %T", a.vals)
	}
	return nil
}
