package compile_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gotpu/gotpu"
	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/optim"
	"github.com/gotpu/gotpu/tensor"
)

var cpu = gotpu.MustDevice("cpu")

// mlp is a small classifier with the MNIST MLP's structure.
type mlp struct {
	nn.Base
	fc1, fc2 *nn.Linear
}

func newMLP(dev device.Device, in, hidden, out int) *mlp {
	m := &mlp{fc1: nn.NewLinear(dev, in, hidden, true), fc2: nn.NewLinear(dev, hidden, out, true)}
	m.RegisterModule("fc1", m.fc1)
	m.RegisterModule("fc2", m.fc2)
	return m
}

func (m *mlp) forward(x *tensor.Tensor) *tensor.Tensor {
	return m.fc2.Forward(m.fc1.Forward(x).Relu())
}

type setup struct {
	model *mlp
	opt   optim.Optimizer
	sched optim.Scheduler
}

func newSetup(optName string) setup {
	tensor.ManualSeed(7)
	m := newMLP(cpu, 20, 32, 5)
	params := nn.Parameters(m)
	var opt optim.Optimizer
	switch optName {
	case "sgd":
		opt = optim.NewSGD([]*optim.Group{{Params: params, Options: map[string]float64{"momentum": 0.9}}}, 0.05)
	default:
		opt = optim.NewAdamW(optim.Params(params), 1e-2)
	}
	return setup{model: m, opt: opt, sched: optim.NewCosineAnnealingLR(opt, 10, 0)}
}

func (s setup) step(in ...*tensor.Tensor) []*tensor.Tensor {
	s.opt.ZeroGrad()
	loss := tensor.CrossEntropy(s.model.forward(in[0]), in[1], tensor.CrossEntropyOpts{})
	loss.Backward()
	s.opt.Step()
	return []*tensor.Tensor{loss}
}

func batch(i int) (*tensor.Tensor, *tensor.Tensor) {
	g := tensor.NewGenerator(uint64(100 + i))
	x := tensor.RandnGen(g, cpu, dtype.F32, 16, 20)
	y := make([]int64, 16)
	for k := range y {
		y[k] = int64((k*7 + i) % 5)
	}
	return x, tensor.FromSlice(cpu, y, 16)
}

// TestTrainingStepMatchesStrict: forward, Backward and the optimizer step
// (with a learning-rate schedule) as one compiled program give the same
// losses and weights as Strict, and compile at most two programs (the
// first step creates the optimizer's state).
func TestTrainingStepMatchesStrict(t *testing.T) {
	for _, optName := range []string{"adamw", "sgd"} {
		t.Run(optName, func(t *testing.T) {
			ref := newSetup(optName)
			var want []float64
			for i := range 6 {
				x, y := batch(i)
				want = append(want, ref.step(x, y)[0].Item())
				ref.sched.Step()
			}
			s := newSetup(optName)
			fn := compile.Fn(s.step, compile.Name("step-"+optName))
			var got []float64
			for i := range 6 {
				x, y := batch(i)
				out, err := fn.Call(x, y)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, out[0].Item())
				s.sched.Step()
			}
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-5*math.Max(1, math.Abs(want[i])) {
					t.Fatalf("losses %v, Strict %v", got, want)
				}
			}
			wp, gp := nn.Parameters(ref.model), nn.Parameters(s.model)
			for i := range wp {
				a, b := wp[i].Float32s(), gp[i].Float32s()
				for k := range a {
					if math.Abs(float64(a[k]-b[k])) > 1e-5 {
						t.Fatalf("parameter %d differs after 6 steps: %v vs %v", i, b[k], a[k])
					}
				}
			}
			st := fn.Stats()
			if st.Programs > 2 || st.Calls != 6 || st.Tiers["memory"] < 4 {
				t.Fatalf("stats %+v: want at most 2 programs, 6 calls, later calls from memory", st)
			}
		})
	}
}

