package cpu

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// TestCompileRope checks that the rotate_half rope pattern runs as one
// stRope step with the bits of the op-by-op program: x a transposed view
// (the models' [B, heads, T, hd] of a projection), cos and sin broadcast
// over the heads or full-size, either operand order of the muls and the
// add, and inputs that include NaN and Inf; in f32 and in bf16 (whose
// ops round every product and sum to bf16). A
// pattern whose intermediate is read elsewhere, or whose cat is not the
// rotation, is left to the ops.
func TestCompileRope(t *testing.T) {
	be := testBackend(t)
	type variant struct {
		name      string
		csShape   []int
		swap      bool // sin*rot, cos*x, (rot·sin)+(x·cos)
		leak      bool // the cat is also a graph output
		wrongHalf bool // cat(-x[h:], x[h:]): not a rotation
		want      int  // rope steps
	}
	const b, tt, heads, hd = 2, 3, 4, 16
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		for _, v := range []variant{
			{name: "broadcast", csShape: []int{b, 1, tt, hd}, want: 1},
			{name: "full", csShape: []int{b, heads, tt, hd}, want: 1},
			{name: "swapped", csShape: []int{1, 1, tt, hd}, swap: true, want: 1},
			{name: "leak", csShape: []int{b, 1, tt, hd}, leak: true},
			{name: "not a rotation", csShape: []int{b, 1, tt, hd}, wrongHalf: true},
		} {
			t.Run(dt.String()+"/"+v.name, func(t *testing.T) {
				params := []op.Meta{{Shape: []int{b, tt, heads * hd}, DType: dt}, {Shape: v.csShape, DType: dt}, {Shape: v.csShape, DType: dt}}
				g, err := ir.Trace(params, func(bb op.Builder, p []op.Value) []op.Value {
					// Each use of x is a view node of its own, as in a traced
					// eager model.
					view := func() op.Value {
						x := op.Call1(bb, "reshape", op.Attrs{"shape": []int{b, tt, heads, hd}}, p[0])
						return op.Call1(bb, "transpose", op.Attrs{"dim0": 1, "dim1": 2}, x)
					}
					x := view()
					hi := op.Call1(bb, "narrow", op.Attrs{"dim": -1, "start": hd / 2, "length": hd / 2}, view())
					lo := op.Call1(bb, "narrow", op.Attrs{"dim": 3, "start": 0, "length": hd / 2}, view())
					if v.wrongHalf {
						lo = hi
					}
					rot := op.Call1(bb, "cat", op.Attrs{"dim": -1}, op.Call1(bb, "neg", nil, hi), lo)
					xc, rs := op.Call1(bb, "mul", nil, x, p[1]), op.Call1(bb, "mul", nil, rot, p[2])
					out := op.Call1(bb, "add", nil, xc, rs)
					if v.swap {
						xc, rs = op.Call1(bb, "mul", nil, p[1], x), op.Call1(bb, "mul", nil, p[2], rot)
						out = op.Call1(bb, "add", nil, rs, xc)
					}
					outs := []op.Value{out}
					if v.leak {
						outs = append(outs, rot)
					}
					return outs
				})
				if err != nil {
					t.Fatal(err)
				}
				ins := inputsFor(params, 5, 0)
				for i, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0} {
					dtype.PutFloat64(dt, ins[0], 7*i+1, x)
				}
				dtype.PutFloat64(dt, ins[2], 3, math.Inf(1))
				if dt == dtype.BF16 && !v.swap && procKS.vec.Asm {
					// Both operands of the first pair's products and sums
					// NaN, of opposite signs: the step takes the left
					// operand's NaN as the op-by-op vector kernels do (the
					// swapped pattern is computed in this order too: its NaN
					// pairs would differ; Go loops, without the vector
					// kernels, leave the order to the compiler).
					pn, nn := math.NaN(), math.Copysign(math.NaN(), -1)
					dtype.PutFloat64(dt, ins[0], 0, nn)
					dtype.PutFloat64(dt, ins[0], hd/2, nn)
					dtype.PutFloat64(dt, ins[1], 0, pn)
					dtype.PutFloat64(dt, ins[2], 0, nn)
					dtype.PutFloat64(dt, ins[1], hd/2, pn)
					dtype.PutFloat64(dt, ins[2], hd/2, pn)
				}
				ip, p := interpAndCompiled(t, be, g)
				want := runProg(t, be, ip, g, ins, device.RunOptions{})
				before := ropeSteps.Load()
				got := runProg(t, be, p, g, ins, device.RunOptions{})
				if n := int(ropeSteps.Load() - before); n != v.want {
					t.Errorf("%d rope steps ran, want %d; plan:\n%s", n, v.want, p.(*cprogram).pl.summary())
				}
				if v.want > 0 && strings.Contains(p.(*cprogram).pl.summary(), ": cat") {
					t.Errorf("the rope's cat is still a step:\n%s", p.(*cprogram).pl.summary())
				}
				sameAsOpByOp(t, be, p, g, ins, want, got)
			})
		}
	}
}

// sameAsOpByOp fails t unless the outputs got of compiled program p equal
// want (the op-by-op program's) bit for bit, and p, marshaled and loaded
// again, gives them too.
func sameAsOpByOp(t *testing.T, be *Backend, p device.Program, g *ir.Graph, ins, want, got [][]byte) {
	t.Helper()
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("output %d differs from the op-by-op program", i)
		}
	}
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	lp, err := be.LoadProgram(0, data)
	if err != nil {
		t.Fatal(fmt.Errorf("reload: %w", err))
	}
	again := runProg(t, be, lp, g, ins, device.RunOptions{})
	for i := range want {
		if !bytes.Equal(again[i], want[i]) {
			t.Fatalf("reloaded plan: output %d differs", i)
		}
	}
}
