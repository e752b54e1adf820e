//go:build pjrt

package pjrt_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/gotpu/gotpu/backend/pjrt"
	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// MLP sizes of the SPMD training step: batch, in, hidden, out.
const mlpB, mlpD, mlpH, mlpO = 8, 6, 8, 4

const mlpLR = 0.1

// mlpStep is one SGD step of a two-layer MLP with a mean squared error,
// as a pure function: (x, y, w1, b1, w2, b2) -> (loss, w1', b1', w2', b2').
func mlpStep(in ...*tensor.Tensor) []*tensor.Tensor {
	x, y, params := in[0], in[1], in[2:6]
	h := tensor.Linear(x, params[0], params[1]).Relu()
	p := tensor.Linear(h, params[2], params[3])
	loss := p.Sub(y).Square().Mean(nil, false)
	grads := tensor.Grad([]*tensor.Tensor{loss}, []*tensor.Tensor{tensor.OnesLike(loss)}, params, false)
	out := []*tensor.Tensor{loss}
	for i, w := range params {
		out = append(out, w.Sub(grads[i].MulScalar(mlpLR)))
	}
	return out
}

// mlpInputs returns the step's inputs on the CPU device.
func mlpInputs() []*tensor.Tensor {
	cpu := tensor.MustDevice("cpu")
	g := tensor.NewGenerator(11)
	in := []*tensor.Tensor{
		tensor.RandnGen(g, cpu, dtype.F32, mlpB, mlpD),
		tensor.RandnGen(g, cpu, dtype.F32, mlpB, mlpO),
		tensor.RandnGen(g, cpu, dtype.F32, mlpH, mlpD).MulScalar(0.5),
		tensor.RandnGen(g, cpu, dtype.F32, mlpH).MulScalar(0.1),
		tensor.RandnGen(g, cpu, dtype.F32, mlpO, mlpH).MulScalar(0.5),
		tensor.RandnGen(g, cpu, dtype.F32, mlpO).MulScalar(0.1),
	}
	for _, p := range in[2:] {
		p.SetRequiresGrad(true)
	}
	return in
}

