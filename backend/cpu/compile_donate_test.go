package cpu

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// TestCompileDonate: a parameter lent to the output that updates it in
// place is updated in its own buffer (returned as that output), with the
// bits of the run that copies it; a parameter still read after its
// update, or lent to another output, is not used.
func TestCompileDonate(t *testing.T) {
	be := testBackend(t)
	sgd := op.MustLookup("sgd_step")
	na, _ := sgd.Normalize(op.Attrs{"lr": 0.1, "momentum": 0.9})
	build := func(keepOld bool) *ir.Graph {
		g := ir.New()
		w, gr, buf := g.Param(fm(100)), g.Param(fm(100)), g.Param(fm(100))
		n := g.AddNode(sgd, na, []*ir.Value{w, gr, buf}, []op.Meta{fm(100), fm(100)})
		outs := slices.Clone(n.Out)
		if keepOld {
			outs = append(outs, w) // the old weight too: w is read after its update
		}
		g.SetOutputs(outs...)
		return g
	}
	ins := inputsFor([]op.Meta{fm(100), fm(100), fm(100)}, 3, 0)
	cases := []struct {
		name    string
		keepOld bool
		donate  []int
		lent    map[int]int // output -> input whose buffer it must be
	}{
		{"none", false, nil, nil},
		{"weight and momentum", false, []int{0, -1, 1}, map[int]int{0: 0, 1: 2}},
		{"momentum only (short slice)", false, []int{-1, -1, 1}, map[int]int{1: 2}},
		{"wrong output", false, []int{1, -1, 0}, nil},
		{"weight read after update", true, []int{0, -1, 1}, map[int]int{1: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := build(tc.keepOld)
			p, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := runProg(t, be, p, g, ins, device.RunOptions{})
			for rep := 0; rep < 2; rep++ { // the second run uses the cached analysis
				var ops []device.Operand
				for i, raw := range ins {
					b, _ := be.Alloc(0, len(raw))
					copy(b.(*Buf).b, raw)
					ops = append(ops, device.Operand{Buf: b, DType: g.Params[i].Meta.DType, Layout: op.Contiguous([]int{100})})
				}
				outs, err := p.Run(context.Background(), 0, ops, device.RunOptions{Donate: tc.donate})
				if err != nil {
					t.Fatal(err)
				}
				for k, o := range outs {
					if !bytes.Equal(o.(*Buf).b[:400], want[k]) {
						t.Errorf("output %d differs from the run without donation", k)
					}
					j, lent := tc.lent[k]
					for i, in := range ops {
						if same := o == in.Buf; same != (lent && i == j) {
							t.Errorf("output %d is input %d's buffer: %v, want %v", k, i, same, lent && i == j)
						}
					}
					if !lent {
						be.Free(0, o)
					}
				}
				for _, in := range ops {
					be.Free(0, in.Buf)
				}
			}
		})
	}
}
