package cpu

import (
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// bf16 elementwise fast paths: dense bf16 operands (either operand of
// a binary op may be a broadcast scalar, the second a broadcast row) run
// block by block — widen a
// block to float32, run the f32 vec kernel on it in place, round it to
// bf16 — so each op is one pass over memory, with the conversions in
// assembly at level avx2 (bf16_conv.go). Results are the f32 kernel's
// rounded to bf16 once, as PyTorch's bf16 arithmetic; for +, -, * and /
// that equals the generic kernels bit for bit (one float64 operation on
// two bf16 values rounds to the same float32).

// bf16Dense returns operand o's n elements (or its single element, scalar
// true, when every dimension larger than 1 is broadcast) when it is a
// bf16 array laid out densely in row-major order.
func bf16Dense(o device.Operand, b []byte, n int) (s []dtype.BFloat16, scalar, ok bool) {
	if o.DType != dtype.BF16 {
		return nil, false, false
	}
	all := as[dtype.BFloat16](b)
	off, scalar, ok := vecDense(o, len(all), n)
	switch {
	case !ok:
		return nil, false, false
	case scalar:
		return all[off : off+1], true, true
	}
	return all[off : off+n], false, true
}

// bf16Out returns c's output as a dense bf16 slice of n > 0 elements.
func bf16Out(c *Call) ([]dtype.BFloat16, int, bool) {
	n := op.Numel(c.Out[0].Shape)
	d, scalar, ok := bf16Dense(c.Out[0], c.OutB[0], n)
	if !ok || scalar && n > 1 {
		return nil, 0, false
	}
	return d, n, true
}

// bf16Periodic returns operand o's values when it is a dense bf16 block
// of the output's trailing dimensions broadcast over its leading ones (a
// bias [n] added to [m, n]): element i of the output reads s[i%len(s)].
func bf16Periodic(o device.Operand, b []byte) (s []dtype.BFloat16, ok bool) {
	if o.DType != dtype.BF16 || len(o.Strides) != len(o.Shape) || o.Offset < 0 {
		return nil, false
	}
	p, want := 1, 1
	d := len(o.Shape) - 1
	for ; d >= 0; d-- {
		if o.Shape[d] == 1 {
			continue
		}
		if o.Strides[d] != want {
			break
		}
		want *= o.Shape[d]
		p *= o.Shape[d]
	}
	for ; d >= 0; d-- {
		if o.Shape[d] != 1 && o.Strides[d] != 0 {
			return nil, false
		}
	}
	all := as[dtype.BFloat16](b)
	if o.Offset+p > len(all) {
		return nil, false
	}
	return all[o.Offset : o.Offset+p], true
}

// bf16RunUnary runs f over c's dense bf16 input into its dense bf16
// output and reports whether it did.
func bf16RunUnary(c *Call, f func(dst, a []float32)) bool {
	ks := c.kernels()
	dst, n, ok := bf16Out(c)
	if !ok {
		return false
	}
	src, scalar, ok := bf16Dense(c.In[0], c.InB[0], n)
	if !ok || scalar && n > 1 {
		return false
	}
	if n < 2*vecChunk {
		bf16UnaryRange(ks, f, dst, src, 0, n) // on the caller, without a closure
		return true
	}
	vecParallel(n, func(lo, hi int) { bf16UnaryRange(ks, f, dst, src, lo, hi) })
	return true
}

// bf16UnaryRange is bf16RunUnary's work on elements [lo, hi).
func bf16UnaryRange(ks *kset, f func(dst, a []float32), dst, src []dtype.BFloat16, lo, hi int) {
	p, b := bf16Scratch(bf16Block)
	defer putScratch(p)
	for i := lo; i < hi; i += bf16Block {
		m := min(bf16Block, hi-i)
		ks.vec.Widen(b[:m], src[i:i+m])
		f(b[:m], b[:m])
		ks.vec.Narrow(dst[i:i+m], b[:m])
	}
}

// bf16RunBinary runs binary kernel k (vecOpAdd, vecOpSub, vecOpMul or
// vecOpDiv) over c's bf16 inputs into its output when all are dense, or
// one input is a broadcast scalar, or the second a dense block of
// trailing dimensions broadcast over the leading ones (a bias row), and
// reports whether it did.
func bf16RunBinary(c *Call, k vecOp) bool {
	ks := c.kernels()
	dst, n, ok := bf16Out(c)
	if !ok {
		return false
	}
	x, xs, ok := bf16Dense(c.In[0], c.InB[0], n)
	if !ok {
		return false
	}
	y, ys, ok := bf16Dense(c.In[1], c.InB[1], n)
	period := 0 // > 0: y is a block of that many values repeated
	if !ok {
		if y, ok = bf16Periodic(c.In[1], c.InB[1]); !ok || len(y) == 0 || n%len(y) != 0 {
			return false
		}
		period = len(y)
	}
	xs, ys = xs && n > 1, ys && n > 1
	if xs && (ys || period > 0) {
		return false
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
	default:
		return false
	}
	b := bf16Bin{ks: ks, f: f, k: k, x: x, y: y, dst: dst, xs: xs, ys: ys, period: period}
	if n < 2*vecChunk {
		b.run(0, n) // on the caller, without a closure
		return true
	}
	vecParallel(n, b.run)
	return true
}

// bf16Bin is one bf16RunBinary call's operands.
type bf16Bin struct {
	ks        *kset
	f         func(dst, a, b []float32)
	k         vecOp
	x, y, dst []dtype.BFloat16
	xs, ys    bool
	period    int
}

// run does bf16RunBinary's work on elements [lo, hi).
func (bb bf16Bin) run(lo, hi int) {
	ks, f, k, x, y, dst, xs, ys, period := bb.ks, bb.f, bb.k, bb.x, bb.y, bb.dst, bb.xs, bb.ys, bb.period
	p, buf := bf16Scratch(2 * bf16Block)
	defer putScratch(p)
	a, b := buf[:bf16Block], buf[bf16Block:]
	var s float32
	switch {
	case xs:
		// A scalar first operand: a block of it, in the operands'
		// order (so NaN payloads propagate as in the generic kernels).
		s = x[0].F32()
		for i := range a {
			a[i] = s
		}
	case ys:
		s = y[0].F32()
		if k == vecOpDiv {
			for i := range b {
				b[i] = s
			}
		}
	}
	for i := lo; i < hi; i += bf16Block {
		m := min(bf16Block, hi-i)
		if xs {
			ks.vec.Widen(b[:m], y[i:i+m])
			f(b[:m], a[:m], b[:m])
			ks.vec.Narrow(dst[i:i+m], b[:m])
			continue
		}
		ks.vec.Widen(a[:m], x[i:i+m])
		switch {
		case period > 0:
			for j := 0; j < m; {
				o := (i + j) % period
				w := min(m-j, period-o)
				ks.vec.Widen(b[j:j+w], y[o:o+w])
				j += w
			}
			f(a[:m], a[:m], b[:m])
		case !ys:
			ks.vec.Widen(b[:m], y[i:i+m])
			f(a[:m], a[:m], b[:m])
		case k == vecOpAdd:
			ks.vec.AddScalar(a[:m], a[:m], s)
		case k == vecOpSub:
			// x - s == x + (-s) exactly, signed zeros included.
			ks.vec.AddScalar(a[:m], a[:m], -s)
		case k == vecOpMul:
			ks.vec.MulScalar(a[:m], a[:m], s)
		default:
			f(a[:m], a[:m], b[:m])
		}
		ks.vec.Narrow(dst[i:i+m], a[:m])
	}
}
