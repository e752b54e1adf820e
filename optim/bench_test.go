package optim

import (
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// mlpShapes are the parameter shapes of train's MNIST MLP (784-512-256-10):
// 535,818 parameters.
var mlpShapes = [][]int{{512, 784}, {512}, {256, 512}, {256}, {10, 256}, {10}}

// BenchmarkStep535k times one optimizer step over the MNIST MLP's
// parameters, f32 on cpu, with one kernel per parameter (fused) and op by
// op (fallback). Gradients are fixed; the step is what is measured.
//
//	go test ./optim -run '^$' -bench Step535k -benchtime 50x
func BenchmarkStep535k(b *testing.B) {
	cpu := tensor.MustDevice("cpu")
	for _, opt := range []struct {
		name string
		mk   func(ps []*tensor.Tensor) Optimizer
	}{
		{"adamw", func(ps []*tensor.Tensor) Optimizer { return NewAdamW(Params(ps), 1e-3) }},
		{"adam_amsgrad", func(ps []*tensor.Tensor) Optimizer {
			return NewAdam([]*Group{{Params: ps, Options: map[string]float64{"amsgrad": 1, "weight_decay": 1e-4}}}, 1e-3)
		}},
		{"sgd_momentum", func(ps []*tensor.Tensor) Optimizer {
			return NewSGD([]*Group{{Params: ps, Options: map[string]float64{"momentum": 0.9}}}, 0.01)
		}},
	} {
		for _, path := range paths {
			b.Run(opt.name+"/"+path.name, func(b *testing.B) {
				withFallback(path.fallback, func() {
					var ps []*tensor.Tensor
					n := 0
					for _, s := range mlpShapes {
						p := tensor.Randn(cpu, dtype.F32, s...).SetRequiresGrad(true)
						p.SetGrad(tensor.Randn(cpu, dtype.F32, s...))
						ps = append(ps, p)
						n += p.Numel()
					}
					o := opt.mk(ps)
					o.Step() // state allocation
					b.SetBytes(int64(4 * n))
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						o.Step()
					}
					b.StopTimer()
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/param")
				})
			})
		}
	}
}
