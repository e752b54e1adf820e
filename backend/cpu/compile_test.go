package cpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/device/interp"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

func testBackend(t testing.TB) *Backend {
	t.Helper()
	be, err := device.Lookup("cpu")
	if err != nil {
		t.Fatal(err)
	}
	return be.(*Backend)
}

func fm(shape ...int) op.Meta { return op.Meta{Shape: shape, DType: dtype.F32} }

// inputsFor makes deterministic inputs: floats in [-2, 2), integers in
// [0, intMax).
func inputsFor(params []op.Meta, seed uint64, intMax int) [][]byte {
	r := rand.New(rand.NewPCG(seed, 7))
	var out [][]byte
	for _, mt := range params {
		n := mt.Numel()
		raw := make([]byte, n*mt.DType.Size())
		for i := 0; i < n; i++ {
			switch {
			case mt.DType.IsFloat():
				dtype.PutFloat64(mt.DType, raw, i, r.Float64()*4-2)
			default:
				dtype.PutInt64(mt.DType, raw, i, int64(r.IntN(max(intMax, 1))))
			}
		}
		out = append(out, raw)
	}
	return out
}

// interpAndCompiled returns g compiled by interp (op by op: the
// reference) and by the backend's compiler.
func interpAndCompiled(t testing.TB, be *Backend, g *ir.Graph) (ref, prog device.Program) {
	t.Helper()
	ip, err := interp.Compile(be, g, device.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ip, p
}

// runProg runs p on host inputs and returns its outputs' bytes.
func runProg(t testing.TB, be *Backend, p device.Program, g *ir.Graph, ins [][]byte, opts device.RunOptions) [][]byte {
	t.Helper()
	var ops []device.Operand
	for i, raw := range ins {
		buf, err := be.Alloc(0, max(len(raw), 1))
		if err != nil {
			t.Fatal(err)
		}
		copy(buf.(*Buf).b, raw)
		m := g.Params[i].Meta
		ops = append(ops, device.Operand{Buf: buf, DType: m.DType, Layout: op.Contiguous(slices.Clone(m.Shape))})
	}
	outs, err := p.Run(context.Background(), 0, ops, opts)
	if err != nil {
		t.Fatal(err)
	}
	var res [][]byte
	for i, o := range outs {
		m := g.Outputs[i].Meta
		n := m.Numel() * m.DType.Size()
		res = append(res, slices.Clone(o.(*Buf).b[:n]))
		for j, in := range ops {
			if !bytes.Equal(in.Buf.(*Buf).b[:len(ins[j])], ins[j]) {
				t.Errorf("input %d was written", j)
			}
			if o == in.Buf {
				t.Errorf("output %d aliases input %d", i, j)
			}
		}
		for j := range i {
			if outs[j] == o {
				t.Errorf("outputs %d and %d alias", j, i)
			}
		}
	}
	for _, o := range outs {
		be.Free(0, o)
	}
	for _, in := range ops {
		be.Free(0, in.Buf)
	}
	return res
}

// closeF32 compares as torch.testing.assert_close does for f32 (rtol
// 1.3e-6, atol 1e-5), scaled by tol.
func closeF32(a, b []byte, tol float64) (int, bool) {
	x, y := as[float32](a), as[float32](b)
	if len(x) != len(y) {
		return -1, false
	}
	for i := range x {
		p, q := float64(x[i]), float64(y[i])
		if math.IsNaN(p) && math.IsNaN(q) || p == q {
			continue
		}
		if math.Abs(p-q) > tol*(1e-5+1.3e-6*math.Abs(q)) {
			return i, false
		}
	}
	return 0, true
}

type compileCase struct {
	name   string
	params []op.Meta
	fn     func(b op.Builder, p []op.Value) []op.Value
	intMax int
	// exact: fused results must equal interp (Strict eager) bit for bit:
	// fused elementwise ops run the same vec kernels as eager and the GEMM
	// epilogue the same GEMM, and fused row sums accumulate as the reduce
	// kernel does. Otherwise within tol assert_close units: eager's kernels
	// on strided inputs do not all take the vec kernels.
	exact bool
	tol   float64
}

// randomDAG returns a random elementwise DAG over inputs broadcasting to
// [r, c]; arith restricts it to IEEE-exact arithmetic.
func randomDAG(seed uint64, r, c int, arith bool) compileCase {
	params := []op.Meta{fm(r, c), fm(c), fm(r, 1), fm(r, c), fm()}
	rng := rand.New(rand.NewPCG(seed, 1))
	unary := []string{"neg", "abs"}
	if !arith {
		unary = append(unary, "tanh", "sigmoid", "exp", "erf", "silu", "gelu", "relu")
	}
	binary := []string{"add", "sub", "mul", "div", "maximum", "minimum"}
	fn := func(b op.Builder, p []op.Value) []op.Value {
		vals := slices.Clone(p)
		for k := 0; k < 12; k++ {
			x := vals[rng.IntN(len(vals))]
			var v op.Value
			switch rng.IntN(4) {
			case 0:
				name := unary[rng.IntN(len(unary))]
				if name == "exp" {
					x = op.Call1(b, "tanh", nil, x) // keep exp bounded
				}
				v = op.Call1(b, name, nil, x)
			case 1:
				v = op.Call1(b, binary[rng.IntN(len(binary))], nil, x, b.Scalar(float64(rng.IntN(5))+0.5, x))
			case 2:
				v = op.Call1(b, binary[rng.IntN(3)], nil, b.Scalar(float64(rng.IntN(5))+0.25, x), x)
			default:
				v = op.Call1(b, binary[rng.IntN(len(binary))], nil, x, vals[rng.IntN(len(vals))])
			}
			// Keep magnitudes bounded so that no Inf/NaN appears.
			if !arith {
				v = op.Call1(b, "tanh", nil, v)
			} else if rng.IntN(3) == 0 {
				v = op.Call1(b, "minimum", nil, op.Call1(b, "maximum", nil, v, b.Scalar(-4.0, v)), b.Scalar(4.0, v))
			}
			vals = append(vals, v)
		}
		return []op.Value{vals[len(vals)-1], vals[len(vals)-3], vals[len(vals)-5]}
	}
	return compileCase{name: fmt.Sprintf("dag%d/%v", seed, arith), params: params, fn: fn, exact: true}
}

// mlpBlock is layer_norm -> linear -> gelu -> linear -> residual add.
func mlpBlock(b op.Builder, p []op.Value) []op.Value {
	x := p[0]
	h := op.Call1(b, "layer_norm", op.Attrs{"normalized_shape": []int{b.Meta(x).Shape[1]}, "eps": 1e-5}, x, p[1], p[2])
	h = op.Call1(b, "linear", nil, h, p[3], p[4])
	h = op.Call1(b, "gelu", nil, h)
	h = op.Call1(b, "linear", nil, h, p[5], p[6])
	return []op.Value{op.Call1(b, "add", nil, h, x)}
}

func mlpParams(n, d, hidden int) []op.Meta {
	return []op.Meta{fm(n, d), fm(d), fm(d), fm(hidden, d), fm(hidden), fm(d, hidden), fm(d)}
}

// gradRecorder traces a function and its reverse-mode gradient through the
// op table's VJPs (composites without one are decomposed).
type gradRecorder struct {
	t     *ir.Tracer
	calls []gradCall
}

type gradCall struct {
	d       *op.Def
	a       op.Attrs
	in, out []op.Value
}

func (r *gradRecorder) Call(name string, in []op.Value, a op.Attrs) []op.Value {
	d := op.MustLookup(name)
	if d.Kind == op.Composite && d.VJP == nil {
		na, err := d.Normalize(a)
		if err != nil {
			panic(err)
		}
		return d.Decompose(r, in, na)
	}
	out := r.t.Call(name, in, a)
	na, _ := d.Normalize(a)
	r.calls = append(r.calls, gradCall{d: d, a: na, in: in, out: out})
	return out
}
func (r *gradRecorder) Meta(v op.Value) op.Meta              { return r.t.Meta(v) }
func (r *gradRecorder) Scalar(v any, like op.Value) op.Value { return r.t.Scalar(v, like) }

// withGrad returns fn extended with the gradients of sum(fn's first
// output) with respect to every parameter.
func withGrad(fn func(b op.Builder, p []op.Value) []op.Value) func(b op.Builder, p []op.Value) []op.Value {
	return func(b op.Builder, p []op.Value) []op.Value {
		rec := &gradRecorder{t: b.(*ir.Tracer)}
		outs := fn(rec, p)
		loss := op.Call1(b, "reduce", op.Attrs{"kind": "sum", "dims": []int{}}, outs[0])
		grads := map[op.Value]op.Value{}
		m := b.Meta(outs[0])
		grads[outs[0]] = b.Call("full", nil, op.Attrs{"shape": m.Shape, "value": 1.0, "dtype": m.DType})[0]
		for i := len(rec.calls) - 1; i >= 0; i-- {
			c := rec.calls[i]
			gout := make([]op.Value, len(c.out))
			any := false
			for k, o := range c.out {
				if g, ok := grads[o]; ok {
					gout[k] = g
					any = true
				} else {
					om := b.Meta(o)
					gout[k] = b.Call("full", nil, op.Attrs{"shape": om.Shape, "value": 0.0, "dtype": om.DType})[0]
				}
			}
			if !any || c.d.VJP == nil {
				continue
			}
			gin := c.d.VJP(b, c.in, c.out, gout, c.a)
			for k, g := range gin {
				if g == nil || k >= len(c.in) || c.in[k] == nil {
					continue
				}
				if _, ok := c.in[k].(*ir.Value); !ok {
					continue
				}
				if prev, ok := grads[c.in[k]]; ok {
					g = op.Call1(b, "add", nil, prev, g)
				}
				grads[c.in[k]] = g
			}
		}
		res := []op.Value{loss}
		for _, x := range p {
			if g, ok := grads[x]; ok {
				res = append(res, g)
			}
		}
		return res
	}
}

var compileCases = []compileCase{
	randomDAG(1, 5, 7, true),
	randomDAG(2, 33, 130, true),
	randomDAG(3, 64, 300, true),
	randomDAG(4, 5, 7, false),
	randomDAG(5, 40, 257, false),
	{name: "wide rows", params: []op.Meta{fm(3, 9000), fm(9000), fm(3, 1), fm(2, 3, 1)}, fn: func(b op.Builder, p []op.Value) []op.Value {
		h := op.Call1(b, "add", nil, op.Call1(b, "mul", nil, p[0], p[1]), p[2])
		t := op.Call1(b, "transpose", op.Attrs{"dim0": 0, "dim1": 1}, op.Call1(b, "reshape", op.Attrs{"shape": []int{9000, 3}}, p[0]))
		k := op.Call1(b, "sub", nil, op.Call1(b, "mul", nil, h, t), p[3])
		return []op.Value{op.Call1(b, "div", nil, k, b.Scalar(3.0, k))}
	}, exact: true},
	{name: "mlp block", params: mlpParams(8, 16, 32), fn: mlpBlock, exact: true},
	{name: "mlp block backward", params: mlpParams(6, 12, 20), fn: withGrad(mlpBlock), exact: true},
	{name: "softmax", params: []op.Meta{fm(7, 33)}, fn: func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "softmax", op.Attrs{"dim": -1}, p[0]), op.Call1(b, "log_softmax", op.Attrs{"dim": 0}, p[0])}
	}, exact: true},
	{name: "cross_entropy", params: []op.Meta{fm(9, 11), {Shape: []int{9}, DType: dtype.I64}}, fn: func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "cross_entropy", nil, p[0], p[1], nil)}
	}, intMax: 11, exact: true},
	{name: "cross_entropy backward", params: []op.Meta{fm(9, 11), {Shape: []int{9}, DType: dtype.I64}}, fn: withGrad(func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "cross_entropy", nil, p[0], p[1], nil)}
	}), intMax: 11, exact: true},
	{name: "fused reductions", params: []op.Meta{fm(6, 5, 70), fm(70)}, fn: func(b op.Builder, p []op.Value) []op.Value {
		e := op.Call1(b, "exp", nil, op.Call1(b, "sub", nil, p[0], p[1]))
		s := op.Call1(b, "reduce", op.Attrs{"kind": "sum", "dims": []int{-1}}, e)
		q := op.Call1(b, "mul", nil, op.Call1(b, "add", nil, p[0], p[1]), p[0])
		mx := op.Call1(b, "reduce", op.Attrs{"kind": "max", "dims": []int{1, 2}, "keepdim": true}, q)
		mean := op.Call1(b, "mean", op.Attrs{"dims": []int{-1}}, op.Call1(b, "mul", nil, p[0], p[0]))
		return []op.Value{s, mx, mean}
	}, exact: true},
	{name: "gemm epilogues", params: []op.Meta{fm(37, 19), fm(23, 19), fm(23), fm(37, 23), fm(2, 5, 19), fm(19, 9)}, fn: func(b op.Builder, p []op.Value) []op.Value {
		h := op.Call1(b, "linear", nil, p[0], p[1], p[2])
		r := op.Call1(b, "add", nil, op.Call1(b, "relu", nil, h), p[3])
		t := op.Call1(b, "tanh", nil, op.Call1(b, "matmul", nil, p[4], p[5]))
		v := op.Call1(b, "mul", nil, op.Call1(b, "matmul", nil, p[0], op.Call1(b, "transpose", op.Attrs{"dim0": 0, "dim1": 1}, p[1])), b.Scalar(0.5, p[0]))
		return []op.Value{r, t, v, h}
	}, exact: true},
	{name: "views and copies", params: []op.Meta{fm(4, 6), fm(6, 4)}, fn: func(b op.Builder, p []op.Value) []op.Value {
		tr := op.Call1(b, "transpose", op.Attrs{"dim0": 0, "dim1": 1}, p[0])
		flat := op.Call1(b, "reshape", op.Attrs{"shape": []int{24}}, tr)
		sl := op.Call1(b, "slice", op.Attrs{"dim": 0, "start": 1, "end": 6, "step": 2}, p[1])
		e := op.Call1(b, "add", nil, op.Call1(b, "exp", nil, tr), p[1])
		return []op.Value{flat, op.Call1(b, "mul", nil, sl, b.Scalar(2.0, sl)), tr, p[1], e, e}
	}, tol: 4},
	{name: "where and masks", params: []op.Meta{fm(33, 70), fm(70), fm(33, 1)}, fn: func(b op.Builder, p []op.Value) []op.Value {
		c := op.Call1(b, "gt", nil, p[0], p[1])
		h := op.Call1(b, "where", nil, c, op.Call1(b, "mul", nil, p[0], p[2]), b.Scalar(0.0, p[0]))
		m := op.Call1(b, "convert", op.Attrs{"dtype": dtype.F32}, op.Call1(b, "lt", nil, p[2], b.Scalar(0.0, p[2])))
		k := op.Call1(b, "add", nil, op.Call1(b, "mul", nil, h, m), p[1])
		return []op.Value{op.Call1(b, "where", nil, c, k, op.Call1(b, "neg", nil, k))}
	}, exact: true},
	{name: "relu mlp backward", params: []op.Meta{fm(16, 24), fm(40, 24), fm(40), fm(8, 40), fm(8)}, fn: withGrad(func(b op.Builder, p []op.Value) []op.Value {
		h := op.Call1(b, "relu", nil, op.Call1(b, "linear", nil, p[0], p[1], p[2]))
		return []op.Value{op.Call1(b, "linear", nil, h, p[3], p[4])}
	}), exact: true},
	{name: "seeded random", params: []op.Meta{fm(6, 5)}, fn: func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "dropout", op.Attrs{"p": 0.3, "seed": 42, "offset": 7}, p[0]),
			b.Call("randn", nil, op.Attrs{"shape": []int{3, 4}, "seed": 5})[0]}
	}, exact: true},
}

