// Package cpu is gotpu's CPU backend: host memory behind a caching allocator
// and kernels in pure Go (and Go assembly where it pays). Importing it
// registers the "cpu" device.
//
// The kernel library is exported through Exec and Has so that other backends
// whose memory is host-addressable can reuse the reference kernels on their
// own buffers.
package cpu

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Call is one kernel invocation with its operands resolved to host bytes.
type Call struct {
	*device.Launch
	// InB and OutB are the whole buffers of In and Out (index with the
	// operand layouts, which are in elements and include offsets).
	InB, OutB [][]byte
	// ks is the kernel table the call runs (nil: the process's).
	ks *kset
}

// kernels returns the call's kernel table.
func (c *Call) kernels() *kset {
	if c.ks == nil {
		return procKS
	}
	return c.ks
}

// Kernel is a CPU implementation of an op for a set of dtypes.
type Kernel struct {
	DTypes op.Set // dtypes of the (promoted) first input; 0 means all
	Run    func(c *Call) error
}

var (
	kmu     sync.RWMutex
	kernels = map[*op.Def]Kernel{}
)

// RegisterKernel installs k as the CPU kernel for the op whose handle is d
// (op.Add, ...). Kernel files call it from init; registering a composite
// makes it a direct kernel that the conformance suite checks against the
// decomposition.
func RegisterKernel(d *op.Def, k Kernel) {
	kmu.Lock()
	defer kmu.Unlock()
	if _, dup := kernels[d]; dup {
		panic("cpu: duplicate kernel for " + d.Name)
	}
	kernels[d] = k
}

// Has reports whether the kernel library implements op o for dtype dt.
func Has(o *op.Def, dt dtype.DType) bool {
	kmu.RLock()
	k, ok := kernels[o]
	kmu.RUnlock()
	return ok && k.DTypes.Has(dt)
}

// Exec runs launch l with the library's kernel, resolving buffers to host
// bytes with mem.
func Exec(l *device.Launch, mem func(device.Buffer) []byte) error {
	return execAt(procKS, l, mem)
}

// execAt runs launch l with the kernels of table ks.
func execAt(ks *kset, l *device.Launch, mem func(device.Buffer) []byte) error {
	k, ok := kernelOf(l.Op)
	if !ok {
		return fmt.Errorf("%w: %s on cpu", device.ErrUnsupported, l.Op.Name)
	}
	c := newCall(l, mem)
	c.ks = ks
	return k.Run(c)
}

// kernelOf returns op d's registered kernel.
func kernelOf(d *op.Def) (Kernel, bool) {
	kmu.RLock()
	k, ok := kernels[d]
	kmu.RUnlock()
	return k, ok
}

// newCall returns the kernel call of launch l, its buffers' memory from mem.
func newCall(l *device.Launch, mem func(device.Buffer) []byte) *Call {
	// The call and its operands' memory in one allocation for the common
	// op of at most six operands.
	var c *Call
	if n := len(l.In) + len(l.Out); n <= len(callBlock{}.bs) {
		cb := &callBlock{}
		c = &cb.c
		*c = Call{Launch: l, InB: cb.bs[:len(l.In):len(l.In)], OutB: cb.bs[len(l.In):n:n]}
	} else {
		c = &Call{Launch: l, InB: make([][]byte, len(l.In)), OutB: make([][]byte, len(l.Out))}
	}
	for i, o := range l.In {
		if o.Buf != nil {
			c.InB[i] = mem(o.Buf)
		}
	}
	for i, o := range l.Out {
		c.OutB[i] = mem(o.Buf)
	}
	return c
}

// callBlock is a Call with room for the memory of six operands (newCall).
type callBlock struct {
	c  Call
	bs [6][]byte
}

// Buf is a CPU buffer: 64-byte-aligned host memory (mapped outside the Go
// heap when large).
type Buf struct {
	b      []byte
	mapped bool
}

// Size implements device.Buffer.
func (b *Buf) Size() int { return len(b.b) }

// Bytes returns the buffer's memory.
func (b *Buf) Bytes() []byte { return b.b }

// AlignedBytes returns n zeroed bytes whose first byte is 64-byte aligned.
func AlignedBytes(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	raw := make([]byte, n+64)
	off := int(-uintptr(unsafe.Pointer(&raw[0])) & 63)
	return raw[off : off+n : off+n]
}

