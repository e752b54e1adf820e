package ir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Binary graph format (version 1). All integers are varints
// (encoding/binary); strings and byte strings are a length then the bytes;
// floats are their IEEE-754 bits as 8 little-endian bytes.
//
//	magic "gotpuIR" version(1)
//	defaultFloat(dtype)
//	params: count, then per param: id meta
//	nodes: count, then per node:
//	  0 (constant): outs(count, id meta...) data(bytes)
//	  1 (op):       name(string) attrs(count, key(string) attr...)
//	                in(count, ref...) outs(count, id meta...)
//	outputs: count, ref...
//	meta = dtype(uvarint) rank(uvarint) dims(uvarint...) wrapped(0|1)
//	ref  = 0 for an absent input, else 1 + the value's position in
//	       definition order (parameters, then node outputs)
//	attr = tag value: 0 nil, 1 int, 2 int64, 3 float64, 4 bool, 5 string,
//	       6 dtype, 7 []int, 8 []float64
//
// Value IDs are stored so that String round-trips exactly.

const (
	serialMagic   = "gotpuIR"
	serialVersion = 1
)

// ErrSerial is wrapped by UnmarshalGraph's errors for malformed input and by
// MarshalBinary's for graphs it cannot encode.
var ErrSerial = errors.New("ir: bad serialized graph")

// Attribute tags.
const (
	tagNil byte = iota
	tagInt
	tagInt64
	tagFloat
	tagBool
	tagString
	tagDType
	tagInts
	tagFloats
)

// Decoding limits: a graph larger than these is certainly corrupt.
const (
	maxSerialRank = 64
	maxSerialDim  = 1 << 40
)

type encoder struct{ b []byte }

func (e *encoder) uvarint(x uint64) { e.b = binary.AppendUvarint(e.b, x) }
func (e *encoder) varint(x int64)   { e.b = binary.AppendVarint(e.b, x) }
func (e *encoder) bytes(p []byte)   { e.uvarint(uint64(len(p))); e.b = append(e.b, p...) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) f64(f float64)    { e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(f)) }
func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) meta(m op.Meta) {
	e.uvarint(uint64(m.DType))
	e.uvarint(uint64(len(m.Shape)))
	for _, d := range m.Shape {
		e.uvarint(uint64(d))
	}
	e.bool(m.Wrapped)
}

func (e *encoder) attr(v any) error {
	switch x := v.(type) {
	case nil:
		e.b = append(e.b, tagNil)
	case int:
		e.b = append(e.b, tagInt)
		e.varint(int64(x))
	case int64:
		e.b = append(e.b, tagInt64)
		e.varint(x)
	case float64:
		e.b = append(e.b, tagFloat)
		e.f64(x)
	case bool:
		e.b = append(e.b, tagBool)
		e.bool(x)
	case string:
		e.b = append(e.b, tagString)
		e.str(x)
	case dtype.DType:
		e.b = append(e.b, tagDType)
		e.uvarint(uint64(x))
	case []int:
		e.b = append(e.b, tagInts)
		e.uvarint(uint64(len(x)))
		for _, d := range x {
			e.varint(int64(d))
		}
	case []float64:
		e.b = append(e.b, tagFloats)
		e.uvarint(uint64(len(x)))
		for _, f := range x {
			e.f64(f)
		}
	default:
		return fmt.Errorf("attribute of type %T is not a normalized attribute", v)
	}
	return nil
}

