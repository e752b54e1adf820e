package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/tensor"
)

// TestCmpWhereOps runs gt against a scalar, gt of two tensors and where
// with a broadcast zero (a ReLU gradient's ops) through the op layer on
// tensors large enough to split over threads, at every level, and
// compares every byte with the element definition.
func TestCmpWhereOps(t *testing.T) {
	t.Parallel()
	dev := tensor.MustDevice("cpu")
	r := rand.New(rand.NewPCG(5, 6))
	n := 3*vecChunk + 37
	xs, ys, gs := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], ys[i], gs[i] = float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
		switch r.IntN(50) {
		case 0:
			xs[i] = float32(math.NaN())
		case 1:
			xs[i] = float32(math.Copysign(0, -1))
		case 2:
			ys[i] = xs[i]
		}
	}
	x, y, g := tensor.FromSlice(dev, xs, n), tensor.FromSlice(dev, ys, n), tensor.FromSlice(dev, gs, n)
	for _, lv := range levels() {
		func(d device.Device) {
			x, y, g, zero := x.To(d), y.To(d), g.To(d), tensor.Scalar(0.0).To(d)
			pos := tensor.Apply("gt", []*tensor.Tensor{x, zero}, nil)[0]
			gt := tensor.Apply("gt", []*tensor.Tensor{x, y}, nil)[0]
			w := tensor.Apply("where", []*tensor.Tensor{pos, g, zero}, nil)[0]
			pb, gb, wb := pos.Bytes(), gt.Bytes(), as[float32](w.Bytes())
			for i := range xs {
				if want := xs[i] > 0; pb[i] != b2u(want) {
					t.Fatalf("%s: gt(x, 0)[%d] of %v = %d", lv, i, xs[i], pb[i])
				}
				if want := xs[i] > ys[i]; gb[i] != b2u(want) {
					t.Fatalf("%s: gt(x, y)[%d] of %v, %v = %d", lv, i, xs[i], ys[i], gb[i])
				}
				want := float32(0)
				if xs[i] > 0 {
					want = gs[i]
				}
				if math.Float32bits(wb[i]) != math.Float32bits(want) {
					t.Fatalf("%s: where[%d] = %v, want %v", lv, i, wb[i], want)
				}
			}
		}(levelDevice(lv))
	}
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}
