package cpu

import (
	"runtime"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// dotF32Epilogue runs an f32 dot_general exactly as dotGeneralKernel does
// (same micro-kernels, blocking and precision passes, so the same bits) in
// the GEMM's direct mode, calling fin on every final tile of the contiguous
// [nb, m, n] output while it is in cache: rows i0..i0+mc, columns
// j0..j0+nc of batch element b. It reports false, having done nothing, for
// problems without that path (other dtypes, an empty contraction, the bf16
// precisions, a CPU without the tiled kernels); the caller then runs the
// plain kernel and the epilogue separately, with the same results.
func dotF32Epilogue(c *Call, fin func(b, i0, j0, mc, nc, m, n int)) bool {
	l, r, o := c.In[0], c.In[1], c.Out[0]
	if l.DType != dtype.F32 || r.DType != dtype.F32 || o.DType != dtype.F32 {
		return false
	}
	d, nb, m, n, k, err := dotSizes(c)
	if err != nil {
		return false
	}
	if k == 0 {
		return false
	}
	// Only precision highest on the tiled kernels: the bf16 passes of
	// medium and high take the plain kernel (their packing details belong
	// to dotGeneralKernel) and the epilogue after it.
	t := tileF32(c.kernels())
	if !isHighest(c.Attrs.String("precision")) || t == nil {
		return false
	}
	ca, cb, plain := []func(float32) float32{idF32}, []func(float32) float32{idF32}, true
	lb, lr, lk := offsets(l.Shape, l.Strides, d.LhsBatch), offsets(l.Shape, l.Strides, d.LhsFree), offsets(l.Shape, l.Strides, d.LhsContract)
	rb, rr, rk := offsets(r.Shape, r.Strides, d.RhsBatch), offsets(r.Shape, r.Strides, d.RhsFree), offsets(r.Shape, r.Strides, d.RhsContract)
	out := as[float32](c.OutB[0][o.Offset*4:])
	g := gemmProblem[float32, float32, float32]{
		nb: nb, m: m, n: n, k: k * len(ca),
		a:    gemmSide[float32, float32]{src: as[float32](c.InB[0]), base: l.Offset, batch: lb, row: lr, k: lk, conv: ca, plain: plain},
		b:    gemmSide[float32, float32]{src: as[float32](c.InB[1]), base: r.Offset, batch: rb, row: rr, k: rk, conv: cb, plain: plain},
		kern: kern4x4[float32],
		dot:  dotPlain[float32],
		tile: t,
		ks:   c.kernels(),
	}
	g.dst, g.ldc, g.dstBatch = out, n, m*n
	g.fin = func(b, i0, j0, mc, nc int, _ []float32, _ int) { fin(b, i0, j0, mc, nc, m, n) }
	g.run()
	return true
}

// The swapped product for x·Wᵀ. A linear layer's dot_general contracts
// the last axis of both operands: x [m, k] (activations, few rows) times
// W [n, k] (the weight, many rows). As B, W is a k-contiguous operand the
// driver packs with a per-element transpose into 16-wide panels, several
// nanoseconds an element, and the weight is the large operand: at m = 64
// that pack costs more than the arithmetic. The transposed product
// Cᵀ = W·xᵀ packs W as A (six rows interleaved, the fast layout) and
// transposes only x; each finished tile of Cᵀ is transposed into C while
// in cache, then the fused epilogue runs on it. Every element is the same
// f32 FMA chain over k in order with each product's factors swapped, so
// the bits are those of dot_general.

// swapMinK is the contraction length from which the swapped product is
// worth its tile transposes.
const swapMinK = 16

// swappedOperands returns the operands of c's f32 dot_general as x·Wᵀ —
// x [m, k] contiguous, W [n, k] with rows ldw apart, the contiguous
// [m, n] output — when it is one with more weight rows than activation
// rows (see above); ok is false otherwise.
func swappedOperands(c *Call) (x, w, out []float32, m, n, k, ldw int, ok bool) {
	l, r, o := c.In[0], c.In[1], c.Out[0]
	if l.DType != dtype.F32 || r.DType != dtype.F32 || o.DType != dtype.F32 || tileF32(c.kernels()) == nil || !isHighest(c.Attrs.String("precision")) {
		return
	}
	if m, n, k, ldw, ok = xwtShape(c); !ok {
		return
	}
	x = as[float32](c.InB[0])[l.Offset:]
	w = as[float32](c.InB[1])[r.Offset:]
	out = as[float32](c.OutB[0])[o.Offset : o.Offset+m*n]
	return x, w, out, m, n, k, ldw, true
}

// xwtShape reports whether c's dot_general, whatever its dtype, is x·Wᵀ
// as swappedOperands takes it — x [..., k] contiguous, W [n, k] with rows
// ldw apart and unit k stride, the output [..., n] contiguous, more weight
// rows than activation rows m — and its sizes.
func xwtShape(c *Call) (m, n, k, ldw int, ok bool) {
	l, r, o := c.In[0], c.In[1], c.Out[0]
	a := c.Attrs
	lc, rc := a.Ints("lhs_contract"), a.Ints("rhs_contract")
	if len(a.Ints("lhs_batch")) != 0 || len(a.Ints("rhs_batch")) != 0 || len(lc) != 1 || len(rc) != 1 ||
		len(l.Shape) < 2 || len(r.Shape) != 2 || lc[0] != len(l.Shape)-1 || rc[0] != 1 {
		return
	}
	k = l.Shape[len(l.Shape)-1]
	m = op.Numel(l.Shape) / max(k, 1)
	n = r.Shape[0]
	if k < swapMinK || m < 1 || n <= m || r.Shape[1] != k || !l.IsContiguous() || r.Strides[1] != 1 || r.Strides[0] < k {
		return
	}
	if !o.IsContiguous() || !slices.Equal(o.Shape[:len(o.Shape)-1], l.Shape[:len(l.Shape)-1]) || o.Shape[len(o.Shape)-1] != n {
		return
	}
	return m, n, k, r.Strides[0], true
}

// dotF32Swapped runs the f32 dot_general of c as the swapped product when
// it is x·Wᵀ with more weight rows than activation rows (see above),
// calling fin (if not nil) on every final tile of the [m, n] output as
// dotF32Epilogue does. It reports false, having done nothing, otherwise.
func dotF32Swapped(c *Call, fin func(b, i0, j0, mc, nc, m, n int)) bool {
	ks := c.kernels()
	x, w, out, m, n, k, ldw, ok := swappedOperands(c)
	if !ok || gemvTakes(ks, m) {
		return false
	}
	var sfin func(i0, j0, mc, nc int)
	if fin != nil {
		sfin = func(i0, j0, mc, nc int) { fin(0, i0, j0, mc, nc, m, n) }
	}
	if gemmStreamXWt(ks, m, n, k, x, k, w, ldw, out, n, sfin, nil) {
		return true
	}
	buf := getScratch(m * n * 4)
	defer putScratch(buf)
	ct := as[float32](*buf)[: m*n : m*n]
	gemmF32(ks, n, m, k, w, ldw, false, x, k, true, ct, m, func(i0, j0, mc, nc int, t []float32, ldt int) {
		// Tile rows i0.. of Cᵀ are columns of C, its columns j0.. rows.
		gemmTranspose(ks, out[j0*n+i0:], n, t, ldt, mc, nc)
		if fin != nil {
			fin(0, j0, i0, nc, mc, m, n)
		}
	})
	return true
}

// dotStreams reports whether c's f32 dot_general takes the streaming
// x·Wᵀ path (dotF32StreamCols then runs it).
func dotStreams(c *Call) bool {
	ks := c.kernels()
	_, _, _, m, n, k, _, ok := swappedOperands(c)
	return ok && gemmStreamApplies(ks, m, n, k) && !gemvTakes(ks, m)
}

// gemvTakes reports whether an x·Wᵀ product with m activation rows runs
// better on the gemv kernels than on the swapped or streaming paths: a
// decode step of one or a few sequences is memory-bound, and the gemv
// kernels read W once, in place, without packing it or computing rows of
// padding (the streaming path's 6x16 tiles pad m to 16 columns: half
// their arithmetic is padding at m = 8). Its epilogue then runs after the
// product, on an output of m rows.
func gemvTakes(ks *kset, m int) bool {
	return m >= 1 && m <= gemvRowsMax && gemvAsmF32 != nil && ks.atLeast(LevelAVX2)
}

// gemvRowsMax is the most activation rows an f32 x·Wᵀ takes on the
// dot-form kernels (gemvMultiF32), a variable for benchmarks. Measured on
// SmolLM2-135M's shapes (BenchmarkGEMVRows, Zen 4, 2 threads, weights
// cycled through 48 MiB): see gemvMultiF32.
var gemvRowsMax = 8

// dotF32StreamCols runs the f32 dot_general of c on the streaming x·Wᵀ
// path (gemm_stream.go) with col as its column epilogue, when c is such a
// product (swappedOperands) and the path takes its shape. It reports
// false, having done nothing, otherwise.
func dotF32StreamCols(c *Call, col func(j0, h int, t []float32, ldt int)) bool {
	ks := c.kernels()
	x, w, out, m, n, k, ldw, ok := swappedOperands(c)
	if !ok || !gemmStreamApplies(ks, m, n, k) {
		return false
	}
	return gemmStreamXWt(ks, m, n, k, x, k, w, ldw, out, n, nil, col)
}

// epiMinTileCols is the narrowest C tile (in columns) on which the
// per-tile epilogue hook beats running the group after the product:
// below it, setting up the group's registers per row segment costs more
// than the second pass over a cache-resident C.
const epiMinTileCols = 64

// dotTilesWide reports whether c's f32 dot_general runs on the blocked
// driver itself (not the swapped, small or matrix-vector paths) with C
// tiles at least epiMinTileCols wide — the driver splits each row block's
// columns at most 2·threads ways — so that its per-tile epilogue is
// cheaper than a pass after the product whatever the output's size.
// Measured on the MNIST step's ReLU backward ([64, 256]·[256, 512] then a
// select): per tile 271-339 µs a run against 303-425 after the product.
func dotTilesWide(c *Call) bool {
	if _, _, _, _, _, _, _, ok := swappedOperands(c); ok {
		return false
	}
	d, _, m, n, k, err := dotSizes(c)
	if err != nil || len(d.LhsBatch) != 0 {
		return false
	}
	return min(m, n) > gemmSmallMax && m*n*k > gemmSmallMACs && n >= 2*runtime.GOMAXPROCS(0)*epiMinTileCols
}

// dotF32GEMV runs c's f32 dot_general straight on the dot-form
// matrix-vector kernel when it is a batch-1 x·Wᵀ (swappedOperands with
// one activation row and gemvTakes): the kernel and order the general
// driver's gemv path (gemvF32) runs for it, so the same bits, without
// building that driver's offset tables, closures and scratch on every
// call — a decode step makes a few hundred of these calls. It reports
// false, having done nothing, for any other problem.
func dotF32GEMV(c *Call) bool { return gemvSiblings(c.kernels(), []*Call{c}) }

// gemvMultiBlock is the bytes of W rows a GEMV of several activation rows
// takes at a time.
var gemvMultiBlock = 16 << 10

// gemvJob is one x·Wᵀ of a GEMV run (gemvRunF32, gemvRunBF16): out[i*n+r]
// (i < m, r < n) is row r of w (rows ldw apart) dotted with row i of the
// run's activations.
type gemvJob[T float32 | dtype.BFloat16] struct {
	w      []T
	ldw, n int
	out    []T
}

// gemvUnits returns the first unit of each job (and the total last) when
// job j is cut into ceil(n_j/step) units of step rows.
func gemvUnits[T float32 | dtype.BFloat16](jobs []gemvJob[T], step int) []int {
	first := make([]int, len(jobs)+1)
	for j, jb := range jobs {
		first[j+1] = first[j] + ceilDiv(jb.n, step)
	}
	return first
}

// gemvUnit returns the job and first row of unit u (first from gemvUnits).
func gemvUnit(first []int, u, step int) (job, r0 int) {
	for first[job+1] <= u {
		job++
	}
	return job, (u - first[job]) * step
}

// gemvRunF32 runs f32 x·Wᵀ products that share their activations x (m
// rows k long, m ≤ gemvRowsMax) on the dot-form kernel dk: every row of
// every output is the one the kernel gives for that row of x and that
// row of W alone, bit for bit, so a decode step's rows do not depend on
// which other sequences share the batch, nor on which products run
// together. W is walked in units of rows (16 for one activation row;
// for several, gemvMultiBlock bytes, at most 16 rows, which stay in L1
// while every row of x passes over them, so W is read from memory once),
// the units of all the products shared between the pool's threads from
// gemvParallelMACs multiply-adds on: a decoder layer's query, key and
// value products are one hand-off instead of three.
func gemvRunF32(ks *kset, dk func(k int, a *float32, lda int, x, y *float32, rows int, tail *int32), x []float32, m, k int, jobs []gemvJob[float32]) {
	tail := gemvTailMask(k)
	step := 16
	if m > 1 {
		step = min(16, max(1, gemvMultiBlock/(4*max(k, 1))))
	}
	_ = x[m*k-1]
	macs := 0
	for _, jb := range jobs {
		_ = jb.out[m*jb.n-1]
		_ = jb.w[(jb.n-1)*jb.ldw+k-1]
		macs += m * jb.n * k
	}
	// Four rows of x at a time where the four-vector kernel runs (the
	// same bits as dk).
	x4 := gemvDotF32x4Z
	if x4 == nil || !ks.atLeast(LevelAVX512) {
		x4 = nil
	}
	first := gemvUnits(jobs, step)
	run := func(u0, u1 int) {
		for u := u0; u < u1; u++ {
			j, r0 := gemvUnit(first, u, step)
			jb := &jobs[j]
			cnt := min(step, jb.n-r0)
			i := 0
			for ; x4 != nil && i+4 <= m; i += 4 {
				x4(k, &jb.w[r0*jb.ldw], jb.ldw, &x[i*k], k, &jb.out[i*jb.n+r0], jb.n, cnt, tail)
			}
			for ; i < m; i++ {
				dk(k, &jb.w[r0*jb.ldw], jb.ldw, &x[i*k], &jb.out[i*jb.n+r0], cnt, tail)
			}
		}
	}
	if macs < gemvParallelMACs {
		run(0, first[len(jobs)])
		return
	}
	gemvShare(first[len(jobs)], run)
}

// gemvShare runs units [0, total) as run(u0, u1) calls on the pool's
// GOMAXPROCS threads, in chunks taken dynamically (about four a thread).
func gemvShare(total int, run func(u0, u1 int)) {
	nw := runtime.GOMAXPROCS(0)
	chunk := max(1, total/(nw*4))
	var next atomic.Int64
	pool.RunShare(nw, func(_, _ int) {
		for {
			u0 := int(next.Add(int64(chunk))) - chunk
			if u0 >= total {
				return
			}
			run(u0, min(u0+chunk, total))
		}
	})
}

// dotBF16GEMV is dotF32GEMV for bf16 tensors: an x·Wᵀ of bf16 x (up to
// gemvRowsMax rows) and W (bf16 output) runs on the bf16 dot-form kernel
// (gemvRunBF16). It reports false, having done nothing, for any other
// problem.
func dotBF16GEMV(c *Call) bool { return gemvSiblings(c.kernels(), []*Call{c}) }

// gemvRunBF16 is gemvRunF32 for bf16 activations, weights and outputs,
// on the bf16 dot-form kernel with each row of x widened and
// deinterleaved once, as gemvBF16 does it (same kernel, order and final
// rounding, so a row gets the bits of its batch-1 product).
func gemvRunBF16(ks *kset, xin []dtype.BFloat16, m, k int, jobs []gemvJob[dtype.BFloat16]) bool {
	dk, dkAVX2 := gemvDotBF16(ks)
	if dk == nil {
		return false
	}
	kp, k16 := roundUp(k, 32), roundUp(k, 16)
	// Scratch (f32 units): the vectors widened and deinterleaved (kp
	// long each), then per thread 16 outputs and a zero-padded 16-row
	// block for the AVX2 kernel's reads past the matrix's end.
	step := 16
	if m > 1 {
		step = min(16, max(1, gemvMultiBlock/(2*max(k, 1))))
	}
	macs := 0
	for _, jb := range jobs {
		macs += m * jb.n * k
	}
	tsz := 64 + 8*k16
	nw := 1
	if macs >= gemvParallelMACs {
		nw = runtime.GOMAXPROCS(0)
	}
	buf := getScratch((m*kp + nw*tsz) * 4)
	defer putScratch(buf)
	all := as[float32](*buf)
	xs := all[:m*kp]
	for i := 0; i < m; i++ {
		gemvWidenDeinterleave(xs[i*kp:(i+1)*kp], xin[i*k:(i+1)*k])
	}
	tail := gemvTailMask16(k)
	// Four vectors at a time where the four-vector kernel runs (the same
	// bits as dk).
	x4 := gemvDotBF16x4Z
	if x4 == nil || dkAVX2 || !ks.atLeast(LevelAVX512) {
		x4 = nil
	}
	first := gemvUnits(jobs, step)
	run := func(tid, u0, u1 int) {
		tb := all[m*kp+tid*tsz : m*kp+(tid+1)*tsz]
		y := tb[:64]
		for u := u0; u < u1; u++ {
			j, r0 := gemvUnit(first, u, step)
			jb := &jobs[j]
			n, w, ldw, out := jb.n, jb.w, jb.ldw, jb.out
			nr := min(step, n-r0)
			a, lda := w[r0*ldw:], ldw
			if dkAVX2 && k%16 != 0 && (r0+nr-1)*ldw+k16 > len(w) {
				// The AVX2 kernel reads each row to k rounded up to 16:
				// past the end of the matrix here, so read a copy.
				pad := unsafe.Slice((*dtype.BFloat16)(unsafe.Pointer(&tb[64])), 16*k16)
				clear(pad)
				for i := 0; i < nr; i++ {
					copy(pad[i*k16:i*k16+k], w[(r0+i)*ldw:(r0+i)*ldw+k])
				}
				a, lda = pad, k16
			}
			i := 0
			for ; x4 != nil && i+4 <= m; i += 4 {
				x4(k, (*uint16)(unsafe.Pointer(&a[0])), lda, &xs[i*kp], kp, &y[0], 16, nr, tail)
				for j := 0; j < 4; j++ {
					ks.vec.Narrow(out[(i+j)*n+r0:(i+j)*n+r0+nr], y[j*16:j*16+nr])
				}
			}
			for ; i < m; i++ {
				dk(k, (*uint16)(unsafe.Pointer(&a[0])), lda, &xs[i*kp], &y[0], nr, tail)
				ks.vec.Narrow(out[i*n+r0:i*n+r0+nr], y[:nr])
			}
		}
	}
	total := first[len(jobs)]
	if nw == 1 {
		run(0, 0, total)
		return true
	}
	chunk := max(1, total/(nw*4))
	var next atomic.Int64
	pool.Run(nw, nil, func(tid, _ int) {
		for {
			u0 := int(next.Add(int64(chunk))) - chunk
			if u0 >= total {
				return
			}
			run(tid, u0, min(u0+chunk, total))
		}
	})
	return true
}

// gemvSiblings runs dot_general calls that multiply the same activations
// by different weights (a compiled program's run of sibling products, or
// one call) as one GEMV run when every one is an x·Wᵀ the dot-form
// kernels take: f32 at precision highest (swappedOperands, gemvTakes) or
// bf16, one dtype, the same activation rows. Each output gets the bits
// its own call gives it. It reports false, having done nothing,
// otherwise.
func gemvSiblings(ks *kset, cs []*Call) bool {
	c0 := cs[0]
	m, _, k, _, ok := xwtShape(c0)
	if !ok || m > gemvRowsMax {
		return false
	}
	dt := c0.In[0].DType
	for _, c := range cs {
		mi, _, ki, _, ok := xwtShape(c)
		if !ok || mi != m || ki != k || c.In[0].DType != dt || c.In[1].DType != dt || c.Out[0].DType != dt ||
			unsafe.SliceData(c.InB[0]) != unsafe.SliceData(c0.InB[0]) || c.In[0].Offset != c0.In[0].Offset {
			return false
		}
	}
	switch dt {
	case dtype.F32:
		if !gemvTakes(ks, m) {
			return false
		}
		dk := gemvDotF32(ks)
		if dk == nil {
			return false
		}
		jobs := make([]gemvJob[float32], len(cs))
		var x []float32
		for i, c := range cs {
			xi, w, out, _, n, _, ldw, ok := swappedOperands(c)
			if !ok {
				return false
			}
			x, jobs[i] = xi, gemvJob[float32]{w: w, ldw: ldw, n: n, out: out}
		}
		gemvRunF32(ks, dk, x, m, k, jobs)
	case dtype.BF16:
		if gemvAsmBF16 == nil || !ks.atLeast(LevelAVX2) {
			return false
		}
		jobs := make([]gemvJob[dtype.BFloat16], len(cs))
		for i, c := range cs {
			_, n, _, ldw, _ := xwtShape(c)
			r, o := c.In[1], c.Out[0]
			jobs[i] = gemvJob[dtype.BFloat16]{w: as[dtype.BFloat16](c.InB[1])[r.Offset:], ldw: ldw, n: n,
				out: as[dtype.BFloat16](c.OutB[0])[o.Offset : o.Offset+m*n]}
		}
		if !gemvRunBF16(ks, as[dtype.BFloat16](c0.InB[0])[c0.In[0].Offset:][:m*k], m, k, jobs) {
			return false
		}
	default:
		return false
	}
	gemvHits.Add(int64(len(cs)))
	return true
}
