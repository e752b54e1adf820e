package compile_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/optim"
	"github.com/gotpu/gotpu/tensor"
)

// runSteps calls fn on batches 0..n-1, stepping the schedule after each
// call when sched is set, and returns the losses and, per step, the first
// parameter's gradient after the call.
func runSteps(t *testing.T, fn *compile.Function, s setup, n int, sched bool) (losses []float64, grads [][]float32) {
	t.Helper()
	for i := range n {
		x, y := batch(i)
		out, err := fn.Call(x, y)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		losses = append(losses, out[0].Item())
		grads = append(grads, nn.Parameters(s.model)[0].Grad().Float32s())
		if sched {
			s.sched.Step()
		}
	}
	return losses, grads
}

func sameParams(t *testing.T, a, b setup) {
	t.Helper()
	pa, pb := nn.Parameters(a.model), nn.Parameters(b.model)
	for i := range pa {
		if !slices.Equal(pa[i].Float32s(), pb[i].Float32s()) {
			t.Fatalf("parameter %d differs", i)
		}
	}
}

// TestTraceOnceReplays: under TraceOnce a training step (forward,
// Backward, a fused optimizer step, a schedule stepped outside) is traced
// until its program repeats and then replayed; losses, gradients and
// weights are bit for bit those of tracing every call, the optimizer's
// step count advances on replays, and the learning rate the schedule sets
// between calls is the one used.
func TestTraceOnceReplays(t *testing.T) {
	const n = 8
	for _, optName := range []string{"adamw", "sgd"} {
		t.Run(optName, func(t *testing.T) {
			ref := newSetup(optName)
			wantL, wantG := runSteps(t, compile.Fn(ref.step), ref, n, true)
			s := newSetup(optName)
			fn := compile.Fn(s.step, compile.TraceOnce())
			gotL, gotG := runSteps(t, fn, s, n, true)
			if !slices.Equal(gotL, wantL) {
				t.Fatalf("losses %v, traced every call %v", gotL, wantL)
			}
			for i := range wantG {
				if !slices.Equal(gotG[i], wantG[i]) {
					t.Fatalf("step %d: gradients differ", i)
				}
			}
			sameParams(t, ref, s)
			st := fn.Stats()
			if st.Traces != 3 || st.Replays != n-3 || st.Calls != n {
				t.Fatalf("stats %+v: want 3 traces (the first creates optimizer state), %d replays", st, n-3)
			}
			// The optimizer's Go-side state advanced on replays too.
			_, a := ref.opt.StateDict()
			_, b := s.opt.StateDict()
			if a != b || !strings.Contains(a, fmt.Sprintf("%d", n)) {
				t.Fatalf("optimizer state %s, traced every call %s", b, a)
			}
		})
	}
}

// TestTraceOnceRetraces: what a replay cannot stand in for is traced on
// every call, with the same results as without TraceOnce.
func TestTraceOnceRetraces(t *testing.T) {
	cases := []struct {
		name string
		// step wraps the setup's step; nil: the plain step.
		step func(s setup) func(in ...*tensor.Tensor) []*tensor.Tensor
		opt  string
	}{
		{name: "scheduler inside", opt: "adamw", step: func(s setup) func(in ...*tensor.Tensor) []*tensor.Tensor {
			return func(in ...*tensor.Tensor) []*tensor.Tensor {
				out := s.step(in...)
				s.sched.Step()
				return out
			}
		}},
		{name: "op-by-op optimizer", opt: "rmsprop"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mk := func() (setup, *tensor.Generator) {
				s := newSetup(c.opt)
				if c.opt == "rmsprop" {
					s.opt = optim.NewRMSprop(optim.Params(nn.Parameters(s.model)), 1e-2)
				}
				return s, nil
			}
			stepOf := func(s setup) func(in ...*tensor.Tensor) []*tensor.Tensor {
				if c.step != nil {
					return c.step(s)
				}
				return s.step
			}
			ref, _ := mk()
			tensor.ManualSeed(11)
			wantL, _ := runSteps(t, compile.Fn(stepOf(ref)), ref, 5, false)
			s, _ := mk()
			tensor.ManualSeed(11)
			fn := compile.Fn(stepOf(s), compile.TraceOnce())
			gotL, _ := runSteps(t, fn, s, 5, false)
			if !slices.Equal(gotL, wantL) {
				t.Fatalf("losses %v, traced every call %v", gotL, wantL)
			}
			sameParams(t, ref, s)
			if st := fn.Stats(); st.Replays != 0 || st.Traces != 5 {
				t.Fatalf("stats %+v: want every call traced", st)
			}
		})
	}
}

