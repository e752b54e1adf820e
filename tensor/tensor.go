// Package tensor is gotpu's public tensor API: strided tensors on any
// registered device, PyTorch's op names and semantics (dispatched through the
// op table in package op), views that share storage, in-place ops with
// version counters, and the execution modes (Strict, Debug, Fused).
//
// Programming errors — a shape, dtype or device mismatch, a bad axis — panic
// with an *Error naming the op, shapes, dtypes and devices, as Go panics on an
// index out of range; Catch turns such a panic into an error at a boundary.
package tensor

import (
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Tensor is a strided view of device storage. Tensors are immutable values as
// far as their metadata goes; in-place ops change the storage's contents and
// bump its version counter.
type Tensor struct {
	st      *Storage
	dt      dtype.DType
	l       op.Layout
	wrapped bool // a Go scalar wrapped as a 0-d tensor (promotes like a Python number)
	scalar  any  // the value of a wrapped scalar not yet placed on a device (st == nil)

	// grad holds autograd state; nil for tensors that do not require grad.
	grad *autogradMeta
	// vsrc is how a view of a pending tensor was made (for recording).
	vsrc *viewSrc
}

// viewSrc is the view op that made a tensor from base, at storage version
// ver.
type viewSrc struct {
	base *Tensor
	d    *op.Def
	a    op.Attrs
	ver  int64
}

// Storage is a device allocation shared by the tensors that view it.
type Storage struct {
	dev     device.Device
	be      device.Backend
	buf     device.Buffer
	nbytes  int
	version atomic.Int64
	freed   atomic.Bool
	handle  *freeHandle
	// box holds the handle the storage's one GC cleanup releases (attach
	// swaps in the new buffer's handle instead of adding a cleanup each
	// time: cleanups are records on the storage's span that pile up).
	box *handleBox
	// lazy is the pending value of the storage in Fused mode or a trace
	// (nil once computed); buf is nil until then for a new storage.
	lazy atomic.Pointer[lazyVal]
	// konst holds the bytes of a small tensor made from host data inside a
	// trace (a Go scalar placed for one op, a backward seed): a constant
	// the trace's program reads, made anew by every trace.
	konst string
}

// handleBox is what the GC cleanup of a Storage holds: the handle of its
// current buffer. It must not point back at the Storage.
type handleBox struct{ h atomic.Pointer[freeHandle] }

// handleBlock is a new storage's handle box with its first handle.
type handleBlock struct {
	box handleBox
	h   freeHandle
}

func releaseBox(b *handleBox) {
	if h := b.h.Load(); h != nil {
		h.release()
	}
}

// setHandle makes h the storage's buffer handle, the one its GC cleanup
// releases.
func (st *Storage) setHandle(h *freeHandle) {
	st.handle = h
	if st.box == nil {
		st.box = &handleBox{}
		st.box.h.Store(h)
		runtime.AddCleanup(st, releaseBox, st.box)
		return
	}
	st.box.h.Store(h)
}

// freeHandle releases one device buffer once.
type freeHandle struct {
	be    device.Backend
	index int
	buf   device.Buffer
	done  atomic.Bool
}

func (h *freeHandle) release() {
	if h.done.CompareAndSwap(false, true) {
		h.be.Free(h.index, h.buf)
	}
}

// newStorage allocates nbytes on dev.
func newStorage(dev device.Device, be device.Backend, nbytes int) *Storage {
	buf, err := be.Alloc(dev.Index, nbytes)
	if err != nil {
		panic(&Error{Op: "alloc", Msg: fmt.Sprintf("cannot allocate %d bytes on %s: %v", nbytes, dev, err), Err: err})
	}
	st := &Storage{dev: dev, be: be, buf: buf, nbytes: nbytes}
	// The storage's first handle and the box its cleanup holds, in one
	// allocation (neither points back at the storage).
	hb := &handleBlock{h: freeHandle{be: be, index: dev.Index, buf: buf}}
	st.handle, st.box = &hb.h, &hb.box
	hb.box.h.Store(&hb.h)
	runtime.AddCleanup(st, releaseBox, st.box)
	return st
}

// contiguousLayout returns the row-major layout of a copy of shape, with
// the shape and strides of a rank of at most four in one allocation.
func contiguousLayout(shape []int) op.Layout {
	r := len(shape)
	if r > 4 {
		return op.Contiguous(slices.Clone(shape))
	}
	a := new([8]int)
	sh, st := a[:r:r], a[4:4+r:4+r]
	copy(sh, shape)
	op.FillContiguousStrides(st, sh)
	return op.Layout{Shape: sh, Strides: st}
}

// Version returns the storage's version counter, bumped by every in-place op.
func (t *Tensor) Version() int64 { return t.st.version.Load() }

// DType returns the element type.
func (t *Tensor) DType() dtype.DType { return t.dt }

// Shape returns a copy of the shape; it is non-nil (empty) for a 0-d
// tensor, so FromSlice(dev, data, t.Shape()...) keeps a 0-d shape.
func (t *Tensor) Shape() []int { return append([]int{}, t.l.Shape...) }

// Strides returns a copy of the strides, in elements.
func (t *Tensor) Strides() []int { return append([]int(nil), t.l.Strides...) }

// Offset returns the storage offset, in elements.
func (t *Tensor) Offset() int { return t.l.Offset }

// Layout returns the tensor's layout (shape, strides, offset).
func (t *Tensor) Layout() op.Layout {
	return op.Layout{Shape: t.Shape(), Strides: t.Strides(), Offset: t.l.Offset}
}

// Dim returns the number of dimensions.
func (t *Tensor) Dim() int { return len(t.l.Shape) }

// Size returns the size of dimension d (negative counts from the end).
func (t *Tensor) Size(d int) int {
	ax, err := op.NormAxis("size", d, t.Dim())
	if err != nil || t.Dim() == 0 {
		panic(&Error{Op: "size", Msg: fmt.Sprintf("dimension %d out of range for shape %v", d, t.l.Shape)})
	}
	return t.l.Shape[ax]
}

// Numel returns the number of elements.
func (t *Tensor) Numel() int { return op.Numel(t.l.Shape) }

// Device returns the device the tensor lives on.
func (t *Tensor) Device() device.Device {
	if t.st == nil { // a Go scalar not yet placed on a device
		return device.Device{Type: "cpu"}
	}
	return t.st.dev
}

// IsContiguous reports whether the tensor is row-major with no gaps.
func (t *Tensor) IsContiguous() bool { return t.l.IsContiguous() }

// SharesStorage reports whether t and u view the same storage.
func (t *Tensor) SharesStorage(u *Tensor) bool { return t.st == u.st }

// Free releases the tensor's storage now instead of at garbage collection.
// Every tensor viewing the storage becomes unusable: using one panics with a
// use-after-free error naming the op.
func (t *Tensor) Free() {
	if t.st == nil { // a Go scalar owns no storage
		return
	}
	t.st.free()
}

// free returns the storage's buffer to its device now (once; a storage
// without a buffer yet has nothing to return).
func (st *Storage) free() {
	if st.freed.CompareAndSwap(false, true) && st.handle != nil {
		st.handle.release()
	}
}

// meta returns the op.Meta of t.
func (t *Tensor) meta() op.Meta {
	return op.Meta{Shape: t.l.Shape, DType: t.dt, Wrapped: t.wrapped}
}

func (t *Tensor) operand() device.Operand {
	t.ready("launch")
	return device.Operand{Buf: t.st.buf, DType: t.dt, Layout: t.l}
}

// view returns a tensor sharing t's storage with layout l.
func (t *Tensor) view(l op.Layout) *Tensor {
	return &Tensor{st: t.st, dt: t.dt, l: l}
}

// IsWrappedScalar reports whether t is a Go scalar wrapped by Scalar (it
// promotes like a Python number).
func (t *Tensor) IsWrappedScalar() bool { return t.wrapped }
