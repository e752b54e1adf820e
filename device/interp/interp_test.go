package interp_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	_ "github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/device/interp"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

var cpuDev = device.Device{Type: "cpu"}

// eager runs op.Builder code through tensor.Apply (Strict mode).
type eager struct{ wrapped map[*tensor.Tensor]bool }

func (b *eager) Call(name string, in []op.Value, a op.Attrs) []op.Value {
	ts := make([]*tensor.Tensor, len(in))
	for i, v := range in {
		if v != nil {
			ts[i] = v.(*tensor.Tensor)
		}
	}
	res := tensor.Apply(name, ts, a)
	out := make([]op.Value, len(res))
	for i, r := range res {
		out[i] = r
	}
	return out
}

func (b *eager) Meta(v op.Value) op.Meta {
	t := v.(*tensor.Tensor)
	return op.Meta{Shape: t.Shape(), DType: t.DType(), Wrapped: b.wrapped[t]}
}

func (b *eager) Scalar(v any, like op.Value) op.Value {
	t := tensor.Scalar(v)
	b.wrapped[t] = true
	return t
}

type prog = func(b op.Builder, p []op.Value) []op.Value

func m(dt dtype.DType, shape ...int) op.Meta { return op.Meta{Shape: shape, DType: dt} }

// randomBytes fills a tensor of meta mt with test data: floats in [-2, 2),
// integers in [0, intMax).
func randomBytes(r *rand.Rand, mt op.Meta, intMax int) []byte {
	n := op.Numel(mt.Shape)
	raw := make([]byte, n*mt.DType.Size())
	for i := 0; i < n; i++ {
		switch {
		case mt.DType.IsFloat():
			dtype.PutFloat64(mt.DType, raw, i, r.Float64()*4-2)
		case mt.DType == dtype.Bool:
			dtype.PutInt64(mt.DType, raw, i, int64(r.IntN(2)))
		default:
			dtype.PutInt64(mt.DType, raw, i, int64(r.IntN(intMax)))
		}
	}
	return raw
}

func cpuBackend(t testing.TB) device.Backend {
	be, err := device.Lookup("cpu")
	if err != nil {
		t.Fatal(err)
	}
	return be
}