// TestCompileMatchesInterp runs every case through interp, the unfused plan
// (bit-identical), the fused plan (bit-identical where exact, else within
// tolerance) and the fused plan marshaled and loaded (identical to fused).
func TestCompileMatchesInterp(t *testing.T) {
	be := testBackend(t)
	ctx := context.Background()
	for _, c := range compileCases {
		t.Run(c.name, func(t *testing.T) {
			g, err := ir.Trace(c.params, c.fn)
			if err != nil {
				t.Fatal(err)
			}
			ins := inputsFor(c.params, 3, c.intMax)
			ip, err := interp.Compile(be, g, device.CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := runProg(t, be, ip, g, ins, device.RunOptions{})
			pl, err := buildPlan(be, g, device.CompileOptions{}, false)
			if err != nil {
				t.Fatal(err)
			}
			unfused := runProg(t, be, &cprogram{be: be, pl: pl}, g, ins, device.RunOptions{})
			for i := range want {
				if !bytes.Equal(unfused[i], want[i]) {
					t.Errorf("unfused output %d differs from interp", i)
				}
			}
			p, err := be.CompileProgram(ctx, 0, g, device.CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			fused := runProg(t, be, p, g, ins, device.RunOptions{})
			for i := range want {
				if c.exact || g.Outputs[i].Meta.DType != dtype.F32 {
					if !bytes.Equal(fused[i], want[i]) {
						t.Errorf("fused output %d differs from interp (Strict eager) bit for bit: a fused op's vec kernel and its eager kernel disagree", i)
					}
				} else if k, ok := closeF32(fused[i], want[i], c.tol); !ok {
					t.Errorf("fused output %d element %d: %v vs interp %v", i, k, as[float32](fused[i])[k], as[float32](want[i])[k])
				}
			}
			data, err := p.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			lp, err := be.LoadProgram(0, data)
			if err != nil {
				t.Fatal(err)
			}
			loaded := runProg(t, be, lp, g, ins, device.RunOptions{})
			for i := range fused {
				if !bytes.Equal(loaded[i], fused[i]) {
					t.Errorf("loaded output %d differs from the compiled program", i)
				}
			}
			if lp.Stats() != p.Stats() {
				t.Errorf("loaded stats %+v, compiled %+v", lp.Stats(), p.Stats())
			}
			again, _ := lp.Marshal()
			if !bytes.Equal(again, data) {
				t.Error("re-marshaled plan differs")
			}
			t.Logf("interp %+v, compiled %+v\n%s", ip.Stats(), p.Stats(), p.(*cprogram).pl.summary())
		})
	}
}

// TestCompileFusion checks what the planner decides on the MLP block:
// fewer kernels and less memory than interp, the GEMM epilogues taken.
func TestCompileFusion(t *testing.T) {
	be := testBackend(t)
	g, err := ir.Trace(mlpParams(64, 128, 512), mlpBlock)
	if err != nil {
		t.Fatal(err)
	}
	ip, err := interp.Compile(be, g, device.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	is, cs := ip.Stats(), p.Stats()
	t.Logf("interp %+v, compiled %+v", is, cs)
	if cs.Kernels >= is.Kernels || cs.Fused == 0 {
		t.Errorf("kernels %d (fused %d), interp %d", cs.Kernels, cs.Fused, is.Kernels)
	}
	if cs.PeakBytes >= is.PeakBytes {
		t.Errorf("peak %d bytes, interp %d", cs.PeakBytes, is.PeakBytes)
	}
	gemms := 0
	for _, s := range p.(*cprogram).pl.steps {
		if s.grp != nil && s.grp.gemm >= 0 {
			gemms++
		}
	}
	if gemms != 2 {
		t.Errorf("%d GEMMs with epilogues, want 2", gemms)
	}
}

// TestCompilePrecision: the compile options' precision reaches the GEMMs
// (fused epilogue or not) exactly as interp applies it.
func TestCompilePrecision(t *testing.T) {
	be := testBackend(t)
	g, err := ir.Trace(mlpParams(9, 20, 33), mlpBlock)
	if err != nil {
		t.Fatal(err)
	}
	ins := inputsFor(mlpParams(9, 20, 33), 6, 0)
	var prev [][]byte
	for _, prec := range []string{"medium", "high", "highest"} {
		opts := device.CompileOptions{Precision: prec}
		ip, err := interp.Compile(be, g, opts)
		if err != nil {
			t.Fatal(err)
		}
		want := runProg(t, be, ip, g, ins, device.RunOptions{})
		p, err := be.CompileProgram(context.Background(), 0, g, opts)
		if err != nil {
			t.Fatal(err)
		}
		got := runProg(t, be, p, g, ins, device.RunOptions{})
		if k, ok := closeF32(got[0], want[0], 4); !ok {
			t.Errorf("%s: element %d: %v vs interp %v", prec, k, as[float32](got[0])[k], as[float32](want[0])[k])
		}
		if prev != nil && bytes.Equal(prev[0], got[0]) {
			t.Errorf("%s gives the same bits as the previous precision", prec)
		}
		prev = got
	}
}

// TestCompileDynamic: run-time dynamic attributes reach the nodes a random
// composite lowered to, and an optimizer step's lr, as in interp.
func TestCompileDynamic(t *testing.T) {
	be := testBackend(t)
	c := compileCases[len(compileCases)-1] // seeded random
	g, err := ir.Trace(c.params, c.fn)
	if err != nil {
		t.Fatal(err)
	}
	ins := inputsFor(c.params, 1, 0)
	dyn := device.RunOptions{Dynamic: []op.Attrs{{"seed": int64(9), "offset": 3}, {"seed": 10}}}
	ip, _ := interp.Compile(be, g, device.CompileOptions{})
	p, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := runProg(t, be, ip, g, ins, dyn)
	got := runProg(t, be, p, g, ins, dyn)
	plain := runProg(t, be, p, g, ins, device.RunOptions{})
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("output %d with dynamic seeds differs from interp", i)
		}
		if bytes.Equal(got[i], plain[i]) {
			t.Errorf("output %d did not change with the seed", i)
		}
	}
	if _, err := p.Run(context.Background(), 0, nil, dyn); err == nil {
		t.Error("missing inputs accepted")
	}

	// A functional sgd_step with its lr given per run.
	sgd := op.MustLookup("sgd_step")
	na, _ := sgd.Normalize(op.Attrs{"lr": 0.1, "momentum": 0.9})
	gg := ir.New()
	w, gr, buf := gg.Param(fm(100)), gg.Param(fm(100)), gg.Param(fm(100))
	n := gg.AddNode(sgd, na, []*ir.Value{w, gr, buf}, []op.Meta{fm(100), fm(100)})
	gg.SetOutputs(n.Out...)
	ins = inputsFor([]op.Meta{fm(100), fm(100), fm(100)}, 2, 0)
	ip, _ = interp.Compile(be, gg, device.CompileOptions{})
	p, err = be.CompileProgram(context.Background(), 0, gg, device.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lr := device.RunOptions{Dynamic: []op.Attrs{{"lr": 0.25}}}
	want, got = runProg(t, be, ip, gg, ins, lr), runProg(t, be, p, gg, ins, lr)
	def := runProg(t, be, p, gg, ins, device.RunOptions{})
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("sgd output %d differs from interp", i)
		}
		if i == 0 && bytes.Equal(got[i], def[i]) {
			t.Errorf("sgd output %d ignores the run's lr", i) // the momentum buffer does not depend on lr
		}
	}
}

