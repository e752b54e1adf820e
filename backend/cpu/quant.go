package cpu

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/internal/quant"
	"github.com/gotpu/gotpu/op"
)

// The direct kernel of linear_gguf: x·Wᵀ with W kept in its ggml blocks,
// through internal/quant (each x row quantized per block to 8 bits and
// multiplied with integer block dot products, as llama.cpp's CPU matmul),
// on the GEMM worker pool. f32, bf16 and f16 inputs are multiplied in f32;
// the output is rounded to the input's dtype once.

func init() {
	RegisterKernel(op.LinearGguf, Kernel{DTypes: 1<<dtype.F32 | 1<<dtype.BF16 | 1<<dtype.F16, Run: linearGGUFKernel})
	RegisterKernel(op.DequantizeGguf, Kernel{DTypes: 1 << dtype.U8, Run: dequantizeGGUFKernel})
}

// dequantizeGGUFKernel decodes dequantize_gguf's rows with package gguf's
// bit-exact dequantizer (quant.DequantizeRow): the decomposition's values
// without its elementwise passes over the block bytes.
func dequantizeGGUFKernel(c *Call) error {
	blk, err := op.GGUFBlockOf(c.Attrs.String("type"))
	if err != nil {
		return err
	}
	kd := c.Attrs.Int("k")
	wo, yo := c.In[0], c.Out[0]
	if !wo.IsContiguous() || !yo.IsContiguous() {
		return fmt.Errorf("cpu: dequantize_gguf needs contiguous operands (w %v, y %v)", wo.Strides, yo.Strides)
	}
	n, rb := wo.Shape[0], wo.Shape[1]
	w := c.InB[0][wo.Offset:][:n*rb]
	y := as[float32](c.OutB[0])[yo.Offset:][:n*kd]
	for j := range n {
		if err := quant.DequantizeRow(quant.Type(blk.GGMLType), w[j*rb:][:rb], y[j*kd:][:kd]); err != nil {
			return fmt.Errorf("cpu: dequantize_gguf: %w", err)
		}
	}
	return nil
}

// layoutFeatures lists the device features (op.LayoutFeature) of the
// linear_gguf weight layouts the process's quant kernels run natively.
func layoutFeatures() []string {
	var f []string
	for _, blk := range op.GGUFBlocks() {
		if procKS.quant.Packs(quant.Type(blk.GGMLType)) {
			f = append(f, op.LayoutFeature(op.LayoutR16, blk.Name))
		}
	}
	return f
}

// linearGGUFRuns counts the kernel's calls (tests check that it ran).
var linearGGUFRuns atomic.Int64

func linearGGUFKernel(c *Call) error { return linearGGUF(c, c.kernels().quant) }

// linearGGUF runs linear_gguf with kernels k (tests pass every level's).
func linearGGUF(c *Call, k quant.Kernels) error {
	linearGGUFRuns.Add(1)
	blk, err := op.GGUFBlockOf(c.Attrs.String("type"))
	if err != nil {
		return err
	}
	kd := c.Attrs.Int("k")
	xo, wo, yo := c.In[0], c.In[1], c.Out[0]
	if !xo.IsContiguous() || !wo.IsContiguous() || !yo.IsContiguous() {
		return fmt.Errorf("cpu: linear_gguf needs contiguous operands (x %v, w %v, y %v)", xo.Strides, wo.Strides, yo.Strides)
	}
	n := wo.Shape[0]
	m := op.Numel(xo.Shape) / max(kd, 1)
	rb := wo.Shape[1]
	w := c.InB[1][wo.Offset:][:n*rb]
	x := floatsOf(xo.DType, c.InB[0], xo.Offset, m*kd)
	var y []float32
	if xo.DType == dtype.F32 {
		y = as[float32](c.OutB[0])[yo.Offset:][:m*n]
	} else {
		// bf16 and f16 outputs are rounded from f32 sums at the end.
		buf := getScratch(m * n * 4)
		defer putScratch(buf)
		y = as[float32](*buf)[:m*n]
	}
	qt := quant.Type(blk.GGMLType)
	packed := c.Attrs.String("layout") == op.LayoutR16
	if quant.Finite(x) {
		ws := []quant.Weight{{W: w, N: n, Y: y, Packed: packed}}
		if err := k.MatMulMulti(qt, ws, kd, x, m, quantPar(m*n*kd)); err != nil {
			return fmt.Errorf("cpu: linear_gguf: %w", err)
		}
	} else {
		if packed {
			rm := make([]byte, len(w))
			if err := quant.Unpack(qt, rm, w, n, rb); err != nil {
				return fmt.Errorf("cpu: linear_gguf: %w", err)
			}
			w = rm
		}
		if err := linearGGUFDequant(qt, w, rb, n, kd, x, m, y); err != nil {
			return err
		}
	}
	switch yo.DType {
	case dtype.BF16:
		out := as[dtype.BFloat16](c.OutB[0])[yo.Offset:][:m*n]
		for i, v := range y {
			out[i] = dtype.BF16FromF32(v)
		}
	case dtype.F16:
		out := as[dtype.Float16](c.OutB[0])[yo.Offset:][:m*n]
		for i, v := range y {
			out[i] = dtype.F16FromF32(v)
		}
	}
	return nil
}

