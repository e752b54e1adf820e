package cpu

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// TestCompileIndexCopyInPlace: x.index_copy_(1, i, s), recorded as
// copy_(x, index_copy(x, 1, i, s)), is planned as one index_copy kernel
// writing into x's copy (no fresh result copied back), whose copy buffer
// donation removes; when the functional result is used elsewhere too, the
// plan keeps both (and donation still lends x to copy_'s copy). Every variant gives the bits of a direct computation.
func TestCompileIndexCopyInPlace(t *testing.T) {
	be := testBackend(t)
	ic := op.MustLookup("index_copy")
	ia, err := ic.Normalize(op.Attrs{"dim": 1})
	if err != nil {
		t.Fatal(err)
	}
	cp := op.MustLookup("copy_")
	ca, err := cp.Normalize(nil)
	if err != nil {
		t.Fatal(err)
	}
	xm, im, sm := fm(2, 6, 3), op.Meta{Shape: []int{2}, DType: dtype.I64}, fm(2, 2, 3)
	build := func(alsoResult bool) *ir.Graph {
		g := ir.New()
		x, i, s := g.Param(xm), g.Param(im), g.Param(sm)
		r := g.AddNode(ic, ia, []*ir.Value{x, i, s}, []op.Meta{xm}).Out[0]
		w := g.AddNode(cp, ca, []*ir.Value{x, r}, []op.Meta{xm}).Out[0]
		if alsoResult {
			g.SetOutputs(w, r)
		} else {
			g.SetOutputs(w)
		}
		return g
	}
	ins := inputsFor([]op.Meta{xm, im, sm}, 5, 0)
	// Indices 4 and 1 (distinct, so the order of writes does not matter).
	dtype.PutInt64(dtype.I64, ins[1], 0, 4)
	dtype.PutInt64(dtype.I64, ins[1], 1, 1)
	want := make([]float32, 2*6*3)
	for e := range want {
		want[e] = math.Float32frombits(uint32(ins[0][4*e]) | uint32(ins[0][4*e+1])<<8 | uint32(ins[0][4*e+2])<<16 | uint32(ins[0][4*e+3])<<24)
	}
	src := func(e int) float32 {
		return math.Float32frombits(uint32(ins[2][4*e]) | uint32(ins[2][4*e+1])<<8 | uint32(ins[2][4*e+2])<<16 | uint32(ins[2][4*e+3])<<24)
	}
	for a := 0; a < 2; a++ {
		for j, row := range []int{4, 1} {
			for c := 0; c < 3; c++ {
				want[a*18+row*3+c] = src(a*6 + j*3 + c)
			}
		}
	}
	wantB := make([]byte, 4*len(want))
	for e, v := range want {
		u := math.Float32bits(v)
		wantB[4*e], wantB[4*e+1], wantB[4*e+2], wantB[4*e+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	for _, tc := range []struct {
		name       string
		alsoResult bool
		kernels    int // stKernel steps in the plan
	}{
		{"folded", false, 1},
		{"result used too", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := build(tc.alsoResult)
			p, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, s := range p.(*cprogram).pl.steps {
				if s.kind == stKernel {
					n++
				}
			}
			if n != tc.kernels {
				t.Errorf("%d kernel steps, want %d", n, tc.kernels)
			}
			for _, donate := range [][]int{nil, {0}} {
				var ops []device.Operand
				for i, raw := range ins {
					b, _ := be.Alloc(0, len(raw))
					copy(b.(*Buf).b, raw)
					ops = append(ops, device.Operand{Buf: b, DType: g.Params[i].Meta.DType, Layout: op.Contiguous(g.Params[i].Meta.Shape)})
				}
				outs, err := p.Run(context.Background(), 0, ops, device.RunOptions{Donate: donate})
				if err != nil {
					t.Fatal(err)
				}
				for k, o := range outs {
					if !bytes.Equal(o.(*Buf).b[:len(wantB)], wantB) {
						t.Errorf("donate %v: output %d differs from the direct computation", donate, k)
					}
				}
				if lent := outs[0] == ops[0].Buf; lent != (donate != nil) {
					t.Errorf("donate %v: output 0 is the input's buffer: %v", donate, lent)
				}
			}
		})
	}
}
