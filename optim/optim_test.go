package optim

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"

	_ "github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/tensor"
)

type optimCase struct {
	Optimizer string             `json:"optimizer"`
	Options   map[string]float64 `json:"options"`
	P0        []float64          `json:"p0"`
	Grads     [][]float64        `json:"grads"`
	Params    [][]float64        `json:"params"`
}

type schedCase struct {
	Scheduler string             `json:"scheduler"`
	Args      map[string]float64 `json:"args"`
	LR        []float64          `json:"lr"`
	Momentum  []float64          `json:"momentum"`
}

func loadCases(t *testing.T) ([]optimCase, []schedCase) {
	b, err := os.ReadFile("../testdata/optim/optim.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Optimizers []optimCase `json:"optimizers"`
		Schedulers []schedCase `json:"schedulers"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Optimizers, doc.Schedulers
}

func newOpt(name string, p *tensor.Tensor, opts map[string]float64) Optimizer {
	g := []*Group{{Params: []*tensor.Tensor{p}, Options: map[string]float64{}}}
	for k, v := range opts {
		if k == "nesterov" || k == "amsgrad" || k == "centered" {
			if v != 0 {
				g[0].Options[k] = 1
			}
			continue
		}
		g[0].Options[k] = v
	}
	switch name {
	case "sgd":
		return NewSGD(g, opts["lr"])
	case "adam":
		return NewAdam(g, opts["lr"])
	case "adamw":
		return NewAdamW(g, opts["lr"])
	case "rmsprop":
		return NewRMSprop(g, opts["lr"])
	case "adagrad":
		return NewAdagrad(g, opts["lr"])
	}
	panic(name)
}

// withFallback runs f with the op-by-op path forced (or not).
func withFallback(force bool, f func()) {
	prev := forceFallback.Swap(force)
	defer forceFallback.Store(prev)
	f()
}

// paths are the two ways SGD and Adam step: one kernel per parameter, or
// op by op (the path of devices without the kernels).
var paths = []struct {
	name     string
	fallback bool
}{{"fused", false}, {"fallback", true}}

// hasFused reports whether the optimizer has a single-kernel step.
func hasFused(name string) bool { return name == "sgd" || name == "adam" || name == "adamw" }

// TestOptimizersMatchPyTorch replays PyTorch's fixed gradient sequences on
// both paths. The fused kernels reproduce PyTorch's f64 arithmetic op by op,
// so their trajectories must be bit-identical; the op-by-op path orders
// some operations differently and is held to 1e-9 relative.
func TestOptimizersMatchPyTorch(t *testing.T) {
	cases, _ := loadCases(t)
	for _, dev := range []string{"cpu", "nofused"} {
		for _, path := range paths {
			for i, c := range cases {
				exact := hasFused(c.Optimizer) && !path.fallback && dev == "cpu"
				t.Run(fmt.Sprintf("%s/%s/%d_%s", dev, path.name, i, c.Optimizer), func(t *testing.T) {
					withFallback(path.fallback, func() { replay(t, tensor.MustDevice(dev), c, exact, nil) })
				})
			}
		}
	}
}

// replay runs case c on dev, checking every step against PyTorch; between
// steps it calls between (if set) with the step index.
func replay(t *testing.T, dev device.Device, c optimCase, exact bool, between func(step int)) {
	t.Helper()
	p := tensor.FromSlice(dev, c.P0, 3, 4).SetRequiresGrad(true)
	o := newOpt(c.Optimizer, p, c.Options)
	for step, g := range c.Grads {
		if between != nil {
			between(step)
		}
		p.SetGrad(tensor.FromSlice(dev, g, 3, 4))
		o.Step()
		got := p.Float64s()
		for k, want := range c.Params[step] {
			if exact && got[k] != want {
				t.Fatalf("step %d elem %d: got %v want %v bit for bit (diff %g)", step, k, got[k], want, got[k]-want)
			}
			if math.Abs(got[k]-want) > 1e-10+1e-9*math.Abs(want) {
				t.Fatalf("step %d elem %d: got %v want %v", step, k, got[k], want)
			}
		}
	}
}

// TestPathsAlternate switches between the fused and op-by-op paths every
// step: both read and write the same state.
func TestPathsAlternate(t *testing.T) {
	cases, _ := loadCases(t)
	for i, c := range cases {
		if !hasFused(c.Optimizer) {
			continue
		}
		t.Run(fmt.Sprintf("%d_%s", i, c.Optimizer), func(t *testing.T) {
			defer forceFallback.Store(false)
			replay(t, tensor.MustDevice("cpu"), c, false, func(step int) { forceFallback.Store(step%2 == 1) })
		})
	}
}

// TestFusedStateInPlace checks that the fused path is taken on cpu (state
// tensors persist and are updated in place, the parameter's version moves
// once per step) and that the op-by-op path replaces them.
func TestFusedStateInPlace(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	for _, tc := range []struct {
		name string
		mk   func(p *tensor.Tensor) Optimizer
		keys []string
	}{
		{"adamw_amsgrad", func(p *tensor.Tensor) Optimizer {
			return NewAdamW([]*Group{{Params: []*tensor.Tensor{p}, Options: map[string]float64{"amsgrad": 1}}}, 0.01)
		}, []string{"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}},
		{"sgd_momentum", func(p *tensor.Tensor) Optimizer {
			return NewSGD([]*Group{{Params: []*tensor.Tensor{p}, Options: map[string]float64{"momentum": 0.9}}}, 0.1)
		}, []string{"momentum_buffer"}},
	} {
		for _, path := range paths {
			t.Run(tc.name+"/"+path.name, func(t *testing.T) {
				withFallback(path.fallback, func() {
					p := tensor.FromSlice(cpu, []float32{1, -2, 3, 0.5}).SetRequiresGrad(true)
					o := tc.mk(p)
					var st map[string]*tensor.Tensor
					switch o := o.(type) {
					case *Adam:
						st = o.state[0]
					case *SGD:
						st = o.state[0]
					}
					p.SetGrad(tensor.FromSlice(cpu, []float32{0.1, 0.2, -0.3, 0.4}))
					o.Step()
					before := map[string]*tensor.Tensor{}
					for _, k := range tc.keys {
						if st[k] == nil {
							t.Fatalf("no %s after a step", k)
						}
						before[k] = st[k]
					}
					v := p.Version()
					o.Step()
					for _, k := range tc.keys {
						if same := st[k] == before[k]; same == path.fallback {
							t.Errorf("%s: same tensor after a step = %v on the %s path", k, same, path.name)
						}
					}
					if path.fallback == false && p.Version() != v+1 {
						t.Errorf("param version %d -> %d, want one in-place write", v, p.Version())
					}
				})
			})
		}
	}
}

func TestSchedulersMatchPyTorch(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	_, scheds := loadCases(t)
	for _, c := range scheds {
		p := tensor.FromSlice(cpu, []float32{0}).SetRequiresGrad(true)
		o := NewSGD([]*Group{{Params: []*tensor.Tensor{p}, Options: map[string]float64{"momentum": 0.9}}}, 0.1)
		var s Scheduler
		switch c.Scheduler {
		case "step":
			s = NewStepLR(o, int(c.Args["step_size"]), c.Args["gamma"])
		case "cosine":
			s = NewCosineAnnealingLR(o, int(c.Args["t_max"]), c.Args["eta_min"])
		case "onecycle":
			s = NewOneCycleLR(o, c.Args["max_lr"], int(c.Args["total"]), OneCycleOpts{})
		}
		for n := range c.LR {
			lr := o.Groups()[0].Options["lr"]
			mom := o.Groups()[0].Options["momentum"]
			if math.Abs(lr-c.LR[n]) > 1e-12+1e-9*math.Abs(c.LR[n]) || math.Abs(mom-c.Momentum[n]) > 1e-9 {
				t.Fatalf("%s step %d: lr %v momentum %v, want %v %v", c.Scheduler, n, lr, mom, c.LR[n], c.Momentum[n])
			}
			s.Step()
		}
	}
}

func TestStateDictRoundTrip(t *testing.T) {
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) { withFallback(path.fallback, func() { stateDictRoundTrip(t) }) })
	}
}

func stateDictRoundTrip(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	mk := func() (*tensor.Tensor, *Adam) {
		p := tensor.FromSlice(cpu, []float64{1, 2}).SetRequiresGrad(true)
		return p, NewAdam(Params([]*tensor.Tensor{p}), 0.1)
	}
	p1, o1 := mk()
	for i := 0; i < 3; i++ {
		p1.SetGrad(tensor.FromSlice(cpu, []float64{0.5, -1}))
		o1.Step()
	}
	st, meta := o1.StateDict()
	p2, o2 := mk()
	tensor.Apply("copy_", []*tensor.Tensor{p2.Detach(), p1.Detach()}, nil)
	if err := o2.LoadStateDict(st, meta); err != nil {
		t.Fatal(err)
	}
	p1.SetGrad(tensor.FromSlice(cpu, []float64{0.1, 0.2}))
	p2.SetGrad(tensor.FromSlice(cpu, []float64{0.1, 0.2}))
	o1.Step()
	o2.Step()
	a, b := p1.Float64s(), p2.Float64s()
	if a[0] != b[0] || a[1] != b[1] {
		t.Fatalf("resumed optimizer diverged: %v vs %v", a, b)
	}
	if err := o2.LoadStateDict(st, `{"param_groups":[],"group_sizes":[],"steps":[]}`); err == nil {
		t.Fatal("mismatched state accepted")
	}
}
