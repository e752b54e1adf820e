//go:build pjrt

package pjrt_test

import (
	"math"
	"testing"

	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// TestXLADeadBuffersAreFreed: device memory is invisible to Go's collector
// (a buffer is a few dozen bytes of Go heap), so without the backend
// pacing collections by device memory the dead results of a Strict-mode
// loop pile up on the device (train mnist --device xla reached 5 GB; here
// about 300 MiB, where Go's own pacing finally collects). 4,000 dead
// 256 KiB results (1 GiB) must never hold more than a bounded amount of
// device memory at once (about 80 MiB with the pacing).
func TestXLADeadBuffersAreFreed(t *testing.T) {
	be := xla(t)
	dev := device.Device{Type: "xla"}
	const n, steps = 1 << 16, 4000
	const bound = 160 << 20 // the pacing floor is 64 MiB: room for a late collection
	x := tensor.FromSlice(dev, make([]float32, n), n)
	before := be.MemStats(0).Allocated
	var most int64
	for range steps {
		x = x.Add(tensor.Scalar(1))
		if a := be.MemStats(0).Allocated - before; a > most {
			most = a
		}
	}
	if got := x.Float32s(); got[0] != steps || got[n-1] != steps {
		t.Fatalf("x = %v ... %v, want %d", got[0], got[n-1], steps)
	}
	if most > bound {
		t.Fatalf("%d dead results of %d KiB held up to %d MiB of device memory at once (bound %d MiB)", steps, n*4>>10, most>>20, bound>>20)
	}
}

// TestXLACompiledStepReplays: a compiled training step whose trace does
// not change is replayed on xla as on cpu (compile.TraceOnce): after the
// warm-up traces every call replays, and the weights follow Strict mode
// (to XLA's rounding).
func TestXLACompiledStepReplays(t *testing.T) {
	xla(t)
	dev := device.Device{Type: "xla"}
	g := tensor.NewGenerator(3)
	mk := func() (*tensor.Tensor, func(in ...*tensor.Tensor) []*tensor.Tensor) {
		w := tensor.RandnGen(tensor.NewGenerator(1), dev, dtype.F32, 16, 4).Detach()
		w.SetRequiresGrad(true)
		return w, func(in ...*tensor.Tensor) []*tensor.Tensor {
			w.SetGrad(nil)
			loss := in[0].Matmul(w).Tanh().Square().Mean(nil, false)
			loss.Backward()
			tensor.NoGrad(func() { w.SubInPlace(w.Grad().Mul(tensor.Scalar(0.1))) })
			return []*tensor.Tensor{loss}
		}
	}
	wc, step := mk()
	ws, ref := mk()
	fn := compile.Fn(step, compile.Name("xla-replay"), compile.TraceOnce())
	const calls = 8
	for range calls {
		x := tensor.RandnGen(g, dev, dtype.F32, 8, 16)
		out, err := fn.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		lc, lr := out[0].Item(), ref(x)[0].Item()
		// XLA fuses a program's ops: the last bits may differ.
		if math.Abs(lc-lr) > 1e-5*math.Abs(lr) {
			t.Fatalf("compiled loss %v, strict %v", lc, lr)
		}
	}
	a, b := wc.Float32s(), ws.Float32s()
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-5 {
			t.Fatalf("weight %d: compiled %v, strict %v", i, a[i], b[i])
		}
	}
	st := fn.Stats()
	if st.Replays < calls-3 {
		t.Fatalf("%d calls: %d traces, %d replays; want every call after the warm-up replayed", calls, st.Traces, st.Replays)
	}
}
