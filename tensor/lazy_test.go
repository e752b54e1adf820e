package tensor_test

import (
	"errors"
	"math"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// flushLog collects the flushes of a test.
type flushLog struct {
	mu sync.Mutex
	fs []tensor.FlushStats
}

func watchFlushes(t *testing.T) *flushLog {
	l := &flushLog{}
	t.Cleanup(tensor.AddFlushHook(func(s tensor.FlushStats) {
		l.mu.Lock()
		l.fs = append(l.fs, s)
		l.mu.Unlock()
	}))
	return l
}

func (l *flushLog) reasons() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var r []string
	for _, f := range l.fs {
		r = append(r, f.Reason)
	}
	return r
}

func inMode(t *testing.T, m tensor.Mode) {
	prev := tensor.SetMode(m)
	t.Cleanup(func() { tensor.SetMode(prev) })
}

func randT(dev device.Device, seed uint64, shape ...int) *tensor.Tensor {
	g := tensor.NewGenerator(seed)
	return tensor.RandnGen(g, dev, dtype.F32, shape...)
}

// TestFusedMatchesStrict runs the same programs in Strict and Fused mode and
// compares the results bit for bit; each program exercises one part of the
// recording: chains, broadcasting, views of pending values, in-place writes
// (whole storages and partial views, of new and of existing tensors),
// reductions, matmul and autograd.
func TestFusedMatchesStrict(t *testing.T) {
	cases := []struct {
		name string
		f    func(dev device.Device) []*tensor.Tensor
	}{
		{"chain", func(dev device.Device) []*tensor.Tensor {
			x := randT(dev, 1, 64, 33)
			a, b, c := randT(dev, 2, 33), randT(dev, 3, 64, 1), randT(dev, 4, 64, 33)
			return []*tensor.Tensor{x.Mul(a).Add(b).Gelu().Mul(c)}
		}},
		{"views", func(dev device.Device) []*tensor.Tensor {
			x := randT(dev, 5, 6, 8).Exp()
			y := x.T().Slice(0, 1, 7, 2).Add(tensor.Scalar(1.5))
			return []*tensor.Tensor{y, x.Narrow(1, 2, 3).Sum([]int{1}, false)}
		}},
		{"inplace-whole", func(dev device.Device) []*tensor.Tensor {
			w := randT(dev, 6, 4, 5)
			w.AddInPlace(randT(dev, 7, 4, 5).Tanh())
			w.MulInPlace(tensor.Scalar(0.5))
			return []*tensor.Tensor{w}
		}},
		{"inplace-partial", func(dev device.Device) []*tensor.Tensor {
			w := randT(dev, 8, 4, 5)
			p := w.Exp() // pending in Fused mode
			p.Narrow(1, 1, 2).MulInPlace(tensor.Scalar(-2.0))
			w.Slice(0, 0, 4, 2).AddInPlace(tensor.Scalar(3.0)) // materialised storage, partial write
			return []*tensor.Tensor{w, p}
		}},
		{"matmul-softmax", func(dev device.Device) []*tensor.Tensor {
			x, w := randT(dev, 9, 16, 32), randT(dev, 10, 24, 32)
			return []*tensor.Tensor{tensor.Softmax(tensor.Linear(x, w, nil), -1)}
		}},
		{"autograd", func(dev device.Device) []*tensor.Tensor {
			x := randT(dev, 11, 8, 16)
			w := randT(dev, 12, 4, 16)
			w.SetRequiresGrad(true)
			loss := tensor.Linear(x, w, nil).Gelu().Sum(nil, false)
			loss.Backward()
			return []*tensor.Tensor{loss, w.Grad()}
		}},
	}
	dev := tensor.MustDevice("cpu")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev := tensor.SetMode(tensor.Strict)
			want := c.f(dev)
			tensor.SetMode(tensor.Fused)
			log := watchFlushes(t)
			got := c.f(dev)
			tensor.SetMode(prev)
			for i := range want {
				if !slices.Equal(got[i].Shape(), want[i].Shape()) {
					t.Fatalf("output %d: shape %v, want %v", i, got[i].Shape(), want[i].Shape())
				}
				if g, w := got[i].Float32s(), want[i].Float32s(); !slices.Equal(g, w) {
					t.Errorf("output %d differs from Strict:\n got %v\nwant %v", i, g[:min(8, len(g))], w[:min(8, len(w))])
				}
			}
			if len(log.reasons()) == 0 {
				t.Errorf("no flush happened in Fused mode")
			}
		})
	}
}

