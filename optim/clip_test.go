package optim

import (
	"math"
	"testing"

	"github.com/gotpu/gotpu/tensor"
)

func TestClipGradNorm(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	mk := func(g []float64) *tensor.Tensor {
		p := tensor.FromSlice(cpu, make([]float64, len(g))).SetRequiresGrad(true)
		p.SetGrad(tensor.FromSlice(cpu, g))
		return p
	}
	tests := []struct {
		name     string
		grads    [][]float64
		max, p   float64
		total    float64
		clipped  bool
		wantHead float64
	}{
		{"l2 clipped", [][]float64{{3, 4}, {0, 12}}, 6.5, 2, 13, true, 3 * 6.5 / (13 + 1e-6)},
		{"l2 below", [][]float64{{3, 4}}, 10, 2, 5, false, 3},
		{"inf norm", [][]float64{{-7, 2}, {1}}, 3.5, math.Inf(1), 7, true, -7 * 3.5 / (7 + 1e-6)},
		{"l1", [][]float64{{1, -2}, {3}}, 3, 1, 6, true, 1 * 3 / (6 + 1e-6)},
	}
	for _, tt := range tests {
		var ps []*tensor.Tensor
		for _, g := range tt.grads {
			ps = append(ps, mk(g))
		}
		total := ClipGradNorm(ps, tt.max, tt.p)
		if math.Abs(total-tt.total) > 1e-9 {
			t.Errorf("%s: total norm %v, want %v", tt.name, total, tt.total)
		}
		if got := ps[0].Grad().Float64s()[0]; math.Abs(got-tt.wantHead) > 1e-9 {
			t.Errorf("%s: first gradient %v, want %v", tt.name, got, tt.wantHead)
		}
	}
}

func TestClipGradValue(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	p := tensor.FromSlice(cpu, []float32{0, 0, 0}).SetRequiresGrad(true)
	p.SetGrad(tensor.FromSlice(cpu, []float32{-5, 0.5, 9}))
	ClipGradValue([]*tensor.Tensor{p}, 1)
	got := p.Grad().Float64s()
	if got[0] != -1 || got[1] != 0.5 || got[2] != 1 {
		t.Fatalf("clipped gradient %v", got)
	}
}

func TestWarmupCosine(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	p := tensor.FromSlice(cpu, []float32{0}).SetRequiresGrad(true)
	o := NewSGD(Params([]*tensor.Tensor{p}), 1.0)
	s := NewWarmupCosine(o, 4, 12, 0.1)
	var lrs []float64
	for i := 0; i < 14; i++ {
		lrs = append(lrs, o.Groups()[0].Options["lr"])
		s.Step()
	}
	want := map[int]float64{0: 0.25, 3: 1, 4: 1, 8: 0.1 + 0.9*(1+math.Cos(math.Pi*0.5))/2, 12: 0.1, 13: 0.1}
	for i, w := range want {
		if math.Abs(lrs[i]-w) > 1e-12 {
			t.Errorf("step %d: lr %v, want %v", i, lrs[i], w)
		}
	}
	for i := 5; i < 12; i++ {
		if lrs[i] > lrs[i-1] {
			t.Errorf("cosine phase increases at %d: %v", i, lrs)
		}
	}
}
