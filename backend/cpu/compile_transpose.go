package cpu

import (
	"slices"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/op"
)

// Transposed GEMM outputs. Autograd computes a weight gradient as
// dot_general(x, dy) contracting the batch rows, [in, out], and the
// optimizer (or the leaf-gradient copy) wants its transpose [out, in]
// contiguous: a strided copy of the whole gradient, one cache line per
// element. The plan instead lets the dot_general write the copy's buffer
// directly, its output value laid out as the transpose of that buffer
// (strides [1, M]); the step then runs the operand-swapped product
// (rhsᵀ·lhsᵀ = (lhs·rhs)ᵀ) into it contiguously. Each element is the same
// f32 FMA chain over the contraction in the same order with the factors of
// every product swapped, so the bits are those of the product and copy.

// planTransposed reports whether l is the transpose of a contiguous rank-2
// layout (strides [1, rows]) at offset 0.
func planTransposed(l op.Layout) bool {
	return len(l.Shape) == 2 && l.Offset == 0 && l.Shape[0] > 1 && l.Shape[1] > 1 &&
		l.Strides[0] == 1 && l.Strides[1] == l.Shape[0]
}

// dotSwappable reports whether dot_general node n (operand metas from the
// graph) is a plain matrix product: no batch dimensions and exactly one
// free dimension on each side, so that its output's transpose is the
// operand-swapped product.
func dotSwappable(lrank, rrank int, a op.Attrs) bool {
	if len(a.Ints("lhs_batch")) != 0 || len(a.Ints("rhs_batch")) != 0 {
		return false
	}
	nc := len(a.Ints("lhs_contract"))
	return nc == len(a.Ints("rhs_contract")) && lrank-nc == 1 && rrank-nc == 1
}

// absorbTransposeCopies drops the copies the plan does not need: those of
// a whole contiguous intermediate nothing else reads (elideCopies) and
// those of a product's transpose (absorbTransposes).
func (pl *planner) absorbTransposeCopies() {
	p := pl.p
	drop := map[int]bool{}
	pl.elideCopies(drop)
	pl.absorbTransposes(drop)
	if len(drop) == 0 {
		return
	}
	steps := p.steps[:0]
	for si, s := range p.steps {
		if !drop[si] {
			steps = append(steps, s)
		}
	}
	p.steps = steps
}

// planReaders counts the step inputs and plan outputs in buffer b.
func planReaders(p *plan, b int) (n int) {
	in := func(ids []int) {
		for _, id := range ids {
			if id >= 0 && p.vals[id].buf == b {
				n++
			}
		}
	}
	for _, s := range p.steps {
		in(s.in)
		if s.grp != nil {
			in(s.grp.inputs)
		}
	}
	in(p.outputs)
	return n
}