// TestFusedFlushTriggers checks the flush points: a read, Sync, the end of
// Backward, the node limit, and leaving the mode.
func TestFusedFlushTriggers(t *testing.T) {
	dev := tensor.MustDevice("cpu")
	inMode(t, tensor.Fused)
	log := watchFlushes(t)

	x := randT(dev, 1, 3, 3)
	y := x.Exp().Add(x)
	if got := log.reasons(); len(got) != 0 {
		t.Fatalf("flushed before any read: %v", got)
	}
	_ = y.Sum(nil, false).Item()
	if got := log.reasons(); len(got) != 1 || got[0] != "to_host" {
		t.Fatalf("after Item: flushes %v, want [to_host]", got)
	}
	z := y.Mul(y)
	if err := tensor.Sync(dev); err != nil {
		t.Fatal(err)
	}
	if got := log.reasons(); len(got) != 2 || got[1] != "sync" {
		t.Fatalf("after Sync: flushes %v", got)
	}
	w := randT(dev, 2, 3)
	w.SetRequiresGrad(true)
	z.Mul(w).Sum(nil, false).Backward()
	if got := log.reasons(); got[len(got)-1] != "backward" {
		t.Fatalf("after Backward: flushes %v", got)
	}
	prevLimit := tensor.SetFuseNodeLimit(10)
	defer tensor.SetFuseNodeLimit(prevLimit)
	before := len(log.reasons())
	v := x
	for range 25 {
		v = v.Add(tensor.Scalar(1.0))
	}
	n := 0
	log.mu.Lock()
	for _, f := range log.fs[before:] {
		if f.Reason == "node-limit" || f.Reason == "repeat" {
			n++
		}
		if f.Nodes > 10 {
			t.Errorf("a %d-node graph with node limit 10 (%s)", f.Nodes, f.Reason)
		}
	}
	log.mu.Unlock()
	if n < 2 {
		t.Fatalf("node limit 10, 25 ops: %d node-limit or repeat flushes (%v)", n, log.reasons())
	}
	tensor.SetMode(tensor.Strict)
	if got := log.reasons(); got[len(got)-1] != "mode-change" {
		t.Fatalf("leaving Fused mode: flushes %v", got)
	}
	want := x.Float32s()
	for i := range want {
		for range 25 {
			want[i] += 1
		}
	}
	if got := v.Float32s(); !slices.Equal(got, want) {
		t.Fatalf("after 25 adds: %v, want %v", got, want)
	}
}

// TestFusedExpectsWork: recording ops in Fused mode tells a backend that
// implements device.WorkExpecter that a program is coming, at least every
// eighth op; Strict mode does not.
func TestFusedExpectsWork(t *testing.T) {
	dev := device.Device{Type: "testdev"}
	x := randT(dev, 1, 4)
	for _, c := range []struct {
		mode tensor.Mode
		want bool
	}{{tensor.Strict, false}, {tensor.Fused, true}} {
		inMode(t, c.mode)
		before := testBackend.expects.Load()
		y := x
		for range 24 {
			y = y.Exp().Add(x).Mul(x)
		}
		got := testBackend.expects.Load() - before
		// Every eighth op (72 ops, and the graph may be cut where the
		// sequence repeats).
		if c.want && got < 9 || !c.want && got != 0 {
			t.Errorf("%v: 72 ops called ExpectWork %d times", c.mode, got)
		}
		_ = y.Float32s()
	}
}

// TestFusedRepeatsReuseProgram: a loop that never reads a value is cut
// where it repeats, and later iterations run the cached program.
func TestFusedRepeatsReuseProgram(t *testing.T) {
	dev := tensor.MustDevice("cpu")
	inMode(t, tensor.Fused)
	log := watchFlushes(t)
	w := randT(dev, 3, 8, 8)
	x := randT(dev, 4, 8, 8)
	for range 12 {
		h := x.Matmul(w).Tanh().Add(x)
		x = h.Mul(tensor.Scalar(0.5)).Sub(h.Exp().Mul(tensor.Scalar(0.01)))
	}
	_ = x.Float32s()
	var repeat, memory int
	log.mu.Lock()
	for _, f := range log.fs {
		if f.Reason == "repeat" {
			repeat++
		}
		if f.Tier == "memory" {
			memory++
		}
	}
	log.mu.Unlock()
	if repeat < 4 || memory < 3 {
		t.Fatalf("12 identical iterations: %d repeat cuts, %d cached programs reused: %v", repeat, memory, log.reasons())
	}
}

