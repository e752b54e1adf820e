package cpu

import (
	"math"
	"slices"
	"sync/atomic"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Typed paths for the pooling kernels of a CNN's training step: max pooling
// with indices (the forward that max_pool2d's gradient reruns),
// reduce_window over the two trailing dimensions (max_pool2d's and
// avg_pool2d's forward), and scatter_reduce "sum" along the last axis
// (their gradients: scatterPlanes). The generic kernels call a closure per
// element and allocate per-element index tables; these read f32/f64 slices
// directly. Each computes exactly what the generic kernel computes — the
// same comparisons in the same window order, sums accumulated in float64 in
// the same order and rounded once — so the results are bit for bit the
// same (tests compare them).

// slowPools sends the kernels down their generic paths (tests compare).
var slowPools bool

// floatT is the element types the typed paths take.
type floatT interface{ float32 | float64 }

// maxPool2dIndicesTyped is maxPool2dIndicesKernel's loop on f32 or f64.
func maxPool2dIndicesTyped[T floatT](ks *kset, p op.Pool2d, planes, inOff int, src, vals []T, idxs []int64) {
	plane, oplane := p.H*p.W, p.OH*p.OW
	if pool2x2(p.KH, p.KW, p.SH, p.SW, p.DH, p.DW, p.PH, p.PW, p.H, p.W, p.OH, p.OW) {
		maxPool2x2Indices(ks, src[inOff:inOff+planes*plane], vals, idxs, planes, p.H, p.W, p.OH, p.OW)
		return
	}
	parallelFor(planes, planes*oplane*p.KH*p.KW, func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			in := src[inOff+pl*plane : inOff+(pl+1)*plane]
			for oh := 0; oh < p.OH; oh++ {
				h0 := oh*p.SH - p.PH
				h1 := min(h0+(p.KH-1)*p.DH+1, p.H)
				for h0 < 0 {
					h0 += p.DH
				}
				oi := pl*oplane + oh*p.OW
				for ow := 0; ow < p.OW; ow++ {
					w0 := ow*p.SW - p.PW
					w1 := min(w0+(p.KW-1)*p.DW+1, p.W)
					for w0 < 0 {
						w0 += p.DW
					}
					best, bi := T(math.Inf(-1)), h0*p.W+w0
					for h := h0; h < h1; h += p.DH {
						row := in[h*p.W : h*p.W+p.W]
						for w := w0; w < w1; w += p.DW {
							if v := row[w]; v > best || v != v {
								best, bi = v, h*p.W+w
							}
						}
					}
					vals[oi+ow] = best
					idxs[oi+ow] = int64(bi)
				}
			}
		}
	})
}

// planeWindow reports whether window w over shape reduces only the two
// trailing dimensions (size-1, stride-1, unpadded windows elsewhere).
func planeWindow(shape []int, w op.Window) bool {
	r := len(shape)
	if r < 2 {
		return false
	}
	for d := 0; d < r-2; d++ {
		if w.Window[d] != 1 || w.Strides[d] != 1 || w.PadLo[d] != 0 || w.PadHi[d] != 0 || w.Out[d] != shape[d] {
			return false
		}
	}
	return true
}

// reduceWindowPlanes is reduceWindowKernel for a float window over the two
// trailing dimensions (planeWindow): max (NaN wins, padding never does) or
// sum (float64 accumulation in row-major tap order, rounded once).
func reduceWindowPlanes[T floatT](ks *kset, shape []int, w op.Window, isMax bool, src []T, inOff int, dst []T, outOff int) {
	r := len(shape)
	H, W := shape[r-2], shape[r-1]
	OH, OW := w.Out[r-2], w.Out[r-1]
	KH, KW := w.Window[r-2], w.Window[r-1]
	SH, SW := w.Strides[r-2], w.Strides[r-1]
	DH, DW := w.Dilation[r-2], w.Dilation[r-1]
	PH, PW := w.PadLo[r-2], w.PadLo[r-1]
	planes := op.Numel(shape[:r-2])
	if isMax && pool2x2(KH, KW, SH, SW, DH, DW, PH, PW, H, W, OH, OW) {
		maxPool2x2(ks, src[inOff:inOff+planes*H*W], dst[outOff:outOff+planes*OH*OW], planes, H, W, OH, OW)
		return
	}
	parallelFor(planes, planes*OH*OW*KH*KW, func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			in := src[inOff+pl*H*W : inOff+(pl+1)*H*W]
			out := dst[outOff+pl*OH*OW : outOff+(pl+1)*OH*OW]
			for oh := 0; oh < OH; oh++ {
				for ow := 0; ow < OW; ow++ {
					acc := 0.0
					if isMax {
						acc = math.Inf(-1)
					}
					for kh := 0; kh < KH; kh++ {
						h := oh*SH - PH + kh*DH
						if h < 0 || h >= H {
							continue
						}
						row := in[h*W : h*W+W]
						for kw := 0; kw < KW; kw++ {
							x := ow*SW - PW + kw*DW
							if x < 0 || x >= W {
								continue
							}
							v := float64(row[x])
							if !isMax {
								acc += v
							} else if v > acc || v != v {
								acc = v
							}
						}
					}
					out[oh*OW+ow] = T(acc)
				}
			}
		}
	})
}