// MarshalBinary encodes g (parameters, nodes with their op names and typed
// attributes, constant payloads, outputs, value IDs and DefaultFloat) in a
// versioned binary form that UnmarshalGraph decodes; the decoded graph has
// the same String and Fingerprint. Graphs with nil parameters or nodes,
// values used before their definition, or attributes of a type that is not
// a normalized attribute type are an error wrapping ErrSerial.
func (g *Graph) MarshalBinary() ([]byte, error) {
	e := &encoder{b: make([]byte, 0, 256)}
	e.b = append(e.b, serialMagic...)
	e.uvarint(serialVersion)
	e.uvarint(uint64(g.DefaultFloat))
	pos := make(map[*Value]uint64, g.NumValues())
	next := uint64(1)
	e.uvarint(uint64(len(g.Params)))
	for i, p := range g.Params {
		if p == nil {
			return nil, fmt.Errorf("%w: parameter %d is nil", ErrSerial, i)
		}
		e.varint(int64(p.ID))
		e.meta(p.Meta)
		pos[p] = next
		next++
	}
	ref := func(v *Value) error {
		if v == nil {
			e.uvarint(0)
			return nil
		}
		r, ok := pos[v]
		if !ok {
			return fmt.Errorf("value %s is not defined before its use", valueName(v))
		}
		e.uvarint(r)
		return nil
	}
	outs := func(vs []*Value) error {
		e.uvarint(uint64(len(vs)))
		for k, o := range vs {
			if o == nil {
				return fmt.Errorf("output %d is nil", k)
			}
			e.varint(int64(o.ID))
			e.meta(o.Meta)
		}
		return nil
	}
	e.uvarint(uint64(len(g.Nodes)))
	for j, n := range g.Nodes {
		if n == nil {
			return nil, fmt.Errorf("%w: node %d is nil", ErrSerial, j)
		}
		if n.IsConst() {
			e.b = append(e.b, 0)
			if err := outs(n.Out); err != nil {
				return nil, fmt.Errorf("%w: node %d (constant): %v", ErrSerial, j, err)
			}
			e.bytes(n.Data)
		} else {
			e.b = append(e.b, 1)
			e.str(n.Op.Name)
			keys := sortedKeys(n.Attrs)
			e.uvarint(uint64(len(keys)))
			for _, k := range keys {
				e.str(k)
				if err := e.attr(n.Attrs[k]); err != nil {
					return nil, fmt.Errorf("%w: node %d (%s): attribute %q: %v", ErrSerial, j, n.Op.Name, k, err)
				}
			}
			e.uvarint(uint64(len(n.In)))
			for _, v := range n.In {
				if err := ref(v); err != nil {
					return nil, fmt.Errorf("%w: node %d (%s): %v", ErrSerial, j, n.Op.Name, err)
				}
			}
			if err := outs(n.Out); err != nil {
				return nil, fmt.Errorf("%w: node %d (%s): %v", ErrSerial, j, n.Op.Name, err)
			}
		}
		for _, o := range n.Out {
			pos[o] = next
			next++
		}
	}
	e.uvarint(uint64(len(g.Outputs)))
	for k, v := range g.Outputs {
		if v == nil {
			return nil, fmt.Errorf("%w: graph output %d is nil", ErrSerial, k)
		}
		if err := ref(v); err != nil {
			return nil, fmt.Errorf("%w: graph output %d: %v", ErrSerial, k, err)
		}
	}
	return e.b, nil
}

type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: at byte %d: %s", ErrSerial, d.off, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("truncated or overlong varint")
		return 0
	}
	d.off += n
	return x
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.fail("truncated or overlong varint")
		return 0
	}
	d.off += n
	return x
}

// count reads a length whose entries take at least minSize bytes each, so
// that a corrupt length cannot make the decoder allocate more than the
// input could hold.
func (d *decoder) count(what string, minSize int) int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)-d.off)/uint64(max(minSize, 1)) {
		d.fail("%s count %d exceeds the remaining %d bytes", what, n, len(d.b)-d.off)
		return 0
	}
	return int(n)
}

func (d *decoder) byte1() byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail("truncated")
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

func (d *decoder) raw(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b)-d.off {
		d.fail("truncated: want %d bytes, have %d", n, len(d.b)-d.off)
		return nil
	}
	p := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return p
}

func (d *decoder) bytes() []byte {
	n := d.count("byte string", 1)
	p := d.raw(n)
	if p == nil {
		return nil
	}
	return append([]byte{}, p...)
}

func (d *decoder) str() string { return string(d.raw(d.count("string", 1))) }

func (d *decoder) f64() float64 {
	p := d.raw(8)
	if p == nil {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(p))
}

func (d *decoder) bool() bool {
	switch c := d.byte1(); c {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail("bad bool byte %d", c)
		return false
	}
}

func (d *decoder) dtype() dtype.DType {
	x := d.uvarint()
	if d.err != nil {
		return dtype.Invalid
	}
	dt := dtype.DType(x)
	if x > 255 || !dt.Valid() {
		d.fail("bad dtype %d", x)
		return dtype.Invalid
	}
	return dt
}

func (d *decoder) meta() op.Meta {
	var m op.Meta
	m.DType = d.dtype()
	rank := d.uvarint()
	if d.err != nil {
		return m
	}
	if rank > maxSerialRank {
		d.fail("rank %d too large", rank)
		return m
	}
	m.Shape = make([]int, rank)
	numel := uint64(1)
	for i := range m.Shape {
		x := d.uvarint()
		if x > maxSerialDim {
			d.fail("dimension %d too large", x)
			return m
		}
		if x != 0 && numel > maxSerialDim/x {
			numel = maxSerialDim + 1
		} else {
			numel *= x
		}
		m.Shape[i] = int(x)
	}
	if numel > maxSerialDim {
		d.fail("shape %v has too many elements", m.Shape)
	}
	m.Wrapped = d.bool()
	return m
}

func (d *decoder) attr() any {
	switch tag := d.byte1(); tag {
	case tagNil:
		return nil
	case tagInt:
		return int(d.varint())
	case tagInt64:
		return d.varint()
	case tagFloat:
		return d.f64()
	case tagBool:
		return d.bool()
	case tagString:
		return d.str()
	case tagDType:
		return d.dtype()
	case tagInts:
		n := d.count("int list", 1)
		out := make([]int, n)
		for i := range out {
			out[i] = int(d.varint())
		}
		return out
	case tagFloats:
		n := d.count("float list", 8)
		out := make([]float64, n)
		for i := range out {
			out[i] = d.f64()
		}
		return out
	default:
		d.fail("unknown attribute tag %d", tag)
		return nil
	}
}

