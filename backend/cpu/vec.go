package cpu

import (
	"math"
	"runtime"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Slice-level float32 kernels. Every function works on len(dst) elements
// (the inputs must be at least that long), handles any length including 0,
// allocates nothing, and allows dst to alias any input exactly (dst[i] is
// written only after a[i], b[i], c[i] were read). They are the building
// blocks of the contiguous f32 fast paths of the elementwise kernels and
// of the fused-program compiler, which calls them on cache-sized blocks.
//
// At CPU level avx2 and above (atLeast) the AVX2+FMA loops of vec_amd64.s do the
// work; at level generic, and on other architectures, the Go loops here.
// The exactly rounded kernels (arithmetic, fma, maximum, relu) and the sum
// give bit-identical results at both levels (but for the payload of a NaN
// that maximum produces from a NaN second operand); the transcendentals
// use different algorithms (float32 polynomials in assembly, float64 math
// in Go, which reproduces the generic elementwise kernels exactly) within
// the documented error of each.

// vecOp names a kernel for the assembly dispatchers.
type vecOp uint8

const (
	vecOpAdd vecOp = iota
	vecOpSub
	vecOpMul
	vecOpDiv
	vecOpMaximum
	vecOpRelu
	vecOpExp
	vecOpLog
	vecOpTanh
	vecOpErf
	vecOpSigmoid
	vecOpSilu
	vecOpGelu
	vecOpGeluTanh
)

// vecAddF32 sets dst[i] = a[i] + b[i].
func vecAddF32(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := vecBinaryAsm(vecOpAdd, dst, a, b); i < len(dst); i++ {
		dst[i] = a[i] + b[i]
	}
}

// vecSubF32 sets dst[i] = a[i] - b[i].
func vecSubF32(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := vecBinaryAsm(vecOpSub, dst, a, b); i < len(dst); i++ {
		dst[i] = a[i] - b[i]
	}
}

// vecMulF32 sets dst[i] = a[i] * b[i].
func vecMulF32(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := vecBinaryAsm(vecOpMul, dst, a, b); i < len(dst); i++ {
		dst[i] = a[i] * b[i]
	}
}

// vecDivF32 sets dst[i] = a[i] / b[i] (IEEE: x/0 is ±Inf, 0/0 NaN).
func vecDivF32(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := vecBinaryAsm(vecOpDiv, dst, a, b); i < len(dst); i++ {
		dst[i] = a[i] / b[i]
	}
}

// vecFmaF32 sets dst[i] = a[i]*b[i] + c[i] rounded once (a fused
// multiply-add).
func vecFmaF32(dst, a, b, c []float32) {
	a, b, c = a[:len(dst)], b[:len(dst)], c[:len(dst)]
	for i := vecFmaAsm(dst, a, b, c); i < len(dst); i++ {
		dst[i] = fmaF32(a[i], b[i], c[i])
	}
}

// vecAddScalarF32 sets dst[i] = a[i] + s.
func vecAddScalarF32(dst, a []float32, s float32) {
	a = a[:len(dst)]
	for i := vecScalarAsm(vecOpAdd, dst, a, s); i < len(dst); i++ {
		dst[i] = a[i] + s
	}
}

// vecMulScalarF32 sets dst[i] = a[i] * s.
func vecMulScalarF32(dst, a []float32, s float32) {
	a = a[:len(dst)]
	for i := vecScalarAsm(vecOpMul, dst, a, s); i < len(dst); i++ {
		dst[i] = a[i] * s
	}
}

// vecMaximumF32 is torch.maximum: NaN if either operand is NaN, otherwise
// the larger, a on ties (so maximum(-0, +0) is -0, as maxNaN).
func vecMaximumF32(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := vecBinaryAsm(vecOpMaximum, dst, a, b); i < len(dst); i++ {
		x, y := a[i], b[i]
		switch {
		case x != x:
			dst[i] = x
		case y != y || x < y:
			dst[i] = y
		default:
			dst[i] = x
		}
	}
}

// vecReluF32 is torch.relu: x < 0 ? 0 : x, so NaN and -0 pass through.
func vecReluF32(dst, a []float32) {
	a = a[:len(dst)]
	for i := vecScalarAsm(vecOpRelu, dst, a, 0); i < len(dst); i++ {
		if x := a[i]; x < 0 {
			dst[i] = 0
		} else {
			dst[i] = x
		}
	}
}

// The avx2 bounds below were confirmed over all 2^32 float32 inputs.

// vecExpF32 sets dst[i] = exp(a[i]). Max error 1 ulp (avx2: Cephes expf
// polynomial, subnormal results rounded once; generic: float64 math.Exp,
// 0 ulp), +Inf above 88.7228, 0 below -103.97.
func vecExpF32(dst, a []float32) {
	a = a[:len(dst)]
	if vecUnaryAsm(vecOpExp, dst, a) {
		return
	}
	for i := range dst {
		dst[i] = float32(math.Exp(float64(a[i])))
	}
}

// vecLogF32 sets dst[i] = log(a[i]) (-Inf at ±0, NaN below 0, subnormals
// handled). Max error 1 ulp.
func vecLogF32(dst, a []float32) {
	a = a[:len(dst)]
	if vecUnaryAsm(vecOpLog, dst, a) {
		return
	}
	for i := range dst {
		dst[i] = float32(math.Log(float64(a[i])))
	}
}

// vecTanhF32 sets dst[i] = tanh(a[i]). Max error 1 ulp.
func vecTanhF32(dst, a []float32) {
	a = a[:len(dst)]
	if vecUnaryAsm(vecOpTanh, dst, a) {
		return
	}
	for i := range dst {
		dst[i] = float32(math.Tanh(float64(a[i])))
	}
}

// vecErfF32 sets dst[i] = erf(a[i]). Max error 2 ulp (avx2: x*P(x^2) below
// |x| = 0.875, 1 - 2^L(|x|) above with L a polynomial approximating
// log2(erfc(|x|)) on [0.875, 3.95], whose error costs erf only erfc(|x|)
// times as much; polynomials fitted by tools/vecfit).
func vecErfF32(dst, a []float32) {
	a = a[:len(dst)]
	if vecUnaryAsm(vecOpErf, dst, a) {
		return
	}
	for i := range dst {
		dst[i] = float32(math.Erf(float64(a[i])))
	}
}

// vecSigmoidF32 sets dst[i] = 1/(1+exp(-a[i])). Max error 1 ulp for
// normal results (for x < 0 it is computed as e/(1+e), e = exp(x), without
// cancellation); subnormal results within 1e-42.
func vecSigmoidF32(dst, a []float32) {
	a = a[:len(dst)]
	if vecUnaryAsm(vecOpSigmoid, dst, a) {
		return
	}
	for i := range dst {
		dst[i] = float32(1 / (1 + math.Exp(-float64(a[i]))))
	}
}

// vecGeluF32 sets dst[i] = x*0.5*(1+erf(x/sqrt2)) for x = a[i]. Max error 2
// ulp for normal results, subnormal ones within 1e-42 (avx2: x/2 + s G(s),
// s = x^2/2, below |x| = 1/sqrt2, where 1+erf does not cancel much; beyond,
// x - y for x > 0 and -y for x < 0 with y = exp(-x^2/2) N(|x|) = |x|
// erfc(|x|/sqrt2)/2, N a polynomial in t = (|x|-1.5)/(|x|+1.5) and x^2/2
// carried as a float32 pair into exp, so negative tails keep their relative
// accuracy where PyTorch's 1+erf loses it entirely). gelu(-Inf) is NaN as in
// PyTorch.
func vecGeluF32(dst, a []float32) {
	a = a[:len(dst)]
	if vecUnaryAsm(vecOpGelu, dst, a) {
		return
	}
	for i := range dst {
		x := float64(a[i])
		dst[i] = float32(x * 0.5 * math.Erfc(-x/math.Sqrt2))
	}
}

// vecGeluTanhF32 sets dst[i] = 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3)))
// for x = a[i] (gelu's approximate="tanh"), computed as x*sigmoid(2u)
// without cancellation. Max error 17 ulp where |result| >= 1e-3 (rounding
// of 2u's own inputs, amplified by |2u| for x < 0; the worst near x = -3),
// absolute error below 1e-8 elsewhere: well inside f32 tolerances, and
// far better than 1+tanh in float32.
func vecGeluTanhF32(dst, a []float32) {
	a = a[:len(dst)]
	if vecUnaryAsm(vecOpGeluTanh, dst, a) {
		return
	}
	const k = 0.7978845608028654 // sqrt(2/pi)
	for i := range dst {
		x := float64(a[i])
		dst[i] = float32(0.5 * x * (1 + math.Tanh(k*(x+0.044715*x*x*x))))
	}
}

// vecSiluF32 sets dst[i] = x/(1+exp(-x)) for x = a[i]. Max error 2 ulp for
// normal results, subnormal ones within 1e-42; silu(-Inf) is NaN as in
// PyTorch.
func vecSiluF32(dst, a []float32) {
	a = a[:len(dst)]
	if vecUnaryAsm(vecOpSilu, dst, a) {
		return
	}
	for i := range dst {
		x := float64(a[i])
		dst[i] = float32(x / (1 + math.Exp(-x)))
	}
}

// vecSumLanes is the number of interleaved partial sums of vecSumF32's
// blocks, and vecSumBlock the largest block summed that way.
const (
	vecSumLanes = 32
	vecSumBlock = 4096
)

// vecSumF32 returns the float32 sum of a in a fixed order that does not
// depend on the CPU level: a slice longer than vecSumBlock is split at
// half its length rounded up to a multiple of 32, and the halves' sums
// (recursively) are added; a block of at most vecSumBlock elements is
// summed in 32 partial sums, partial j accumulating a[j], a[j+32], a[j+64],
// ... in order from +0, which are then folded pairwise (j += j+16, j += j+8,
// j += j+4, j += j+2, j += j+1). The error grows like log2(n) rather than n.
// The empty sum is +0.
func vecSumF32(a []float32) float32 {
	if len(a) <= vecSumBlock {
		return vecSumBlockF32(a)
	}
	m := (len(a)/2 + vecSumLanes - 1) &^ (vecSumLanes - 1)
	return vecSumF32(a[:m]) + vecSumF32(a[m:])
}

// vecSumBlockF32 is vecSumF32's lane sum of one block.
func vecSumBlockF32(a []float32) float32 {
	var acc [vecSumLanes]float32
	i := vecSumLanesAsm(a, &acc)
	for ; i+vecSumLanes <= len(a); i += vecSumLanes {
		s := a[i : i+vecSumLanes]
		for j := range acc {
			acc[j] += s[j]
		}
	}
	for j, v := range a[i:] {
		acc[j] += v
	}
	return vecFoldLanes(&acc)
}

// vecFoldLanes folds the 32 partial sums pairwise in vecSumF32's order.
func vecFoldLanes(acc *[vecSumLanes]float32) float32 {
	for w := vecSumLanes / 2; w > 0; w /= 2 {
		for j := 0; j < w; j++ {
			acc[j] += acc[j+w]
		}
	}
	return acc[0]
}

// vecMaxF32 returns the largest element of a, NaN if any element is NaN,
// -Inf for an empty slice. Between +0 and -0 either may be returned.
func vecMaxF32(a []float32) float32 {
	m, k := vecMaxAsm(a)
	if k == 0 {
		m = float32(math.Inf(-1))
	} else if m != m {
		return m
	}
	for _, v := range a[k:] {
		if v != v {
			return v
		}
		if v > m {
			m = v
		}
	}
	return m
}

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
	gemmParallel(min(n, runtime.GOMAXPROCS(0)), nil, func(tid, nw int) {
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
		switch k {
		case vecOpAdd:
			vecParallel(n, func(lo, hi int) { vecAddScalarF32(dst[lo:hi], a[lo:hi], s) })
		case vecOpSub:
			// x - s == x + (-s) exactly, signed zeros included.
			vecParallel(n, func(lo, hi int) { vecAddScalarF32(dst[lo:hi], a[lo:hi], -s) })
		case vecOpMul:
			vecParallel(n, func(lo, hi int) { vecMulScalarF32(dst[lo:hi], a[lo:hi], s) })
		default:
			return false
		}
		return true
	}
	var f func(dst, a, b []float32)
	switch k {
	case vecOpAdd:
		f = vecAddF32
	case vecOpSub:
		f = vecSubF32
	case vecOpMul:
		f = vecMulF32
	case vecOpDiv:
		f = vecDivF32
	case vecOpMaximum:
		f = vecMaximumF32
	default:
		return false
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

// vecUnaryFor returns the vec kernel of the unary op d, or nil.
func vecUnaryFor(d *op.Def) func(dst, a []float32) {
	switch d {
	case op.Exp:
		return vecExpF32
	case op.Log:
		return vecLogF32
	case op.Tanh:
		return vecTanhF32
	case op.Erf:
		return vecErfF32
	case op.Sigmoid:
		return vecSigmoidF32
	case op.Silu:
		return vecSiluF32
	}
	return nil
}
