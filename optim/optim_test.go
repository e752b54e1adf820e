package optim

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"

	_ "github.com/gotpu/gotpu/backend/cpu"
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

// TestOptimizersMatchPyTorch replays PyTorch's fixed gradient sequences.
func TestOptimizersMatchPyTorch(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	cases, _ := loadCases(t)
	for i, c := range cases {
		t.Run(fmt.Sprintf("%d_%s", i, c.Optimizer), func(t *testing.T) {
			p := tensor.FromSlice(cpu, c.P0, 3, 4).SetRequiresGrad(true)
			o := newOpt(c.Optimizer, p, c.Options)
			for step, g := range c.Grads {
				p.SetGrad(tensor.FromSlice(cpu, g, 3, 4))
				o.Step()
				got := p.Float64s()
				for k, want := range c.Params[step] {
					if math.Abs(got[k]-want) > 1e-10+1e-9*math.Abs(want) {
						t.Fatalf("step %d elem %d: got %v want %v", step, k, got[k], want)
					}
				}
			}
		})
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