// TestXLASPMDTrainingStep is issue #16's acceptance test: an MLP training
// step (forward, loss, backward, SGD update), traced with compile and
// exported as StableHLO for the global shapes, annotated with shardings
// and partitioned by XLA over 4 CPU devices — data-parallel (the batch
// split, gradients summed by the partitioner's collectives),
// tensor-parallel (w1 split by rows and w2 by columns, Megatron's column-
// and row-parallel pair) and both on a 2x2 mesh, in both sharding forms —
// gives the unsharded step's loss and updated weights: the same program on
// one device, and gotpu's eager CPU step.
func TestXLASPMDTrainingStep(t *testing.T) {
	c := cpuClient(t, 4)
	in := mlpInputs()
	var buf bytes.Buffer
	if err := compile.ExportStableHLO(&buf, compile.Fn(mlpStep, compile.Name("mlp_sgd_step")), in...); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	args := make([]pjrt.Array, len(in))
	for i, x := range in {
		args[i] = pjrt.Array{DType: x.DType(), Shape: x.Shape(), Data: x.Bytes()}
	}
	if !bytes.Contains(buf.Bytes(), []byte("func.func @main(%arg0: tensor<8x6xf32>, %arg1: tensor<8x4xf32>, %arg2: tensor<8x6xf32>, %arg3: tensor<8xf32>, %arg4: tensor<4x8xf32>, %arg5: tensor<4xf32>)")) {
		t.Fatalf("the exported step's parameters are not the six inputs:\n%s", text[:min(len(text), 400)])
	}

	// The unsharded references: gotpu's eager CPU step, and the exported
	// program on one XLA device.
	eager := mlpStep(in...)
	one, err := c.Compile(text, pjrt.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	res, err := one.Execute([][]pjrt.Array{args})
	if err != nil {
		t.Fatal(err)
	}
	unsharded := res[0]
	for i, e := range eager {
		if d := maxDiff(unsharded[i].F32s(), e.Float32s()); d > 1e-5 {
			t.Fatalf("unsharded XLA output %d differs from the eager CPU step by %g", i, d)
		}
	}
	if w := in[2].Float32s(); maxDiff(unsharded[1].F32s(), w) < 1e-4 {
		t.Fatal("the step did not change w1")
	}
	if n := collectives(t, one); n != 0 {
		t.Fatalf("the unsharded program has %d collectives", n)
	}

	dp := pjrt.Sharding{"data"}
	cases := []struct {
		name string
		mesh pjrt.Mesh
		in   []pjrt.Sharding // x, y, w1, b1, w2, b2 (the updated weights keep theirs)
	}{
		{"data4", pjrt.Mesh{Axes: []string{"data"}, Shape: []int{4}}, []pjrt.Sharding{dp, dp}},
		{"model4", pjrt.Mesh{Axes: []string{"model"}, Shape: []int{4}},
			[]pjrt.Sharding{nil, nil, {"model"}, {"model"}, {"", "model"}, nil}},
		{"data2xmodel2", pjrt.Mesh{Axes: []string{"data", "model"}, Shape: []int{2, 2}, Devices: []int{2, 3, 0, 1}},
			[]pjrt.Sharding{dp, dp, {"model"}, {"model"}, {"", "model"}, nil}},
	}
	for _, form := range []pjrt.ShardingForm{pjrt.GSPMD, pjrt.Shardy} {
		for _, tc := range cases {
			t.Run(form.String()+"/"+tc.name, func(t *testing.T) {
				var outs []pjrt.Sharding
				if len(tc.in) > 2 {
					outs = append([]pjrt.Sharding{nil}, tc.in[2:]...)
				}
				s, err := c.CompileSharded(text, tc.mesh, tc.in, outs, form)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				// The partitioner inserted the collectives: the gradient
				// all-reduce, the partial sums of the split contractions.
				if n := collectives(t, s.Executable()); n == 0 {
					t.Error("the partitioned program has no all-reduce")
				}
				got, err := s.Run(args...)
				if err != nil {
					t.Fatal(err)
				}
				for i := range unsharded {
					if d := maxDiff(got[i].F32s(), unsharded[i].F32s()); d > 1e-5 {
						t.Errorf("output %d: sharded differs from unsharded by %g", i, d)
					}
				}
			})
		}
	}
}

// maxDiff returns the largest absolute difference, +Inf when the lengths
// differ.
func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// collectives counts the all-reduce instructions of x's optimized program
// (HloInstructionProto's opcode strings in the serialized module).
func collectives(t *testing.T, x *pjrt.Executable) int {
	t.Helper()
	hlo, format, err := x.OptimizedProgram()
	if err != nil {
		t.Fatal(err)
	}
	if len(hlo) == 0 || format == "" {
		t.Fatalf("optimized program: %d bytes, format %q", len(hlo), format)
	}
	n := bytes.Count(hlo, []byte("all-reduce"))
	t.Logf("optimized program: format %s, %d bytes, %d all-reduce mentions", format, len(hlo), n)
	return n
}

// TestXLASPMDResidentTraining runs three SGD steps of the MLP on a 2x2
// mesh with the weights kept on the devices (Put once, each step's updated
// shards fed to the next with RunResident) and compares the weights with
// the same steps through the host (Run) — the same program, so bit for
// bit — and with eager CPU training.
func TestXLASPMDResidentTraining(t *testing.T) {
	c := cpuClient(t, 4)
	in := mlpInputs()
	var buf bytes.Buffer
	if err := compile.ExportStableHLO(&buf, compile.Fn(mlpStep, compile.Name("mlp_sgd_step")), in...); err != nil {
		t.Fatal(err)
	}
	w := []pjrt.Sharding{{"model"}, {"model"}, {"", "model"}, nil}
	s, err := c.CompileSharded(buf.String(), pjrt.Mesh{Axes: []string{"data", "model"}, Shape: []int{2, 2}, Devices: []int{1, 3, 0, 2}},
		append([]pjrt.Sharding{{"data"}, {"data"}}, w...), append([]pjrt.Sharding{nil}, w...), pjrt.GSPMD)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	host := make([]pjrt.Array, len(in))
	for i, x := range in {
		host[i] = pjrt.Array{DType: x.DType(), Shape: x.Shape(), Data: x.Bytes()}
	}
	dev := make([]*pjrt.Resident, len(in))
	for i, a := range host {
		if dev[i], err = s.Put(i, a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RunResident(dev[2], dev[1], dev[0], dev[3], dev[4], dev[5]); err == nil {
		t.Fatal("RunResident accepted w1 in x's place")
	}
	eager := in
	for k := range 3 {
		res, err := s.Run(host...)
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.RunResident(dev...)
		if err != nil {
			t.Fatal(err)
		}
		loss, err := out[0].Fetch()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(loss.Data, res[0].Data) {
			t.Fatalf("step %d: resident loss %v, host %v", k, loss.F32s(), res[0].F32s())
		}
		out[0].Free()
		for i := 2; i < 6; i++ {
			dev[i].Free()
			dev[i] = out[i-1]
			host[i] = res[i-1]
		}
		want := mlpStep(eager...)
		eager = eager[:2:2]
		for _, p := range want[1:] {
			eager = append(eager, p.Detach().SetRequiresGrad(true))
		}
		if d := math.Abs(float64(loss.F32s()[0]) - want[0].Item()); d > 1e-5 {
			t.Fatalf("step %d: loss %v, eager %v", k, loss.F32s()[0], want[0].Item())
		}
	}
	for i := 2; i < 6; i++ {
		got, err := dev[i].Fetch()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Data, host[i].Data) {
			t.Errorf("input %d after 3 steps: resident and host weights differ", i)
		}
		if d := maxDiff(got.F32s(), eager[i].Float32s()); d > 1e-5 {
			t.Errorf("input %d after 3 steps differs from eager training by %g", i, d)
		}
		dev[i].Free()
	}
	if _, err := dev[2].Fetch(); err == nil {
		t.Error("Fetch of a freed array succeeded")
	}
}