// TestFusedStepCutAfterBackward: a training loop whose steps repeat is cut
// at the end of Backward, not inside it, and each step's program outputs
// no temporary of the backward pass or of an in-place op. Without a
// garbage collection (the default) the values user code made are outputs
// too (the forward pass's six, the two scaled gradients); with SetFuseGC
// only the values still referenced are: the weights and their gradients.
func TestFusedStepCutAfterBackward(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gc      bool
		outputs int
	}{
		{"no-gc", false, 4 + 6 + 2},
		{"gc", true, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := tensor.SetFuseGC(tc.gc)
			defer tensor.SetFuseGC(prev)
			dev := tensor.MustDevice("cpu")
			inMode(t, tensor.Fused)
			log := watchFlushes(t)
			w1 := randT(dev, 1, 256, 512).Detach()
			w2 := randT(dev, 2, 512, 64).Detach()
			w1.SetRequiresGrad(true)
			w2.SetRequiresGrad(true)
			x := randT(dev, 3, 256, 256)
			for range 12 {
				w1.SetGrad(nil)
				w2.SetGrad(nil)
				loss := x.Matmul(w1).Relu().Matmul(w2).Square().Mean(nil, false)
				loss.Backward()
				tensor.NoGrad(func() {
					w1.SubInPlace(w1.Grad().Mul(tensor.Scalar(0.1)))
					w2.SubInPlace(w2.Grad().Mul(tensor.Scalar(0.1)))
				})
			}
			_ = w1.Float32s()
			log.mu.Lock()
			steady := slices.Clone(log.fs[len(log.fs)-4 : len(log.fs)-1])
			log.mu.Unlock()
			for _, f := range steady {
				if f.Reason != "backward" || f.Tier != "memory" {
					t.Fatalf("steady-state flushes %v: want each step's program cut at the end of Backward and reused", log.reasons())
				}
				if f.Outputs != tc.outputs {
					t.Fatalf("a step's program has %d outputs, want %d: %+v", f.Outputs, tc.outputs, f)
				}
			}
		})
	}
}

// forcedGCs is the number of garbage collections the program forced
// (runtime.GC) so far.
func forcedGCs() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestFusedFlushForcesNoGC: a flush of a graph past the size from which
// SetFuseGC(true) collects (7.5 MiB of pending values) but below
// SetFuseGCBytes's (32 MiB by default) forces no garbage collection, and
// its outputs are every value the graph gave a tensor, whatever the
// collector did (so its program does not depend on it); with SetFuseGC,
// or with the pending values past SetFuseGCBytes's size (a smaller size
// set here), it collects and outputs only the live values; with
// SetFuseGCBytes(0) a graph of any size collects nothing.
func TestFusedFlushForcesNoGC(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gc      bool
		gcBytes int64 // SetFuseGCBytes; -1: the default
		forced  bool
		max     int // outputs at most
		min     int // outputs at least
	}{
		{"default", false, -1, false, 1 << 30, 120},
		{"gc", true, -1, true, 3, 1},
		{"bytes", false, 4 << 20, true, 3, 1},
		{"bytes-off", false, 0, false, 1 << 30, 120},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := tensor.SetFuseGC(tc.gc)
			defer tensor.SetFuseGC(prev)
			if tc.gcBytes >= 0 {
				defer tensor.SetFuseGCBytes(tensor.SetFuseGCBytes(tc.gcBytes))
			}
			dev := tensor.MustDevice("cpu")
			inMode(t, tensor.Fused)
			log := watchFlushes(t)
			x := randT(dev, 5, 1<<14) // 64 KiB a value: 120 of them past fuseGCMinBytes
			y := x
			for range 60 {
				y = y.Mul(tensor.Scalar(1.01)).Add(tensor.Scalar(0.001))
			}
			before := forcedGCs()
			got := y.Sum(nil, false).Item()
			forced := forcedGCs() != before
			if forced != tc.forced {
				t.Fatalf("flush forced a collection: %v, want %v", forced, tc.forced)
			}
			want := x.Float32s()
			for i := range want {
				for range 60 {
					want[i] = want[i]*1.01 + 0.001
				}
			}
			if ys := y.Float32s(); !slices.Equal(ys, want) {
				t.Fatalf("y differs from the host computation")
			}
			_ = got
			log.mu.Lock()
			defer log.mu.Unlock()
			if len(log.fs) != 1 {
				t.Fatalf("flushes %v", log.fs)
			}
			if f := log.fs[0]; f.Outputs > tc.max || f.Outputs < tc.min {
				t.Fatalf("%d-node graph materialised %d values, want %d..%d", f.Nodes, f.Outputs, tc.min, tc.max)
			}
		})
	}
}

