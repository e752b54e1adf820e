// Package meta is the "meta" device: tensors with shapes and dtypes but no
// data. Every op runs only its shape rule, so a model can be shape-checked
// (or its memory planned) without allocating or computing anything.
// Importing the package registers the device.
package meta

import (
	"errors"
	"sync"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// ErrNoData is returned when a meta tensor's values are read.
var ErrNoData = errors.New("meta tensors have no data")

type buf struct{ n int }

func (b buf) Size() int { return b.n }

// Backend is the meta backend.
type Backend struct {
	mu    sync.Mutex
	stats device.MemStats
}

func init() { device.Register(&Backend{}) }

// Name implements device.Backend.
func (*Backend) Name() string { return "meta" }

// NumDevices implements device.Backend.
func (*Backend) NumDevices() int { return 1 }

// Properties implements device.Backend.
func (*Backend) Properties(int) device.Properties {
	return device.Properties{Name: "meta (shapes only)", DefaultPrecision: "highest"}
}

// Alloc implements device.Backend; it records the bytes a real device would
// need but allocates nothing.
func (b *Backend) Alloc(_ int, n int) (device.Buffer, error) {
	b.mu.Lock()
	b.stats.Allocated += int64(n)
	b.stats.NumAllocs++
	b.stats.PeakAllocated = max(b.stats.PeakAllocated, b.stats.Allocated)
	b.mu.Unlock()
	return buf{n}, nil
}

// Free implements device.Backend.
func (b *Backend) Free(_ int, x device.Buffer) {
	b.mu.Lock()
	b.stats.Allocated -= int64(x.Size())
	b.stats.NumFrees++
	b.mu.Unlock()
}

// Write implements device.Backend: data written to meta is dropped.
func (*Backend) Write(int, device.Buffer, int, []byte) error { return nil }

// Read implements device.Backend: meta tensors have no values.
func (*Backend) Read(int, device.Buffer, int, []byte) error { return ErrNoData }

// Supports implements device.Backend: every op "runs" on meta (only its
// shape rule is evaluated, by the runtime).
func (*Backend) Supports(*op.Def, dtype.DType) bool { return true }

// Launch implements device.Backend: nothing to compute.
func (*Backend) Launch(int, *device.Launch) error { return nil }

// Sync implements device.Backend.
func (*Backend) Sync(int) error { return nil }

// MemStats implements device.Backend: the bytes real tensors would occupy.
func (b *Backend) MemStats(int) device.MemStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}
