package cpu

import (
	"math"

	"github.com/gotpu/gotpu/op"
)

// Direct kernels for nn composites: layer_norm (statistics in f64, one
// rounding per output) and dropout (the same counters and arithmetic as its
// decomposition, so results are bit-identical).

func init() {
	RegisterKernel(op.LayerNorm, Kernel{DTypes: op.SetFloats, Run: layerNormKernel})
	RegisterKernel(op.Dropout, Kernel{DTypes: op.SetFloats, Run: dropoutKernel})
}

// layerNormKernel normalises each row of D = numel(normalized_shape)
// elements; the runtime hands contiguous inputs (NeedsContiguous).
func layerNormKernel(c *Call) error {
	x, out := c.In[0], c.Out[0]
	n := op.Numel(x.Shape)
	d := op.Numel(c.Attrs.Ints("normalized_shape"))
	if n == 0 || d == 0 {
		return nil
	}
	eps := c.Attrs.Float("eps")
	if fusedLayerNorm(c, d, eps) || fusedLayerNormBF16(c, d, eps) { // dense f32: fusednn.go, bf16: bf16_nn.go
		return nil
	}
	xs := gatherFloat64(x, c.InB[0])
	var w, bias []float64
	if len(c.In) > 1 && c.In[1].Buf != nil {
		w = gatherFloat64(c.In[1], c.InB[1])
	}
	if len(c.In) > 2 && c.In[2].Buf != nil {
		bias = gatherFloat64(c.In[2], c.InB[2])
	}
	rnd := rounder(out.DType)
	// f32 and narrower compute in f32 in the decomposition's statistics;
	// here in f64 and rounded once: within f32 tolerance of it.
	store := storer(out.DType)
	ob := c.OutB[0]
	rows := n / d
	parallelFor(rows, n*4, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := xs[r*d : (r+1)*d]
			mean := 0.0
			for _, v := range row {
				mean += v
			}
			mean /= float64(d)
			vr := 0.0
			for _, v := range row {
				vr += (v - mean) * (v - mean)
			}
			vr /= float64(d)
			rstd := 1 / math.Sqrt(vr+eps)
			for j, v := range row {
				y := (v - mean) * rstd
				if w != nil {
					y *= w[j]
				}
				if bias != nil {
					y += bias[j]
				}
				store(ob, out.Offset+r*d+j, value{f: rnd(y)})
			}
		}
	})
	return nil
}

// dropoutKernel: keep where u53 < 1-p; out = x * round(keep / round(1-p)),
// every operation rounded to the dtype as the decomposition's ops are.
func dropoutKernel(c *Call) error {
	x := c.In[0]
	xs := gatherFloat64(x, c.InB[0])
	p := c.Attrs.Float("p")
	dt := c.Out[0].DType
	rnd := rounder(dt)
	if !c.Attrs.Bool("train") || p == 0 {
		castLoop(c.kernels(), x, c.InB[0], c.Out[0], c.OutB[0])
		return nil
	}
	if p == 1 {
		fillFloat(c, func(i int) float64 { return rnd(xs[i] * 0) })
		return nil
	}
	r := rngOf(c)
	den := rnd(1 - p)
	scale := rnd(1 / den)
	fillFloat(c, func(i int) float64 {
		if r.u53(i, 0) < 1-p {
			return rnd(xs[i] * scale)
		}
		return rnd(xs[i] * 0)
	})
	return nil
}