// TestFusedBackwardKeepsWhatHooksSee: the backward pass's temporaries are
// no outputs, but what user code saw or made inside the pass is: a
// tensor a hook made and kept, a retained gradient, the gradients Grad
// returns.
func TestFusedBackwardKeepsWhatHooksSee(t *testing.T) {
	dev := tensor.MustDevice("cpu")
	run := func() []float32 {
		w := randT(dev, 7, 16, 8).Detach()
		w.SetRequiresGrad(true)
		x := randT(dev, 8, 4, 16)
		var kept, seen *tensor.Tensor
		h := x.Matmul(w).Tanh()
		h.RetainGrad()
		h.RegisterHook(func(g *tensor.Tensor) *tensor.Tensor {
			kept = g.Mul(tensor.Scalar(3)).Add(tensor.Scalar(1))
			return nil
		})
		w.RegisterHook(func(g *tensor.Tensor) *tensor.Tensor {
			seen = g
			return g.Mul(tensor.Scalar(2))
		})
		h.Square().Sum(nil, false).Backward()
		s := x.Matmul(w).Exp().Sum(nil, false)
		one := tensor.FromSlice(dev, []float32{1}).Reshape()
		gs := tensor.Grad([]*tensor.Tensor{s}, []*tensor.Tensor{one}, []*tensor.Tensor{w}, false)
		var out []float32
		for _, v := range []*tensor.Tensor{kept, seen, h.Grad(), w.Grad(), gs[0]} {
			out = append(out, v.Float32s()...)
		}
		return out
	}
	want := run()
	inMode(t, tensor.Fused)
	if got := run(); !slices.Equal(got, want) {
		t.Fatalf("Fused differs from Strict")
	}
}

// TestTraceReadIsError: reading a value inside a trace panics with an error
// naming the caller's line; the trace can be aborted and the goroutine goes
// back to eager execution.
func TestTraceReadIsError(t *testing.T) {
	dev := tensor.MustDevice("cpu")
	x := randT(dev, 6, 4)
	tr, syms := tensor.BeginTrace(dev, []*tensor.Tensor{x})
	err := tensor.Catch(func() { _ = syms[0].Exp().Sum(nil, false).Item() })
	tr.Abort()
	var te *tensor.Error
	if !errors.As(err, &te) || !errors.Is(err, tensor.ErrTraceRead) {
		t.Fatalf("got %v, want an *Error wrapping ErrTraceRead", err)
	}
	if !strings.Contains(te.Site, "lazy_test.go:") {
		t.Fatalf("error site %q does not name the test's line", te.Site)
	}
	if tensor.Tracing() {
		t.Fatal("still tracing after Abort")
	}
	if got := x.Exp().Float32s(); len(got) != 4 {
		t.Fatal("eager op after the trace failed")
	}
}

