package cpu

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// epiCase is one compiled GEMM step: a dot_general with or without a
// fused elementwise epilogue, at the shapes of an MLP's training step.
type epiCase struct {
	name   string
	params []op.Meta
	fn     func(b op.Builder, p []op.Value) []op.Value
	flops  float64
}

// dotNT is x·Wᵀ (x [m, k], W [n, k]), a linear layer's product.
func dotNT(b op.Builder, x, w op.Value) op.Value {
	return op.Call1(b, "dot_general", op.Attrs{"lhs_batch": []int{}, "rhs_batch": []int{}, "lhs_contract": []int{1}, "rhs_contract": []int{1}}, x, w)
}

// dotNN is a·b (a [m, k], b [k, n]), a linear layer's input gradient.
func dotNN(b op.Builder, x, w op.Value) op.Value {
	return op.Call1(b, "dot_general", op.Attrs{"lhs_batch": []int{}, "rhs_batch": []int{}, "lhs_contract": []int{1}, "rhs_contract": []int{0}}, x, w)
}

// epiCases are the GEMM steps of the MNIST MLP's training step (784-512-
// 256-10, batch 64) and of a wider layer, each with its epilogue and
// plain.
func epiCases() []epiCase {
	var cs []epiCase
	for _, s := range [][3]int{{64, 512, 784}, {64, 256, 512}, {64, 1024, 1024}, {64, 10, 256}, {256, 1024, 512}} {
		m, n, k := s[0], s[1], s[2]
		f := 2 * float64(m*n*k)
		cs = append(cs,
			epiCase{fmt.Sprintf("xWt/%dx%dx%d", m, n, k), []op.Meta{fm(m, k), fm(n, k)}, func(b op.Builder, p []op.Value) []op.Value {
				return []op.Value{dotNT(b, p[0], p[1])}
			}, f},
			epiCase{fmt.Sprintf("xWt+b,relu/%dx%dx%d", m, n, k), []op.Meta{fm(m, k), fm(n, k), fm(n)}, func(b op.Builder, p []op.Value) []op.Value {
				return []op.Value{op.Call1(b, "relu", nil, op.Call1(b, "add", nil, dotNT(b, p[0], p[1]), p[2]))}
			}, f},
		)
	}
	for _, s := range [][3]int{{64, 512, 256}, {64, 256, 10}} {
		m, n, k := s[0], s[1], s[2]
		f := 2 * float64(m*n*k)
		cs = append(cs,
			epiCase{fmt.Sprintf("dyW/%dx%dx%d", m, n, k), []op.Meta{fm(m, k), fm(k, n)}, func(b op.Builder, p []op.Value) []op.Value {
				return []op.Value{dotNN(b, p[0], p[1])}
			}, f},
			epiCase{fmt.Sprintf("dyW*mask/%dx%dx%d", m, n, k), []op.Meta{fm(m, k), fm(k, n), fm(m, n)}, func(b op.Builder, p []op.Value) []op.Value {
				return []op.Value{op.Call1(b, "mul", nil, dotNN(b, p[0], p[1]), p[2])}
			}, f},
			// A ReLU's backward as autograd records it: the product where
			// the activation was positive, a 0-d zero elsewhere.
			epiCase{fmt.Sprintf("dyW,relu'/%dx%dx%d", m, n, k), []op.Meta{fm(m, k), fm(k, n), fm(m, n), fm()}, func(b op.Builder, p []op.Value) []op.Value {
				le := op.Call1(b, "le", nil, p[2], b.Scalar(0.0, p[2]))
				return []op.Value{op.Call1(b, "where", nil, le, p[3], dotNN(b, p[0], p[1]))}
			}, f},
		)
	}
	for _, s := range [][2]int{{64, 512}, {64, 256}} {
		// The epilogue alone, for comparison.
		m, n := s[0], s[1]
		cs = append(cs, epiCase{fmt.Sprintf("x+b,relu/%dx%d", m, n), []op.Meta{fm(m, n), fm(n)}, func(b op.Builder, p []op.Value) []op.Value {
			return []op.Value{op.Call1(b, "relu", nil, op.Call1(b, "add", nil, p[0], p[1]))}
		}, 0})
	}
	for _, s := range [][3]int{{512, 784, 64}, {256, 512, 64}} {
		m, n, k := s[0], s[1], s[2]
		f := 2 * float64(m*n*k)
		cs = append(cs, epiCase{fmt.Sprintf("wgrad/%dx%dx%d", m, n, k), []op.Meta{fm(k, n), fm(k, m)}, func(b op.Builder, p []op.Value) []op.Value {
			// dW = dyᵀ·x as autograd records it: (xᵀ·dy)ᵀ, then copied.
			return []op.Value{op.Call1(b, "copy", nil, wgrad(b, p[0], p[1]))}
		}, f})
	}
	return cs
}