// operand puts raw on the backend as a contiguous operand.
func operand(t testing.TB, be device.Backend, mt op.Meta, raw []byte) device.Operand {
	buf, err := be.Alloc(0, max(len(raw), 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Write(0, buf, 0, raw); err != nil {
		t.Fatal(err)
	}
	return device.Operand{Buf: buf, DType: mt.DType, Layout: op.Contiguous(slices.Clone(mt.Shape))}
}

func readBuf(t testing.TB, be device.Backend, b device.Buffer, n int) []byte {
	raw := make([]byte, n)
	if err := be.Read(0, b, 0, raw); err != nil {
		t.Fatal(err)
	}
	return raw
}

type interpCase struct {
	name   string
	params []op.Meta
	fn     prog
	intMax int // exclusive bound of integer inputs (indices)
}

var interpCases = []interpCase{
	{"elementwise broadcast scalars", []op.Meta{m(dtype.F32, 4, 8), m(dtype.F32, 8), m(dtype.F32, 4, 1)}, func(b op.Builder, p []op.Value) []op.Value {
		h := op.Call1(b, "add", nil, op.Call1(b, "mul", nil, p[0], p[1]), p[2])
		h = op.Call1(b, "mul", nil, op.Call1(b, "gelu", nil, h), b.Scalar(0.5, h))
		return []op.Value{h, op.Call1(b, "exp", nil, op.Call1(b, "neg", nil, h))}
	}, 0},
	{"promotion", []op.Meta{m(dtype.F32, 3, 5), m(dtype.I32, 5), m(dtype.BF16, 5)}, func(b op.Builder, p []op.Value) []op.Value {
		y := op.Call1(b, "add", nil, p[0], p[1])
		q := op.Call1(b, "div", nil, p[1], b.Scalar(3, p[1]))
		h := op.Call1(b, "mul", nil, p[2], b.Scalar(0.5, p[2]))
		return []op.Value{op.Call1(b, "sub", nil, y, q), h}
	}, 7},
	{"mlp", []op.Meta{m(dtype.F32, 4, 8), m(dtype.F32, 16, 8), m(dtype.F32, 16), m(dtype.F32, 3, 16), m(dtype.F32, 3)}, func(b op.Builder, p []op.Value) []op.Value {
		h := op.Call1(b, "linear", nil, p[0], p[1], p[2])
		h = op.Call1(b, "gelu", nil, h)
		return []op.Value{op.Call1(b, "linear", nil, h, p[3], p[4])}
	}, 0},
	{"layer_norm softmax", []op.Meta{m(dtype.F32, 2, 3, 6), m(dtype.F32, 6), m(dtype.F32, 6)}, func(b op.Builder, p []op.Value) []op.Value {
		h := op.Call1(b, "layer_norm", op.Attrs{"normalized_shape": []int{6}, "eps": 1e-5}, p[0], p[1], p[2])
		return []op.Value{op.Call1(b, "softmax", op.Attrs{"dim": -1}, h), op.Call1(b, "log_softmax", op.Attrs{"dim": 1}, h)}
	}, 0},
	{"cross_entropy", []op.Meta{m(dtype.F32, 5, 7), m(dtype.I64, 5)}, func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "cross_entropy", nil, p[0], p[1], nil)}
	}, 7},
	{"views", []op.Meta{m(dtype.F32, 4, 6), m(dtype.F32, 6, 4)}, func(b op.Builder, p []op.Value) []op.Value {
		tr := op.Call1(b, "transpose", op.Attrs{"dim0": 0, "dim1": 1}, p[0])                  // strided view
		flat := op.Call1(b, "reshape", op.Attrs{"shape": []int{24}}, tr)                      // needs a copy
		sl := op.Call1(b, "slice", op.Attrs{"dim": 0, "start": 1, "end": 6, "step": 2}, p[1]) // strided rows
		mm := op.Call1(b, "matmul", nil, tr, p[0])
		ex := op.Call1(b, "expand", op.Attrs{"shape": []int{2, 3, 4}}, sl)
		return []op.Value{flat, mm, op.Call1(b, "mul", nil, ex, b.Scalar(2.0, ex)), tr, p[1], tr}
	}, 0},
	{"reductions", []op.Meta{m(dtype.F32, 3, 4, 5)}, func(b op.Builder, p []op.Value) []op.Value {
		s := op.Call1(b, "sum", op.Attrs{"dims": []int{-1}}, p[0])
		mx := b.Call("max_dim", []op.Value{p[0]}, op.Attrs{"dim": 1})
		mean := op.Call1(b, "mean", op.Attrs{"dims": []int{0, 2}, "keepdim": true}, p[0])
		return append([]op.Value{s, mean}, mx...)
	}, 0},
	{"index", []op.Meta{m(dtype.F32, 10, 4), m(dtype.I64, 3, 2)}, func(b op.Builder, p []op.Value) []op.Value {
		e := op.Call1(b, "embedding", nil, p[0], p[1])
		return []op.Value{e, op.Call1(b, "cat", op.Attrs{"dim": 0}, p[0], p[0])}
	}, 10},
	{"seeded dropout", []op.Meta{m(dtype.F32, 6, 5)}, func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "dropout", op.Attrs{"p": 0.3, "seed": 42, "offset": 7}, p[0]),
			b.Call("randn", nil, op.Attrs{"shape": []int{3, 4}, "seed": 5})[0]}
	}, 0},
	{"f64", []op.Meta{m(dtype.F64, 3, 4), m(dtype.F64, 4, 2)}, func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "tanh", nil, op.Call1(b, "matmul", nil, p[0], p[1]))}
	}, 0},
}

