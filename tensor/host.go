package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Element is the set of Go types a tensor can be built from.
type Element interface {
	~float32 | ~float64 | ~int64 | ~int32 | ~int16 | ~int8 | ~uint8 | ~bool | dtype.BFloat16 | dtype.Float16
}

// DTypeOf returns the dtype of Go element type T.
func DTypeOf[T Element]() dtype.DType {
	var z T
	switch any(z).(type) {
	case float32:
		return dtype.F32
	case float64:
		return dtype.F64
	case int64:
		return dtype.I64
	case int32:
		return dtype.I32
	case int16:
		return dtype.I16
	case int8:
		return dtype.I8
	case uint8:
		return dtype.U8
	case bool:
		return dtype.Bool
	case dtype.BFloat16:
		return dtype.BF16
	case dtype.Float16:
		return dtype.F16
	}
	panic(fmt.Sprintf("tensor: unsupported element type %T", z))
}

// MustDevice returns the device named s ("cpu", "tpu:0", "meta") or panics.
func MustDevice(s string) device.Device {
	d, _, err := device.Get(s)
	if err != nil {
		panic(err)
	}
	return d
}

func backendOf(dev device.Device) device.Backend {
	be, err := device.Lookup(dev.Type)
	if err != nil {
		panic(&Error{Op: "device", Msg: err.Error(), Err: err})
	}
	return be
}

// FromSlice makes a tensor of shape on dev holding a copy of data (row-major).
// With no shape, the tensor is 1-d.
func FromSlice[T Element](dev device.Device, data []T, shape ...int) *Tensor {
	if shape == nil {
		shape = []int{len(data)}
	}
	dt := DTypeOf[T]()
	if op.Numel(shape) != len(data) {
		panic(&Error{Op: "from_slice", Msg: fmt.Sprintf("%d elements do not fill shape %v", len(data), shape)})
	}
	raw := make([]byte, len(data)*dt.Size())
	for i, v := range data {
		switch x := any(v).(type) {
		case float32:
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
		case float64:
			binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(x))
		case int64:
			binary.LittleEndian.PutUint64(raw[8*i:], uint64(x))
		case int32:
			binary.LittleEndian.PutUint32(raw[4*i:], uint32(x))
		case int16:
			binary.LittleEndian.PutUint16(raw[2*i:], uint16(x))
		case int8:
			raw[i] = uint8(x)
		case uint8:
			raw[i] = x
		case bool:
			if x {
				raw[i] = 1
			}
		case dtype.BFloat16:
			binary.LittleEndian.PutUint16(raw[2*i:], uint16(x))
		case dtype.Float16:
			binary.LittleEndian.PutUint16(raw[2*i:], uint16(x))
		}
	}
	return FromBytes(dev, dt, shape, raw)
}

// FromBytes makes a contiguous tensor from little-endian raw element bytes.
func FromBytes(dev device.Device, dt dtype.DType, shape []int, raw []byte) *Tensor {
	for _, d := range shape {
		if d < 0 {
			panic(&Error{Op: "from_bytes", Msg: fmt.Sprintf("negative dimension in shape %v", shape)})
		}
	}
	n := op.Numel(shape)
	if len(raw) != n*dt.Size() {
		panic(&Error{Op: "from_bytes", Msg: fmt.Sprintf("%d bytes do not fill %s%v (%d bytes)", len(raw), dt, shape, n*dt.Size())})
	}
	be := backendOf(dev)
	t := &Tensor{st: newStorage(dev, be, len(raw)), dt: dt, l: op.Contiguous(slices.Clone(shape))}
	if len(raw) > 0 {
		if err := be.Write(dev.Index, t.st.buf, 0, raw); err != nil {
			panic(&Error{Op: "from_bytes", Msg: err.Error(), Err: err})
		}
	}
	if len(raw) <= maxTraceConst && tracesActive.Load() > 0 {
		if tr := currentTrace(); tr != nil && tr.ctx.dev == dev {
			t.st.konst = string(raw)
		}
	}
	return t
}

// maxTraceConst is the largest host upload inside a trace that is kept as
// a constant of the trace (Storage.konst).
const maxTraceConst = 4096

// Scalar wraps a Go value (float64, float32, int, int64, bool) as a 0-d tensor
// that promotes like a Python number: t.Add(Scalar(2)) keeps t's dtype.
func Scalar(v any) *Tensor {
	var dt dtype.DType
	switch x := v.(type) {
	case float64:
	case float32:
		v = float64(x)
	case int:
		v = int64(x)
	case int64:
	case int32:
		v = int64(x)
	case bool:
	default:
		panic(&Error{Op: "scalar", Msg: fmt.Sprintf("unsupported scalar type %T", v)})
	}
	switch v.(type) {
	case float64:
		dt = dtype.F64
	case int64:
		dt = dtype.I64
	case bool:
		dt = dtype.Bool
	}
	return &Tensor{dt: dt, wrapped: true, l: op.Contiguous([]int{}), scalar: v}
}

