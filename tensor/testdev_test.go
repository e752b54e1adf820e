package tensor_test

// The test backend: a device type "testdev" registered only through the
// public device API, with memory it owns (never shared with cpu) and an
// asynchronous stream. Its kernels are the CPU kernel library run on its own
// buffers (cpu.Exec). It proves the extension point: no non-test file knows
// about it, and the whole conformance suite runs on it.

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

type tdBuf struct {
	mem   []byte
	owner int // device index
}

func (b *tdBuf) Size() int { return len(b.mem) }

type testDev struct {
	streams [2]device.Stream
	mu      sync.Mutex
	stats   [2]device.MemStats
	// unsupported lets a test remove ops to check the missing-op error.
	unsupported map[string]bool
	// expects counts ExpectWork calls.
	expects atomic.Int64
}

// ExpectWork implements device.WorkExpecter: it counts the calls.
func (d *testDev) ExpectWork() { d.expects.Add(1) }

func newTestDev() *testDev { return &testDev{unsupported: map[string]bool{}} }

func (d *testDev) Name() string    { return "testdev" }
func (d *testDev) NumDevices() int { return 2 }
func (d *testDev) Properties(i int) device.Properties {
	return device.Properties{Name: fmt.Sprintf("test device %d", i), DefaultPrecision: "highest", Async: true}
}

func (d *testDev) Alloc(i int, n int) (device.Buffer, error) {
	d.mu.Lock()
	s := &d.stats[i]
	s.Allocated += int64(n)
	s.Reserved += int64(n)
	s.NumAllocs++
	s.PeakAllocated = max(s.PeakAllocated, s.Allocated)
	d.mu.Unlock()
	return &tdBuf{mem: make([]byte, n), owner: i}, nil
}

func (d *testDev) Free(i int, b device.Buffer) {
	d.streams[i].Enqueue("free", "", func() error {
		d.mu.Lock()
		d.stats[i].Allocated -= int64(b.Size())
		d.stats[i].Reserved -= int64(b.Size())
		d.stats[i].NumFrees++
		d.mu.Unlock()
		return nil
	})
}

func (d *testDev) check(i int, b device.Buffer) error {
	tb, ok := b.(*tdBuf)
	if !ok {
		return fmt.Errorf("testdev: foreign buffer %T", b)
	}
	if tb.owner != i {
		return fmt.Errorf("testdev:%d: buffer belongs to testdev:%d", i, tb.owner)
	}
	return nil
}

func (d *testDev) Write(i int, b device.Buffer, off int, src []byte) error {
	if err := d.check(i, b); err != nil {
		return err
	}
	data := append([]byte(nil), src...) // the host buffer may change after Write returns
	d.streams[i].Enqueue("write", "", func() error { copy(b.(*tdBuf).mem[off:], data); return nil })
	return nil
}

func (d *testDev) Read(i int, b device.Buffer, off int, dst []byte) error {
	if err := d.check(i, b); err != nil {
		return err
	}
	if err := d.streams[i].Sync(); err != nil {
		return err
	}
	copy(dst, b.(*tdBuf).mem[off:])
	return nil
}

func (d *testDev) Supports(o *op.Def, dt dtype.DType) bool {
	d.mu.Lock()
	un := d.unsupported[o.Name]
	d.mu.Unlock()
	return !un && cpu.Has(o, dt)
}

func (d *testDev) Launch(i int, l *device.Launch) error {
	for _, o := range append(append([]device.Operand(nil), l.In...), l.Out...) {
		if o.Buf != nil {
			if err := d.check(i, o.Buf); err != nil {
				return err
			}
		}
	}
	d.streams[i].Enqueue(l.Op.Name, l.Site, func() error {
		return cpu.Exec(l, func(b device.Buffer) []byte { return b.(*tdBuf).mem })
	})
	return nil
}

func (d *testDev) Sync(i int) error { return d.streams[i].Sync() }

func (d *testDev) MemStats(i int) device.MemStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats[i]
}

var testBackend = newTestDev()

func init() { device.Register(testBackend) }
