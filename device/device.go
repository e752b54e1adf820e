// Package device is gotpu's device registry and backend contract.
//
// A device is named "type[:index]" ("cpu", "tpu:0"). Backends register a
// Backend for a device type with Register — the extension point, like
// PyTorch's PrivateUse1: a backend outside this repository plugs in through
// this package's public API alone. The tensor package talks to backends only
// through the Backend interface.
package device

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Device names one device: a registered type and an index.
type Device struct {
	Type  string
	Index int
}

func (d Device) String() string {
	if d.Index == 0 && !strings.Contains(d.Type, ":") {
		return d.Type
	}
	return d.Type + ":" + strconv.Itoa(d.Index)
}

// Sentinel errors.
var (
	// ErrUnknownDevice is returned for a device type nobody registered.
	ErrUnknownDevice = errors.New("unknown device type")
	// ErrNoDevice is returned for an index past the backend's device count.
	ErrNoDevice = errors.New("no such device")
	// ErrOutOfMemory is returned when an allocation cannot be satisfied.
	ErrOutOfMemory = errors.New("out of memory")
	// ErrUnsupported is returned when a backend lacks a kernel for an op.
	ErrUnsupported = errors.New("op not supported on device")
)

// Parse parses "type" or "type:index".
func Parse(s string) (Device, error) {
	t, idx, found := strings.Cut(s, ":")
	if t == "" {
		return Device{}, fmt.Errorf("device: empty device name in %q", s)
	}
	d := Device{Type: t}
	if found {
		n, err := strconv.Atoi(idx)
		if err != nil || n < 0 {
			return Device{}, fmt.Errorf("device: bad index in %q", s)
		}
		d.Index = n
	}
	return d, nil
}

// Buffer is a backend's storage for one allocation. Only the backend that
// made it looks inside.
type Buffer interface {
	// Size returns the buffer's capacity in bytes.
	Size() int
}

// Operand is a tensor as a kernel sees it: a buffer, a dtype and a layout
// (in elements).
type Operand struct {
	Buf   Buffer
	DType dtype.DType
	op.Layout
}

// Launch is one kernel invocation enqueued on a device's stream.
type Launch struct {
	Op    *op.Def
	Attrs op.Attrs
	In    []Operand // nil Buf for an absent optional input
	Out   []Operand // freshly allocated, contiguous unless the op is in place
	// Site is the caller's file:line when the runtime captured it (Debug mode
	// and asynchronous backends); errors should name it.
	Site string
}

// MemStats reports a device's memory, in bytes, as torch.cuda.memory_stats.
type MemStats struct {
	Allocated     int64 // bytes in live tensors
	Reserved      int64 // bytes held by the caching allocator (live + cached)
	PeakAllocated int64
	NumAllocs     int64 // allocations served (cache hits included)
	NumFrees      int64
	Total         int64 // device capacity if known, else 0
}

// Properties describes a device.
type Properties struct {
	Name             string
	MemoryBytes      int64
	DefaultPrecision string // "highest", "high" or "medium"
	Async            bool   // kernels run asynchronously on a stream
	Features         []string
}

// Backend runs ops on one device type. Implementations must be safe for
// concurrent use; work on one device runs in launch order (its stream).
type Backend interface {
	// Name returns the device type ("cpu").
	Name() string
	// NumDevices returns how many devices of this type exist.
	NumDevices() int
	// Properties describes device index.
	Properties(index int) Properties

	// Alloc returns a buffer of at least n bytes on device index.
	Alloc(index int, n int) (Buffer, error)
	// Free returns a buffer; it may be cached for reuse.
	Free(index int, b Buffer)
	// Write copies host bytes into b at byte offset off, in stream order.
	Write(index int, b Buffer, off int, src []byte) error
	// Read copies bytes of b at offset off to the host. It waits for all
	// work enqueued before it and reports any asynchronous error.
	Read(index int, b Buffer, off int, dst []byte) error

	// Supports reports whether the backend has a kernel for the op on
	// dtype dt (the promoted dtype of its first input, or of its output for
	// ops without inputs).
	Supports(o *op.Def, dt dtype.DType) bool
	// Launch enqueues a kernel. A synchronous backend runs it and returns
	// its error; an asynchronous one may report the error at the next Sync
	// or Read instead.
	Launch(index int, l *Launch) error
	// Sync waits for all enqueued work on device index and returns the first
	// asynchronous error (with the op name and launch site).
	Sync(index int) error

	// MemStats reports memory use of device index.
	MemStats(index int) MemStats
}

// WorkExpecter is implemented by a backend that can get ready for work
// about to be submitted. The Fused mode and compile.Fn's traces call
// ExpectWork as they record a graph, which a flush then runs as one
// program: the CPU backend keeps its worker threads polling meanwhile, as
// a stream of kernels would, so the program's first parallel kernel does
// not wait for a parked thread to wake. It must be cheap (it is called
// once per recorded op) and safe for concurrent use.
type WorkExpecter interface {
	ExpectWork()
}

var (
	regMu    sync.RWMutex
	registry = map[string]Backend{}
	hints    = map[string]func() string{}
)

// pjrtHint explains the device types that only the PJRT backend provides,
// for a program that does not include it or found no plugin.
const pjrtHint = "tpu, cuda and xla devices need a build with -tags pjrt (which links " +
	"github.com/gotpu/gotpu/backend/pjrt) and a PJRT plugin: tools/pjrt/fetch.sh for xla, " +
	"libtpu for tpu, a jax CUDA plugin for cuda; `gotpu pjrt` in that build lists the plugins found"

// defaultHints are the explanations for well-known device types that need
// a backend not linked into every program; SetHint replaces them.
var defaultHints = map[string]string{"tpu": pjrtHint, "cuda": pjrtHint, "xla": pjrtHint}

// SetHint registers an explanation of why device type t may be missing (a
// build tag, a plugin to install); Lookup appends hint() to its
// ErrUnknownDevice error while no backend is registered for t. A backend
// package that finds no plugin calls it with the reason it found.
func SetHint(t string, hint func() string) {
	regMu.Lock()
	hints[t] = hint
	regMu.Unlock()
}

// Register makes a backend available under its Name. Registering a name twice
// replaces the earlier backend (tests use this to swap implementations).
func Register(b Backend) {
	regMu.Lock()
	registry[b.Name()] = b
	regMu.Unlock()
}

// Lookup returns the backend for device type t.
func Lookup(t string) (Backend, error) {
	regMu.RLock()
	b, ok := registry[t]
	hint := hints[t]
	regMu.RUnlock()
	if !ok {
		msg := defaultHints[t]
		if hint != nil {
			msg = hint()
		}
		if msg != "" {
			msg = "; " + msg
		}
		return nil, fmt.Errorf("device %q: %w (registered: %s)%s", t, ErrUnknownDevice, strings.Join(Types(), ", "), msg)
	}
	return b, nil
}

// Get parses s and returns the device and its backend, checking the index.
func Get(s string) (Device, Backend, error) {
	d, err := Parse(s)
	if err != nil {
		return Device{}, nil, err
	}
	b, err := Lookup(d.Type)
	if err != nil {
		return Device{}, nil, err
	}
	if n := b.NumDevices(); d.Index >= n {
		return Device{}, nil, fmt.Errorf("device %s: %w (%d %s device(s))", d, ErrNoDevice, n, d.Type)
	}
	return d, b, nil
}

// Types lists the registered device types, sorted.
func Types() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(registry))
	for t := range registry {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// ErrProgramFormat is returned when serialized program bytes were written by
// another program format or version, or are corrupt.
var ErrProgramFormat = errors.New("unknown or corrupt program format")
