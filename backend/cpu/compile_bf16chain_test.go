package cpu

import (
	"math"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// TestCompileNormBF16 checks that a bf16 model's RMSNorm (convert to f32,
// rms_norm, convert back, times the weight) runs as one stNormBF16 step
// with the bits of the op-by-op program: either operand order of the mul,
// a [d] or [1, 1, d] weight, x a transposed view, eps given or defaulted,
// inputs with NaN, Inf and tiny values. A pattern whose intermediate is
// read elsewhere, or whose rms_norm has its own weight, is left to the ops.
func TestCompileNormBF16(t *testing.T) {
	be := testBackend(t)
	const b, tt, d = 2, 3, 40
	type variant struct {
		name   string
		wShape []int
		swap   bool // w * convert(...)
		view   bool // x a transposed view
		noEps  bool
		leak   bool // the f32 norm is also an output
		normW  bool // rms_norm with its own weight
		want   int
	}
	for _, v := range []variant{
		{name: "row weight", wShape: []int{d}, want: 1},
		{name: "swapped", wShape: []int{1, 1, d}, swap: true, want: 1},
		{name: "view", wShape: []int{d}, view: true, want: 1},
		{name: "default eps", wShape: []int{d}, noEps: true, want: 1},
		{name: "leak", wShape: []int{d}, leak: true},
		{name: "norm weight", wShape: []int{d}, normW: true},
	} {
		t.Run(v.name, func(t *testing.T) {
			params := []op.Meta{{Shape: []int{b, tt, d}, DType: dtype.BF16}, {Shape: v.wShape, DType: dtype.BF16}, {Shape: []int{d}, DType: dtype.F32}}
			if v.view {
				params[0].Shape = []int{tt, b, d}
			}
			g, err := ir.Trace(params, func(bb op.Builder, p []op.Value) []op.Value {
				x := p[0]
				if v.view {
					x = op.Call1(bb, "transpose", op.Attrs{"dim0": 0, "dim1": 1}, x)
				}
				a := op.Attrs{"normalized_shape": []int{d}, "eps": 1e-5}
				if v.noEps {
					a = op.Attrs{"normalized_shape": []int{d}}
				}
				ins := []op.Value{op.Call1(bb, "convert", op.Attrs{"dtype": dtype.F32}, x), nil}
				if v.normW {
					ins[1] = p[2]
				}
				r := op.Call1(bb, "rms_norm", a, ins...)
				c := op.Call1(bb, "convert", op.Attrs{"dtype": dtype.BF16}, r)
				out := op.Call1(bb, "mul", nil, c, p[1])
				if v.swap {
					out = op.Call1(bb, "mul", nil, p[1], c)
				}
				outs := []op.Value{out}
				if v.leak {
					outs = append(outs, r)
				}
				return outs
			})
			if err != nil {
				t.Fatal(err)
			}
			ins := inputsFor(params, 9, 0)
			for i, x := range []float64{math.NaN(), math.Inf(1), 1e-30, 0} {
				dtype.PutFloat64(dtype.BF16, ins[0], 13*i+2, x)
			}
			dtype.PutFloat64(dtype.BF16, ins[1], 5, math.Inf(-1))
			// A NaN weight of the other sign from the NaN rows: the mul's
			// operand order picks the payload.
			dtype.PutFloat64(dtype.BF16, ins[1], 3, math.Copysign(math.NaN(), -1))
			ip, p := interpAndCompiled(t, be, g)
			want := runProg(t, be, ip, g, ins, device.RunOptions{})
			before := normSteps.Load()
			got := runProg(t, be, p, g, ins, device.RunOptions{})
			summary := p.(*cprogram).pl.summary()
			if n := int(normSteps.Load() - before); n != v.want {
				t.Errorf("%d bf16 rms_norm steps ran, want %d; plan:\n%s", n, v.want, summary)
			}
			if v.want > 0 && strings.Contains(summary, ": convert") {
				t.Errorf("the norm's converts are still steps:\n%s", summary)
			}
			sameAsOpByOp(t, be, p, g, ins, want, got)
		})
	}
}

// TestCompileGLUBF16 checks that a bf16 act(gate) * up runs as one
// stGLUBF16 step with the bits of the op-by-op program: silu and both
// gelus, either operand order, the gate a transposed view, NaN of both
// signs (the operand order picks the payload), Inf; an activation read
// elsewhere, or an up that broadcasts, is left to the ops.
func TestCompileGLUBF16(t *testing.T) {
	be := testBackend(t)
	const b, tt, d = 2, 3, 40
	type variant struct {
		name   string
		act    string
		approx string
		swap   bool // up * act(gate)
		view   bool // gate a transposed view
		leak   bool // act(gate) also an output
		bcast  bool // up of shape [d]
		want   int
	}
	for _, v := range []variant{
		{name: "silu", act: "silu", want: 1},
		{name: "silu swapped", act: "silu", swap: true, want: 1},
		{name: "gelu tanh", act: "gelu", approx: "tanh", want: 1},
		{name: "gelu", act: "gelu", approx: "none", swap: true, want: 1},
		{name: "view", act: "silu", view: true, want: 1},
		{name: "leak", act: "silu", leak: true},
		{name: "broadcast up", act: "silu", bcast: true},
	} {
		t.Run(v.name, func(t *testing.T) {
			params := []op.Meta{{Shape: []int{b, tt, d}, DType: dtype.BF16}, {Shape: []int{b, tt, d}, DType: dtype.BF16}}
			if v.view {
				params[0].Shape = []int{tt, b, d}
			}
			if v.bcast {
				params[1].Shape = []int{d}
			}
			g, err := ir.Trace(params, func(bb op.Builder, p []op.Value) []op.Value {
				x := p[0]
				if v.view {
					x = op.Call1(bb, "transpose", op.Attrs{"dim0": 0, "dim1": 1}, x)
				}
				var a op.Attrs
				if v.act == "gelu" {
					a = op.Attrs{"approximate": v.approx}
				}
				act := op.Call1(bb, v.act, a, x)
				out := op.Call1(bb, "mul", nil, act, p[1])
				if v.swap {
					out = op.Call1(bb, "mul", nil, p[1], act)
				}
				outs := []op.Value{out}
				if v.leak {
					outs = append(outs, act)
				}
				return outs
			})
			if err != nil {
				t.Fatal(err)
			}
			ins := inputsFor(params, 11, 0)
			for i, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e-30, 0, 12} {
				dtype.PutFloat64(dtype.BF16, ins[0], 7*i+1, x)
			}
			// NaN ups of both signs where the gate is NaN: whatever the
			// activation's NaN, one of them differs from it, and the mul's
			// operand order picks the payload.
			dtype.PutFloat64(dtype.BF16, ins[0], 50, math.NaN())
			dtype.PutFloat64(dtype.BF16, ins[1], 1, math.Copysign(math.NaN(), -1))
			if !v.bcast {
				dtype.PutFloat64(dtype.BF16, ins[1], 50, math.NaN())
			}
			dtype.PutFloat64(dtype.BF16, ins[1], 8, math.Inf(-1))
			ip, p := interpAndCompiled(t, be, g)
			want := runProg(t, be, ip, g, ins, device.RunOptions{})
			before := gluSteps.Load()
			got := runProg(t, be, p, g, ins, device.RunOptions{})
			summary := p.(*cprogram).pl.summary()
			if n := int(gluSteps.Load() - before); n != v.want {
				t.Errorf("%d bf16 glu steps ran, want %d; plan:\n%s", n, v.want, summary)
			}
			sameAsOpByOp(t, be, p, g, ins, want, got)
		})
	}
}
