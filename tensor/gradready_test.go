package tensor_test

import (
	"slices"
	"testing"

	"github.com/gotpu/gotpu/tensor"
)

// TestGradReadyHookOrderAndValues checks that grad-ready hooks fire during
// Backward in reverse layer order (the last layer's gradient is complete
// first) with the pass's gradient, and that Grad is unchanged by them.
func TestGradReadyHookOrderAndValues(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	tests := []struct {
		name  string
		prior bool // Grad already holds a gradient before Backward
	}{
		{"fresh", false},
		{"accumulating", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := tensor.FromSlice(cpu, []float32{1, 2, 3})
			w1 := tensor.FromSlice(cpu, []float32{2, 3, 4}).SetRequiresGrad(true)
			w2 := tensor.FromSlice(cpu, []float32{5, 6, 7}).SetRequiresGrad(true)
			if tc.prior {
				w1.SetGrad(tensor.FromSlice(cpu, []float32{1, 1, 1}))
			}
			var order []string
			seen := map[string][]float64{}
			w1.RegisterGradReadyHook(func(g *tensor.Tensor) { order = append(order, "w1"); seen["w1"] = g.Float64s() })
			w2.RegisterGradReadyHook(func(g *tensor.Tensor) { order = append(order, "w2"); seen["w2"] = g.Float64s() })
			// y = sum(w2 * (w1 * x) * w1): w1 is used twice, w2 once, later.
			h := w1.Mul(x).Mul(w1)
			h.Mul(w2).Sum(nil, false).Backward()
			if !slices.Equal(order, []string{"w2", "w1"}) {
				t.Fatalf("hook order %v, want [w2 w1]", order)
			}
			// d/dw1 = 2*w1*x*w2; d/dw2 = w1*w1*x.
			want1 := []float64{2 * 2 * 1 * 5, 2 * 3 * 2 * 6, 2 * 4 * 3 * 7}
			want2 := []float64{4, 18, 48}
			if !slices.Equal(seen["w1"], want1) || !slices.Equal(seen["w2"], want2) {
				t.Fatalf("hook grads w1=%v w2=%v, want %v %v", seen["w1"], seen["w2"], want1, want2)
			}
			g1 := w1.Grad().Float64s()
			for i := range want1 {
				w := want1[i]
				if tc.prior {
					w++
				}
				if g1[i] != w {
					t.Fatalf("w1.Grad = %v, want %v (+prior=%v)", g1, want1, tc.prior)
				}
			}
		})
	}
}