// floatsOf returns n values of a dense f32, bf16 or f16 buffer from offset
// off as f32 (the buffer itself for f32).
func floatsOf(dt dtype.DType, b []byte, off, n int) []float32 {
	switch dt {
	case dtype.BF16:
		src := as[dtype.BFloat16](b)[off:][:n]
		out := make([]float32, n)
		for i, v := range src {
			out[i] = v.F32()
		}
		return out
	case dtype.F16:
		src := as[dtype.Float16](b)[off:][:n]
		out := make([]float32, n)
		for i, v := range src {
			out[i] = v.F32()
		}
		return out
	}
	return as[float32](b)[off:][:n]
}

// linearGGUFDequant is the path for activations with an Inf or NaN, which
// the block quantizer cannot represent: each weight row is dequantized and
// multiplied in f32, so that non-finite values propagate as in the
// decomposition.
func linearGGUFDequant(t quant.Type, w []byte, rb, n, kd int, x []float32, m int, y []float32) error {
	row := make([]float32, kd)
	for j := range n {
		if err := quant.DequantizeRow(t, w[j*rb:][:rb], row); err != nil {
			return fmt.Errorf("cpu: linear_gguf: %w", err)
		}
		for i := range m {
			var s float32
			for p, v := range x[i*kd:][:kd] {
				s += v * row[p]
			}
			y[i*n+j] = s
		}
	}
	return nil
}

// quantParallelMACs is the product size (multiply-adds) from which
// quant.MatMul shares its work between threads (GOTPU_GEMV_PARALLEL_MACS
// overrides it). A 576x576 Q4_1 product (207 KB) is 2^18.3: shared, it ran
// ~15% faster in a SmolLM2 decode step than on one core (2-core Zen 3).
var quantParallelMACs = envOr("GOTPU_GEMV_PARALLEL_MACS", 1<<18)

// quantPar returns the parallel-for quant.MatMul runs its work with: the
// GEMM worker pool taking ranges from a shared counter, or nil (serial)
// for a product of fewer than quantParallelMACs multiply-adds.
//
// The ranges are coarse, two per thread: a row kernel prefetches the rows
// ahead of the ones it reads, so the first rows of every range it claims
// wait on memory. In SmolLM2 Q4_1 decode steps (2-core Zen 3, the step
// timed with the two chunkings toggled run by run) two ranges per thread
// instead of four made the 576x1536 down projection 9-10% faster, the
// q/k/v and o products 5-6% and gate/up 1-4%; one range per thread
// measured the same as two.
func quantPar(macs int) func(total int, fn func(lo, hi int)) {
	if macs < quantParallelMACs || runtime.GOMAXPROCS(0) == 1 {
		return nil
	}
	return func(total int, fn func(lo, hi int)) {
		nw := min(runtime.GOMAXPROCS(0), total)
		if nw <= 1 {
			fn(0, total)
			return
		}
		chunk := max(1, total/(2*nw))
		var next atomic.Int64
		pool.RunShare(nw, func(tid, nw int) {
			for {
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= total {
					return
				}
				fn(lo, min(lo+chunk, total))
			}
		})
	}
}