// TestTraceOnceInvalidated: a replay whose conditions changed — an
// optimizer option a program holds as a constant, an input with another
// layout — traces again instead, and gives what tracing gives.
func TestTraceOnceInvalidated(t *testing.T) {
	ref, s := newSetup("adamw"), newSetup("adamw")
	fnRef, fn := compile.Fn(ref.step), compile.Fn(s.step, compile.TraceOnce())
	call := func(i int, x, y *tensor.Tensor) {
		t.Helper()
		a, err := fnRef.Call(x, y)
		if err != nil {
			t.Fatal(err)
		}
		b, err := fn.Call(x, y)
		if err != nil {
			t.Fatal(err)
		}
		if a[0].Item() != b[0].Item() {
			t.Fatalf("call %d: loss %v, traced every call %v", i, b[0].Item(), a[0].Item())
		}
	}
	for i := range 4 {
		x, y := batch(i)
		call(i, x, y)
	}
	if st := fn.Stats(); st.Replays != 1 {
		t.Fatalf("stats %+v: want the 4th call replayed", st)
	}
	// Betas are attributes of the program, not run-time values.
	for _, o := range []setup{ref, s} {
		o.opt.Groups()[0].Options["betas0"] = 0.8
	}
	x, y := batch(4)
	call(4, x, y)
	if st := fn.Stats(); st.Traces != 4 {
		t.Fatalf("stats %+v: changed betas must trace again", st)
	}
	// A transposed input of the same shape has another layout.
	xt := tensor.RandnGen(tensor.NewGenerator(5), cpu, dtype.F32, 20, 16).T()
	call(5, xt, y)
	if st := fn.Stats(); st.Traces != 5 {
		t.Fatalf("stats %+v: a strided input must trace again", st)
	}
	sameParams(t, ref, s)
}

// TestTraceOnceInputsAndOutputs: on replay an in-place write into an input
// reaches the new input, and each call returns tensors of its own.
func TestTraceOnceInputsAndOutputs(t *testing.T) {
	w := tensor.FromSlice(cpu, []float32{1, 2, 3}, 3)
	fn := compile.Fn(func(in ...*tensor.Tensor) []*tensor.Tensor {
		in[0].AddInPlace(w)
		w.MulInPlace(tensor.Scalar(2.0))
		return []*tensor.Tensor{in[0].Sum(nil, false)}
	}, compile.TraceOnce())
	var outs []*tensor.Tensor
	var ins []*tensor.Tensor
	for i := range 5 {
		x := tensor.Full(cpu, dtype.F32, float64(i), 3)
		out, err := fn.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		ins, outs = append(ins, x), append(outs, out[0])
	}
	for i, x := range ins {
		scale := float32(int(1) << i) // w doubles every call
		want := []float32{float32(i) + scale, float32(i) + 2*scale, float32(i) + 3*scale}
		if got := x.Float32s(); !slices.Equal(got, want) {
			t.Fatalf("call %d: input %v, want %v", i, got, want)
		}
		if got, want := outs[i].Item(), float64(want[0]+want[1]+want[2]); math.Abs(got-want) > 0 {
			t.Fatalf("call %d returned %v, want %v", i, got, want)
		}
	}
	if st := fn.Stats(); st.Replays != 3 {
		t.Fatalf("stats %+v: want 3 replays", st)
	}
}

// dropoutStep is a training step with dropout drawing from g (the default
// generator when nil).
func dropoutStep(s setup, g *tensor.Generator) func(in ...*tensor.Tensor) []*tensor.Tensor {
	return func(in ...*tensor.Tensor) []*tensor.Tensor {
		s.opt.ZeroGrad()
		h := tensor.DropoutGen(g, s.model.fc1.Forward(in[0]).Relu(), 0.3, true)
		loss := tensor.CrossEntropy(s.model.fc2.Forward(h), in[1], tensor.CrossEntropyOpts{})
		loss.Backward()
		s.opt.Step()
		return []*tensor.Tensor{loss}
	}
}

// TestTraceOnceRandom: a step with dropout replays, drawing new masks from
// its generator each call exactly as tracing every call does (the same
// losses and weights bit for bit, the generator in the same state after),
// from the default generator or its own, and a reseed between calls is
// seen.
func TestTraceOnceRandom(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("own generator %v", own), func(t *testing.T) {
			run := func(opts ...compile.Option) ([]float64, setup, *tensor.Generator, compile.Stats) {
				s := newSetup("adamw")
				var g *tensor.Generator
				if own {
					g = tensor.NewGenerator(21)
				} else {
					tensor.ManualSeed(21)
				}
				fn := compile.Fn(dropoutStep(s, g), opts...)
				var losses []float64
				for i := range 7 {
					if i == 5 { // a reseed between calls
						if own {
							g.ManualSeed(99)
						} else {
							tensor.ManualSeed(99)
						}
					}
					x, y := batch(i)
					out, err := fn.Call(x, y)
					if err != nil {
						t.Fatal(err)
					}
					losses = append(losses, out[0].Item())
				}
				if g == nil {
					g = tensor.DefaultGenerator()
				}
				return losses, s, g, fn.Stats()
			}
			wantL, ref, refGen, _ := run()
			ws, wo := refGen.State()
			gotL, s, gen, st := run(compile.TraceOnce())
			if !slices.Equal(gotL, wantL) {
				t.Fatalf("losses %v, traced every call %v", gotL, wantL)
			}
			sameParams(t, ref, s)
			if gs, goff := gen.State(); gs != ws || goff != wo {
				t.Fatalf("generator at (%d, %d), traced every call (%d, %d)", gs, goff, ws, wo)
			}
			if st.Replays == 0 {
				t.Fatalf("stats %+v: a dropout step must replay", st)
			}
			if gotL[3] == gotL[4] {
				t.Fatalf("replayed calls drew the same mask twice")
			}
		})
	}
}
