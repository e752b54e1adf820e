package cpu

import "github.com/gotpu/gotpu/op"

// Comparison kernels for f32 operands without a call per element: the
// generic loop (cmpBinary) calls a float64 comparison through two closures
// for every element, ~4 ns, which made a ReLU backward's mask cost more
// than the matrix product next to it.

// Comparison kinds.
const (
	cmpEq = iota
	cmpNe
	cmpLt
	cmpLe
	cmpGt
	cmpGe
)

var cmpKinds = map[*op.Def]int{op.Eq: cmpEq, op.Ne: cmpNe, op.Lt: cmpLt, op.Le: cmpLe, op.Gt: cmpGt, op.Ge: cmpGe}

// cmpF32 writes the bool result of comparison kind over f32 inputs 0 and
// 1 for runs where each input is contiguous or a broadcast scalar, and
// falls back per run to an element loop otherwise. It reports false
// (nothing written) when the output is not bool.
func cmpF32(c *Call, kind int) bool {
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
			vecParallel(n, func(lo, hi int) { cmpVV(kind, d[lo:hi], xs[a+lo:a+hi], ys[b+lo:b+hi]) })
		case sa == 1 && sb == 0:
			vecParallel(n, func(lo, hi int) { cmpVS(kind, d[lo:hi], xs[a+lo:a+hi], ys[b], false) })
		case sa == 0 && sb == 1:
			vecParallel(n, func(lo, hi int) { cmpVS(kind, d[lo:hi], ys[b+lo:b+hi], xs[a], true) })
		default:
			for i := range d {
				d[i] = cmpOne(kind, xs[a+i*sa], ys[b+i*sb])
			}
		}
	})
	return true
}

func cmpOne(kind int, a, b float32) bool {
	switch kind {
	case cmpEq:
		return a == b
	case cmpNe:
		return a != b
	case cmpLt:
		return a < b
	case cmpLe:
		return a <= b
	case cmpGt:
		return a > b
	}
	return a >= b
}

// cmpVV compares two vectors element by element (the AVX2 kernel takes
// the longest multiple-of-32 prefix).
func cmpVV(kind int, d []bool, x, y []float32) {
	x, y = x[:len(d)], y[:len(d)]
	i := cmpAsm(kind, d, x, y, false)
	d, x, y = d[i:], x[i:], y[i:]
	switch kind {
	case cmpEq:
		for i := range d {
			d[i] = x[i] == y[i]
		}
	case cmpNe:
		for i := range d {
			d[i] = x[i] != y[i]
		}
	case cmpLt:
		for i := range d {
			d[i] = x[i] < y[i]
		}
	case cmpLe:
		for i := range d {
			d[i] = x[i] <= y[i]
		}
	case cmpGt:
		for i := range d {
			d[i] = x[i] > y[i]
		}
	default:
		for i := range d {
			d[i] = x[i] >= y[i]
		}
	}
}

// cmpVS compares a vector with a scalar: x[i] op s, or s op x[i] when
// swapped.
func cmpVS(kind int, d []bool, x []float32, s float32, swapped bool) {
	if swapped {
		// s op x  ==  x op' s with the order reversed.
		switch kind {
		case cmpLt:
			kind = cmpGt
		case cmpLe:
			kind = cmpGe
		case cmpGt:
			kind = cmpLt
		case cmpGe:
			kind = cmpLe
		}
	}
	x = x[:len(d)]
	sv := [1]float32{s}
	i := cmpAsm(kind, d, x, sv[:], true)
	d, x = d[i:], x[i:]
	switch kind {
	case cmpEq:
		for i := range d {
			d[i] = x[i] == s
		}
	case cmpNe:
		for i := range d {
			d[i] = x[i] != s
		}
	case cmpLt:
		for i := range d {
			d[i] = x[i] < s
		}
	case cmpLe:
		for i := range d {
			d[i] = x[i] <= s
		}
	case cmpGt:
		for i := range d {
			d[i] = x[i] > s
		}
	default:
		for i := range d {
			d[i] = x[i] >= s
		}
	}
}