// TestTraceWritesBack: a traced step that updates a tensor made before the
// trace (as an optimizer updates weights) writes the new value into it when
// the program runs, every run.
func TestTraceWritesBack(t *testing.T) {
	dev := tensor.MustDevice("cpu")
	w := randT(dev, 7, 3, 4)
	ref := w.Float32s()
	for step := range 3 {
		x := randT(dev, uint64(10+step), 3, 4)
		tr, syms := tensor.BeginTrace(dev, []*tensor.Tensor{x})
		w.SubInPlace(syms[0].Mul(tensor.Scalar(0.1)))
		out := w.Sum(nil, false)
		tg := tr.End([]*tensor.Tensor{out})
		prog, err := tensor.CompileGraph(t.Context(), dev, backendFor(t, dev), tg.Graph, device.CompileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res := tg.Run(prog, tensor.ProgramInfo{})
		xs := x.Float32s()
		var sum float32
		for i := range ref {
			ref[i] -= xs[i] * float32(0.1)
		}
		if got := w.Float32s(); !slices.Equal(got, ref) {
			t.Fatalf("step %d: w = %v, want %v", step, got, ref)
		}
		for _, v := range w.Float32s() {
			sum += v
		}
		if got := res[0].Item(); math.Abs(got-float64(sum)) > 1e-5 {
			t.Fatalf("step %d: returned sum %v, want %v", step, got, sum)
		}
	}
}

func backendFor(t *testing.T, dev device.Device) device.Backend {
	be, err := device.Lookup(dev.Type)
	if err != nil {
		t.Fatal(err)
	}
	return be
}

// TestGradModePerGoroutine: NoGrad on one goroutine does not leak into
// goroutines running at the same time (the per-goroutine identity).
func TestGradModePerGoroutine(t *testing.T) {
	dev := tensor.MustDevice("cpu")
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := randT(dev, uint64(i), 3)
			w.SetRequiresGrad(true)
			for range 50 {
				if i%2 == 0 {
					tensor.NoGrad(func() {
						if w.Mul(w).RequiresGrad() {
							errs <- "NoGrad region recorded a graph"
						}
					})
				} else if !w.Mul(w).RequiresGrad() {
					errs <- "another goroutine's NoGrad disabled recording"
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// TestFusedDecompositionTemporaries: the intermediates of a composite's
// decomposition are no outputs of the Fused graph when nothing but the
// decomposition can reach them (no gradient needed, or the composite
// records its own VJP), and they are kept when the composite is
// differentiated through its decomposition: a read between the forward
// and the backward pass flushes the forward, and the backward still finds
// them.
func TestFusedDecompositionTemporaries(t *testing.T) {
	dev := tensor.MustDevice("cpu")
	x := randT(dev, 1, 8, 5)
	ys := []int64{0, 1, 2, 3, 4, 0, 1, 2}
	target := tensor.FromSlice(dev, ys, 8)
	outputs := func(f func() *tensor.Tensor) (int, *tensor.Tensor) {
		t.Helper()
		inMode(t, tensor.Fused)
		tensor.Flush(dev)
		log := watchFlushes(t)
		y := f()
		tensor.Flush(dev)
		log.mu.Lock()
		defer log.mu.Unlock()
		n := 0
		for _, f := range log.fs {
			n += f.Outputs
		}
		tensor.SetMode(tensor.Strict)
		return n, y
	}
	for _, grad := range []bool{false, true} {
		xg := x.Detach()
		xg.SetRequiresGrad(grad)
		// cross_entropy has its own VJP: with or without a gradient its
		// decomposition's log_softmax, gather, mean... stay inside.
		n, loss := outputs(func() *tensor.Tensor { return tensor.CrossEntropy(xg, target, tensor.CrossEntropyOpts{}) })
		if n != 1 {
			t.Errorf("grad %v: cross_entropy materialised %d values, want 1 (the loss)", grad, n)
		}
		want := tensor.CrossEntropy(x, target, tensor.CrossEntropyOpts{}).Item()
		if got := loss.Item(); got != want {
			t.Errorf("grad %v: Fused loss %v, Strict %v", grad, got, want)
		}
	}
	// linear and mse_loss have no VJP of their own: they are
	// differentiated through their decompositions, whose autograd nodes
	// hold the intermediates (mse_loss's square needs the difference). Read
	// the output (a flush), then run the backward pass.
	w, b := randT(dev, 2, 3, 5), randT(dev, 3, 3)
	y0 := randT(dev, 4, 8, 3)
	grads := func(m tensor.Mode) []float32 {
		inMode(t, m)
		wg, bg := w.Detach(), b.Detach()
		wg.SetRequiresGrad(true)
		bg.SetRequiresGrad(true)
		loss := tensor.MSELoss(tensor.Linear(x, wg, bg), y0, tensor.LossOpts{})
		_ = loss.Item()
		loss.Backward()
		return append(wg.Grad().Float32s(), bg.Grad().Float32s()...)
	}
	if got, want := grads(tensor.Fused), grads(tensor.Strict); !slices.Equal(got, want) {
		t.Errorf("linear and mse_loss gradients after a flush between forward and backward: Fused %v, Strict %v", got, want)
	}
}

// TestOpAllocations bounds the allocations of one small eager add in
// Strict mode and of recording one in Fused mode (the Fused graph flushed
// every 64 ops, amortised), so that the per-op overhead does not creep
// back: 32-34 and 36-38 before the launch, call and record paths were
// trimmed (6241584), 20-22 and 25-27 after.
func TestOpAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts under -race include sync.Pool's random drops")
	}
	dev := tensor.MustDevice("cpu")
	x, y := randT(dev, 1, 16), randT(dev, 2, 16)
	for _, c := range []struct {
		mode tensor.Mode
		max  float64
	}{{tensor.Strict, 24}, {tensor.Fused, 30}} {
		inMode(t, c.mode)
		got := testing.AllocsPerRun(10, func() {
			z := x
			for range 64 {
				z = z.Add(y)
			}
			tensor.Flush(dev)
		}) / 64
		if got > c.max {
			t.Errorf("%v: %.1f allocations per add, want at most %v", c.mode, got, c.max)
		} else {
			t.Logf("%v: %.1f allocations per add", c.mode, got)
		}
	}
}