// TestCompileStridedInputs: strided and offset inputs give the results of
// their contiguous copies.
func TestCompileStridedInputs(t *testing.T) {
	be := testBackend(t)
	g, err := ir.Trace([]op.Meta{fm(3, 4), fm(4)}, func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "mul", nil, op.Call1(b, "add", nil, p[0], p[1]), p[0])}
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := inputsFor([]op.Meta{fm(2, 4, 3), fm(8)}, 5, 0)
	b0, _ := be.Alloc(0, len(base[0]))
	copy(b0.(*Buf).b, base[0])
	b1, _ := be.Alloc(0, len(base[1]))
	copy(b1.(*Buf).b, base[1])
	x := device.Operand{Buf: b0, DType: dtype.F32, Layout: op.Layout{Shape: []int{3, 4}, Strides: []int{1, 3}, Offset: 12}}
	y := device.Operand{Buf: b1, DType: dtype.F32, Layout: op.Layout{Shape: []int{4}, Strides: []int{2}}}
	outs, err := p.Run(context.Background(), 0, []device.Operand{x, y}, device.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	xs, ys := as[float32](base[0]), as[float32](base[1])
	got := as[float32](outs[0].(*Buf).b)
	for i := 0; i < 3; i++ {
		for j := 0; j < 4; j++ {
			xv := xs[12+i+3*j]
			if want := (xv + ys[2*j]) * xv; got[i*4+j] != want {
				t.Fatalf("element (%d,%d) = %v, want %v", i, j, got[i*4+j], want)
			}
		}
	}
	x.Offset = 1000
	if _, err := p.Run(context.Background(), 0, []device.Operand{x, y}, device.RunOptions{}); err == nil {
		t.Error("out-of-bounds layout accepted")
	}
}

