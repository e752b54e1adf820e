package cpu

import (
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/internal/quant"
	"github.com/gotpu/gotpu/op"
)

// Sibling quantized products. A decoder layer multiplies one normed hidden
// state by its query, key and value weights, and another by its gate and
// up weights: linear_gguf steps one after another with the same
// activations. Run one by one, each quantizes the activations and hands its
// rows to the worker pool on its own, and the key and value products (a
// few tens of microseconds each) are too small to share between threads
// at all. A compiled program runs such a run of steps as one product
// (quant.Kernels.MatMulMulti): the activations quantized once and the
// row groups of every weight shared out in one call. Each output gets the
// bits its own step gives it. Dense weights (f32 or bf16 dot_general
// steps reading the same activations) get the same treatment on the GEMV
// kernels (gemvSiblings): in a bf16 decode step the key and value
// products, 16 µs each alone, ride along with the query's.

// linearGGUFMultiRuns and denseGEMVMultiRuns count the runs of sibling
// products done as one (tests check that the path ran).
var linearGGUFMultiRuns, denseGEMVMultiRuns atomic.Int64

// linearRun returns how many steps from si on form a run of sibling
// products: stKernel linear_gguf steps with the same f32 activations,
// weights of the same block type and row length, and f32 outputs, or
// dot_general steps with the same activations, of one float dtype; none
// of them skipped. 1 when step si starts no run.
func (r *crun) linearRun(si int) int {
	p := r.c.pl
	first := &p.steps[si]
	if !r.linearStep(si) {
		return 1
	}
	n0 := p.g.Nodes[first.node]
	n := 1
	for j := si + 1; j < len(p.steps) && r.linearStep(j); j++ {
		s := &p.steps[j]
		nj := p.g.Nodes[s.node]
		if s.in[0] != first.in[0] || nj.Op != n0.Op || p.vals[s.out[0]].dt != p.vals[first.out[0]].dt {
			break
		}
		if nj.Op == op.LinearGguf && (nj.Attrs.String("type") != n0.Attrs.String("type") || nj.Attrs.Int("k") != n0.Attrs.Int("k")) {
			break
		}
		// A product of the run reading another's output (which runs at
		// the same time) ends it.
		reads := false
		for _, q := range p.steps[si:j] {
			reads = reads || slices.Contains(s.in, q.out[0])
		}
		if reads {
			break
		}
		n++
	}
	return n
}

// linearStep reports whether step si is a kernel step that can join a
// run of sibling products: a linear_gguf of f32 activations into one f32
// output, or a dot_general of f32 or bf16 operands and output with at most
// gemvRowsMax activation rows, without dynamic attributes, that runs.
func (r *crun) linearStep(si int) bool {
	p := r.c.pl
	s := &p.steps[si]
	if s.kind != stKernel || s.dyn >= 0 || s.nOut != 1 || len(s.in) < 2 || s.in[0] < 0 || s.in[1] < 0 {
		return false
	}
	d := p.g.Nodes[s.node].Op
	if d != op.LinearGguf && d != op.DotGeneral {
		return false
	}
	if r.skip != nil && r.skip[si] {
		return false
	}
	dt := p.vals[s.in[0]].dt
	if d == op.DotGeneral {
		// Only GEMV-shaped products (gemvSiblings takes no others): a
		// prompt's products run step by step.
		x := p.vals[s.in[0]].layout.Shape
		if len(x) == 0 || op.Numel(x)/max(x[len(x)-1], 1) > gemvRowsMax {
			return false
		}
		return (dt == dtype.F32 || dt == dtype.BF16) && p.vals[s.in[1]].dt == dt && p.vals[s.out[0]].dt == dt
	}
	return dt == dtype.F32 && p.vals[s.out[0]].dt == dtype.F32
}

// linearSteps runs a run of sibling quantized products (linearRun), each
// in its own reused call slot.
func (r *crun) linearSteps(ss []pstep) error {
	for len(r.lin) < len(ss) {
		r.lin = append(r.lin, callSlot{})
	}
	calls := make([]*Call, len(ss))
	for i := range ss {
		s := &ss[i]
		for _, id := range s.out {
			if err := r.define(id); err != nil {
				return err
			}
		}
		c, err := r.callIn(s, &r.lin[i])
		if err != nil {
			return err
		}
		calls[i] = c
	}
	if r.c.pl.g.Nodes[ss[0].node].Op == op.DotGeneral {
		if gemvSiblings(r.ks, calls) {
			denseGEMVMultiRuns.Add(1)
			return nil
		}
		k, _ := kernelOf(op.DotGeneral)
		for _, c := range calls {
			if err := k.Run(c); err != nil {
				return err
			}
		}
		return nil
	}
	return linearGGUFMulti(calls, r.ks.quant)
}

// linearGGUFMulti runs linear_gguf calls that multiply the same
// activations as one product, or one by one (linearGGUF) when they do not
// all qualify: contiguous f32 operands, finite activations, one block type
// and row length.
func linearGGUFMulti(cs []*Call, k quant.Kernels) error {
	one := func() error {
		for _, c := range cs {
			if err := linearGGUF(c, k); err != nil {
				return err
			}
		}
		return nil
	}
	c0 := cs[0]
	blk, err := op.GGUFBlockOf(c0.Attrs.String("type"))
	if err != nil {
		return err
	}
	kd := c0.Attrs.Int("k")
	xo := c0.In[0]
	if xo.DType != dtype.F32 || !xo.IsContiguous() || kd <= 0 {
		return one()
	}
	m := op.Numel(xo.Shape) / kd
	x := as[float32](c0.InB[0])[xo.Offset:][:m*kd]
	if !quant.Finite(x) {
		return one()
	}
	ws := make([]quant.Weight, len(cs))
	rows := 0
	for i, c := range cs {
		wo, yo := c.In[1], c.Out[0]
		if c.Attrs.String("type") != c0.Attrs.String("type") || c.Attrs.Int("k") != kd ||
			unsafe.SliceData(c.InB[0]) != unsafe.SliceData(c0.InB[0]) || c.In[0].Offset != xo.Offset || op.Numel(c.In[0].Shape) != m*kd ||
			!wo.IsContiguous() || !yo.IsContiguous() || yo.DType != dtype.F32 || len(wo.Shape) != 2 {
			return one()
		}
		n, rb := wo.Shape[0], wo.Shape[1]
		ws[i] = quant.Weight{W: c.InB[1][wo.Offset:][:n*rb], N: n, Y: as[float32](c.OutB[0])[yo.Offset:][:m*n],
			Packed: c.Attrs.String("layout") == op.LayoutR16}
		rows += n
	}
	linearGGUFRuns.Add(int64(len(cs)))
	linearGGUFMultiRuns.Add(1)
	return k.MatMulMulti(quant.Type(blk.GGMLType), ws, kd, x, m, quantPar(m*rows*kd))
}
