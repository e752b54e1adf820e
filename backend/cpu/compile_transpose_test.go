package cpu

import (
	"bytes"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// wgrad is autograd's weight gradient: dot_general(x, dy) contracting the
// rows, [in, out], transposed to [out, in].
func wgrad(b op.Builder, x, dy op.Value) op.Value {
	d := op.Call1(b, "dot_general", op.Attrs{"lhs_batch": []int{}, "rhs_batch": []int{}, "lhs_contract": []int{0}, "rhs_contract": []int{0}}, x, dy)
	return op.Call1(b, "transpose", op.Attrs{"dim0": 0, "dim1": 1}, d)
}

// TestCompileTransposeCopies checks that a dot_general whose output is only
// read transposed by a contiguous copy (the leaf-gradient copy, or the copy
// a kernel needing contiguous inputs gets) writes the copy's buffer itself,
// bit for bit as interp (Strict eager) computes the product and the copy,
// and that the copy stays where the output has other readers.
func TestCompileTransposeCopies(t *testing.T) {
	be := testBackend(t)
	// adam adds a functional adam_step node (as compile.Fn records one).
	adam := func(b op.Builder, p, g, m, v op.Value) []op.Value {
		d := op.MustLookup("adam_step")
		na, err := d.Normalize(op.Attrs{"lr": 1e-3, "step": 3, "decoupled": true, "weight_decay": 0.01})
		if err != nil {
			t.Fatal(err)
		}
		in := []*ir.Value{p.(*ir.Value), g.(*ir.Value), m.(*ir.Value), v.(*ir.Value), nil}
		meta := b.Meta(p)
		n := b.(*ir.Tracer).Graph().AddNode(d, na, in, []op.Meta{meta, meta, meta})
		return []op.Value{n.Out[0], n.Out[1], n.Out[2]}
	}
	cases := []struct {
		name   string
		params []op.Meta
		fn     func(b op.Builder, p []op.Value) []op.Value
		copies int // copy steps left in the fused plan
	}{
		{"leaf copy", []op.Meta{fm(64, 100), fm(64, 70)}, func(b op.Builder, p []op.Value) []op.Value {
			c := op.Call1(b, "copy", nil, wgrad(b, p[0], p[1]))
			return []op.Value{op.Call1(b, "mul", nil, c, b.Scalar(2.0, c))}
		}, 0},
		{"leaf copy output", []op.Meta{fm(33, 130), fm(33, 40)}, func(b op.Builder, p []op.Value) []op.Value {
			return []op.Value{op.Call1(b, "copy", nil, wgrad(b, p[0], p[1]))}
		}, 0},
		{"small", []op.Meta{fm(5, 9), fm(5, 7)}, func(b op.Builder, p []op.Value) []op.Value {
			return []op.Value{op.Call1(b, "copy", nil, wgrad(b, p[0], p[1]))}
		}, 0},
		{"into adam", []op.Meta{fm(64, 100), fm(64, 70), fm(70, 100), fm(70, 100), fm(70, 100)}, func(b op.Builder, p []op.Value) []op.Value {
			// The leaf-gradient copy as autograd makes it.
			return adam(b, p[2], op.Call1(b, "copy", nil, wgrad(b, p[0], p[1])), p[3], p[4])
		}, 3}, // the in-place inputs' copies stay
		{"adam odd size", []op.Meta{fm(101, 83), fm(101, 83), fm(101, 83), fm(101, 83)}, func(b op.Builder, p []op.Value) []op.Value {
			return adam(b, p[0], p[1], p[2], p[3])
		}, 3},
		{"adam fresh state", []op.Meta{fm(101, 83), fm(101, 83)}, func(b op.Builder, p []op.Value) []op.Value {
			// The state comes from the arena (as on the first step): the
			// in-place copies' sources are intermediates.
			z := func() op.Value {
				return b.Call("full", nil, op.Attrs{"shape": []int{101, 83}, "value": 0.5, "dtype": fm().DType})[0]
			}
			m, v := z(), z()
			return adam(b, p[0], p[1], op.Call1(b, "mul", nil, m, m), op.Call1(b, "exp", nil, v))
		}, 1}, // the state's copies are elided (their sources die there); the parameter's stays (donation removes it at run time)
		{"second reader", []op.Meta{fm(20, 30), fm(20, 25)}, func(b op.Builder, p []op.Value) []op.Value {
			d := op.Call1(b, "dot_general", op.Attrs{"lhs_batch": []int{}, "rhs_batch": []int{}, "lhs_contract": []int{0}, "rhs_contract": []int{0}}, p[0], p[1])
			c := op.Call1(b, "copy", nil, op.Call1(b, "transpose", op.Attrs{"dim0": 0, "dim1": 1}, d))
			return []op.Value{c, op.Call1(b, "exp", nil, d)}
		}, 1},
		{"contiguous leaf copy", []op.Meta{fm(20, 30), fm(20, 30)}, func(b op.Builder, p []op.Value) []op.Value {
			c := op.Call1(b, "copy", nil, op.Call1(b, "mul", nil, p[0], p[1]))
			return []op.Value{op.Call1(b, "exp", nil, c), op.Call1(b, "copy", nil, p[1])}
		}, 1}, // the parameter's copy stays
		{"copy with a second reader", []op.Meta{fm(20, 30), fm(20, 30)}, func(b op.Builder, p []op.Value) []op.Value {
			m := op.Call1(b, "mul", nil, p[0], p[1])
			c := op.Call1(b, "copy", nil, m)
			return []op.Value{op.Call1(b, "exp", nil, c), op.Call1(b, "neg", nil, m)}
		}, 1},
		{"batched", []op.Meta{fm(2, 20, 30), fm(2, 20, 25)}, func(b op.Builder, p []op.Value) []op.Value {
			d := op.Call1(b, "dot_general", op.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}, "lhs_contract": []int{1}, "rhs_contract": []int{1}}, p[0], p[1])
			return []op.Value{op.Call1(b, "copy", nil, op.Call1(b, "transpose", op.Attrs{"dim0": 1, "dim1": 2}, d))}
		}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := ir.Trace(c.params, c.fn)
			if err != nil {
				t.Fatal(err)
			}
			ins := inputsFor(c.params, 5, 0)
			ip, p := interpAndCompiled(t, be, g)
			want := runProg(t, be, ip, g, ins, device.RunOptions{})
			got := runProg(t, be, p, g, ins, device.RunOptions{})
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("output %d differs from interp", i)
				}
			}
			pl := p.(*cprogram).pl
			copies := 0
			for _, s := range pl.steps {
				if planIsCopy(pl, s) {
					copies++
				}
			}
			if copies != c.copies {
				t.Errorf("%d copy steps, want %d:\n%s", copies, c.copies, pl.summary())
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
			for i := range got {
				if !bytes.Equal(loaded[i], got[i]) {
					t.Errorf("loaded output %d differs", i)
				}
			}
		})
	}
}