func TestLoadProgramCorrupt(t *testing.T) {
	be := testBackend(t)
	g, err := ir.Trace(mlpParams(4, 6, 8), mlpBlock)
	if err != nil {
		t.Fatal(err)
	}
	p, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{Precision: "high", Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if be.ProgramFormat() != "cpu-plan/3" {
		t.Errorf("format %q", be.ProgramFormat())
	}
	for i := 0; i < len(data); i += max(1, len(data)/97) {
		if _, err := be.LoadProgram(0, data[:i]); !errors.Is(err, device.ErrProgramFormat) {
			t.Fatalf("truncated at %d: err = %v", i, err)
		}
		c := slices.Clone(data)
		c[i] ^= 0x5a
		if _, err := be.LoadProgram(0, c); !errors.Is(err, device.ErrProgramFormat) {
			t.Fatalf("corrupt byte %d: err = %v", i, err)
		}
	}
	if _, err := be.LoadProgram(0, []byte("interp/1\nxyz")); !errors.Is(err, device.ErrProgramFormat) {
		t.Errorf("foreign format: err = %v", err)
	}
}

// FuzzLoadProgram decodes plan bodies (past the checksum, which would
// otherwise reject nearly every mutation): a body decodes and validates or
// is an ErrProgramFormat error, never a panic, and a plan that validates
// runs without panicking.
func FuzzLoadProgram(f *testing.F) {
	be := testBackend(f)
	for _, c := range compileCases[:6] {
		g, err := ir.Trace(c.params, c.fn)
		if err != nil {
			f.Fatal(err)
		}
		p, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{})
		if err != nil {
			f.Fatal(err)
		}
		data, _ := p.Marshal()
		f.Add(data[len(planFormat)+1+32:])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		pl, err := decodePlanBody(body)
		if err != nil {
			if !errors.Is(err, device.ErrProgramFormat) {
				t.Fatalf("error %v does not wrap ErrProgramFormat", err)
			}
			return
		}
		var ops []device.Operand
		for _, v := range pl.g.Params {
			n := v.Meta.Numel() * v.Meta.DType.Size()
			if n > 1<<20 {
				return
			}
			ops = append(ops, device.Operand{Buf: &Buf{b: make([]byte, n)}, DType: v.Meta.DType, Layout: op.Contiguous(slices.Clone(v.Meta.Shape))})
		}
		if pl.arena > 1<<24 || planWork(pl) > 1<<22 {
			return // valid but too slow to run here (stride-0 views can be huge)
		}
		for _, b := range pl.bufs {
			if b.size > 1<<24 {
				return
			}
		}
		outs, err := (&cprogram{be: be, pl: pl}).Run(context.Background(), 0, ops, device.RunOptions{})
		if err == nil {
			for _, o := range outs {
				be.Free(0, o)
			}
		}
	})
}