// absorbTransposes is the transposed-product rewrite (see above), marking
// the copies it absorbs in drop.
func (pl *planner) absorbTransposes(drop map[int]bool) {
	p := pl.p
	readers := func(b int) int { return planReaders(p, b) }
	for si, s := range p.steps {
		if drop[si] {
			continue
		}
		if s.kind != stKernel || s.nOut != 1 || len(s.out) != 1 || len(s.in) != 2 {
			continue
		}
		n := p.g.Nodes[s.node]
		if n.Op != op.DotGeneral || s.dyn >= 0 {
			continue
		}
		vo := s.out[0]
		ov := p.vals[vo]
		ob := ov.buf
		if ob < 0 || p.bufs[ob].out || len(ov.layout.Shape) != 2 || !planIsContig(ov.layout) ||
			!dotSwappable(len(s.inL[0].Shape), len(s.inL[1].Shape), p.planNodeAttrs[s.node]) {
			continue
		}
		m, nn := ov.layout.Shape[0], ov.layout.Shape[1]
		if m < 2 || nn < 2 || readers(ob) != 1 {
			continue
		}
		// The one reader: a later copy of the transpose view.
		ci := -1
		for sj := si + 1; sj < len(p.steps); sj++ {
			c := p.steps[sj]
			if planIsCopy(p, c) && p.vals[c.in[0]].buf == ob {
				ci = sj
				break
			}
		}
		if ci < 0 {
			continue
		}
		c := p.steps[ci]
		vi, vc := c.in[0], c.out[0]
		il, cv := p.vals[vi].layout, p.vals[vc]
		if c.kind == stKernel {
			il = c.inL[0]
		}
		if !slices.Equal(il.Shape, []int{nn, m}) || !slices.Equal(il.Strides, []int{1, nn}) || il.Offset != 0 ||
			cv.buf < 0 || cv.dt != ov.dt || !planIsContig(cv.layout) || !slices.Equal(cv.layout.Shape, []int{nn, m}) {
			continue
		}
		// Other values in the old buffer (views nothing reads) move along:
		// the buffers have the same size, so their layouts stay in bounds.
		for id := range p.vals {
			if p.vals[id].buf == ob {
				p.vals[id].buf = cv.buf
			}
		}
		p.vals[vo].buf = cv.buf
		p.vals[vo].layout = op.Layout{Shape: []int{m, nn}, Strides: []int{1, m}}
		p.vals[vi].buf = cv.buf
		p.vals[vi].layout = op.Contiguous([]int{nn, m})
		p.bufs[ob].size = 0
		drop[ci] = true
	}
}

// elideCopies drops the copy nodes (autograd's leaf-gradient copies) of a
// whole contiguous intermediate that nothing else reads: the copy's value
// becomes the input's buffer itself, marking the dropped steps in drop.
func (pl *planner) elideCopies(drop map[int]bool) {
	p := pl.p
	for si, s := range p.steps {
		if s.kind != stKernel || !planIsCopy(p, s) {
			continue
		}
		vi, vc := s.in[0], s.out[0]
		iv, cv := p.vals[vi], p.vals[vc]
		ib, cb := iv.buf, cv.buf
		if ib < 0 || cb < 0 || ib == cb || p.bufs[ib].out || p.bufs[cb].out || iv.dt != cv.dt || !planIsContig(s.inL[0]) ||
			!planIsContig(cv.layout) || p.bufs[ib].size != p.bufs[cb].size || planReaders(p, ib) != 1 {
			continue
		}
		// Everything in the copy's buffer moves to the input's, which holds
		// the same bytes in the same order.
		for id := range p.vals {
			if p.vals[id].buf == cb {
				p.vals[id].buf = ib
			}
		}
		p.bufs[cb].size = 0
		drop[si] = true
	}
}

// planIsCopy reports whether step s is a plain contiguous copy of its one
// input: the plan's own copy, or a graph copy node's kernel.
func planIsCopy(p *plan, s pstep) bool {
	switch s.kind {
	case stCopy:
		return len(s.in) == 1 && len(s.out) == 1
	case stKernel:
		return p.g.Nodes[s.node].Op == op.Copy && len(s.in) == 1 && len(s.inL) == 1 && len(s.out) == 1 && s.nOut == 1 && s.in[0] >= 0
	}
	return false
}

// swappedDot returns launch l of a dot_general whose output operand is
// the transpose of a contiguous buffer (planTransposed) as the
// operand-swapped product writing that buffer contiguously.
func swappedDot(l *device.Launch) *device.Launch {
	a := l.Attrs
	s := make(op.Attrs, len(a))
	for k, v := range a {
		s[k] = v
	}
	s["lhs_batch"], s["rhs_batch"] = a["rhs_batch"], a["lhs_batch"]
	s["lhs_contract"], s["rhs_contract"] = a["rhs_contract"], a["lhs_contract"]
	o := l.Out[0]
	o.Layout = op.Contiguous([]int{o.Shape[1], o.Shape[0]})
	return &device.Launch{Op: l.Op, Attrs: s, In: []device.Operand{l.In[1], l.In[0]}, Out: []device.Operand{o}}
}
