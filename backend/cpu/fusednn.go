package cpu

import (
	"errors"
	"math"
	"runtime"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Fused row kernels for contiguous f32 input over the last dimension:
// softmax, log_softmax, layer_norm and rms_norm, built from the vec
// kernels. Each row (at most a few tens of KB for real models) is read
// from memory once and then stays in cache for the following passes; rows
// are spread over goroutines. They compute in float32 as PyTorch's
// vectorized CPU kernels do (float32 pairwise sums instead of the float64
// accumulation of the generic kernels), within f32 tolerances of them.

func init() {
	RegisterKernel(op.RmsNorm, Kernel{DTypes: 1<<dtype.F32 | 1<<dtype.BF16, Run: rmsNormKernel})
}

// errNormLayout reports a norm output that is not a dense f32 array (the
// runtime allocates outputs dense, so this is a runtime bug).
var errNormLayout = errors.New("cpu: rms_norm output is not a dense f32 array")

// fusedNN enables the fused paths of softmax and layer_norm (benchmarks
// turn it off to measure the generic kernels).
var fusedNN = true

// fusedRows runs fn on rows [lo, hi) of a rows x d problem, split over
// the threads (runParts; one part per thread) when each gets at least
// vecChunk elements.
func fusedRows(rows, d int, fn func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), rows*d/vecChunk, rows)
	if w <= 1 {
		fn(0, rows)
		return
	}
	per := (rows + w - 1) / w
	runParts(ceilDiv(rows, per), func(i int) { fn(i*per, min((i+1)*per, rows)) })
}

// fusedSoftmaxF32 runs softmax or log_softmax over the rows of a dense
// rows x d f32 array.
func fusedSoftmaxF32(ks *kset, dst, src []float32, rows, d int, logSM bool) {
	fusedRows(rows, d, func(lo, hi int) {
		k := ks.vec
		for r := lo; r < hi; r++ {
			y, x := dst[r*d:(r+1)*d], src[r*d:(r+1)*d]
			if logSM {
				k.LogSoftmaxRow(y, x)
			} else {
				k.SoftmaxRow(y, x)
			}
		}
	})
}

// fusedLayerNormF32 runs layer_norm over the rows of a dense rows x d f32
// array (w, b of length d or nil).
func fusedLayerNormF32(ks *kset, dst, src, w, b []float32, rows, d int, eps float64) {
	fusedRows(rows, d, func(lo, hi int) {
		tmp := make([]float32, d)
		k := ks.vec
		for r := lo; r < hi; r++ {
			k.LayerNormRow(dst[r*d:(r+1)*d], src[r*d:(r+1)*d], w, b, tmp, eps)
		}
	})
}

// fusedRMSNormF32 is fusedLayerNormF32 for rms_norm.
func fusedRMSNormF32(ks *kset, dst, src, w []float32, rows, d int, eps float64) {
	fusedRows(rows, d, func(lo, hi int) {
		buf := getScratch(4 * d)
		defer putScratch(buf)
		tmp := as[float32](*buf)[:d]
		k := ks.vec
		for r := lo; r < hi; r++ {
			k.RMSNormRow(dst[r*d:(r+1)*d], src[r*d:(r+1)*d], w, tmp, eps)
		}
	})
}

// fusedSoftmax is runSoftmax's fast path for f32 in and out: rows of a
// dense input over its last dimension directly, any other lane (another
// dim, a strided view) gathered into a dense row and scattered back, so
// every layout gets the same arithmetic. It reports whether it ran.
func fusedSoftmax(c *Call, ax int, logSM bool) bool {
	ks := c.kernels()
	in, out := c.In[0], c.Out[0]
	if !fusedNN || in.DType != dtype.F32 || out.DType != dtype.F32 || len(in.Shape) == 0 {
		return false
	}
	n := op.Numel(in.Shape)
	if n == 0 {
		return true
	}
	d := in.Shape[ax]
	if ax == len(in.Shape)-1 {
		src, scalar, ok := vecOperand(in, c.InB[0], n)
		dst, _, dok := vecOut(c)
		if ok && dok && !(scalar && n > 1) && &dst[0] != &src[0] {
			fusedSoftmaxF32(ks, dst, src, n/d, d, logSM)
			return true
		}
	}
	src, dst := as[float32](c.InB[0]), as[float32](c.OutB[0])
	l := newRedLanes(in, out, ax)
	lanes := l.outer * l.inner
	parallelFor(lanes, lanes*d*16, func(lo, hi int) {
		x, y := make([]float32, d), make([]float32, d)
		l.eachRange(lo, hi, func(io, oo, os int) {
			for i := range x {
				x[i] = src[io+i*l.inStride]
			}
			if logSM {
				ks.vec.LogSoftmaxRow(y, x)
			} else {
				ks.vec.SoftmaxRow(y, x)
			}
			for i, v := range y {
				dst[oo+i*os] = v
			}
		})
	})
	return true
}