// Backend is the CPU backend.
type Backend struct {
	alloc device.CachingAllocator
	props atomic.Pointer[cpuProps]
	name  string // the device type: "cpu"
	ks    *kset  // the kernels it runs: the process's
	// launches counts Launch calls; every eighth tells the pool more work
	// is coming (pool.Expect).
	launches atomic.Uint32
}

func newBackend() *Backend { return newBackendAt("cpu", procKS) }

// newBackendAt returns a CPU backend registered as device type name that
// runs the kernels of ks (tests register one per level).
func newBackendAt(name string, ks *kset) *Backend {
	b := &Backend{name: name, ks: ks}
	b.alloc.Raw = func(n int) (device.Buffer, error) {
		mem, mapped := hostAlloc(n)
		return &Buf{b: mem, mapped: mapped}, nil
	}
	b.alloc.RawFree = func(buf device.Buffer) {
		if cb := buf.(*Buf); cb.mapped {
			hostFree(cb.b)
			cb.b = nil
		}
	}
	// Tensors return their buffers when the garbage collector finds them
	// unreachable; past the soft limit a cache miss first collects.
	b.alloc.SoftLimit = max(256<<20, totalMemory()/16)
	b.alloc.Reclaim = reclaim
	return b
}

func init() { device.Register(newBackend()) }

// reclaim runs a collection so that unreachable tensors' cleanups return
// their buffers, then yields briefly to let the cleanup goroutine run.
func reclaim() {
	runtime.GC()
	for i := 0; i < 4; i++ {
		runtime.Gosched()
		time.Sleep(50 * time.Microsecond)
	}
}

// Name implements device.Backend.
func (b *Backend) Name() string { return b.name }

// ExpectWork implements device.WorkExpecter: the pool's helpers keep
// polling for a call (pool.Expect).
func (b *Backend) ExpectWork() { pool.Expect() }

// NumDevices implements device.Backend: one CPU device.
func (b *Backend) NumDevices() int { return 1 }

// Properties implements device.Backend.
func (b *Backend) Properties(int) device.Properties {
	n := runtime.GOMAXPROCS(0)
	if p := b.props.Load(); p != nil && p.threads == n {
		return p.Properties // the runtime asks on every launch
	}
	p := &cpuProps{threads: n, Properties: device.Properties{
		Name:             fmt.Sprintf("%s (%d threads)", runtime.GOARCH, n),
		MemoryBytes:      totalMemory(),
		DefaultPrecision: "highest",
		Features:         append(features(), layoutFeatures()...),
	}}
	b.props.Store(p)
	return p.Properties
}

type cpuProps struct {
	device.Properties
	threads int
}

// Alloc implements device.Backend.
func (b *Backend) Alloc(_ int, n int) (device.Buffer, error) { return b.alloc.Alloc(n) }

// Free implements device.Backend. The cached block is zeroed lazily: kernels
// always write every output element.
func (b *Backend) Free(_ int, buf device.Buffer) { b.alloc.Free(buf) }

// Write implements device.Backend.
func (b *Backend) Write(_ int, buf device.Buffer, off int, src []byte) error {
	copy(buf.(*Buf).b[off:], src)
	return nil
}

// Read implements device.Backend.
func (b *Backend) Read(_ int, buf device.Buffer, off int, dst []byte) error {
	copy(dst, buf.(*Buf).b[off:])
	return nil
}

// Supports implements device.Backend.
func (b *Backend) Supports(o *op.Def, dt dtype.DType) bool { return Has(o, dt) }

// Launch implements device.Backend: CPU kernels run synchronously.
func (b *Backend) Launch(_ int, l *device.Launch) error {
	// A stream of eager kernels, most too small to share, keeps the pool's
	// helpers polling, so that the next product does not wait for a parked
	// thread to wake (Strict mode's MNIST step: 1.80-1.98 -> 1.75-1.87 ms).
	if b.launches.Add(1)%8 == 1 {
		pool.Expect()
	}
	return execAt(b.ks, l, func(buf device.Buffer) []byte { return buf.(*Buf).b })
}

// Sync implements device.Backend (nothing is ever pending).
func (b *Backend) Sync(int) error { return nil }

// MemStats implements device.Backend.
func (b *Backend) MemStats(int) device.MemStats {
	s := b.alloc.Stats()
	s.Total = totalMemory()
	return s
}

// ResetPeakMemory sets the peak of MemStats to the current allocation
// (torch.cuda.reset_peak_memory_stats).
func (b *Backend) ResetPeakMemory(int) { b.alloc.ResetPeak() }

// EmptyCache releases cached host blocks.
func (b *Backend) EmptyCache() { b.alloc.EmptyCache() }
