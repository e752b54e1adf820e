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
	if CurrentMode() == Fused {
		t.Skip("eager freeing: Fused mode keeps a pass's storages for its pending graph")
	}
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

// TestGradConsumedByHooks: a leaf whose grad-ready hooks consume its
// gradient gets no Grad, its hooks see the right values (also when two
// leaves receive one tensor, as add's VJP gives), and the pass frees each
// consumed gradient as soon as nothing else holds it, so the peak of a
// backward over many such leaves stays near one gradient's size.
func TestGradConsumedByHooks(t *testing.T) {
	if CurrentMode() == Fused {
		t.Skip("eager freeing: Fused mode keeps a pass's storages for its pending graph")
	}
	dev := MustDevice("cpu")
	be := backendOf(dev)
	prev := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(prev)
	const n = 1 << 16 // 256 KiB of f32
	ones := make([]float32, n)
	for i := range ones {
		ones[i] = 1
	}
	for _, consume := range []bool{false, true} {
		const layers = 8
		ws := make([]*Tensor, layers)
		seen := make([]float64, layers)
		for i := range ws {
			ws[i] = FromSlice(dev, ones, n).SetRequiresGrad(true)
			i := i
			ws[i].RegisterGradReadyHook(func(g *Tensor) { seen[i] = g.Sum(nil, false).Float64s()[0] })
			if consume {
				ws[i].SetGradConsumedByHooks(true)
			}
		}
		// A chain: h = x·w0·w1·…, so each w's gradient appears when
		// backward reaches it, one after another; w6 and w7 enter through
		// one add (the same gradient tensor for both).
		x := FromSlice(dev, ones, n).MulScalar(0.5)
		h := x
		for i := 0; i < 6; i++ {
			h = h.Mul(ws[i])
		}
		h = h.Mul(ws[6].Add(ws[7]))
		loss := h.Sum(nil, false)
		rp, ok := be.(interface{ ResetPeakMemory(int) })
		if !ok {
			t.Skip("the cpu backend has no ResetPeakMemory")
		}
		rp.ResetPeakMemory(dev.Index)
		base := be.MemStats(dev.Index).Allocated
		loss.Backward()
		peak := be.MemStats(dev.Index).PeakAllocated - base
		for i := range ws {
			// d/dw_i of Σ 0.5·Π w·(w6+w7) at ones: 0.5·2 = 1 for i < 6, 0.5 for w6, w7.
			want := float64(n)
			if i >= 6 {
				want = float64(n) / 2
			}
			if seen[i] != want {
				t.Errorf("consume %v: hook of w%d saw a sum of %v, want %v", consume, i, seen[i], want)
			}
			if got := ws[i].Grad() != nil; got == consume {
				t.Errorf("consume %v: w%d has Grad %v", consume, i, got)
			}
		}
		t.Logf("consume %v: backward peak %d KiB", consume, peak>>10)
		if consume && peak > 6*4*n {
			t.Errorf("backward peaked at %d bytes with consumed gradients, want at most a few gradients (%d each)", peak, 4*n)
		}
		if !consume && peak < layers*4*n {
			t.Errorf("backward peaked at %d bytes keeping every gradient: the test no longer measures the difference", peak)
		}
	}
}

// TestBackwardFreesCopiedSums: a leaf's gradient that arrives as a view in
// another layout (a transposed product) is copied into the leaf's layout;
// the pass then frees the product it copied from, without a collection.
func TestBackwardFreesCopiedSums(t *testing.T) {
	if CurrentMode() == Fused {
		t.Skip("eager freeing: Fused mode keeps a pass's storages for its pending graph")
	}
	dev := MustDevice("cpu")
	be := backendOf(dev)
	prev := debug.SetGCPercent(-1) // no collection: only the pass frees
	defer debug.SetGCPercent(prev)
	const r, c = 256, 512
	ws, cs := make([]float32, r*c), make([]float32, r*c)
	for i := range ws {
		ws[i], cs[i] = float32(i%5)-2, float32(i%3)-1
	}
	w := FromSlice(dev, ws, r, c).SetRequiresGrad(true)
	k := FromSlice(dev, cs, c, r)
	y := w.T().Mul(k).Sum(nil, false)
	before := be.MemStats(dev.Index).Allocated
	y.Backward()
	grew := be.MemStats(dev.Index).Allocated - before
	// w.grad is the one new buffer; the product g·k it was copied from
	// (as large) is back in the cache.
	if limit := int64(4*r*c) + 4096; grew > limit {
		t.Errorf("backward left %d bytes allocated, want at most %d", grew, limit)
	}
	g := w.Grad()
	if g.Layout().IsContiguous() != true {
		t.Fatalf("w.grad is not contiguous")
	}
	got := g.Float32s()
	for i := range got {
		if want := cs[(i%c)*r+i/c]; got[i] != want {
			t.Fatalf("grad[%d] = %v, want %v", i, got[i], want)
		}
	}
}

// TestLaunchFreesContiguousCopies: a kernel that needs contiguous inputs
// gets copies of strided ones; they go back to the allocator when the
// kernel is done, without a collection.
func TestLaunchFreesContiguousCopies(t *testing.T) {
	if CurrentMode() == Fused {
		t.Skip("eager launches only")
	}
	dev := MustDevice("cpu")
	be := backendOf(dev)
	prev := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(prev)
	xs := make([]float32, 2*3*64*64)
	for i := range xs {
		xs[i] = float32(i%11) - 5
	}
	x := FromSlice(dev, xs, 2, 64, 64, 3) // NHWC, read as NCHW through a permute
	w := FromSlice(dev, []float32{1, 2, 3}, 1, 3, 1, 1)
	xp := x.Permute(0, 3, 1, 2)
	before := be.MemStats(dev.Index).Allocated
	y := Conv2d(xp, w, nil, Conv2dOpts{})
	out := y.Float32s()
	y.Free()
	if grew := be.MemStats(dev.Index).Allocated - before; grew != 0 {
		t.Errorf("a convolution of strided inputs left %d bytes allocated", grew)
	}
	// out[n, 0, h, w] = Σ_c (c+1)·x[n, h, w, c] (the 1x1 weight is 1, 2, 3).
	for i, v := range out {
		n, hw := i/(64*64), i%(64*64)
		var want float32
		for ch := 0; ch < 3; ch++ {
			want += float32(ch+1) * xs[(n*64*64+hw)*3+ch]
		}
		if v != want {
			t.Fatalf("out[%d] = %v, want %v", i, v, want)
		}
	}
}