// TestRecompileLimit: every new input shape is a new program; past the
// limit the call fails with an error that says what to do.
func TestRecompileLimit(t *testing.T) {
	fn := compile.Fn(func(in ...*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{in[0].Exp().Sum(nil, false)}
	}, compile.RecompileLimit(3), compile.Name("shapes"))
	var err error
	for n := 1; n <= 4 && err == nil; n++ {
		_, err = fn.Call(tensor.Ones(cpu, dtype.F32, n))
	}
	if !errors.Is(err, compile.ErrTooManyRecompiles) || !strings.Contains(err.Error(), "compile.Bound") {
		t.Fatalf("4 shapes with limit 3: %v", err)
	}
	if out, err := fn.Call(tensor.Ones(cpu, dtype.F32, 2)); err != nil || math.Abs(out[0].Item()-2*math.E) > 1e-6 {
		if err == nil {
			t.Fatalf("known shape after the limit: %v", out[0].Item())
		}
		t.Fatalf("a known shape must still run: %v", err)
	}
}

// TestReadInsideIsError: reading a value inside the function is an error
// naming the line, and the function can be called again.
func TestReadInsideIsError(t *testing.T) {
	bad := true
	fn := compile.Fn(func(in ...*tensor.Tensor) []*tensor.Tensor {
		y := in[0].Mul(in[0])
		if bad {
			_ = y.Item()
		}
		return []*tensor.Tensor{y}
	})
	_, err := fn.Call(tensor.Full(cpu, dtype.F32, 3.0))
	var te *tensor.Error
	if !errors.As(err, &te) || !errors.Is(err, tensor.ErrTraceRead) || !strings.Contains(te.Site, "compile_test.go:") {
		t.Fatalf("got %v", err)
	}
	bad = false
	out, err := fn.Call(tensor.Full(cpu, dtype.F32, 3.0))
	if err != nil || out[0].Item() != 9 {
		t.Fatalf("after the failed trace: %v, %v", out, err)
	}
}

// TestInputsWrittenBack: an in-place write into an input reaches the
// caller's tensor.
func TestInputsWrittenBack(t *testing.T) {
	fn := compile.Fn(func(in ...*tensor.Tensor) []*tensor.Tensor {
		in[0].MulInPlace(tensor.Scalar(2.0))
		in[1].Narrow(0, 1, 2).AddInPlace(tensor.Scalar(10.0))
		return nil
	})
	a := tensor.FromSlice(cpu, []float32{1, 2, 3}, 3)
	b := tensor.FromSlice(cpu, []float32{1, 2, 3, 4}, 4)
	if _, err := fn.Call(a, b); err != nil {
		t.Fatal(err)
	}
	if got := a.Float32s(); !slices.Equal(got, []float32{2, 4, 6}) {
		t.Fatalf("a = %v", got)
	}
	if got := b.Float32s(); !slices.Equal(got, []float32{1, 12, 13, 4}) {
		t.Fatalf("b = %v", got)
	}
}

// TestUnkeptTensorIsError: liveness is decided when a program is first
// traced; a tensor the function starts keeping later gets no value, and
// reading it is an error saying so (not a stale or wrong value).
func TestUnkeptTensorIsError(t *testing.T) {
	var kept *tensor.Tensor
	call := 0
	fn := compile.Fn(func(in ...*tensor.Tensor) []*tensor.Tensor {
		call++
		h := in[0].Exp()
		if call == 3 {
			kept = h
		}
		return []*tensor.Tensor{h.Sum(nil, false)}
	})
	for range 3 {
		if _, err := fn.Call(tensor.Ones(cpu, dtype.F32, 4)); err != nil {
			t.Fatal(err)
		}
	}
	err := tensor.Catch(func() { _ = kept.Float32s() })
	if err == nil || !strings.Contains(err.Error(), "not kept") {
		t.Fatalf("reading an unkept tensor: %v", err)
	}
}