// fusedNormArgs returns the dense f32 input, output and optional
// weight/bias of a layer_norm or rms_norm call over d trailing elements,
// or ok false when any is not a dense f32 array (or the output aliases the
// input).
func fusedNormArgs(c *Call, d int) (dst, src []float32, wb [2][]float32, ok bool) {
	n := op.Numel(c.In[0].Shape)
	if n == 0 || d == 0 {
		return nil, nil, wb, false
	}
	src, scalar, ok := vecOperand(c.In[0], c.InB[0], n)
	if !ok || scalar && n > 1 {
		return nil, nil, wb, false
	}
	if dst, _, ok = vecOut(c); !ok {
		return nil, nil, wb, false
	}
	for i := 1; i < len(c.In) && i <= 2; i++ {
		if c.In[i].Buf == nil {
			continue
		}
		p, sc, ok := vecOperand(c.In[i], c.InB[i], d)
		if !ok || op.Numel(c.In[i].Shape) != d || sc && d > 1 {
			return nil, nil, wb, false
		}
		wb[i-1] = p
	}
	return dst, src, wb, true
}

// fusedLayerNorm is layerNormKernel's fast path for dense f32 operands.
func fusedLayerNorm(c *Call, d int, eps float64) bool {
	if !fusedNN {
		return false
	}
	dst, src, wb, ok := fusedNormArgs(c, d)
	if !ok || &dst[0] == &src[0] {
		return false
	}
	fusedLayerNormF32(c.kernels(), dst, src, wb[0], wb[1], len(src)/d, d, eps)
	return true
}

// rmsNormKernel is the direct f32 and bf16 rms_norm kernel: dense
// operands take the fused row kernel, others are gathered into dense
// copies first; bf16 rows are computed in f32 (bf16_nn.go).
func rmsNormKernel(c *Call) error {
	x := c.In[0]
	n := op.Numel(x.Shape)
	d := op.Numel(c.Attrs.Ints("normalized_shape"))
	if n == 0 || d == 0 {
		return nil
	}
	if x.DType == dtype.BF16 {
		return rmsNormBF16(c, d)
	}
	eps := math.Ldexp(1, -23)
	if c.Attrs.Has("eps") {
		eps = c.Attrs.Float("eps")
	}
	dst, src, wb, ok := fusedNormArgs(c, d)
	if !ok {
		if dst, _, ok = vecOut(c); !ok {
			return errNormLayout
		}
		src = fusedGatherF32(x, c.InB[0])
		wb[0] = nil
		if len(c.In) > 1 && c.In[1].Buf != nil {
			wb[0] = fusedGatherF32(c.In[1], c.InB[1])
		}
	}
	fusedRMSNormF32(c.kernels(), dst, src, wb[0], n/d, d, eps)
	return nil
}

// fusedGatherF32 copies a strided f32 operand into a new dense slice.
func fusedGatherF32(o device.Operand, b []byte) []float32 {
	n := op.Numel(o.Shape)
	out := make([]float32, n)
	if n == 0 {
		return out
	}
	src := as[float32](b)
	idx := make([]int, len(o.Shape))
	for k := range out {
		off := o.Offset
		for d := range o.Shape {
			off += idx[d] * o.Strides[d]
		}
		out[k] = src[off]
		for d := len(o.Shape) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < o.Shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}
