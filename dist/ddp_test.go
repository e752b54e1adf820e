package dist

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/optim"
	"github.com/gotpu/gotpu/tensor"
)

type tinyNet struct {
	a, b *nn.Linear
}

func newTinyNet(seed uint64) *tinyNet {
	tensor.ManualSeed(seed)
	return &tinyNet{a: nn.NewLinear(cpu, 6, 5, true), b: nn.NewLinear(cpu, 5, 3, true)}
}

func (m *tinyNet) params() []*tensor.Tensor {
	return []*tensor.Tensor{m.a.Weight, m.a.Bias, m.b.Weight, m.b.Bias}
}

func (m *tinyNet) loss(x, y *tensor.Tensor) *tensor.Tensor {
	return tensor.CrossEntropy(m.b.Forward(m.a.Forward(x).Relu()), y, tensor.CrossEntropyOpts{})
}

// batchRows is rows [lo, hi) of a fixed global batch of 12 examples.
func batchRows(lo, hi int) (*tensor.Tensor, *tensor.Tensor) {
	var xs []float32
	var ys []int64
	for i := lo; i < hi; i++ {
		for j := range 6 {
			xs = append(xs, float32(math.Sin(float64(i*6+j))))
		}
		ys = append(ys, int64(i%3))
	}
	return tensor.FromSlice(cpu, xs, hi-lo, 6), tensor.FromSlice(cpu, ys)
}

// roleDDP trains the tiny net with DDP on this rank's share of the batch
// and, alongside, one process's reference on the whole batch, and compares.
func roleDDP(ctx context.Context, g *Group) error {
	const global, steps = 12, 4
	N, me := g.Size(), g.Rank()
	ref := newTinyNet(1)
	// Ranks other than 0 start from other weights: NewDDP broadcasts rank 0's.
	m := newTinyNet(1 + uint64(me)*100)
	d, err := NewDDP(ctx, g, m.params(), DDPOptions{BucketBytes: 64})
	if err != nil {
		return err
	}
	refOpt := optim.NewSGD([]*optim.Group{{Params: ref.params()}}, 0.5)
	opt := optim.NewSGD([]*optim.Group{{Params: m.params()}}, 0.5)
	per := global / N
	for s := range steps {
		// Step 2 accumulates the gradients of two passes (no ZeroGrad
		// between): DDP adds the averaged gradient to the previous one.
		passes := 1 + s%2
		x, y := batchRows(0, global)
		refOpt.ZeroGrad()
		for range passes {
			ref.loss(x, y).Backward()
		}
		refOpt.Step()

		lx, ly := batchRows(me*per, (me+1)*per)
		opt.ZeroGrad()
		for range passes {
			if err := d.Backward(ctx, m.loss(lx, ly)); err != nil {
				return err
			}
		}
		st := d.Stats()
		if st.Buckets < 2 || st.LaunchedInBackward != st.Buckets*passes {
			return fmt.Errorf("step %d: %d buckets, %d launched during backward; want several, all during backward", s, st.Buckets, st.LaunchedInBackward)
		}
		opt.Step()
	}
	for i, p := range m.params() {
		if err := same(fmt.Sprintf("parameter %d after %d steps", i, steps), p.Float64s(), ref.params()[i].Float64s(), 1e-5); err != nil {
			return err
		}
	}
	return nil
}

func TestDDPEqualsSingleProcess(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d-ranks", n), func(t *testing.T) {
			expectOK(t, spawn(t, n, "ddp", 60*time.Second, nil))
		})
	}
}
