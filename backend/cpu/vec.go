package cpu

import (
	"runtime"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
	"github.com/gotpu/gotpu/backend/cpu/internal/vec"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// The float32 slice kernels live in internal/vec, one table per CPU level
// (kset.vec). This file routes the elementwise kernels' contiguous f32
// cases to them.

// vecOp names a binary kernel of vec.Kernels for the routing below and
// bf16_elem.go.
type vecOp uint8

const (
	vecOpAdd vecOp = iota
	vecOpSub
	vecOpMul
	vecOpDiv
	vecOpMaximum
)

// Routing of the elementwise kernels' contiguous f32 cases to the vec
// kernels: an operand qualifies when it is a dense row-major f32 array of
// the output's shape (kernels see inputs already broadcast to it), or,
// for the second operand of add/sub/mul, a broadcast scalar.

// vecChunk is the smallest number of elements a thread of vecParallel
// gets: below 2*vecChunk an op runs on the calling goroutine. With the
// parts handed to the pool's polling helpers (runParts) a split pays from
// a few thousand elements: bf16 ops, 2 threads, Zen 4, 64 Ki → 8 Ki:
// add of 73728 elements 20.6 → 11.5 µs, silu 97 → 43 µs, silu of 36864
// 45 → 24 µs, silu of 16384 20 → 14 µs.
const vecChunk = 1 << 13

// vecParallel runs fn over [0, n) in chunks of at least vecChunk elements
// (multiples of 32), one per available thread (runParts), the first on the
// caller.
func vecParallel(n int, fn func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), n/vecChunk)
	if w <= 1 {
		fn(0, n)
		return
	}
	chunk := (n/w + 31) &^ 31
	parts := ceilDiv(n, chunk)
	runParts(parts, func(i int) { fn(i*chunk, min((i+1)*chunk, n)) })
}

// runParts runs part(i) for i < n on the pool's threads, part i on thread
// i mod threads (all on the caller when the pool is busy). The pool's
// helpers poll for work between products, so a part starts at once where
// a new goroutine waited for the scheduler (a helper still polling holds
// the other P for up to tens of microseconds).
func runParts(n int, part func(i int)) {
	pool.Run(min(n, runtime.GOMAXPROCS(0)), nil, func(tid, nw int) {
		for i := tid; i < n; i += nw {
			part(i)
		}
	})
}

// vecOperand returns operand o's n elements as a slice when it is a dense
// row-major f32 array, or its single element (scalar true) when every
// dimension larger than 1 is broadcast (stride 0).
func vecOperand(o device.Operand, b []byte, n int) (s []float32, scalar, ok bool) {
	if o.DType != dtype.F32 {
		return nil, false, false
	}
	all := as[float32](b)
	off, scalar, ok := vecDense(o, len(all), n)
	switch {
	case !ok:
		return nil, false, false
	case scalar:
		return all[off : off+1], true, true
	}
	return all[off : off+n], false, true
}

// vecDense reports whether operand o, over a buffer of size elements,
// holds n > 0 elements densely in row-major order from offset off, or is a
// broadcast scalar at off (every dimension larger than 1 has stride 0).
func vecDense(o device.Operand, size, n int) (off int, scalar, ok bool) {
	if n == 0 || len(o.Strides) != len(o.Shape) || o.Offset < 0 {
		return 0, false, false
	}
	dense, bcast := true, true
	want := 1
	for d := len(o.Shape) - 1; d >= 0; d-- {
		if o.Shape[d] == 1 {
			continue
		}
		if o.Strides[d] != want {
			dense = false
		}
		if o.Strides[d] != 0 {
			bcast = false
		}
		want *= o.Shape[d]
	}
	switch {
	case dense && o.Offset+n <= size:
		return o.Offset, false, true
	case bcast && o.Offset < size:
		return o.Offset, true, true
	}
	return 0, false, false
}

// vecBlock is the number of elements the strided paths gather into
// float32 at a time (on the stack).
const vecBlock = 1024

// vecRunUnaryStrided runs f over c's f32 or bf16 input of any layout (a
// view, a broadcast) into its output, run by run, gathering each run into
// float32 blocks on the stack: the same kernel as the dense paths, so a
// result does not depend on its input's layout. It reports whether it ran
// (false for other dtypes).
func vecRunUnaryStrided(c *Call, f func(dst, a []float32)) bool {
	in, out := c.In[0], c.Out[0]
	bf := in.DType == dtype.BF16 && out.DType == dtype.BF16
	if !bf && (in.DType != dtype.F32 || out.DType != dtype.F32) {
		return false
	}
	var s32, d32 []float32
	var s16, d16 []dtype.BFloat16
	if bf {
		s16, d16 = as[dtype.BFloat16](c.InB[0]), as[dtype.BFloat16](c.OutB[0])
	} else {
		s32, d32 = as[float32](c.InB[0]), as[float32](c.OutB[0])
	}
	forEachRun(out.Shape, [][]int{out.Strides, in.Strides}, []int{out.Offset, in.Offset}, func(offs []int, m int, inner []int) {
		o, a, so, sa := offs[0], offs[1], inner[0], inner[1]
		if !bf && so == 1 && sa == 1 {
			f(d32[o:o+m], s32[a:a+m])
			return
		}
		var buf [vecBlock]float32
		for i := 0; i < m; i += vecBlock {
			b := buf[:min(vecBlock, m-i)]
			for k := range b {
				if bf {
					b[k] = s16[a+(i+k)*sa].F32()
				} else {
					b[k] = s32[a+(i+k)*sa]
				}
			}
			f(b, b)
			for k, v := range b {
				if bf {
					d16[o+(i+k)*so] = dtype.BF16FromF32(v)
				} else {
					d32[o+(i+k)*so] = v
				}
			}
		}
	})
	return true
}