// BenchmarkCompiledGEMMEpilogue times compiled GEMM steps with and
// without their fused epilogues (the MNIST MLP step's products):
//
//	go test ./backend/cpu -run XXX -bench CompiledGEMMEpilogue
//
// The epilogue variant of a shape should cost the plain product plus a
// pass over the output at most. cpu-us/op is the process's CPU time per
// run, less sensitive than ns/op to other processes on a shared machine.
func BenchmarkCompiledGEMMEpilogue(b *testing.B) {
	be := testBackend(b)
	for _, c := range epiCases() {
		b.Run(c.name, func(b *testing.B) {
			g, err := ir.Trace(c.params, c.fn)
			if err != nil {
				b.Fatal(err)
			}
			p, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{})
			if err != nil {
				b.Fatal(err)
			}
			var ops []device.Operand
			for i, raw := range inputsFor(c.params, 1, 0) {
				buf, _ := be.Alloc(0, len(raw))
				copy(buf.(*Buf).b, raw)
				ops = append(ops, device.Operand{Buf: buf, DType: dtype.F32, Layout: op.Contiguous(slices.Clone(c.params[i].Shape))})
			}
			defer func() {
				for _, o := range ops {
					be.Free(0, o.Buf)
				}
			}()
			cpu0 := convCPUTime()
			for b.Loop() {
				outs, err := p.Run(context.Background(), 0, ops, device.RunOptions{})
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range outs {
					be.Free(0, o)
				}
			}
			b.ReportMetric(c.flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			// CPU time per run (all threads): on a shared machine, the
			// cost apart from the time other processes held the cores.
			b.ReportMetric(float64(convCPUTime()-cpu0)/1e3/float64(b.N), "cpu-us/op")
		})
	}
}

// BenchmarkGEMMEpilogueOutputs times x·Wᵀ + bias then GELU keeping the
// pre-activation too (a training step's MLP: the backward pass reads it),
// with the group fused into the product's epilogue and, with
// gemmEpiOutputs off, run as a step of its own after it.
func BenchmarkGEMMEpilogueOutputs(b *testing.B) {
	be := testBackend(b)
	for _, sh := range [][3]int{{64, 512, 784}, {512, 1024, 1024}, {2048, 1024, 256}} {
		m, n, k := sh[0], sh[1], sh[2]
		params := []op.Meta{fm(m, k), fm(n, k), fm(n)}
		g, err := ir.Trace(params, func(bb op.Builder, p []op.Value) []op.Value {
			h := op.Call1(bb, "add", nil, dotNT(bb, p[0], p[1]), p[2])
			return []op.Value{op.Call1(bb, "gelu", nil, h), h}
		})
		if err != nil {
			b.Fatal(err)
		}
		ins := inputsFor(params, 1, 0)
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dx%dx%d/fused=%v", m, n, k, on), func(b *testing.B) {
				defer func(o bool) { gemmEpiOutputs = o }(gemmEpiOutputs)
				gemmEpiOutputs = on
				p, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{})
				if err != nil {
					b.Fatal(err)
				}
				timeProgram(b, be, p, params, ins)
			})
		}
	}
}
