package compile_test

import (
	"testing"

	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/optim"
	"github.com/gotpu/gotpu/tensor"
	"github.com/gotpu/gotpu/train"
)

func newMNISTStep() (func(in ...*tensor.Tensor) []*tensor.Tensor, *tensor.Tensor, *tensor.Tensor) {
	tensor.ManualSeed(1)
	m := train.NewMLP(cpu)
	opt := optim.NewAdamW(optim.Params(nn.Parameters(m)), 1e-3)
	step := func(in ...*tensor.Tensor) []*tensor.Tensor {
		opt.ZeroGrad()
		loss := tensor.CrossEntropy(m.Forward(in[0]), in[1], tensor.CrossEntropyOpts{})
		loss.Backward()
		opt.Step()
		return []*tensor.Tensor{loss}
	}
	g := tensor.NewGenerator(3)
	x := tensor.RandnGen(g, cpu, dtype.F32, 64, 784)
	y := make([]int64, 64)
	for i := range y {
		y[i] = int64(i % 10)
	}
	return step, x, tensor.FromSlice(cpu, y, 64)
}

// BenchmarkMNISTStep compares one MNIST MLP training step (batch 64) run
// op by op (Strict), in the Fused mode and as a compiled program.
func BenchmarkMNISTStep(b *testing.B) {
	b.Run("strict", func(b *testing.B) {
		step, x, y := newMNISTStep()
		for b.Loop() {
			_ = step(x, y)[0].Item()
		}
	})
	b.Run("fused", func(b *testing.B) {
		step, x, y := newMNISTStep()
		prev := tensor.SetMode(tensor.Fused)
		defer tensor.SetMode(prev)
		for b.Loop() {
			_ = step(x, y)[0].Item()
		}
	})
	b.Run("compiled", func(b *testing.B) {
		step, x, y := newMNISTStep()
		fn := compile.Fn(step)
		for b.Loop() {
			out, err := fn.Call(x, y)
			if err != nil {
				b.Fatal(err)
			}
			_ = out[0].Item()
		}
	})
}

func BenchmarkMNISTStepNoGC(b *testing.B) {
	prev := tensor.SetFuseGC(false)
	defer tensor.SetFuseGC(prev)
	step, x, y := newMNISTStep()
	fn := compile.Fn(step)
	for b.Loop() {
		out, err := fn.Call(x, y)
		if err != nil {
			b.Fatal(err)
		}
		_ = out[0].Item()
	}
}
