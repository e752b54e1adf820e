package cpu

import (
	"github.com/gotpu/gotpu/op"

	"github.com/gotpu/gotpu/backend/cpu/internal/vec"
)

// Comparison kernels for f32 operands without a call per element (the
// kernels: internal/vec's Compare and CompareScalar): the generic loop
// (cmpBinary) calls a float64 comparison through two closures for every
// element, ~4 ns, which made a ReLU backward's mask cost more than the
// matrix product next to it.

var cmpKinds = map[*op.Def]vec.Cmp{op.Eq: vec.CmpEq, op.Ne: vec.CmpNe, op.Lt: vec.CmpLt, op.Le: vec.CmpLe, op.Gt: vec.CmpGt, op.Ge: vec.CmpGe}

// cmpF32 writes the bool result of comparison kind over f32 inputs 0 and
// 1 for runs where each input is contiguous or a broadcast scalar, and
// falls back per run to an element loop otherwise. It reports false
// (nothing written) when the output is not bool.
func cmpF32(c *Call, kind vec.Cmp) bool {
	ks := c.kernels()
	x, y, out := c.In[0], c.In[1], c.Out[0]
	if c.In[1].DType != x.DType || out.DType.Size() != 1 {
		return false
	}
	xs, ys, dst := as[float32](c.InB[0]), as[float32](c.InB[1]), as[bool](c.OutB[0])
	forEachRun(out.Shape, [][]int{out.Strides, x.Strides, y.Strides}, []int{out.Offset, x.Offset, y.Offset}, func(offs []int, n int, inner []int) {
		o, a, b := offs[0], offs[1], offs[2]
		sa, sb := inner[1], inner[2]
		d := dst[o : o+n]
		switch {
		case sa == 1 && sb == 1:
			vecParallel(n, func(lo, hi int) { ks.vec.Compare(kind, d[lo:hi], xs[a+lo:a+hi], ys[b+lo:b+hi]) })
		case sa == 1 && sb == 0:
			vecParallel(n, func(lo, hi int) { ks.vec.CompareScalar(kind, d[lo:hi], xs[a+lo:a+hi], ys[b]) })
		case sa == 0 && sb == 1:
			vecParallel(n, func(lo, hi int) { ks.vec.CompareScalar(kind.Swapped(), d[lo:hi], ys[b+lo:b+hi], xs[a]) })
		default:
			for i := range d {
				d[i] = kind.Of(xs[a+i*sa], ys[b+i*sb])
			}
		}
	})
	return true
}
