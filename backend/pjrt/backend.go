//go:build pjrt

package pjrt

/*
#include <stdlib.h>
#include "capi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// ErrFreed is returned for a buffer used after Free.
var ErrFreed = errors.New("pjrt: buffer used after free")

// Backend is a device.Backend (and device.Compiler) over one PJRT plugin.
// It is synchronous: every call waits for the plugin's events, so errors
// surface at the call that caused them.
//
// One mutex serialises buffer state changes and launches; the plugin
// parallelises inside each executable.
type Backend struct {
	p *Plugin

	mu        sync.Mutex
	execs     map[string]*executable // eager executables by graph fingerprint
	order     []string               // keys of execs, oldest first
	props     []device.Properties
	propsOnce []sync.Once
	// launchKeys maps a launch signature (launchKey) to its key in execs.
	launchKeys map[string]string
	stats      []device.MemStats // counted per device

	compiles     int          // eager compiles (cache misses), for tests and stats
	progCompiles atomic.Int64 // whole-program XLA compiles (variants included)
	launches     int
	compileTime  time.Duration

	// allocSinceGC is the bytes of buffers created since the last
	// collection this backend started; gcRunning is set while one runs.
	allocSinceGC int64
	gcRunning    atomic.Bool
}

// Device memory is invisible to Go's garbage collector: a buffer costs the
// Go heap a few dozen bytes, so the collector, paced by the Go heap, would
// run (and the storages' cleanups would free dead buffers) long after the
// device held gigabytes of them. The backend paces collections by device
// memory instead, as GOGC=100 paces the heap: once the bytes of buffers
// created since the last collection it started reach the bytes allocated
// (live and not yet freed), and at least gcMinBytes, it starts one in the
// background (never more than one at a time; the caller does not wait).
var gcMinBytes int64 = 64 << 20

// noteAlloc counts n new bytes on device index (b.mu held) and starts a
// collection when the device memory created since the last one calls for
// it.
func (b *Backend) noteAlloc(index int, n int) {
	st := &b.stats[index]
	st.Allocated += int64(n)
	st.Reserved += int64(n)
	st.NumAllocs++
	if st.Allocated > st.PeakAllocated {
		st.PeakAllocated = st.Allocated
	}
	b.allocSinceGC += int64(n)
	var live int64
	for i := range b.stats {
		live += b.stats[i].Allocated
	}
	if b.allocSinceGC < max(gcMinBytes, live-b.allocSinceGC) || !b.gcRunning.CompareAndSwap(false, true) {
		return
	}
	b.allocSinceGC = 0
	go func() {
		defer b.gcRunning.Store(false)
		runtime.GC()
	}()
}

func newBackend(p *Plugin) *Backend {
	return &Backend{p: p, execs: map[string]*executable{}, launchKeys: map[string]string{}, stats: make([]device.MemStats, len(p.devices)),
		props: make([]device.Properties, len(p.devices)), propsOnce: make([]sync.Once, len(p.devices))}
}

// Plugin returns the loaded plugin behind the backend.
func (b *Backend) Plugin() *Plugin { return b.p }

// Name returns the device type ("xla", "tpu", "cuda").
func (b *Backend) Name() string { return b.p.Name }

// NumDevices returns the number of addressable devices of the plugin.
func (b *Backend) NumDevices() int { return len(b.p.devices) }

// Properties describes device index.
func (b *Backend) Properties(index int) device.Properties {
	if index < 0 || index >= len(b.props) {
		return device.Properties{DefaultPrecision: "highest", Features: []string{"pjrt"}}
	}
	// Computed once: the runtime asks on every launch.
	b.propsOnce[index].Do(func() {
		pr := device.Properties{DefaultPrecision: b.precision().def, Features: []string{"pjrt", "platform:" + b.p.Platform}}
		di := b.p.devInfo[index]
		pr.Name = fmt.Sprintf("PJRT %s device %d", di.Kind, di.ID)
		if st, ok := b.pluginMemStats(index); ok {
			pr.MemoryBytes = st.Total
		}
		b.props[index] = pr
	})
	pr := b.props[index]
	pr.Features = slices.Clone(pr.Features)
	return pr
}

func (b *Backend) checkIndex(index int) error {
	if index < 0 || index >= len(b.p.devices) {
		return fmt.Errorf("%s:%d: %w (%d device(s))", b.p.Name, index, device.ErrNoDevice, len(b.p.devices))
	}
	return nil
}

// buffer is a gotpu Buffer on a PJRT device. PJRT buffers are immutable
// values, so a buffer is a handle: its contents live either on the host
// (after a Write, or zero-filled before any) or in a flat, one-dimensional
// PJRT buffer of some element type (after a launch wrote it), or both (a
// host copy cached by Read or an upload). A write replaces the PJRT buffer.
// All fields are guarded by Backend.mu.
type buffer struct {
	dev    int
	size   int
	host   []byte // valid when hostOK; nil means all zeros
	hostOK bool
	pj     *C.PJRT_Buffer
	pjDT   dtype.DType
	freed  bool
}

func (x *buffer) Size() int { return x.size }

// Alloc returns a buffer of n bytes on device index; device memory is
// allocated when a launch first needs it.
func (b *Backend) Alloc(index int, n int) (device.Buffer, error) {
	if err := b.checkIndex(index); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("%s: alloc of %d bytes", b.p.Name, n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.noteAlloc(index, n)
	return &buffer{dev: index, size: n, hostOK: true}, nil
}

func (b *Backend) buf(index int, x device.Buffer) (*buffer, error) {
	pb, ok := x.(*buffer)
	if !ok || pb == nil {
		return nil, fmt.Errorf("%s: buffer %T does not belong to this backend", b.p.Name, x)
	}
	if pb.freed {
		return nil, ErrFreed
	}
	if pb.dev != index {
		return nil, fmt.Errorf("%s: buffer of device %d used on device %d", b.p.Name, pb.dev, index)
	}
	return pb, nil
}

// Free destroys the buffer's PJRT buffer.
func (b *Backend) Free(index int, x device.Buffer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pb, ok := x.(*buffer)
	if !ok || pb == nil || pb.freed {
		return
	}
	b.dropDevice(pb)
	pb.freed, pb.host, pb.hostOK = true, nil, false
	if pb.dev >= 0 && pb.dev < len(b.stats) {
		st := &b.stats[pb.dev]
		st.Allocated -= int64(pb.size)
		st.Reserved -= int64(pb.size)
		st.NumFrees++
	}
}

func (b *Backend) dropDevice(pb *buffer) {
	if pb.pj != nil {
		// A failed destroy leaks the device buffer; nothing else can be done.
		_ = perr(b.p.api, "PJRT_Buffer_Destroy", C.gp_buffer_destroy(b.p.api, pb.pj))
		pb.pj, pb.pjDT = nil, dtype.Invalid
	}
}

// ensureHost makes pb.host hold the contents (downloading them).
func (b *Backend) ensureHost(pb *buffer) error {
	if pb.hostOK {
		if pb.host == nil {
			pb.host = make([]byte, pb.size)
		}
		return nil
	}
	h := make([]byte, pb.size)
	n := pb.size / pb.pjDT.Size() * pb.pjDT.Size()
	if n > 0 {
		e := C.gp_buffer_to_host(b.p.api, pb.pj, unsafe.Pointer(&h[0]), C.size_t(n))
		runtime.KeepAlive(h)
		if err := perr(b.p.api, "PJRT_Buffer_ToHostBuffer", e); err != nil {
			return err
		}
	}
	pb.host, pb.hostOK = h, true
	return nil
}

// Write copies src into the buffer at byte offset off.
func (b *Backend) Write(index int, x device.Buffer, off int, src []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	pb, err := b.buf(index, x)
	if err != nil {
		return err
	}
	if off < 0 || off+len(src) > pb.size {
		return fmt.Errorf("%s: write of %d bytes at %d outside a %d-byte buffer", b.p.Name, len(src), off, pb.size)
	}
	if off == 0 && len(src) == pb.size {
		pb.host, pb.hostOK = append([]byte(nil), src...), true
	} else {
		if err := b.ensureHost(pb); err != nil {
			return err
		}
		copy(pb.host[off:], src)
	}
	b.dropDevice(pb)
	return nil
}

// Read copies bytes of the buffer at offset off into dst.
func (b *Backend) Read(index int, x device.Buffer, off int, dst []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	pb, err := b.buf(index, x)
	if err != nil {
		return err
	}
	if off < 0 || off+len(dst) > pb.size {
		return fmt.Errorf("%s: read of %d bytes at %d outside a %d-byte buffer", b.p.Name, len(dst), off, pb.size)
	}
	if err := b.ensureHost(pb); err != nil {
		return err
	}
	copy(dst, pb.host[off:])
	return nil
}

// pjType maps a gotpu dtype to a PJRT_Buffer_Type.
func pjType(d dtype.DType) (C.int, bool) {
	switch d {
	case dtype.Bool:
		return C.PJRT_Buffer_Type_PRED, true
	case dtype.U8:
		return C.PJRT_Buffer_Type_U8, true
	case dtype.I8:
		return C.PJRT_Buffer_Type_S8, true
	case dtype.I16:
		return C.PJRT_Buffer_Type_S16, true
	case dtype.I32:
		return C.PJRT_Buffer_Type_S32, true
	case dtype.I64:
		return C.PJRT_Buffer_Type_S64, true
	case dtype.F16:
		return C.PJRT_Buffer_Type_F16, true
	case dtype.BF16:
		return C.PJRT_Buffer_Type_BF16, true
	case dtype.F32:
		return C.PJRT_Buffer_Type_F32, true
	case dtype.F64:
		return C.PJRT_Buffer_Type_F64, true
	}
	return 0, false
}

// upload creates a PJRT buffer of dtype dt and dims from host bytes.
func (b *Backend) upload(index int, data []byte, dt dtype.DType, dims []int) (*C.PJRT_Buffer, error) {
	ty, ok := pjType(dt)
	if !ok {
		return nil, fmt.Errorf("%s: dtype %s has no PJRT type", b.p.Name, dt)
	}
	cd := make([]C.int64_t, len(dims)+1) // +1: never empty
	for i, d := range dims {
		cd[i] = C.int64_t(d)
	}
	var one [8]byte
	ptr := unsafe.Pointer(&one[0])
	if len(data) > 0 {
		ptr = unsafe.Pointer(&data[0])
	}
	var out *C.PJRT_Buffer
	e := C.gp_buffer_from_host(b.p.api, b.p.client, b.p.devices[index], ptr, ty, &cd[0], C.size_t(len(dims)), &out)
	runtime.KeepAlive(data)
	runtime.KeepAlive(cd)
	if err := perr(b.p.api, "PJRT_Client_BufferFromHostBuffer", e); err != nil {
		return nil, err
	}
	return out, nil
}

// flat returns pb's contents as a flat PJRT buffer of dtype dt
// (size/dt.Size() elements), uploading the host copy when needed.
func (b *Backend) flat(pb *buffer, dt dtype.DType) (*C.PJRT_Buffer, int, error) {
	n := pb.size / dt.Size()
	if pb.pj != nil && pb.pjDT == dt {
		return pb.pj, n, nil
	}
	if err := b.ensureHost(pb); err != nil {
		return nil, 0, err
	}
	pj, err := b.upload(pb.dev, pb.host[:n*dt.Size()], dt, []int{n})
	if err != nil {
		return nil, 0, err
	}
	b.dropDevice(pb)
	pb.pj, pb.pjDT = pj, dt
	if n*dt.Size() == pb.size {
		// The device copy is complete: drop the host one (an accelerator's
		// buffers would otherwise cost their size twice).
		pb.host, pb.hostOK = nil, false
	}
	return pj, n, nil
}

// setResult makes the flat PJRT buffer pj of dtype dt the contents of pb.
func (b *Backend) setResult(pb *buffer, pj *C.PJRT_Buffer, dt dtype.DType) {
	b.dropDevice(pb)
	pb.pj, pb.pjDT = pj, dt
	pb.host, pb.hostOK = nil, false
}

// pluginMemStats asks the plugin; ok is false when it does not say.
func (b *Backend) pluginMemStats(index int) (device.MemStats, bool) {
	if C.gp_has_memstats(b.p.api) == 0 {
		return device.MemStats{}, false
	}
	var inUse, peak, limit C.int64_t
	var hasPeak, hasLimit C.int
	e := C.gp_device_memstats(b.p.api, b.p.devices[index], &inUse, &peak, &hasPeak, &limit, &hasLimit)
	if err := perr(b.p.api, "PJRT_Device_MemoryStats", e); err != nil {
		return device.MemStats{}, false
	}
	st := device.MemStats{Allocated: int64(inUse)}
	if hasPeak != 0 {
		st.PeakAllocated = int64(peak)
	}
	if hasLimit != 0 {
		st.Total = int64(limit)
	}
	return st, true
}

// MemStats reports the bytes of live gotpu buffers, counted by the backend
// (device buffers are created lazily, so the plugin's own count lags);
// Total is the plugin's memory limit where it reports one.
func (b *Backend) MemStats(index int) device.MemStats {
	if b.checkIndex(index) != nil {
		return device.MemStats{}
	}
	b.mu.Lock()
	st := b.stats[index]
	b.mu.Unlock()
	if ps, ok := b.pluginMemStats(index); ok {
		st.Total = ps.Total
	}
	return st
}

// Sync returns nil: every call waits for its work.
func (b *Backend) Sync(index int) error { return b.checkIndex(index) }

// String names the backend and its plugin.
func (b *Backend) String() string {
	return fmt.Sprintf("pjrt backend %s (%s, platform %s %s)", b.p.Name, b.p.Path, b.p.Platform, strings.TrimSpace(b.p.PlatformVersion))
}

// layoutIndex calls f with the element offset of every element of l in
// row-major order of its shape.
func layoutIndex(l op.Layout, f func(k, off int)) {
	n := op.Numel(l.Shape)
	if n == 0 {
		return
	}
	r := len(l.Shape)
	idx := make([]int, r)
	off := l.Offset
	for k := 0; k < n; k++ {
		f(k, off)
		for d := r - 1; d >= 0; d-- {
			idx[d]++
			off += l.Strides[d]
			if idx[d] < l.Shape[d] {
				break
			}
			off -= l.Strides[d] * l.Shape[d]
			idx[d] = 0
		}
	}
}

// precision is the platform's precision policy: a TPU defaults to one bf16
// pass (medium), which its precision_config expresses natively; other
// platforms default to f32 products (highest) and get medium and high
// spelled out in the graph.
func (b *Backend) precision() precisionPolicy {
	if b.p.Platform == "tpu" {
		return precisionPolicy{def: "medium", native: true}
	}
	return precisionPolicy{def: "highest"}
}
