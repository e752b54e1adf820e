package cpu

import (
	"math"

	"github.com/gotpu/gotpu/backend/cpu/internal/vec"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// bf16 softmax, log_softmax, layer_norm and rms_norm over the last
// dimension of a dense input: each row is widened to float32 in a
// per-goroutine scratch (assembly at level avx2), the f32 fused row kernel
// of fusednn.go runs on it, and the row is rounded to bf16 once — PyTorch's
// bf16 semantics (statistics accumulated in f32 over the row, one rounding
// of each output). Rows are spread over goroutines as in the f32 paths.

// fusedSoftmaxBF16 is runSoftmax's fast path for a bf16 input into a
// bf16 or f32 output: rows of a dense input over its last dimension
// directly, any other lane (another dim, a strided view) gathered into a
// dense f32 row and scattered back, so every layout gets the same
// arithmetic. It reports whether it ran.
func fusedSoftmaxBF16(c *Call, ax int, logSM bool) bool {
	in, out := c.In[0], c.Out[0]
	if !fusedNN || in.DType != dtype.BF16 || len(in.Shape) == 0 || out.DType != dtype.BF16 && out.DType != dtype.F32 {
		return false
	}
	n := op.Numel(in.Shape)
	d := in.Shape[ax]
	if n == 0 || d == 0 {
		return false
	}
	k := c.kernels().vec
	row := (*vec.Kernels).SoftmaxRow
	if logSM {
		row = (*vec.Kernels).LogSoftmaxRow
	}
	if ax == len(in.Shape)-1 {
		src, scalar, ok := bf16Dense(in, c.InB[0], n)
		var d16 []dtype.BFloat16
		var d32 []float32
		dok := false
		if out.DType == dtype.BF16 {
			d16, _, dok = bf16Out(c)
		} else {
			d32, _, dok = vecOut(c)
		}
		if ok && dok && !(scalar && n > 1) {
			fusedRows(n/d, d, func(lo, hi int) {
				p, buf := bf16Scratch(2 * d)
				defer putScratch(p)
				x, y := buf[:d], buf[d:]
				for r := lo; r < hi; r++ {
					k.Widen(x, src[r*d:(r+1)*d])
					if d32 != nil {
						row(k, d32[r*d:(r+1)*d], x)
						continue
					}
					row(k, y, x)
					k.Narrow(d16[r*d:(r+1)*d], y)
				}
			})
			return true
		}
	}
	src := as[dtype.BFloat16](c.InB[0])
	var d16 []dtype.BFloat16
	var d32 []float32
	if out.DType == dtype.BF16 {
		d16 = as[dtype.BFloat16](c.OutB[0])
	} else {
		d32 = as[float32](c.OutB[0])
	}
	l := newRedLanes(in, out, ax)
	lanes := l.outer * l.inner
	parallelFor(lanes, lanes*d*16, func(lo, hi int) {
		p, buf := bf16Scratch(2 * d)
		defer putScratch(p)
		x, y := buf[:d], buf[d:]
		l.eachRange(lo, hi, func(io, oo, os int) {
			for i := range x {
				x[i] = src[io+i*l.inStride].F32()
			}
			row(k, y, x)
			if d32 != nil {
				for i, v := range y {
					d32[oo+i*os] = v
				}
				return
			}
			for i, v := range y {
				d16[oo+i*os] = dtype.BF16FromF32(v)
			}
		})
	})
	return true
}

// bf16Param returns the optional weight or bias input i (nil when absent)
// of a norm over d trailing elements as float32: a dense f32 operand
// directly, a dense bf16 one widened into into (len d). ok is false for
// other layouts and dtypes.
func bf16Param(c *Call, i, d int, into []float32) (p []float32, ok bool) {
	if i >= len(c.In) || c.In[i].Buf == nil {
		return nil, true
	}
	o := c.In[i]
	if op.Numel(o.Shape) != d {
		return nil, false
	}
	if s, sc, ok := vecOperand(o, c.InB[i], d); ok && !(sc && d > 1) {
		return s, true
	}
	if s, sc, ok := bf16Dense(o, c.InB[i], d); ok && !(sc && d > 1) {
		c.kernels().vec.Widen(into, s)
		return into, true
	}
	return nil, false
}

// fusedNormBF16 runs layer_norm (rms false) or rms_norm over the rows of
// d elements of c's bf16 input into its bf16 output when both are dense
// (and the weight and bias dense f32 or bf16), reporting whether it did.
func fusedNormBF16(c *Call, d int, eps float64, rms bool) bool {
	ks := c.kernels()
	in := c.In[0]
	if !fusedNN || in.DType != dtype.BF16 || c.Out[0].DType != dtype.BF16 {
		return false
	}
	n := op.Numel(in.Shape)
	if n == 0 || d == 0 || n%d != 0 {
		return false
	}
	src, scalar, ok := bf16Dense(in, c.InB[0], n)
	if !ok || scalar && n > 1 {
		return false
	}
	dst, _, ok := bf16Out(c)
	if !ok {
		return false
	}
	wp, wbuf := bf16Scratch(2 * d)
	defer putScratch(wp)
	w, ok := bf16Param(c, 1, d, wbuf[:d])
	if !ok {
		return false
	}
	var b []float32
	if !rms {
		if b, ok = bf16Param(c, 2, d, wbuf[d:]); !ok {
			return false
		}
	}
	fusedRows(n/d, d, func(lo, hi int) {
		p, buf := bf16Scratch(3 * d)
		defer putScratch(p)
		x, y, tmp := buf[:d], buf[d:2*d], buf[2*d:]
		for r := lo; r < hi; r++ {
			ks.vec.Widen(x, src[r*d:(r+1)*d])
			if rms {
				ks.vec.RMSNormRow(y, x, w, tmp, eps)
			} else {
				ks.vec.LayerNormRow(y, x, w, b, tmp, eps)
			}
			ks.vec.Narrow(dst[r*d:(r+1)*d], y)
		}
	})
	return true
}

// fusedLayerNormBF16 is layerNormKernel's fast path for dense bf16
// operands.
func fusedLayerNormBF16(c *Call, d int, eps float64) bool {
	return fusedNormBF16(c, d, eps, false)
}

// rmsNormBF16 is rmsNormKernel for bf16: eps defaults to bf16's machine
// epsilon (2⁻⁷, as the decomposition's); operands that are not dense are
// gathered into dense copies first.
func rmsNormBF16(c *Call, d int) error {
	ks := c.kernels()
	eps := math.Ldexp(1, -7)
	if c.Attrs.Has("eps") {
		eps = c.Attrs.Float("eps")
	}
	if fusedNormBF16(c, d, eps, true) {
		return nil
	}
	dst, n, ok := bf16Out(c)
	if !ok {
		return errNormLayout
	}
	x := bf16Gather(c.In[0], c.InB[0])
	var w []float32
	if len(c.In) > 1 && c.In[1].Buf != nil {
		w = bf16GatherF32(c.In[1], c.InB[1])
	}
	fusedRows(n/d, d, func(lo, hi int) {
		buf := make([]float32, 3*d)
		xr, y, tmp := buf[:d], buf[d:2*d], buf[2*d:]
		for r := lo; r < hi; r++ {
			ks.vec.Widen(xr, x[r*d:(r+1)*d])
			ks.vec.RMSNormRow(y, xr, w, tmp, eps)
			ks.vec.Narrow(dst[r*d:(r+1)*d], y)
		}
	})
	return nil
}

// bf16Gather copies a strided bf16 operand into a new dense slice.
func bf16Gather(o device.Operand, b []byte) []dtype.BFloat16 {
	src := as[dtype.BFloat16](b)
	out := make([]dtype.BFloat16, op.Numel(o.Shape))
	forEachIndex(o, func(k, off int) { out[k] = src[off] })
	return out
}

// bf16GatherF32 copies a strided f32 or bf16 operand into a new dense f32
// slice.
func bf16GatherF32(o device.Operand, b []byte) []float32 {
	out := make([]float32, op.Numel(o.Shape))
	if o.DType == dtype.F32 {
		src := as[float32](b)
		forEachIndex(o, func(k, off int) { out[k] = src[off] })
		return out
	}
	src := as[dtype.BFloat16](b)
	forEachIndex(o, func(k, off int) { out[k] = src[off].F32() })
	return out
}

// forEachIndex calls fn with the row-major index k and the element offset
// of every element of operand o.
func forEachIndex(o device.Operand, fn func(k, off int)) {
	n := op.Numel(o.Shape)
	idx := make([]int, len(o.Shape))
	for k := 0; k < n; k++ {
		off := o.Offset
		for d := range o.Shape {
			off += idx[d] * o.Strides[d]
		}
		fn(k, off)
		for d := len(o.Shape) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < o.Shape[d] {
				break
			}
			idx[d] = 0
		}
	}
}
