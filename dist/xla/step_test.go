//go:build pjrt

package xla_test

import (
	"math"
	"os"
	"testing"

	"github.com/gotpu/gotpu/backend/pjrt"
	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/dist/xla"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"

	_ "github.com/gotpu/gotpu/backend/cpu"
)

// step is one SGD step (lr 0.05) of a two-layer MLP with a mean squared
// error: (x, y, w1, b1, w2, b2) -> (loss, w1', b1', w2', b2').
func step(in ...*tensor.Tensor) []*tensor.Tensor {
	x, y, ps := in[0], in[1], in[2:6]
	p := tensor.Linear(tensor.Linear(x, ps[0], ps[1]).Relu(), ps[2], ps[3])
	loss := p.Sub(y).Square().Mean(nil, false)
	gs := tensor.Grad([]*tensor.Tensor{loss}, []*tensor.Tensor{tensor.OnesLike(loss)}, ps, false)
	out := []*tensor.Tensor{loss}
	for i, w := range ps {
		out = append(out, w.Sub(gs[i].MulScalar(0.05)))
	}
	return out
}

// TestXLAStepTrainsLikeEager trains the MLP for a few steps as one SPMD
// program over a 2x2 (data x model) mesh of XLA CPU devices, the updated
// weights fed back each step, and compares every step's loss and the
// final weights with gotpu's eager CPU training.
func TestXLAStepTrainsLikeEager(t *testing.T) {
	c, err := pjrt.NewClient(pjrt.ClientOptions{Create: map[string]any{"cpu_device_count": 4}})
	if err != nil {
		if os.Getenv("GOTPU_PJRT_REQUIRE") == "1" {
			t.Fatal(err)
		}
		t.Skipf("xla plugin not available: %v", err)
	}
	defer c.Close()
	cpu := tensor.MustDevice("cpu")
	g := tensor.NewGenerator(5)
	const b, d, h, o = 8, 5, 8, 2
	x, y := tensor.RandnGen(g, cpu, dtype.F32, b, d), tensor.RandnGen(g, cpu, dtype.F32, b, o)
	params := []*tensor.Tensor{
		tensor.RandnGen(g, cpu, dtype.F32, h, d), tensor.RandnGen(g, cpu, dtype.F32, h),
		tensor.RandnGen(g, cpu, dtype.F32, o, h), tensor.RandnGen(g, cpu, dtype.F32, o),
	}
	leaves := func(ps []*tensor.Tensor) []*tensor.Tensor {
		out := make([]*tensor.Tensor, len(ps))
		for i, p := range ps {
			out[i] = p.Detach().SetRequiresGrad(true)
		}
		return out
	}
	w := []pjrt.Sharding{{"model"}, {"model"}, {"", "model"}, nil}
	s, err := xla.Compile(c, compile.Fn(step, compile.Name("mlp_step")), xla.Options{
		Mesh: pjrt.Mesh{Axes: []string{"data", "model"}, Shape: []int{2, 2}},
		In:   append([]pjrt.Sharding{{"data"}, {"data"}}, w...),
		Out:  append([]pjrt.Sharding{nil}, w...),
		Form: pjrt.Shardy,
	}, append([]*tensor.Tensor{x, y}, leaves(params)...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	eager, sharded := params, params
	for k := range 3 {
		want := step(append([]*tensor.Tensor{x, y}, leaves(eager)...)...)
		got, err := s.Run(append([]*tensor.Tensor{x, y}, sharded...)...)
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(got[0].Item() - want[0].Item()); d > 1e-5 {
			t.Fatalf("step %d: loss %v, eager %v", k, got[0].Item(), want[0].Item())
		}
		eager, sharded = want[1:], got[1:]
	}
	for i := range eager {
		a, e := sharded[i].Float32s(), eager[i].Float32s()
		for j := range a {
			if math.Abs(float64(a[j]-e[j])) > 1e-5 {
				t.Fatalf("after 3 steps, parameter %d[%d] = %v, eager %v", i, j, a[j], e[j])
			}
		}
	}
	if _, err := s.Run(x, y); err == nil {
		t.Error("Run with 2 of 6 inputs succeeded")
	}
}