// runBoth traces c.fn, runs it through interp and eagerly, and returns the
// interp and eager outputs as bytes.
func runBoth(t *testing.T, be device.Backend, c interpCase, opts device.RunOptions, load bool) (got, want [][]byte, prog device.Program) {
	t.Helper()
	g, err := ir.Trace(c.params, c.fn)
	if err != nil {
		t.Fatal(err)
	}
	p, err := interp.Compile(be, g, device.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if load {
		data, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if p, err = interp.Load(be, data); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	var ins []device.Operand
	var eins []op.Value
	var raws [][]byte
	for _, mt := range c.params {
		raw := randomBytes(r, mt, c.intMax)
		raws = append(raws, raw)
		ins = append(ins, operand(t, be, mt, raw))
		eins = append(eins, tensor.FromBytes(cpuDev, mt.DType, mt.Shape, raw))
	}
	outs, err := p.Run(context.Background(), 0, ins, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range outs {
		mt := g.Outputs[i].Meta
		got = append(got, readBuf(t, be, o, op.Numel(mt.Shape)*mt.DType.Size()))
	}
	// Inputs are never written; outputs alias nothing.
	for i, in := range ins {
		if !bytes.Equal(readBuf(t, be, in.Buf, len(raws[i])), raws[i]) {
			t.Errorf("input %d was modified", i)
		}
		for _, o := range outs {
			if o == in.Buf {
				t.Errorf("output aliases input %d", i)
			}
		}
	}
	for i := range outs {
		for j := range i {
			if outs[i] == outs[j] {
				t.Errorf("outputs %d and %d alias", j, i)
			}
		}
	}
	for _, o := range outs {
		be.Free(0, o)
	}
	for _, in := range ins {
		be.Free(0, in.Buf)
	}
	res := c.fn(&eager{wrapped: map[*tensor.Tensor]bool{}}, eins)
	for _, v := range res {
		want = append(want, v.(*tensor.Tensor).Bytes())
	}
	return got, want, p
}

func TestInterpMatchesEager(t *testing.T) {
	be := cpuBackend(t)
	for _, c := range interpCases {
		for _, load := range []bool{false, true} {
			name := c.name
			if load {
				name += "/loaded"
			}
			t.Run(name, func(t *testing.T) {
				got, want, p := runBoth(t, be, c, device.RunOptions{}, load)
				if len(got) != len(want) {
					t.Fatalf("%d outputs, eager has %d", len(got), len(want))
				}
				for i := range got {
					if !bytes.Equal(got[i], want[i]) {
						t.Errorf("output %d differs from eager", i)
					}
				}
				st := p.Stats()
				if st.Nodes == 0 || st.Kernels == 0 || st.PeakBytes <= 0 || st.Fused != 0 {
					t.Errorf("stats %+v", st)
				}
			})
		}
	}
}

// TestInterpStrided: inputs with strides and offsets give the results of
// the same views eagerly.
func TestInterpStrided(t *testing.T) {
	be := cpuBackend(t)
	g, err := ir.Trace([]op.Meta{m(dtype.F32, 3, 4), m(dtype.F32, 4)}, func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "add", nil, op.Call1(b, "exp", nil, p[0]), p[1]), op.Call1(b, "reshape", op.Attrs{"shape": []int{12}}, p[0])}
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := interp.Compile(be, g, device.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	base := randomBytes(r, m(dtype.F32, 2, 4, 3), 0) // p0 = base[1].T: shape [3,4], strides [1,3], offset 12
	vec := randomBytes(r, m(dtype.F32, 8), 0)        // p1 = vec[::2]
	b0 := operand(t, be, m(dtype.F32, 2, 4, 3), base)
	b0.Layout = op.Layout{Shape: []int{3, 4}, Strides: []int{1, 3}, Offset: 12}
	b1 := operand(t, be, m(dtype.F32, 8), vec)
	b1.Layout = op.Layout{Shape: []int{4}, Strides: []int{2}}
	outs, err := p.Run(context.Background(), 0, []device.Operand{b0, b1}, device.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e0 := tensor.FromBytes(cpuDev, dtype.F32, []int{2, 4, 3}, base)
	e0 = tensor.Apply1("transpose", []*tensor.Tensor{tensor.Apply1("select", []*tensor.Tensor{e0}, op.Attrs{"dim": 0, "index": 1})}, op.Attrs{"dim0": 0, "dim1": 1})
	e1 := tensor.Apply1("slice", []*tensor.Tensor{tensor.FromBytes(cpuDev, dtype.F32, []int{8}, vec)}, op.Attrs{"dim": 0, "step": 2})
	want := [][]byte{
		tensor.Apply1("add", []*tensor.Tensor{tensor.Apply1("exp", []*tensor.Tensor{e0}, nil), e1}, nil).Bytes(),
		tensor.Apply1("reshape", []*tensor.Tensor{e0}, op.Attrs{"shape": []int{12}}).Bytes(),
	}
	for i, o := range outs {
		if got := readBuf(t, be, o, 48); !bytes.Equal(got, want[i]) {
			t.Errorf("output %d differs from eager", i)
		}
		be.Free(0, o)
	}
	// A layout outside the buffer is an error, not a crash.
	b0.Layout.Offset = 1000
	if _, err := p.Run(context.Background(), 0, []device.Operand{b0, b1}, device.RunOptions{}); err == nil {
		t.Error("out-of-bounds layout accepted")
	}
}

// TestInterpSeeds: RunOptions.Dynamic replaces the random nodes' seeds in
// node order (composite random ops included), as eager with those seeds.
func TestInterpSeeds(t *testing.T) {
	be := cpuBackend(t)
	mk := func(s1, s2 int) prog {
		return func(b op.Builder, p []op.Value) []op.Value {
			d := op.Call1(b, "dropout", op.Attrs{"p": 0.5, "seed": s1}, p[0])
			return []op.Value{d, b.Call("randn", nil, op.Attrs{"shape": []int{4, 4}, "seed": s2})[0]}
		}
	}
	c := interpCase{name: "seeds", params: []op.Meta{m(dtype.F32, 4, 4)}, fn: mk(1, 2)}
	dyn := []op.Attrs{{"seed": int64(11)}, {"seed": 12, "offset": 0}}
	got, _, _ := runBoth(t, be, c, device.RunOptions{Dynamic: dyn}, false)
	_, want, _ := runBoth(t, be, interpCase{params: c.params, fn: mk(11, 12)}, device.RunOptions{}, false)
	same, _, _ := runBoth(t, be, c, device.RunOptions{}, false)
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("output %d with seeds differs from eager with those seeds", i)
		}
		if bytes.Equal(got[i], same[i]) {
			t.Errorf("output %d did not change with the seed", i)
		}
	}
	g, _ := ir.Trace(c.params, c.fn)
	p, _ := interp.Compile(be, g, device.CompileOptions{})
	if _, err := p.Run(context.Background(), 0, []device.Operand{operand(t, be, c.params[0], make([]byte, 64))}, device.RunOptions{Dynamic: []op.Attrs{{"seed": 1}}}); err == nil {
		t.Error("too few dynamic attribute sets accepted")
	}
	if _, err := p.Run(context.Background(), 0, []device.Operand{operand(t, be, c.params[0], make([]byte, 64))}, device.RunOptions{Dynamic: []op.Attrs{{"seed": 1}, {"lr": 2}}}); err == nil {
		t.Error("a non-dynamic attribute accepted")
	}
}

// TestInterpInplaceFunctional: in-place ops in functional form return the
// new values of their in-place inputs as extra outputs, inputs untouched.
func TestInterpInplaceFunctional(t *testing.T) {
	be := cpuBackend(t)
	type inplaceCase struct {
		name   string
		op     string
		attrs  op.Attrs
		params []op.Meta
		outs   []int // params whose new values the node returns
	}
	cases := []inplaceCase{
		{"copy_", "copy_", nil, []op.Meta{m(dtype.F32, 3, 4), m(dtype.F32, 4)}, []int{0}},
		{"sgd momentum", "sgd_step", op.Attrs{"lr": 0.1, "momentum": 0.9}, []op.Meta{m(dtype.F32, 5), m(dtype.F32, 5), m(dtype.F32, 5)}, []int{0, 2}},
		{"sgd absent buffer", "sgd_step", op.Attrs{"lr": 0.1}, []op.Meta{m(dtype.F32, 5), m(dtype.F32, 5)}, []int{0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := op.MustLookup(c.op)
			na, err := d.Normalize(c.attrs)
			if err != nil {
				t.Fatal(err)
			}
			g := ir.New()
			var in []*ir.Value
			for _, mt := range c.params {
				in = append(in, g.Param(mt))
			}
			if len(in) < len(d.Inputs) {
				in = append(in, nil)
			}
			var outs []op.Meta
			for _, k := range c.outs {
				outs = append(outs, c.params[k])
			}
			n := g.AddNode(d, na, in, outs)
			g.SetOutputs(append(slices.Clone(n.Out), in[0])...)
			p, err := interp.Compile(be, g, device.CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(5, 6))
			var ops []device.Operand
			var ets []*tensor.Tensor
			var raws [][]byte
			for _, mt := range c.params {
				raw := randomBytes(r, mt, 0)
				raws = append(raws, raw)
				ops = append(ops, operand(t, be, mt, raw))
				ets = append(ets, tensor.FromBytes(cpuDev, mt.DType, mt.Shape, raw))
			}
			res, err := p.Run(context.Background(), 0, ops, device.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(ets) < len(d.Inputs) {
				ets = append(ets, nil)
			}
			tensor.Apply(c.op, ets, c.attrs)
			for i, k := range c.outs {
				want := ets[k].Bytes()
				if got := readBuf(t, be, res[i], len(want)); !bytes.Equal(got, want) {
					t.Errorf("new value of input %d differs from eager", k)
				}
			}
			if got := readBuf(t, be, res[len(c.outs)], len(raws[0])); !bytes.Equal(got, raws[0]) {
				t.Errorf("the old value of input 0 is not preserved")
			}
			for i, o := range ops {
				if !bytes.Equal(readBuf(t, be, o.Buf, len(raws[i])), raws[i]) {
					t.Errorf("input %d was written", i)
				}
			}
		})
	}
}

func TestInterpErrors(t *testing.T) {
	be := cpuBackend(t)
	g, err := ir.Trace([]op.Meta{m(dtype.F32, 2, 3)}, func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "exp", nil, p[0])}
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := interp.Compile(be, g, device.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	good := operand(t, be, m(dtype.F32, 2, 3), make([]byte, 24))
	bad := []struct {
		name string
		in   []device.Operand
	}{
		{"no inputs", nil},
		{"wrong dtype", []device.Operand{{Buf: good.Buf, DType: dtype.F64, Layout: good.Layout}}},
		{"wrong shape", []device.Operand{{Buf: good.Buf, DType: dtype.F32, Layout: op.Contiguous([]int{3, 2})}}},
		{"nil buffer", []device.Operand{{DType: dtype.F32, Layout: good.Layout}}},
	}
	for _, c := range bad {
		if _, err := p.Run(ctx, 0, c.in, device.RunOptions{}); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Run(cctx, 0, []device.Operand{good}, device.RunOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v", err)
	}
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range [][]byte{nil, []byte("cpu-plan/1\n"), data[:len(data)-1], append([]byte("interp/2\n"), data[9:]...)} {
		if _, err := interp.Load(be, d); !errors.Is(err, device.ErrProgramFormat) {
			t.Errorf("Load(%q...): err = %v, want ErrProgramFormat", d[:min(len(d), 12)], err)
		}
	}
}

// TestInterpFreesIntermediates: a run returns every intermediate buffer.
func TestInterpFreesIntermediates(t *testing.T) {
	be := cpuBackend(t)
	c := interpCases[2] // mlp
	g, _ := ir.Trace(c.params, c.fn)
	p, err := interp.Compile(be, g, device.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ins []device.Operand
	for _, mt := range c.params {
		ins = append(ins, operand(t, be, mt, make([]byte, op.Numel(mt.Shape)*4)))
	}
	before := be.MemStats(0).Allocated
	outs, err := p.Run(context.Background(), 0, ins, device.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var outBytes int64
	for _, o := range outs {
		outBytes += int64(o.Size())
	}
	if after := be.MemStats(0).Allocated; after-before != outBytes {
		t.Errorf("allocated grew by %d bytes, outputs hold %d", after-before, outBytes)
	}
}

// noComposites is the cpu backend without its direct composite kernels, so
// that interp lowers every composite (random ones included).
type noComposites struct{ device.Backend }

func (b noComposites) Supports(o *op.Def, dt dtype.DType) bool {
	return o.Kind != op.Composite && b.Backend.Supports(o, dt)
}

// TestInterpDynamicThroughLowering: a random composite's run-time seed and
// offset reach the primitives it lowers to (the composite's direct kernel
// and its decomposition draw the same numbers).
func TestInterpDynamicThroughLowering(t *testing.T) {
	be := cpuBackend(t)
	fn := func(b op.Builder, p []op.Value) []op.Value {
		d := op.Call1(b, "dropout", op.Attrs{"p": 0.5, "seed": 1}, p[0])
		return []op.Value{d, b.Call("randn", nil, op.Attrs{"shape": []int{4, 4}, "seed": 2})[0]}
	}
	params := []op.Meta{m(dtype.F32, 4, 4)}
	g, err := ir.Trace(params, fn)
	if err != nil {
		t.Fatal(err)
	}
	run := func(b device.Backend, dyn []op.Attrs) [][]byte {
		p, err := interp.Compile(b, g, device.CompileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		raw := randomBytes(rand.New(rand.NewPCG(1, 1)), params[0], 0)
		outs, err := p.Run(context.Background(), 0, []device.Operand{operand(t, be, params[0], raw)}, device.RunOptions{Dynamic: dyn})
		if err != nil {
			t.Fatal(err)
		}
		var res [][]byte
		for i, o := range outs {
			mt := g.Outputs[i].Meta
			res = append(res, readBuf(t, be, o, op.Numel(mt.Shape)*4))
		}
		return res
	}
	dyn := []op.Attrs{{"seed": 77, "offset": 5}, {"seed": 78, "offset": 9}}
	direct, lowered := run(be, dyn), run(noComposites{be}, dyn)
	base := run(noComposites{be}, nil)
	for i := range direct {
		if !bytes.Equal(direct[i], lowered[i]) {
			t.Errorf("output %d: lowered composite with dynamic seeds differs from its kernel", i)
		}
		if bytes.Equal(lowered[i], base[i]) {
			t.Errorf("output %d: dynamic seed did not reach the lowered nodes", i)
		}
	}
}
