package tensor

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestAttachReleases: a storage given new buffers again and again (a
// gradient or a weight a program rewrites every step) frees each old
// buffer when the new one arrives, keeps one GC cleanup for its lifetime
// (not one per buffer), and that cleanup frees the last buffer.
func TestAttachReleases(t *testing.T) {
	dev := MustDevice("cpu")
	be := backendOf(dev)
	const n = 1 << 20
	settle := func() int64 {
		var a int64
		for range 20 {
			runtime.GC()
			time.Sleep(2 * time.Millisecond)
			if b := be.MemStats(dev.Index).Allocated; b == a {
				break
			} else {
				a = b
			}
		}
		return a
	}
	base := settle()
	func() {
		st := newStorage(dev, be, n)
		box := st.box
		for i := range 50 {
			buf, err := be.Alloc(dev.Index, n)
			if err != nil {
				t.Fatal(err)
			}
			st.attach(buf)
			if st.box != box {
				t.Fatalf("attach %d made a new cleanup box", i)
			}
			if got := be.MemStats(dev.Index).Allocated - base; got > 2*n {
				t.Fatalf("after %d attaches %d bytes allocated: old buffers are not freed", i+1, got)
			}
		}
		runtime.KeepAlive(st)
	}()
	if got := settle() - base; got != 0 {
		t.Fatalf("%d bytes still allocated after the storage died", got)
	}
}

// TestBackwardFreesTemporaries: an eager Backward returns the buffers of
// its own temporaries (intermediate gradients, a VJP's masks) to the
// allocator when it ends, without a garbage collection; the leaf gradient,
// a gradient a hook kept and a retained gradient stay readable.
func TestBackwardFreesTemporaries(t *testing.T) {
	dev := MustDevice("cpu")
	be := backendOf(dev)
	prev := debug.SetGCPercent(-1) // no collection: only the pass frees
	defer debug.SetGCPercent(prev)
	const n = 1 << 18 // 1 MiB of f32
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(i%7) - 3
	}
	for _, keep := range []string{"none", "hook", "retain"} {
		x := FromSlice(dev, xs, n).SetRequiresGrad(true)
		h := x.MulScalar(2)
		var kept *Tensor
		switch keep {
		case "hook":
			h.RegisterHook(func(g *Tensor) *Tensor { kept = g; return nil })
		case "retain":
			h.RetainGrad()
		}
		y := h.Relu().Exp().Mul(h).Sum(nil, false)
		before := be.MemStats(dev.Index).Allocated
		y.Backward()
		grew := be.MemStats(dev.Index).Allocated - before
		// x.grad is the one new buffer; the gradients of h, relu, exp and
		// the product and relu's mask (6 MiB before) are back in the cache.
		limit := int64(4*n) + 4096
		if keep != "none" {
			limit += 4 * n
		}
		if grew > limit {
			t.Errorf("%s: backward left %d bytes allocated, want at most %d", keep, grew, limit)
		}
		g := x.Grad().Float32s()
		for i, v := range xs {
			// y = Σ exp(relu(h))·h, h = 2x: dy/dx = 2·exp(relu(h))·(h·[h>0] + 1).
			hv := 2 * float64(v)
			w := float32(2)
			if hv > 0 {
				w = float32(2 * math.Exp(hv) * (hv + 1))
			}
			if math.Abs(float64(g[i]-w)) > 1e-5*math.Abs(float64(w)) {
				t.Fatalf("%s: grad[%d] = %v, want %v", keep, i, g[i], w)
			}
		}
		switch keep {
		case "hook":
			if kept == nil || len(kept.Float32s()) != n {
				t.Fatalf("hook's gradient not readable")
			}
		case "retain":
			if h.Grad() == nil || len(h.Grad().Float32s()) != n {
				t.Fatalf("retained gradient not readable")
			}
		}
	}
}
