package cpu

import (
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
	d, err := op.ResolveDotGeneral(l.Shape, r.Shape, c.Attrs.Ints("lhs_batch"), c.Attrs.Ints("rhs_batch"), c.Attrs.Ints("lhs_contract"), c.Attrs.Ints("rhs_contract"))
	if err != nil {
		return false
	}
	nb, m, n, k := 1, 1, 1, 1
	for _, ax := range d.LhsBatch {
		nb *= l.Shape[ax]
	}
	for _, ax := range d.LhsFree {
		m *= l.Shape[ax]
	}
	for _, ax := range d.RhsFree {
		n *= r.Shape[ax]
	}
	for _, ax := range d.LhsContract {
		k *= l.Shape[ax]
	}
	if k == 0 {
		return false
	}
	// Only precision highest on the tiled kernels: the bf16 passes of
	// medium and high take the plain kernel (their packing details belong
	// to dotGeneralKernel) and the epilogue after it.
	t := tileF32()
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
	}
	g.dst, g.ldc, g.dstBatch = out, n, m*n
	g.fin = func(b, i0, j0, mc, nc int, _ []float32, _ int) { fin(b, i0, j0, mc, nc, m, n) }
	g.run()
	return true
}
