package gguf

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"unicode/utf8"
)

// Limits Open enforces beyond what the rest of the file can hold.
const (
	// MaxDims is the most dimensions a tensor may have (GGML_MAX_DIMS).
	MaxDims = 4
	// MaxArrayDepth is the deepest nesting of metadata arrays accepted (an
	// array of arrays has depth 2).
	MaxArrayDepth = 16
	// DefaultAlignment is the data alignment when general.alignment is absent.
	DefaultAlignment = 32
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// Minimum encoded sizes, used to bound counts by the bytes left in the file
// before anything they drive is allocated.
const (
	minKVSize     = 8 + 1 + 4 + 1 // key length, one key byte, value type, a one-byte value
	minTensorSize = 8 + 1 + 4 + 4 + 8
	arrayHdrSize  = 4 + 8 // element type, count
)

type header struct {
	version   uint32
	meta      *Metadata
	alignment int64
	dataStart int64
	tensors   []TensorInfo // file order
	index     map[string]int
}

// decoder reads the little-endian header sequentially through an
// io.ReaderAt, buffering small reads; every length is checked against the
// bytes left in the file before it is used.
type decoder struct {
	r      io.ReaderAt
	size   int64
	off    int64  // absolute offset of the next byte
	buf    []byte // buffered bytes starting at bufOff
	bufOff int64
	whole  bool // buf is the whole file (in-memory or mapped)
	chunk  []byte
}

func newDecoder(r io.ReaderAt, size int64, mem []byte) *decoder {
	d := &decoder{r: r, size: size}
	if mem != nil {
		d.buf, d.whole = mem, true
	}
	return d
}

func (d *decoder) left() int64 { return d.size - d.off }

// next returns the next n bytes (n > 0, already known to fit in the file);
// the slice is valid until the following call.
func (d *decoder) next(n int) ([]byte, error) {
	if int64(n) > d.left() {
		return nil, fmt.Errorf("%w: truncated at offset %d: need %d bytes, the file has %d left", ErrHeader, d.off, n, d.left())
	}
	start := d.off - d.bufOff
	if start >= 0 && start+int64(n) <= int64(len(d.buf)) {
		d.off += int64(n)
		return d.buf[start : start+int64(n)], nil
	}
	if d.whole {
		// Cannot happen: the whole file is in buf and n fits.
		return nil, fmt.Errorf("%w: internal error reading at %d", ErrHeader, d.off)
	}
	const window = 64 << 10
	want := max(n, window)
	if int64(want) > d.left() {
		want = int(d.left())
	}
	if cap(d.chunk) < want {
		d.chunk = make([]byte, want)
	}
	d.chunk = d.chunk[:want]
	if err := readAtFull(d.r, d.chunk, d.off); err != nil {
		return nil, fmt.Errorf("reading header at offset %d: %w", d.off, err)
	}
	d.buf, d.bufOff = d.chunk, d.off
	d.off += int64(n)
	return d.buf[:n], nil
}

func (d *decoder) u32() (uint32, error) {
	b, err := d.next(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) u64() (uint64, error) {
	b, err := d.next(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// str reads a length-prefixed string; what names it for errors.
func (d *decoder) str(sentinel error, what string) (string, error) {
	start := d.off
	n, err := d.u64()
	if err != nil {
		return "", err
	}
	if n > uint64(d.left()) || n > math.MaxInt32 && uint64(math.MaxInt) == math.MaxInt32 {
		return "", fmt.Errorf("%w: %s: string length %d at offset %d exceeds the %d bytes left in the file", sentinel, what, n, start, d.left())
	}
	if n == 0 {
		return "", nil
	}
	b, err := d.next(int(n))
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func parseHeader(r io.ReaderAt, size int64, mem []byte) (*header, error) {
	d := newDecoder(r, size, mem)
	if size < 4 {
		return nil, fmt.Errorf("%w: file is %d bytes, too short for the magic %q", ErrHeader, size, Magic)
	}
	m, err := d.next(4)
	if err != nil {
		return nil, err
	}
	if string(m) != Magic {
		return nil, fmt.Errorf("%w: magic is %q, not %q: not a GGUF file", ErrHeader, m, Magic)
	}
	if size < 4+4+8+8 {
		return nil, fmt.Errorf("%w: file is %d bytes, too short for the 24-byte header", ErrHeader, size)
	}
	version, _ := d.u32()
	switch {
	case version == 2 || version == 3:
	case version == 1:
		return nil, fmt.Errorf("%w: version 1 (32-bit counts, 2023) is not supported; reconvert the model", ErrVersion)
	case bits.ReverseBytes32(version) >= 1 && bits.ReverseBytes32(version) <= 3:
		return nil, fmt.Errorf("%w: big-endian file (version %d byte-swapped) is not supported", ErrVersion, bits.ReverseBytes32(version))
	default:
		return nil, fmt.Errorf("%w: version %d (this reader knows 2 and 3)", ErrVersion, version)
	}
	nTensors, _ := d.u64()
	nKV, _ := d.u64()
	rest := uint64(d.left())
	if nKV > rest/minKVSize {
		return nil, fmt.Errorf("%w: %d metadata pairs cannot fit in the %d bytes after the header", ErrHeader, nKV, rest)
	}
	if nTensors > rest/minTensorSize || nKV*minKVSize+nTensors*minTensorSize > rest {
		return nil, fmt.Errorf("%w: %d tensor infos and %d metadata pairs cannot fit in the %d bytes after the header", ErrHeader, nTensors, nKV, rest)
	}
	h := &header{version: version, alignment: DefaultAlignment}

	meta := &Metadata{kvs: make([]KV, 0, nKV), index: make(map[string]int, nKV)}
	for i := uint64(0); i < nKV; i++ {
		key, err := d.str(ErrMetadata, fmt.Sprintf("key of metadata pair %d", i))
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, fmt.Errorf("%w: metadata pair %d has an empty key", ErrMetadata, i)
		}
		if !utf8.ValidString(key) {
			return nil, fmt.Errorf("%w: metadata key %q is not UTF-8", ErrMetadata, key)
		}
		if _, dup := meta.index[key]; dup {
			return nil, fmt.Errorf("%w: metadata key %q appears twice", ErrDuplicate, key)
		}
		vt, err := d.u32()
		if err != nil {
			return nil, fmt.Errorf("metadata key %q: %w", key, err)
		}
		v, err := d.value(ValueType(vt), 0)
		if err != nil {
			return nil, fmt.Errorf("metadata key %q: %w", key, err)
		}
		meta.index[key] = len(meta.kvs)
		meta.kvs = append(meta.kvs, KV{Key: key, Value: v})
	}
	h.meta = meta

	if v, ok := meta.Get("general.alignment"); ok {
		a, isU32 := v.Uint()
		if v.Type() != TypeUint32 || !isU32 {
			return nil, fmt.Errorf("%w: general.alignment is %s, not uint32", ErrMetadata, v.TypeName())
		}
		if a == 0 || a&(a-1) != 0 {
			return nil, fmt.Errorf("%w: general.alignment %d is not a power of two", ErrMetadata, a)
		}
		h.alignment = int64(a)
	}

	h.tensors = make([]TensorInfo, 0, nTensors)
	h.index = make(map[string]int, nTensors)
	for i := uint64(0); i < nTensors; i++ {
		t, err := d.tensorInfo(i)
		if err != nil {
			return nil, err
		}
		if _, dup := h.index[t.Name]; dup {
			return nil, fmt.Errorf("%w: tensor %q appears twice", ErrDuplicate, t.Name)
		}
		h.index[t.Name] = len(h.tensors)
		h.tensors = append(h.tensors, t)
	}

	// The data section starts at the next multiple of the alignment.
	end := d.off
	h.dataStart = end
	if r := end % h.alignment; r != 0 {
		h.dataStart += h.alignment - r
	}
	if err := h.placeTensors(size); err != nil {
		return nil, err
	}
	return h, nil
}

func (d *decoder) tensorInfo(i uint64) (TensorInfo, error) {
	name, err := d.str(ErrTensorInfo, fmt.Sprintf("name of tensor %d", i))
	if err != nil {
		return TensorInfo{}, err
	}
	if name == "" {
		return TensorInfo{}, fmt.Errorf("%w: tensor %d has an empty name", ErrTensorInfo, i)
	}
	if !utf8.ValidString(name) {
		return TensorInfo{}, fmt.Errorf("%w: tensor name %q is not UTF-8", ErrTensorInfo, name)
	}
	wrap := func(err error) error { return fmt.Errorf("tensor %q: %w", name, err) }
	nDims, err := d.u32()
	if err != nil {
		return TensorInfo{}, wrap(err)
	}
	if nDims > MaxDims {
		return TensorInfo{}, fmt.Errorf("%w: tensor %q has %d dimensions, more than %d", ErrTensorInfo, name, nDims, MaxDims)
	}
	t := TensorInfo{Name: name, Dims: make([]int64, nDims)}
	n := int64(1)
	for j := range t.Dims {
		x, err := d.u64()
		if err != nil {
			return TensorInfo{}, wrap(err)
		}
		if x > math.MaxInt64 {
			return TensorInfo{}, fmt.Errorf("%w: tensor %q: dimension %d is %d, beyond int64", ErrTensorInfo, name, j, x)
		}
		t.Dims[j] = int64(x)
		if x != 0 && n > math.MaxInt64/int64(x) {
			return TensorInfo{}, fmt.Errorf("%w: tensor %q: element count of dims %v overflows int64", ErrTensorInfo, name, t.Dims[:j+1])
		}
		n *= int64(x)
	}
	typ, err := d.u32()
	if err != nil {
		return TensorInfo{}, wrap(err)
	}
	t.Type = Type(typ)
	if !t.Type.Valid() {
		return TensorInfo{}, fmt.Errorf("%w: tensor %q has unknown or retired ggml type %d", ErrTensorInfo, name, typ)
	}
	inner := int64(1)
	if nDims > 0 {
		inner = t.Dims[0]
	}
	if bs := int64(t.Type.BlockSize()); inner%bs != 0 {
		return TensorInfo{}, fmt.Errorf("%w: tensor %q: innermost dimension %d is not a multiple of the %v block size %d", ErrTensorInfo, name, inner, t.Type, bs)
	}
	nb, err := t.Type.ByteSize(n)
	if err != nil {
		return TensorInfo{}, fmt.Errorf("%w: tensor %q: %v", ErrTensorInfo, name, err)
	}
	off, err := d.u64()
	if err != nil {
		return TensorInfo{}, wrap(err)
	}
	if off > math.MaxInt64 {
		return TensorInfo{}, fmt.Errorf("%w: tensor %q: offset %d is beyond int64", ErrOffsets, name, off)
	}
	t.Offset = int64(off)
	t.End = nb // the size, until placeTensors knows where the data section starts
	return t, nil
}

// placeTensors checks each tensor's data range (aligned, within the file)
// and that no two overlap, and fills Begin and End.
func (h *header) placeTensors(size int64) error {
	if len(h.tensors) == 0 {
		return nil
	}
	if h.dataStart > size {
		return fmt.Errorf("%w: the data section would start at %d, past the end of the %d-byte file", ErrOffsets, h.dataStart, size)
	}
	room := size - h.dataStart
	for i := range h.tensors {
		t := &h.tensors[i]
		nb := t.End
		if t.Offset%h.alignment != 0 {
			return fmt.Errorf("%w: tensor %q: offset %d is not a multiple of the alignment %d", ErrOffsets, t.Name, t.Offset, h.alignment)
		}
		if t.Offset > room || nb > room-t.Offset {
			return fmt.Errorf("%w: tensor %q: %d bytes at data offset %d run past the end of the file (the data section holds %d bytes)", ErrOffsets, t.Name, nb, t.Offset, room)
		}
		t.Begin = h.dataStart + t.Offset
		t.End = t.Begin + nb
	}
	// Overlap: sort a permutation by offset and compare neighbours.
	order := make([]int, len(h.tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(h.tensors[a].Begin, h.tensors[b].Begin) })
	var prev *TensorInfo
	for _, i := range order {
		t := &h.tensors[i]
		if t.End == t.Begin {
			continue
		}
		if prev != nil && t.Begin < prev.End {
			return fmt.Errorf("%w: tensors %q [%d,%d) and %q [%d,%d) overlap", ErrOffsets, prev.Name, prev.Begin, prev.End, t.Name, t.Begin, t.End)
		}
		prev = t
	}
	return nil
}

// value reads one value of type vt; depth counts enclosing arrays.
func (d *decoder) value(vt ValueType, depth int) (Value, error) {
	v := Value{typ: vt}
	switch vt {
	case TypeUint8, TypeInt8, TypeBool, TypeUint16, TypeInt16, TypeUint32, TypeInt32, TypeFloat32, TypeUint64, TypeInt64, TypeFloat64:
		b, err := d.next(vt.size())
		if err != nil {
			return Value{}, err
		}
		v.bits = scalarBits(vt, b)
		if vt == TypeBool && b[0] > 1 {
			return Value{}, fmt.Errorf("%w: bool byte is %d, not 0 or 1", ErrMetadata, b[0])
		}
	case TypeString:
		s, err := d.str(ErrMetadata, "string value")
		if err != nil {
			return Value{}, err
		}
		v.str = s
	case TypeArray:
		a, err := d.array(depth + 1)
		if err != nil {
			return Value{}, err
		}
		v.arr = a
	default:
		return Value{}, fmt.Errorf("%w: unknown value type %d at offset %d", ErrMetadata, uint32(vt), d.off-4)
	}
	return v, nil
}

func scalarBits(vt ValueType, b []byte) uint64 {
	switch vt {
	case TypeUint8, TypeBool:
		return uint64(b[0])
	case TypeInt8:
		return uint64(int64(int8(b[0])))
	case TypeUint16:
		return uint64(binary.LittleEndian.Uint16(b))
	case TypeInt16:
		return uint64(int64(int16(binary.LittleEndian.Uint16(b))))
	case TypeUint32, TypeFloat32:
		return uint64(binary.LittleEndian.Uint32(b))
	case TypeInt32:
		return uint64(int64(int32(binary.LittleEndian.Uint32(b))))
	}
	return binary.LittleEndian.Uint64(b) // uint64, int64, float64
}

func (d *decoder) array(depth int) (*Array, error) {
	if depth > MaxArrayDepth {
		return nil, fmt.Errorf("%w: arrays nested more than %d deep", ErrMetadata, MaxArrayDepth)
	}
	start := d.off
	et, err := d.u32()
	if err != nil {
		return nil, err
	}
	elem := ValueType(et)
	if !elem.Valid() {
		return nil, fmt.Errorf("%w: array at offset %d has unknown element type %d", ErrMetadata, start, et)
	}
	n64, err := d.u64()
	if err != nil {
		return nil, err
	}
	minSize := int64(elem.size())
	switch elem {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = arrayHdrSize
	}
	if n64 > uint64(d.left()/minSize) || n64 > math.MaxInt/8 {
		return nil, fmt.Errorf("%w: array[%s] at offset %d has %d elements, more than the %d bytes left in the file can hold", ErrMetadata, elem, start, n64, d.left())
	}
	n := int(n64)
	a := &Array{elem: elem, n: n}
	switch elem {
	case TypeString:
		s := make([]string, n)
		for i := range s {
			if s[i], err = d.str(ErrMetadata, fmt.Sprintf("element %d of array[string]", i)); err != nil {
				return nil, err
			}
		}
		a.vals = s
	case TypeArray:
		s := make([]*Array, n)
		for i := range s {
			if s[i], err = d.array(depth + 1); err != nil {
				return nil, fmt.Errorf("element %d of array[array]: %w", i, err)
			}
		}
		a.vals = s
	default:
		b, err := d.bulk(n * elem.size())
		if err != nil {
			return nil, err
		}
		if a.vals, err = decodeScalars(elem, b, n); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// bulk returns the next n bytes, which may be large: a sub-slice of the
// in-memory file, or a fresh read.
func (d *decoder) bulk(n int) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	if d.whole || n <= 64<<10 {
		return d.next(n)
	}
	b := make([]byte, n)
	if err := readAtFull(d.r, b, d.off); err != nil {
		return nil, fmt.Errorf("reading header at offset %d: %w", d.off, err)
	}
	d.off += int64(n)
	return b, nil
}

func decodeScalars(elem ValueType, b []byte, n int) (any, error) {
	le := binary.LittleEndian
	switch elem {
	case TypeUint8:
		return append([]uint8(nil), b...), nil
	case TypeInt8:
		s := make([]int8, n)
		for i := range s {
			s[i] = int8(b[i])
		}
		return s, nil
	case TypeBool:
		s := make([]bool, n)
		for i := range s {
			if b[i] > 1 {
				return nil, fmt.Errorf("%w: element %d of array[bool] is %d, not 0 or 1", ErrMetadata, i, b[i])
			}
			s[i] = b[i] == 1
		}
		return s, nil
	case TypeUint16:
		s := make([]uint16, n)
		for i := range s {
			s[i] = le.Uint16(b[2*i:])
		}
		return s, nil
	case TypeInt16:
		s := make([]int16, n)
		for i := range s {
			s[i] = int16(le.Uint16(b[2*i:]))
		}
		return s, nil
	case TypeUint32:
		s := make([]uint32, n)
		for i := range s {
			s[i] = le.Uint32(b[4*i:])
		}
		return s, nil
	case TypeInt32:
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(le.Uint32(b[4*i:]))
		}
		return s, nil
	case TypeFloat32:
		s := make([]float32, n)
		for i := range s {
			s[i] = math.Float32frombits(le.Uint32(b[4*i:]))
		}
		return s, nil
	case TypeUint64:
		s := make([]uint64, n)
		for i := range s {
			s[i] = le.Uint64(b[8*i:])
		}
		return s, nil
	case TypeInt64:
		s := make([]int64, n)
		for i := range s {
			s[i] = int64(le.Uint64(b[8*i:]))
		}
		return s, nil
	case TypeFloat64:
		s := make([]float64, n)
		for i := range s {
			s[i] = math.Float64frombits(le.Uint64(b[8*i:]))
		}
		return s, nil
	}
	return nil, errors.New("gguf: internal error: not a scalar type")
}
