//go:build pjrt

package pjrt_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// TestXLAProgramOptimizerStep: a program holding a functional adam_step
// (as compile.Fn records one) takes lr and step per run
// (RunOptions.Dynamic) without compiling again, matches cpu's kernel bit
// for bit at every step, and keeps doing so after Marshal and LoadProgram.
func TestXLAProgramOptimizerStep(t *testing.T) {
	be := xla(t)
	f32 := dtype.F32
	shape := []int{3, 4}
	m := op.Meta{Shape: shape, DType: f32}
	params := []op.Meta{m, m, m, m, m}
	d := op.MustLookup("adam_step")
	base := op.Attrs{"lr": 0.0, "step": 1, "decoupled": true, "weight_decay": 0.01, "amsgrad": true, "beta2": 0.99}
	na, err := d.Normalize(base)
	if err != nil {
		t.Fatal(err)
	}
	g := ir.New()
	var in []*ir.Value
	for _, p := range params {
		in = append(in, g.Param(p))
	}
	n := g.AddNode(d, na, in, []op.Meta{m, m, m, m})
	g.SetOutputs(n.Out...)
	prog, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw := inputs(params)
	for i := range raw[3] { // exp_avg_sq and max_exp_avg_sq are non-negative
		raw[3][i] &^= 0x80 * byte(i%4/3)
		raw[4][i] &^= 0x80 * byte(i%4/3)
	}
	ops := make([]device.Operand, len(params))
	for i, p := range params {
		ops[i] = operand(t, be, f32, p.Shape, raw[i])
	}
	run := func(p interface {
		Run(context.Context, int, []device.Operand, device.RunOptions) ([]device.Buffer, error)
	}, lr float64, step int) [][]byte {
		outs, err := p.Run(context.Background(), 0, ops, device.RunOptions{Dynamic: []op.Attrs{{"lr": lr, "step": step}}})
		if err != nil {
			t.Fatal(err)
		}
		var res [][]byte
		for _, o := range outs {
			res = append(res, readAll(t, be, o))
		}
		return res
	}
	cpuStep := func(lr float64, step int) [][]byte {
		cpu := tensor.MustDevice("cpu")
		var ts []*tensor.Tensor
		for i, p := range params {
			ts = append(ts, tensor.FromBytes(cpu, f32, p.Shape, raw[i]))
		}
		a := op.Attrs{}
		for k, v := range base {
			a[k] = v
		}
		a["lr"], a["step"] = lr, step
		if err := tensor.Catch(func() { tensor.ApplyOn(cpu, "adam_step", ts, a) }); err != nil {
			t.Fatal(err)
		}
		// The new param, exp_avg, exp_avg_sq and max_exp_avg_sq.
		return [][]byte{ts[0].Bytes(), ts[2].Bytes(), ts[3].Bytes(), ts[4].Bytes()}
	}
	check := func(what string, got, want [][]byte) {
		t.Helper()
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("%s: output %d differs from cpu's adam_step", what, i)
			}
		}
	}
	c0 := be.ProgramCompiles()
	for step := 1; step <= 4; step++ {
		lr := 0.01 / float64(step)
		check("step", run(prog, lr, step), cpuStep(lr, step))
	}
	if c := be.ProgramCompiles() - c0; c != 0 {
		t.Errorf("%d compiles for new lr and step values, want 0", c)
	}
	data, err := prog.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := be.LoadProgram(0, data)
	if err != nil {
		t.Fatal(err)
	}
	check("loaded program", run(loaded, 0.003, 1000), cpuStep(0.003, 1000))
	if _, err := prog.Run(context.Background(), 0, ops, device.RunOptions{Dynamic: []op.Attrs{{"lr": 0.1, "step": 0}}}); err == nil {
		t.Errorf("step 0 succeeded")
	}
}