// vecOut returns c's output as a dense f32 slice of n elements.
func vecOut(c *Call) ([]float32, int, bool) {
	out := c.Out[0]
	n := op.Numel(out.Shape)
	d, scalar, ok := vecOperand(out, c.OutB[0], n)
	if !ok || (scalar && n > 1) {
		return nil, 0, false
	}
	return d, n, true
}

// vecRunUnary runs f over c's f32 (or bf16) input into its output and
// reports whether it did (false for other dtypes): dense operands in
// chunks over goroutines (bf16RunUnary for bf16), any other layout run
// by run (vecRunUnaryStrided), so every f32 and bf16 layout gets the same
// arithmetic.
func vecRunUnary(c *Call, f func(dst, a []float32)) bool {
	if c.In[0].DType == dtype.BF16 {
		return bf16RunUnary(c, f) || vecRunUnaryStrided(c, f)
	}
	dst, n, ok := vecOut(c)
	if !ok {
		return vecRunUnaryStrided(c, f)
	}
	a, scalar, ok := vecOperand(c.In[0], c.InB[0], n)
	if !ok || (scalar && n > 1) {
		return vecRunUnaryStrided(c, f)
	}
	vecParallel(n, func(lo, hi int) { f(dst[lo:hi], a[lo:hi]) })
	return true
}

// vecRunBinary runs binary kernel k (vecOpAdd, vecOpSub, vecOpMul,
// vecOpDiv or vecOpMaximum) over c's two inputs and output when all are
// dense f32 arrays, or the second input is a scalar for add, sub and mul,
// and reports whether it did.
func vecRunBinary(c *Call, k vecOp) bool {
	ks := c.kernels()
	dst, n, ok := vecOut(c)
	if !ok {
		return false
	}
	a, sa, ok := vecOperand(c.In[0], c.InB[0], n)
	if !ok || (sa && n > 1) {
		return false
	}
	b, sb, ok := vecOperand(c.In[1], c.InB[1], n)
	if !ok {
		return false
	}
	if sb && n > 1 {
		s := b[0]
		if n < 2*vecChunk && k == vecOpAdd || n < 2*vecChunk && k == vecOpMul {
			// On the caller, without the closures vecParallel takes.
			if k == vecOpAdd {
				ks.vec.AddScalar(dst, a, s)
			} else {
				ks.vec.MulScalar(dst, a, s)
			}
			return true
		}
		switch k {
		case vecOpAdd:
			vecParallel(n, func(lo, hi int) { ks.vec.AddScalar(dst[lo:hi], a[lo:hi], s) })
		case vecOpSub:
			// x - s == x + (-s) exactly, signed zeros included.
			vecParallel(n, func(lo, hi int) { ks.vec.AddScalar(dst[lo:hi], a[lo:hi], -s) })
		case vecOpMul:
			vecParallel(n, func(lo, hi int) { ks.vec.MulScalar(dst[lo:hi], a[lo:hi], s) })
		default:
			return false
		}
		return true
	}
	var f func(dst, a, b []float32)
	switch k {
	case vecOpAdd:
		f = ks.vec.Add
	case vecOpSub:
		f = ks.vec.Sub
	case vecOpMul:
		f = ks.vec.Mul
	case vecOpDiv:
		f = ks.vec.Div
	case vecOpMaximum:
		f = ks.vec.Maximum
	default:
		return false
	}
	if n < 2*vecChunk {
		f(dst, a, b) // on the caller, without the closure vecParallel takes
		return true
	}
	vecParallel(n, func(lo, hi int) { f(dst[lo:hi], a[lo:hi], b[lo:hi]) })
	return true
}

// vecRunArith is vecRunBinary for arith's operator bytes.
func vecRunArith(c *Call, opc byte) bool {
	switch opc {
	case '+':
		return vecRunBinary(c, vecOpAdd)
	case '-':
		return vecRunBinary(c, vecOpSub)
	case '*':
		return vecRunBinary(c, vecOpMul)
	case '/':
		return vecRunBinary(c, vecOpDiv)
	}
	return false
}

// vecUnaryFor returns the vec kernel of the unary op d, or nil: a method
// of vec.Kernels, which the kernel registrations hold from init on and
// call on the table of each call.
func vecUnaryFor(d *op.Def) func(k *vec.Kernels, dst, a []float32) {
	switch d {
	case op.Exp:
		return (*vec.Kernels).Exp
	case op.Log:
		return (*vec.Kernels).Log
	case op.Tanh:
		return (*vec.Kernels).Tanh
	case op.Erf:
		return (*vec.Kernels).Erf
	case op.Sigmoid:
		return (*vec.Kernels).Sigmoid
	case op.Silu:
		return (*vec.Kernels).Silu
	}
	return nil
}