// scatterSumRows is scatterReduceKernel for reduce "sum" with include_self
// along the last axis, when out, the index and the source are contiguous
// and the index and source rows match out's: out holds a copy of the input;
// row by row, the sums accumulate in float64 in index order and each
// written element is rounded once. It reports false, having done nothing,
// when the layouts do not fit; an index out of range is an error before
// anything is written.
func scatterSumRows[T floatT](out, idx, s device.Operand, ob []T, ix []int64, sb []T) (bool, error) {
	r := len(out.Shape)
	if r == 0 || len(idx.Shape) != r || !slices.Equal(idx.Shape, s.Shape) || !slices.Equal(idx.Shape[:r-1], out.Shape[:r-1]) ||
		!out.IsContiguous() || !idx.IsContiguous() || !s.IsContiguous() || out.Offset != 0 {
		return false, nil
	}
	n, m := out.Shape[r-1], idx.Shape[r-1]
	rows := op.Numel(out.Shape[:r-1])
	ix = ix[idx.Offset : idx.Offset+rows*m]
	sb = sb[s.Offset : s.Offset+rows*m]
	// Every index is checked before anything is written (an in-place
	// scatter must not be left half done): in parallel, then the first
	// bad one, in order, is the error.
	var bad atomic.Bool
	parallelFor(rows, rows*m, func(lo, hi int) {
		un := uint64(n)
		for _, v := range ix[lo*m : hi*m] {
			if uint64(v) >= un {
				bad.Store(true)
				return
			}
		}
	})
	if bad.Load() {
		for _, v := range ix {
			if v < 0 || v >= int64(n) {
				return true, outOfBounds(v, r-1, n)
			}
		}
	}
	parallelFor(rows, rows*m*3, func(lo, hi int) {
		// Only the positions the row's indices name are read and written
		// (a pooling gradient touches a quarter of them or fewer): each
		// starts from its element, then the sources add in index order.
		acc := make([]float64, n)
		for row := lo; row < hi; row++ {
			o := ob[row*n : (row+1)*n]
			ir, sr := ix[row*m:(row+1)*m], sb[row*m:(row+1)*m]
			for _, p := range ir {
				acc[p] = float64(o[p])
			}
			for j, p := range ir {
				acc[p] += float64(sr[j])
			}
			for _, p := range ir {
				o[p] = T(acc[p])
			}
		}
	})
	return true, nil
}

// scatterSumFast runs scatterSumRows when scatter_reduce's dtypes, reduce
// mode and axis fit it (out already holds the input's copy).
func scatterSumFast(c *Call, ax int) (bool, error) {
	out, idx, s := c.Out[0], c.In[1], c.In[2]
	if c.Attrs.String("reduce") != "sum" || !c.Attrs.Bool("include_self") || idx.DType != dtype.I64 || ax != len(out.Shape)-1 || s.DType != out.DType {
		return false, nil
	}
	ix := as[int64](c.InB[1])
	switch out.DType {
	case dtype.F32:
		return scatterSumRows(out, idx, s, as[float32](c.OutB[0]), ix, as[float32](c.InB[2]))
	case dtype.F64:
		return scatterSumRows(out, idx, s, as[float64](c.OutB[0]), ix, as[float64](c.InB[2]))
	}
	return false, nil
}
