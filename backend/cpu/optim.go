package cpu

import (
	"fmt"
	"math"

	"github.com/gotpu/gotpu/backend/cpu/internal/vec"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Single-pass optimizer steps (op/optim.go): adam_step and sgd_step update
// the parameter and its state in place, reading and writing each element
// once, in parallel chunks above ParallelThreshold.
//
// They reproduce PyTorch 1.13's single-tensor (foreach=False) torch.optim
// arithmetic element by element, as its CPU kernels (AVX2 build) compute it:
//
//   - every tensor op rounds to the tensor dtype, so f32 kernels compute in
//     float32 with an explicit float32(...) around each product (Go must not
//     fuse a product into an add where PyTorch rounds it);
//   - add(x, y, alpha) is one fused multiply-add, y*alpha + x rounded once
//     (PyTorch's vec::fmadd), and so is the final add of addcmul, whose
//     self + value*t1*t2 the compiler contracts into fma(value*t1, t2, self);
//     addcdiv is self + (value*t1)/t2 with every op rounded;
//   - Python-float hyper-parameters are computed in float64 (1 - lr*wd,
//     lr/(1 - beta1^step), sqrt(1 - beta2^step)) and converted to the tensor
//     dtype where PyTorch converts them (f32 for f32 tensors).
//
// bf16 and f16 tensors compute each op in float32 and round its result to
// their dtype, with the scalars of mul, div, add and add's alpha rounded to
// that dtype, as PyTorch's reduced-precision kernels do; addcmul and addcdiv
// take their value in float32 and round once. bf16's add(x, y, alpha) is
// fused in float32 as in PyTorch's vectorized loop (its scalar loop, which
// takes the last n mod 32 elements of each per-thread chunk, rounds alpha*y
// to bf16 first: PyTorch's own bf16 results depend on an element's position
// and the thread count there, and the kernels follow the vector path
// everywhere). f16's add rounds alpha*y first (PyTorch 1.13 has no
// vectorized f16 arithmetic). PyTorch 1.13 has no CPU addcmul for f16, so
// f16 Adam follows the bf16 rules without a PyTorch reference.

func init() {
	RegisterKernel(op.AdamStep, Kernel{DTypes: op.SetFloats, Run: adamKernel})
	RegisterKernel(op.SgdStep, Kernel{DTypes: op.SetFloats, Run: sgdKernel})
}

// adamScalars are adam_step's hyper-parameters as the kernel uses them.
type adamScalars[T float32 | float64] struct {
	decay, wd, b1, omb1, b2, omb2, bc2s, eps, negss T
	decoupled, l2                                   bool
}

// adamParams computes the Python-float scalars of one Adam step.
func adamParams(a op.Attrs) (decay, wd, b1, omb1, b2, omb2, bc2s, eps, negss float64, decoupled, l2 bool) {
	lr, step := a.Float("lr"), a.Int("step")
	b1, b2, eps, wd = a.Float("beta1"), a.Float("beta2"), a.Float("eps"), a.Float("weight_decay")
	decoupled = a.Bool("decoupled")
	l2 = !decoupled && wd != 0
	bc1, bc2 := op.AdamBiasCorrections(b1, b2, step)
	return 1 - lr*wd, wd, b1, 1 - b1, b2, 1 - b2, math.Sqrt(bc2), eps, -(lr / bc1), decoupled, l2
}

func adamKernel(c *Call) error {
	decay, wd, b1, omb1, b2, omb2, bc2s, eps, negss, decoupled, l2 := adamParams(c.Attrs)
	switch dt := c.In[0].DType; dt {
	case dtype.F64:
		s := adamScalars[float64]{decay, wd, b1, omb1, b2, omb2, bc2s, eps, negss, decoupled, l2}
		return optimLoop(c, 2, func(x [][]float64) { adamF64(x[0], x[1], x[2], x[3], x[4], &s) })
	case dtype.F32:
		f := func(v float64) float32 { return float32(v) }
		s := adamScalars[float32]{f(decay), f(wd), f(b1), f(omb1), f(b2), f(omb2), f(bc2s), f(eps), f(negss), decoupled, l2}
		return optimLoop(c, 2, func(x [][]float32) { adamF32(x[0], x[1], x[2], x[3], x[4], &s) })
	case dtype.BF16, dtype.F16:
		n := narrowOf(dt)
		r := func(v float64) float32 { return n.round(float32(v)) }
		// mul/div/add scalars and add's alpha in the tensor dtype; the
		// addcmul and addcdiv values (omb2, negss) in float32.
		s := adamScalars[float32]{r(decay), r(wd), r(b1), r(omb1), r(b2), float32(omb2), r(bc2s), r(eps), float32(negss), decoupled, l2}
		if dt == dtype.BF16 {
			return optimLoop(c, 2, func(x [][]dtype.BFloat16) { adamNarrow(x, dtype.BFloat16.F32, dtype.BF16FromF32, n, &s) })
		}
		return optimLoop(c, 2, func(x [][]dtype.Float16) { adamNarrow(x, dtype.Float16.F32, dtype.F16FromF32, n, &s) })
	default:
		return fmt.Errorf("adam_step: unsupported dtype %s", dt)
	}
}

// adamF32 is one Adam/AdamW step over contiguous f32 slices of equal length
// (mx nil without amsgrad), eight elements at a time with AVX2+FMA where
// the CPU has them (optim_amd64.s) and the rest in Go, in PyTorch 1.13's op
// order:
//
//	param.mul_(1 - lr*wd)                        (AdamW)  or  grad = grad.add(param, alpha=wd)  (Adam)
//	exp_avg.mul_(beta1).add_(grad, alpha=1-beta1)
//	exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1-beta2)
//	torch.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)  (amsgrad)
//	denom = (v.sqrt() / sqrt(bias_correction2)).add_(eps)
//	param.addcdiv_(exp_avg, denom, value=-lr/bias_correction1)
func adamF32(p, g, m, v, mx []float32, s *adamScalars[float32]) {
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	if mx != nil {
		mx = mx[:len(p)]
	}
	if k := adamF32Vec(p, g, m, v, mx, s); k > 0 {
		p, g, m, v = p[k:], g[k:], m[k:], v[k:]
		if mx != nil {
			mx = mx[k:]
		}
	}
	for i := range p {
		pi, gi := p[i], g[i]
		var t1 bool
		if s.decoupled {
			pi = float32(pi * s.decay)
		} else if s.l2 {
			gi, t1 = vec.FMAFast(pi, s.wd, gi)
		}
		mi, t2 := vec.FMAFast(gi, s.omb1, float32(m[i]*s.b1))
		vi, t3 := vec.FMAFast(float32(s.omb2*gi), gi, float32(v[i]*s.b2))
		if t1 || t2 || t3 {
			pi, mi, vi = adamMomentsF32(p[i], g[i], m[i], v[i], s)
		}
		m[i], v[i] = mi, vi
		if mx != nil {
			if vi > mx[i] || vi != vi {
				mx[i] = vi
			}
			vi = mx[i]
		}
		den := float32(float32(float32(math.Sqrt(float64(vi)))/s.bc2s) + s.eps)
		p[i] = float32(pi + float32(float32(s.negss*mi)/den))
	}
}

// adamMomentsF32 is adamF32's first steps with every FMA exactly rounded:
// the rare path for elements where vec.FMAFast may double-round.
func adamMomentsF32(p, g, m, v float32, s *adamScalars[float32]) (float32, float32, float32) {
	if s.decoupled {
		p = float32(p * s.decay)
	} else if s.l2 {
		g = vec.FMA(p, s.wd, g)
	}
	return p, vec.FMA(g, s.omb1, float32(m*s.b1)), vec.FMA(float32(s.omb2*g), g, float32(v*s.b2))
}

// adamF64 is adamF32 for f64.
func adamF64(p, g, m, v, mx []float64, s *adamScalars[float64]) {
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	if mx != nil {
		mx = mx[:len(p)]
	}
	for i := range p {
		pi, gi := p[i], g[i]
		if s.decoupled {
			pi = float64(pi * s.decay)
		} else if s.l2 {
			gi = math.FMA(pi, s.wd, gi)
		}
		mi := math.FMA(gi, s.omb1, float64(m[i]*s.b1))
		vi := math.FMA(float64(s.omb2*gi), gi, float64(v[i]*s.b2))
		m[i], v[i] = mi, vi
		if mx != nil {
			if vi > mx[i] || vi != vi {
				mx[i] = vi
			}
			vi = mx[i]
		}
		den := float64(float64(math.Sqrt(vi)/s.bc2s) + s.eps)
		p[i] = float64(pi + float64(float64(s.negss*mi)/den))
	}
}

// narrow describes a 16-bit float dtype's rounding for the optimizer
// kernels: round rounds a float32 to the dtype, fusedAlpha says whether
// PyTorch's add(x, y, alpha) is a float32 FMA (bf16) or rounds alpha*y
// first (f16).
type narrow struct {
	round      func(float32) float32
	fusedAlpha bool
}

func narrowOf(dt dtype.DType) narrow {
	if dt == dtype.BF16 {
		return narrow{round: dtype.RoundBF16, fusedAlpha: true}
	}
	return narrow{round: dtype.RoundF16}
}

// axpy is PyTorch's add(y, x, alpha=a) for a 16-bit dtype: y + a*x.
func (n narrow) axpy(x, a, y float32) float32 {
	if n.fusedAlpha {
		return n.round(vec.FMA(x, a, y))
	}
	return n.round(y + n.round(float32(a*x)))
}

// adamNarrow is adamF32's op sequence for bf16 and f16 storage.
func adamNarrow[T any](x [][]T, load func(T) float32, store func(float32) T, n narrow, s *adamScalars[float32]) {
	p, g, m, v, mx := x[0], x[1], x[2], x[3], x[4]
	r := n.round
	for i := range p {
		pi, gi := load(p[i]), load(g[i])
		if s.decoupled {
			pi = r(float32(pi * s.decay))
		} else if s.l2 {
			gi = n.axpy(pi, s.wd, gi)
		}
		mi := n.axpy(gi, s.omb1, r(float32(load(m[i])*s.b1)))
		vi := r(vec.FMA(float32(s.omb2*gi), gi, r(float32(load(v[i])*s.b2))))
		m[i], v[i] = store(mi), store(vi)
		if mx != nil {
			if mv := load(mx[i]); vi > mv || vi != vi {
				mx[i] = store(vi)
			} else {
				vi = mv
			}
		}
		den := r(r(r(float32(math.Sqrt(float64(vi))))/s.bc2s) + s.eps)
		p[i] = store(float32(pi + float32(float32(s.negss*mi)/den)))
	}
}

// sgdScalars are sgd_step's hyper-parameters as the kernel uses them.
type sgdScalars[T float32 | float64] struct {
	wd, mom, omd, neglr           T
	l2, momentum, nesterov, first bool
}

func sgdParams(a op.Attrs) (wd, mom, omd, neglr float64, l2, momentum, nesterov, first bool) {
	wd, mom = a.Float("weight_decay"), a.Float("momentum")
	return wd, mom, 1 - a.Float("dampening"), -a.Float("lr"), wd != 0, mom != 0, a.Bool("nesterov"), a.Bool("first")
}

func sgdKernel(c *Call) error {
	wd, mom, omd, neglr, l2, momentum, nesterov, first := sgdParams(c.Attrs)
	switch dt := c.In[0].DType; dt {
	case dtype.F64:
		s := sgdScalars[float64]{wd, mom, omd, neglr, l2, momentum, nesterov, first}
		return optimLoop(c, 1, func(x [][]float64) { sgdF64(x[0], x[1], x[2], &s) })
	case dtype.F32:
		f := func(v float64) float32 { return float32(v) }
		s := sgdScalars[float32]{f(wd), f(mom), f(omd), f(neglr), l2, momentum, nesterov, first}
		return optimLoop(c, 1, func(x [][]float32) { sgdF32(x[0], x[1], x[2], &s) })
	case dtype.BF16, dtype.F16:
		n := narrowOf(dt)
		r := func(v float64) float32 { return n.round(float32(v)) }
		s := sgdScalars[float32]{r(wd), r(mom), r(omd), r(neglr), l2, momentum, nesterov, first}
		if dt == dtype.BF16 {
			return optimLoop(c, 1, func(x [][]dtype.BFloat16) { sgdNarrow(x, dtype.BFloat16.F32, dtype.BF16FromF32, n, &s) })
		}
		return optimLoop(c, 1, func(x [][]dtype.Float16) { sgdNarrow(x, dtype.Float16.F32, dtype.F16FromF32, n, &s) })
	default:
		return fmt.Errorf("sgd_step: unsupported dtype %s", dt)
	}
}

// sgdF32 is one SGD step over contiguous f32 slices (buf nil without
// momentum), vectorized as adamF32, in PyTorch 1.13's op order:
//
//	d = grad.add(param, alpha=wd)                      (wd != 0)
//	buf = d.clone()  or  buf.mul_(momentum).add_(d, alpha=1-dampening)
//	d = d.add(buf, alpha=momentum)  (nesterov)  or  d = buf
//	param.add_(d, alpha=-lr)
func sgdF32(p, g, buf []float32, s *sgdScalars[float32]) {
	g = g[:len(p)]
	if buf != nil {
		buf = buf[:len(p)]
	}
	if k := sgdF32Vec(p, g, buf, s); k > 0 {
		p, g = p[k:], g[k:]
		if buf != nil {
			buf = buf[k:]
		}
	}
	for i := range p {
		pi, d := p[i], g[i]
		var t1, t2, t3 bool
		if s.l2 {
			d, t1 = vec.FMAFast(pi, s.wd, d)
		}
		var b float32
		if s.momentum {
			b = d
			if !s.first {
				b, t2 = vec.FMAFast(d, s.omd, float32(buf[i]*s.mom))
			}
			if s.nesterov {
				d, t3 = vec.FMAFast(b, s.mom, d)
			} else {
				d = b
			}
		}
		pn, t4 := vec.FMAFast(d, s.neglr, pi)
		if t1 || t2 || t3 || t4 {
			var bi float32
			if s.momentum {
				bi = buf[i]
			}
			pn, b = sgdElemF32(pi, g[i], bi, s)
		}
		if s.momentum {
			buf[i] = b
		}
		p[i] = pn
	}
}

// sgdElemF32 is sgdF32's step for one element with every FMA exactly
// rounded: the rare path for elements where vec.FMAFast may double-round.
// It returns the new parameter and momentum buffer values.
func sgdElemF32(p, g, buf float32, s *sgdScalars[float32]) (float32, float32) {
	d := g
	if s.l2 {
		d = vec.FMA(p, s.wd, d)
	}
	if s.momentum {
		if !s.first {
			buf = vec.FMA(d, s.omd, float32(buf*s.mom))
		} else {
			buf = d
		}
		if s.nesterov {
			d = vec.FMA(buf, s.mom, d)
		} else {
			d = buf
		}
	}
	return vec.FMA(d, s.neglr, p), buf
}

// sgdF64 is sgdF32 for f64.
func sgdF64(p, g, buf []float64, s *sgdScalars[float64]) {
	g = g[:len(p)]
	if buf != nil {
		buf = buf[:len(p)]
	}
	for i := range p {
		pi, d := p[i], g[i]
		if s.l2 {
			d = math.FMA(pi, s.wd, d)
		}
		if s.momentum {
			b := d
			if !s.first {
				b = math.FMA(d, s.omd, float64(buf[i]*s.mom))
			}
			buf[i] = b
			if s.nesterov {
				d = math.FMA(b, s.mom, d)
			} else {
				d = b
			}
		}
		p[i] = math.FMA(d, s.neglr, pi)
	}
}

// sgdNarrow is sgdF32's op sequence for bf16 and f16 storage.
func sgdNarrow[T any](x [][]T, load func(T) float32, store func(float32) T, n narrow, s *sgdScalars[float32]) {
	p, g, buf := x[0], x[1], x[2]
	for i := range p {
		pi, d := load(p[i]), load(g[i])
		if s.l2 {
			d = n.axpy(pi, s.wd, d)
		}
		if s.momentum {
			b := d
			if !s.first {
				b = n.axpy(d, s.omd, n.round(float32(load(buf[i])*s.mom)))
			}
			buf[i] = store(b)
			if s.nesterov {
				d = n.axpy(b, s.mom, d)
			} else {
				d = b
			}
		}
		p[i] = store(n.axpy(d, s.neglr, pi))
	}
}

// optimLoop runs body over the optimizer op's operands (all of input 0's
// shape; absent optional inputs are nil slices), which it may write in
// place. Contiguous operands are split into parallel chunks once their
// size times cost reaches ParallelThreshold (cost 1 for SGD and 2 for Adam:
// with the AVX2 loops a step is memory-bound at about a nanosecond per
// element, and smaller chunks lose more to goroutine start-up than they
// gain); other layouts are walked run by run.
func optimLoop[T any](c *Call, cost int, body func(x [][]T)) error {
	shape := c.In[0].Shape
	total := op.Numel(shape)
	bufs := make([][]T, len(c.In))
	var present []int
	contiguous := true
	for i, o := range c.In {
		if o.Buf == nil {
			continue
		}
		bufs[i] = as[T](c.InB[i])
		present = append(present, i)
		contiguous = contiguous && o.IsContiguous()
	}
	for _, i := range c.Op.Inplace {
		o := c.In[i]
		if o.Buf == nil {
			continue
		}
		for d, st := range o.Strides {
			if st == 0 && o.Shape[d] > 1 {
				return fmt.Errorf("%s: unsupported operation: more than one element of the written-to tensor %s refers to a single memory location", c.Op.Name, c.Op.Inputs[i])
			}
		}
	}
	if total == 0 {
		return nil
	}
	if contiguous {
		parallelFor(total, total*cost, func(lo, hi int) {
			x := make([][]T, len(c.In))
			for _, i := range present {
				off := c.In[i].Offset
				x[i] = bufs[i][off+lo : off+hi]
			}
			body(x)
		})
		return nil
	}
	strides := make([][]int, len(present))
	offs := make([]int, len(present))
	for k, i := range present {
		strides[k], offs[k] = c.In[i].Strides, c.In[i].Offset
	}
	forEachRun(shape, strides, offs, func(o []int, n int, inner []int) {
		x := make([][]T, len(c.In))
		unit := true
		for _, st := range inner {
			unit = unit && st == 1
		}
		if unit {
			for k, i := range present {
				x[i] = bufs[i][o[k] : o[k]+n]
			}
			body(x)
			return
		}
		for j := 0; j < n; j++ {
			for k, i := range present {
				at := o[k] + j*inner[k]
				x[i] = bufs[i][at : at+1]
			}
			body(x)
		}
	})
	return nil
}
