package compile_test

import (
	"testing"

	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/optim"
	"github.com/gotpu/gotpu/tensor"
)

// mnistMLP is the MNIST MLP's shape (784-512-256-10).
type mnistMLP struct {
	nn.Base
	fc1, fc2, fc3 *nn.Linear
}

func newMNISTStep() (func(in ...*tensor.Tensor) []*tensor.Tensor, *tensor.Tensor, *tensor.Tensor) {
	tensor.ManualSeed(1)
	m := &mnistMLP{fc1: nn.NewLinear(cpu, 784, 512, true), fc2: nn.NewLinear(cpu, 512, 256, true), fc3: nn.NewLinear(cpu, 256, 10, true)}
	m.RegisterModule("fc1", m.fc1)
	m.RegisterModule("fc2", m.fc2)
	m.RegisterModule("fc3", m.fc3)
	opt := optim.NewAdamW(optim.Params(nn.Parameters(m)), 1e-3)
	step := func(in ...*tensor.Tensor) []*tensor.Tensor {
		opt.ZeroGrad()
		h := m.fc2.Forward(m.fc1.Forward(in[0]).Relu()).Relu()
		loss := tensor.CrossEntropy(m.fc3.Forward(h), in[1], tensor.CrossEntropyOpts{})
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
