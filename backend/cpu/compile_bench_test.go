package cpu

import (
	"context"
	"slices"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/device/interp"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// Benchmarks of compiled programs against Strict eager mode (package
// tensor, one kernel per op). Run with
//
//	go test ./backend/cpu -run XXX -bench 'Compiled' -benchtime 5x
//
// The peak-MB metric is the program's planned peak (compiled) or interp's
// planned peak, which frees every intermediate at its last use and so is a
// lower bound of what Strict eager holds (eager frees when the garbage
// collector finds a tensor unreachable).

const chainRows, chainCols = 4096, 4096 // 16M elements

// chainFn is gelu(x*a+b)*c with a, b, c Go scalars or [cols] vectors.
func chainFn(vectors bool) func(b op.Builder, p []op.Value) []op.Value {
	return func(b op.Builder, p []op.Value) []op.Value {
		x := p[0]
		a, bb, c := b.Scalar(1.5, x), b.Scalar(-0.25, x), b.Scalar(0.75, x)
		if vectors {
			a, bb, c = p[1], p[2], p[3]
		}
		h := op.Call1(b, "add", nil, op.Call1(b, "mul", nil, x, a), bb)
		return []op.Value{op.Call1(b, "mul", nil, op.Call1(b, "gelu", nil, h), c)}
	}
}

func chainParams(vectors bool) []op.Meta {
	ps := []op.Meta{fm(chainRows, chainCols)}
	if vectors {
		ps = append(ps, fm(chainCols), fm(chainCols), fm(chainCols))
	}
	return ps
}

// tensorBuilder runs op.Builder code eagerly (Strict mode).
type tensorBuilder struct{}

func (tensorBuilder) Call(name string, in []op.Value, a op.Attrs) []op.Value {
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

func (tensorBuilder) Meta(v op.Value) op.Meta {
	t := v.(*tensor.Tensor)
	return op.Meta{Shape: t.Shape(), DType: t.DType()}
}

func (tensorBuilder) Scalar(v any, like op.Value) op.Value { return tensor.Scalar(v) }

// timeProgram runs p b.N times on device buffers holding ins (dtypes and
// shapes from params), freeing each run's outputs, and stops the timer.
func timeProgram(b *testing.B, be *Backend, p device.Program, params []op.Meta, ins [][]byte) {
	var ops []device.Operand
	for i, raw := range ins {
		buf, err := be.Alloc(0, max(len(raw), 1))
		if err != nil {
			b.Fatal(err)
		}
		copy(buf.(*Buf).b, raw)
		ops = append(ops, device.Operand{Buf: buf, DType: params[i].DType, Layout: op.Contiguous(slices.Clone(params[i].Shape))})
	}
	defer func() {
		for _, o := range ops {
			be.Free(0, o.Buf)
		}
	}()
	b.ResetTimer()
	for range b.N {
		outs, err := p.Run(context.Background(), 0, ops, device.RunOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range outs {
			be.Free(0, o)
		}
	}
	b.StopTimer()
}

// benchCompiled times fn compiled (and interp's plan for comparison of
// memory) against eager, as sub-benchmarks.
func benchCompiled(b *testing.B, params []op.Meta, fn func(b op.Builder, p []op.Value) []op.Value) {
	be := testBackend(b)
	g, err := ir.Trace(params, fn)
	if err != nil {
		b.Fatal(err)
	}
	ins := inputsFor(params, 1, 0)
	b.Run("compiled", func(b *testing.B) {
		p, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{})
		if err != nil {
			b.Fatal(err)
		}
		timeProgram(b, be, p, params, ins)
		b.ReportMetric(float64(p.Stats().PeakBytes)/(1<<20), "peak-MB")
		b.ReportMetric(float64(p.Stats().Kernels), "kernels")
	})
	b.Run("eager", func(b *testing.B) {
		ip, err := interp.Compile(be, g, device.CompileOptions{})
		if err != nil {
			b.Fatal(err)
		}
		var ts []op.Value
		for i, raw := range ins {
			ts = append(ts, tensor.FromBytes(device.Device{Type: "cpu"}, dtype.F32, params[i].Shape, raw))
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for _, o := range fn(tensorBuilder{}, ts) {
				o.(*tensor.Tensor).Free()
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(ip.Stats().PeakBytes)/(1<<20), "peak-MB")
		b.ReportMetric(float64(ip.Stats().Kernels), "kernels")
	})
}

func BenchmarkCompiledChainScalars(b *testing.B) {
	benchCompiled(b, chainParams(false), chainFn(false))
}

func BenchmarkCompiledChainVectors(b *testing.B) { benchCompiled(b, chainParams(true), chainFn(true)) }

func BenchmarkCompiledMLPBlock(b *testing.B) { benchCompiled(b, mlpParams(64, 1024, 4096), mlpBlock) }