// TestCompileEdgeCases: empty tensors, an input and its transpose fused
// together (no in-place overwrite of a buffer another input still reads),
// constants and parameters as outputs.
func TestCompileEdgeCases(t *testing.T) {
	be := testBackend(t)
	cases := []compileCase{
		{name: "empty", params: []op.Meta{fm(0, 4), fm(4)}, fn: func(b op.Builder, p []op.Value) []op.Value {
			h := op.Call1(b, "mul", nil, op.Call1(b, "add", nil, p[0], p[1]), p[1])
			return []op.Value{h, op.Call1(b, "reduce", op.Attrs{"kind": "sum", "dims": []int{0}}, op.Call1(b, "exp", nil, h))}
		}, exact: true},
		{name: "self transpose", params: []op.Meta{fm(128, 128)}, fn: func(b op.Builder, p []op.Value) []op.Value {
			x := op.Call1(b, "neg", nil, op.Call1(b, "add", nil, p[0], b.Scalar(1.0, p[0])))
			xt := op.Call1(b, "transpose", op.Attrs{"dim0": 0, "dim1": 1}, x)
			y := op.Call1(b, "sub", nil, op.Call1(b, "mul", nil, x, b.Scalar(3.0, x)), xt)
			return []op.Value{op.Call1(b, "transpose", op.Attrs{"dim0": 0, "dim1": 1}, y)}
		}, exact: true},
		{name: "constant and parameter outputs", params: []op.Meta{fm(3)}, fn: func(b op.Builder, p []op.Value) []op.Value {
			c := b.Call("full", nil, op.Attrs{"shape": []int{3}, "value": 2.0, "dtype": dtype.F32})[0]
			return []op.Value{p[0], c, c, p[0], op.Call1(b, "add", nil, p[0], c)}
		}, exact: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := ir.Trace(c.params, c.fn)
			if err != nil {
				t.Fatal(err)
			}
			ins := inputsFor(c.params, 9, 0)
			ip, err := interp.Compile(be, g, device.CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := runProg(t, be, ip, g, ins, device.RunOptions{})
			p, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{Threads: 3})
			if err != nil {
				t.Fatal(err)
			}
			got := runProg(t, be, p, g, ins, device.RunOptions{})
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("output %d differs from interp", i)
				}
			}
		})
	}
}