// UnmarshalGraph decodes a graph written by MarshalBinary. Truncated,
// corrupt or foreign input, an unknown op name, a wrong attribute type, a
// constant whose payload does not match its shape, or a reference to a
// value not yet defined is an error wrapping ErrSerial (an unknown op also
// wraps ErrUnknownOp); it never panics. The graph is checked structurally,
// not with Verify (functional in-place nodes, which Verify rejects, decode).
func UnmarshalGraph(data []byte) (*Graph, error) {
	if len(data) < len(serialMagic) || string(data[:len(serialMagic)]) != serialMagic {
		return nil, fmt.Errorf("%w: not a serialized gotpu graph (bad magic)", ErrSerial)
	}
	d := &decoder{b: data, off: len(serialMagic)}
	if v := d.uvarint(); d.err == nil && v != serialVersion {
		return nil, fmt.Errorf("%w: format version %d, this build reads version %d", ErrSerial, v, serialVersion)
	}
	g := New()
	df := d.uvarint()
	if d.err == nil {
		dt := dtype.DType(df)
		if df > 255 || (dt != dtype.Invalid && !dt.Valid()) {
			d.fail("bad default float dtype %d", df)
		}
		g.DefaultFloat = dt
	}
	var vals []*Value
	maxID := -1
	ids := make(map[int]bool)
	newVal := func(id int64, m op.Meta, def *Node, idx int) *Value {
		if id < 0 || id > math.MaxInt32 {
			d.fail("bad value id %d", id)
			return nil
		}
		if ids[int(id)] {
			d.fail("value id %d defined twice", id)
			return nil
		}
		ids[int(id)] = true
		v := &Value{ID: int(id), Meta: m, Def: def, Index: idx, g: g}
		maxID = max(maxID, int(id))
		vals = append(vals, v)
		return v
	}
	ref := func() *Value {
		r := d.uvarint()
		if d.err != nil || r == 0 {
			return nil
		}
		if r > uint64(len(vals)) {
			d.fail("reference to value #%d, only %d defined so far", r, len(vals))
			return nil
		}
		return vals[r-1]
	}
	np := d.count("parameter", 4)
	for i := 0; i < np && d.err == nil; i++ {
		id := d.varint()
		m := d.meta()
		if v := newVal(id, m, nil, i); v != nil {
			g.Params = append(g.Params, v)
		}
	}
	readOuts := func(n *Node) {
		k := d.count("output", 4)
		for i := 0; i < k && d.err == nil; i++ {
			id := d.varint()
			m := d.meta()
			if v := newVal(id, m, n, i); v != nil {
				n.Out = append(n.Out, v)
			}
		}
	}
	nn := d.count("node", 3)
	for j := 0; j < nn && d.err == nil; j++ {
		n := &Node{}
		switch kind := d.byte1(); kind {
		case 0:
			readOuts(n)
			n.Data = d.bytes()
			if d.err == nil {
				if len(n.Out) != 1 {
					d.fail("node %d: constant with %d outputs", j, len(n.Out))
				} else if m := n.Out[0].Meta; len(n.Data) != op.Numel(m.Shape)*m.DType.Size() {
					d.fail("node %d: constant %s holds %d bytes", j, metaString(m), len(n.Data))
				}
			}
		case 1:
			name := d.str()
			if d.err != nil {
				break
			}
			def, ok := op.Lookup(name)
			if !ok {
				return nil, fmt.Errorf("%w: node %d: %w %q", ErrSerial, j, ErrUnknownOp, name)
			}
			n.Op = def
			na := d.count("attribute", 2)
			n.Attrs = make(op.Attrs, na)
			for k := 0; k < na && d.err == nil; k++ {
				key := d.str()
				v := d.attr()
				if _, dup := n.Attrs[key]; dup {
					d.fail("node %d (%s): attribute %q twice", j, name, key)
				}
				n.Attrs[key] = v
			}
			ni := d.count("input", 1)
			n.In = make([]*Value, ni)
			for k := range n.In {
				n.In[k] = ref()
			}
			if d.err == nil {
				if err := def.CheckArity(ni); err != nil {
					d.fail("node %d: %v", j, err)
				}
			}
			readOuts(n)
		default:
			d.fail("node %d: bad node kind %d", j, kind)
		}
		g.Nodes = append(g.Nodes, n)
	}
	no := d.count("graph output", 1)
	for k := 0; k < no && d.err == nil; k++ {
		v := ref()
		if v == nil && d.err == nil {
			d.fail("graph output %d is absent", k)
		}
		g.Outputs = append(g.Outputs, v)
	}
	if d.err != nil {
		return nil, d.err
	}
	if d.off != len(d.b) {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrSerial, len(d.b)-d.off)
	}
	g.nextID = maxID + 1
	return g, nil
}