// TestDotF32Swapped checks the swapped x·Wᵀ product against the
// dot_general kernel bit for bit (offsets, a strided weight, every output
// tile passed to the epilogue exactly once) and that it declines the
// problems it does not cover.
func TestDotF32Swapped(t *testing.T) {
	if tileF32(procKS) == nil {
		t.Skip("no tiled f32 kernel")
	}
	dims := op.Attrs{"lhs_batch": []int{}, "rhs_batch": []int{}, "lhs_contract": []int{1}, "rhs_contract": []int{1}, "precision": ""}
	cases := []struct {
		name         string
		m, n, k, ldw int
		attrs        op.Attrs
		want         bool
	}{
		{"mlp", 64, 1024, 256, 256, dims, true},
		{"ragged", 37, 203, 45, 45, dims, true},
		{"strided weight", 9, 50, 17, 29, dims, true},
		{"few rows: the gemv kernels", 7, 50, 17, 29, dims, false},
		{"more rows than columns", 80, 40, 32, 32, dims, false},
		{"short k", 8, 64, 8, 8, dims, false},
		{"rhs contracts rows", 8, 64, 32, 32, dims.With("rhs_contract", []int{0}), false},
		{"bf16 passes", 8, 64, 32, 32, dims.With("precision", op.PrecisionMedium), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const off = 3
			xs := inputsFor([]op.Meta{fm(off + c.m*c.k), fm(off + c.n*c.ldw)}, 9, 0)
			wl := op.Layout{Shape: []int{c.n, c.k}, Strides: []int{c.ldw, 1}, Offset: off}
			if c.attrs.Ints("rhs_contract")[0] == 0 {
				wl = op.Layout{Shape: []int{c.k, c.n}, Strides: []int{c.ldw, 1}, Offset: off}
			}
			call := func(out []byte) *Call {
				l := &device.Launch{Op: op.MustLookup("dot_general"), Attrs: c.attrs,
					In: []device.Operand{
						{DType: fm().DType, Layout: op.Layout{Shape: []int{c.m, c.k}, Strides: []int{c.k, 1}, Offset: off}},
						{DType: fm().DType, Layout: wl},
					},
					Out: []device.Operand{{DType: fm().DType, Layout: op.Contiguous([]int{c.m, c.n})}}}
				return &Call{Launch: l, InB: [][]byte{xs[0], xs[1]}, OutB: [][]byte{out}}
			}
			want := make([]byte, c.m*c.n*4)
			if err := dotGeneralKernel(call(want)); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, c.m*c.n*4)
			seen := make([]int, c.m*c.n)
			ok := dotF32Swapped(call(got), func(b, i0, j0, mc, nc, m, n int) {
				if b != 0 || m != c.m || n != c.n {
					t.Errorf("tile (%d, %d, %d) of a [%d, %d] output", b, i0, j0, m, n)
				}
				for i := i0; i < i0+mc; i++ {
					for j := j0; j < j0+nc; j++ {
						seen[i*n+j]++
					}
				}
			})
			if ok != c.want {
				t.Fatalf("took the swapped path: %v, want %v", ok, c.want)
			}
			if !ok {
				return
			}
			if !bytes.Equal(got, want) {
				t.Error("swapped product differs from dot_general")
			}
			for i, s := range seen {
				if s != 1 {
					t.Fatalf("output element %d passed to the epilogue %d times", i, s)
				}
			}
		})
	}
}