// planWork bounds the elements a plan's steps touch (for the fuzzer, which
// must not run valid but enormous plans).
func planWork(pl *plan) int64 {
	var w int64
	add := func(shape []int) {
		n := int64(1)
		for _, d := range shape {
			n *= int64(d)
			if n > 1<<40 {
				n = 1 << 40
			}
		}
		w += n
	}
	for _, s := range pl.steps {
		for _, l := range s.inL {
			add(l.Shape)
		}
		for _, id := range s.in {
			if id >= 0 {
				add(pl.vals[id].layout.Shape)
			}
		}
		if s.grp != nil {
			add(s.grp.shape)
			if s.grp.gemm >= 0 {
				for _, v := range pl.g.Nodes[s.grp.gemm].In {
					add(v.Meta.Shape)
				}
				w += int64(s.grp.numel) * 64
			}
		}
		if s.node >= 0 && !pl.g.Nodes[s.node].IsConst() {
			for _, v := range pl.g.Nodes[s.node].In {
				if v != nil {
					add(v.Meta.Shape)
				}
			}
		}
	}
	return w
}

// TestCompileConcurrentRuns: one program run from several goroutines at
// once gives every caller the same results (run with -race).
func TestCompileConcurrentRuns(t *testing.T) {
	be := testBackend(t)
	c := compileCases[6] // mlp block
	g, err := ir.Trace(c.params, c.fn)
	if err != nil {
		t.Fatal(err)
	}
	p, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	ins := inputsFor(c.params, 4, 0)
	want := runProg(t, be, p, g, ins, device.RunOptions{})
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		go func() {
			var ops []device.Operand
			for i, raw := range ins {
				m := g.Params[i].Meta
				ops = append(ops, device.Operand{Buf: &Buf{b: slices.Clone(raw)}, DType: m.DType, Layout: op.Contiguous(slices.Clone(m.Shape))})
			}
			for i := 0; i < 5; i++ {
				outs, err := p.Run(context.Background(), 0, ops, device.RunOptions{})
				if err != nil {
					errs <- err
					return
				}
				for k := range want {
					if !bytes.Equal(outs[k].(*Buf).b[:len(want[k])], want[k]) {
						errs <- fmt.Errorf("run %d output %d differs", i, k)
						return
					}
					be.Free(0, outs[k])
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < 4; w++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