// materialize places a wrapped scalar on dev as a 0-d tensor of dtype dt.
func materialize(t *Tensor, dt dtype.DType, dev device.Device, be device.Backend) *Tensor {
	raw := make([]byte, dt.Size())
	switch x := t.scalar.(type) {
	case float64:
		dtype.PutFloat64(dt, raw, 0, x)
	case int64:
		dtype.PutInt64(dt, raw, 0, x)
	case bool:
		v := int64(0)
		if x {
			v = 1
		}
		dtype.PutInt64(dt, raw, 0, v)
	}
	m := FromBytes(dev, dt, nil, raw)
	m.wrapped = true
	return m
}

// Bytes returns the tensor's elements as contiguous little-endian bytes,
// copied to the host (a sync point).
func (t *Tensor) Bytes() []byte {
	if t.st == nil {
		raw := make([]byte, t.dt.Size())
		c := materialize(t, t.dt, device.Device{Type: "cpu"}, backendOf(device.Device{Type: "cpu"}))
		copy(raw, c.Bytes())
		return raw
	}
	if t.st.freed.Load() {
		errorf("to_host", []*Tensor{t}, "tensor storage was freed")
	}
	c := contiguous("to_host", t).ready("to_host")
	n := c.Numel() * c.dt.Size()
	raw := make([]byte, n)
	if n == 0 {
		return raw
	}
	if err := c.st.be.Read(c.st.dev.Index, c.st.buf, c.l.Offset*c.dt.Size(), raw); err != nil {
		panic(&Error{Op: "to_host", Msg: err.Error(), Err: err})
	}
	return raw
}

// Float64s copies the elements to the host as float64s (row-major).
func (t *Tensor) Float64s() []float64 {
	raw := t.Bytes()
	out := make([]float64, t.Numel())
	for i := range out {
		out[i] = dtype.Float64At(t.dt, raw, i)
	}
	return out
}

// Int64s copies the elements to the host as int64s (row-major; floats truncate).
func (t *Tensor) Int64s() []int64 {
	raw := t.Bytes()
	out := make([]int64, t.Numel())
	for i := range out {
		out[i] = dtype.Int64At(t.dt, raw, i)
	}
	return out
}

// Float32s copies the elements to the host as float32s: an f32 tensor's
// bits as they are, other dtypes converted.
func (t *Tensor) Float32s() []float32 {
	if t.dt == dtype.F32 && t.st != nil && nativeLittle {
		return t.CopyFloat32s(nil)
	}
	if t.dt != dtype.F32 {
		f := t.Float64s()
		out := make([]float32, len(f))
		for i, v := range f {
			out[i] = float32(v)
		}
		return out
	}
	// A decode loop reads a step's logits (a vocabulary of f32) through
	// here: straight from the bytes, not through float64 one element at a
	// time (0.6 ms of a SmolLM2 step's 8).
	raw := t.Bytes()
	out := make([]float32, len(raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

// nativeLittle reports whether float32s are stored little-endian here, so
// that an f32 tensor's bytes can be read straight into a []float32.
var nativeLittle = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// CopyFloat32s is Float32s into dst's memory when its capacity holds the
// elements (a new slice otherwise) and returns them: a loop that reads a
// same-sized tensor every step (a decoder's logits) reuses one buffer
// instead of allocating one, and garbage, a step.
func (t *Tensor) CopyFloat32s(dst []float32) []float32 {
	if t.dt != dtype.F32 || t.st == nil || !nativeLittle {
		return append(dst[:0], t.Float32s()...)
	}
	if t.st.freed.Load() {
		errorf("to_host", []*Tensor{t}, "tensor storage was freed")
	}
	c := contiguous("to_host", t).ready("to_host")
	n := c.Numel()
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	if n == 0 {
		return dst
	}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*n)
	if err := c.st.be.Read(c.st.dev.Index, c.st.buf, c.l.Offset*4, raw); err != nil {
		panic(&Error{Op: "to_host", Msg: err.Error(), Err: err})
	}
	return dst
}

// Item returns the value of a one-element tensor as a float64 (a sync point).
func (t *Tensor) Item() float64 {
	if t.Numel() != 1 {
		errorf("item", []*Tensor{t}, "a Tensor with %d elements cannot be converted to Scalar", t.Numel())
	}
	return t.Float64s()[0]
}

// To returns t on device dev (t itself if it is already there).
func (t *Tensor) To(dev device.Device) *Tensor {
	if t.st != nil && t.st.dev == dev {
		return t
	}
	raw := t.Bytes()
	return FromBytes(dev, t.dt, t.l.Shape, raw)
}

// ToDType returns t converted to dt (t.to(dtype) in PyTorch): t itself when
// it already has that dtype, else a new tensor (differentiable).
func (t *Tensor) ToDType(dt dtype.DType) *Tensor {
	if t.dt == dt {
		return t
	}
	return Apply1("convert", []*Tensor{t}, op.Attrs{"dtype": dt})
}

// Sync waits for all work queued on dev and returns the first asynchronous
// error of a kernel, naming the op and the line that launched it.
func Sync(dev device.Device) error {
	be, err := device.Lookup(dev.Type)
	if err != nil {
		return err
	}
	if err := Catch(func() { Flush(dev) }); err != nil {
		return err
	}
	return be.Sync(dev.Index)
}
