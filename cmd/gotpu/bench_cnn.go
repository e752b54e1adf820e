package main

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/gotpu/gotpu"
	"github.com/gotpu/gotpu/bench/kernels"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/optim"
	"github.com/gotpu/gotpu/tensor"
	"github.com/gotpu/gotpu/train"
)

// cnnStepFlops is the nominal work of one training step of the MNIST CNN
// (train.CNN) on a batch of b images: three times the forward's
// multiply-adds (forward, input and weight gradients), two flops each.
func cnnStepFlops(b int) float64 {
	fwd := 6*28*28*25 + 16*10*10*150 + 400*120 + 120*84 + 84*10
	return 3 * 2 * float64(b) * float64(fwd)
}

func init() {
	const lr = 2e-3 // train mnist --model cnn's AdamW default, as in ref.py
	registerBenchCase(benchCase{
		Name:        "cnn",
		Description: "one training step of the MNIST CNN (train.CNN, LeNet-like): forward, cross entropy, backward, AdamW",
		DTypes:      []string{kernels.F32},
		DefaultSize: 64,
		SizeHelp:    "batch size",
		Refs:        []string{"torch"},
		// A training step reaches its steady state only after some steps
		// (the caching allocators filled, the garbage collector's pace
		// set, on both sides): with one warm-up step the median of five
		// measured start-up (gotpu 8-16 ms a step against 4.3-5 at steady
		// state, 2-core Zen 4).
		DefaultWarmup: 20,
		DefaultReps:   30,
		Run: func(ctx context.Context, cfg *benchConfig, run *benchRun) error {
			b := cfg.Size
			run.Shape = fmt.Sprintf("x [%d,1,28,28], conv 1->6 5x5 pad 2, conv 6->16 5x5, fc 400-120-84-10", b)
			dev := gotpu.MustDevice("cpu")
			var step func() error
			var free func()
			err := tensor.Catch(func() {
				tensor.ManualSeed(0)
				model := train.NewCNN(dev)
				opt := optim.NewAdamW(optim.Params(nn.Parameters(model)), lr)
				r := rand.New(rand.NewPCG(1, 2))
				xs := make([]float32, b*28*28)
				for i := range xs {
					xs[i] = float32(r.NormFloat64())
				}
				ys := make([]int64, b)
				for i := range ys {
					ys[i] = int64(r.IntN(10))
				}
				x := tensor.FromSlice(dev, xs, b, 1, 28, 28)
				y := tensor.FromSlice(dev, ys, b)
				free = func() { x.Free(); y.Free() }
				step = func() error {
					return tensor.Catch(func() {
						opt.ZeroGrad()
						loss := tensor.CrossEntropy(model.Forward(x), y, tensor.CrossEntropyOpts{})
						loss.Backward()
						opt.Step()
						loss.Free()
						tensor.Sync(dev)
					})
				}
			})
			if err != nil {
				return fmt.Errorf("cnn: %w", err)
			}
			defer free()
			work := kernels.Work{Flops: cnnStepFlops(b)}
			g := &kernels.Stepper{Impl: "gotpu", DType: kernels.F32, Work: work, Run: step}
			run.Note("GFLOP/s are nominal: 3 x the forward's multiply-adds x 2 per step")
			return cfg.Measure(ctx, run, []*kernels.Stepper{g}, []string{"torch"},
				[]string{"--batch", fmt.Sprint(b)}, func(string) kernels.Work { return work })
		},
	})
}
