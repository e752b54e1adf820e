package cpu

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// A bf16 model's RMSNorm as one step. Hugging Face's LlamaRMSNorm on bf16
// activations computes in f32 and scales by its weight after rounding back:
//
//	weight * rms_norm(x.to(float32)).to(bfloat16)
//
// which traces to four steps — convert, rms_norm, convert, mul — over a
// row of a few hundred values each, twice a layer: in a SmolLM2-135M bf16
// decode step about 0.37 ms of 12 (each step reads its row from memory the
// products have just flushed), in a 128-token prefill about 10 ms. The
// planner recognizes the pattern and runs it as one stNormBF16 step with
// the same arithmetic row by row: x widened, rmsNormRowF32 (the f32
// kernel's row), rounded to bf16, widened, times the widened weight,
// rounded — the bits of the four steps.

// normMatch is one recognized bf16 RMSNorm: the final mul computing it from
// x and the weight w.
type normMatch struct {
	x, w *ir.Value
	// nodes are the pattern's other nodes, which no step computes.
	nodes []*ir.Node
}

// findNormsBF16 returns the bf16 RMSNorm patterns of the live graph whose
// intermediates nothing else reads, keyed by their final mul.
func (pl *planner) findNormsBF16(users map[*ir.Value][]*ir.Node) map[*ir.Node]*normMatch {
	var found map[*ir.Node]*normMatch
	only := func(v *ir.Value) *ir.Node {
		if v == nil || pl.outSet[v] || len(users[v]) != 1 {
			return nil
		}
		return users[v][0]
	}
	is := func(v *ir.Value, dt dtype.DType) bool { return v != nil && v.Meta.DType == dt }
	for _, m := range pl.g.Nodes {
		if !pl.live[m] || m.Op != op.Mul || len(m.In) != 2 || len(m.Out) != 1 || !is(m.Out[0], dtype.BF16) {
			continue
		}
		shape := m.Out[0].Meta.Shape
		r := len(shape)
		if r == 0 || shape[r-1] == 0 {
			continue
		}
		d := shape[r-1]
		for side := range 2 {
			c2v, w := m.In[side], m.In[1-side]
			c2 := c2v.Def
			if c2 == nil || c2.Op != op.Convert || len(c2.In) != 1 || only(c2v) != m || !is(c2v, dtype.BF16) || !is(w, dtype.BF16) {
				continue
			}
			rv := c2.In[0]
			rms := rv.Def
			if rms == nil || rms.Op != op.RmsNorm || only(rv) != c2 || !is(rv, dtype.F32) || len(rms.Out) != 1 ||
				(len(rms.In) > 1 && rms.In[1] != nil) || !slices.Equal(rms.Attrs.Ints("normalized_shape"), []int{d}) {
				continue
			}
			c1v := rms.In[0]
			c1 := c1v.Def
			if c1 == nil || c1.Op != op.Convert || len(c1.In) != 1 || only(c1v) != rms || !is(c1v, dtype.F32) {
				continue
			}
			x := c1.In[0]
			if !is(x, dtype.BF16) || !slices.Equal(x.Meta.Shape, shape) || !normRowWeight(w.Meta.Shape, d) {
				continue
			}
			if found == nil {
				found = map[*ir.Node]*normMatch{}
			}
			found[m] = &normMatch{x: x, w: w, nodes: []*ir.Node{c1, rms, c2}}
			break
		}
	}
	return found
}

// normRowWeight reports whether a weight of shape s is one row of d values
// broadcast over every other dimension.
func normRowWeight(s []int, d int) bool {
	if len(s) == 0 || s[len(s)-1] != d {
		return false
	}
	for _, n := range s[:len(s)-1] {
		if n != 1 {
			return false
		}
	}
	return true
}

// emitNorm plans the bf16 RMSNorm ending at mul node j: inputs x (made
// contiguous) and the weight's row; the mul is the step's node (normChain
// finds the rms_norm, whose attributes give eps, and the operand order).
func (pl *planner) emitNorm(j int, n *ir.Node, m *normMatch) error {
	p := pl.p
	shape := n.Out[0].Meta.Shape
	s := pstep{kind: stNormBF16, node: j, dyn: -1, nOut: 1}
	for i, v := range []*ir.Value{m.x, m.w} {
		id, ok := pl.vid[v]
		if !ok {
			return fmt.Errorf("cpu: compile: node %d (bf16 rms_norm): an input is not defined", j)
		}
		if l := p.vals[id].layout; i == 0 && !slices.Equal(l.Strides, op.ContiguousStrides(l.Shape)) || i == 1 && (len(l.Strides) == 0 || l.Strides[len(l.Strides)-1] != 1) {
			id = pl.copyOf(id)
		}
		l, ok := planCloneLayout(p.vals[id].layout).BroadcastTo(shape)
		if !ok {
			return fmt.Errorf("cpu: compile: node %d (bf16 rms_norm): input of shape %v does not broadcast to %v", j, p.vals[id].layout.Shape, shape)
		}
		s.in = append(s.in, id)
		s.inL = append(s.inL, l)
	}
	id := pl.newValue(n.Out[0].Meta, -1)
	pl.allocBuf(id, pl.outSet[n.Out[0]])
	pl.vid[n.Out[0]] = id
	s.out = []int{id}
	p.steps = append(p.steps, s)
	return nil
}

// normSteps counts stNormBF16 steps run (tests check the pattern was
// taken).
var normSteps atomic.Uint64

// normChain returns the rms_norm node of the bf16 RMSNorm whose final
// mul is m, and whether the weight is the mul's first operand; nil when m
// is not such a mul.
func normChain(m *ir.Node) (rms *ir.Node, weightFirst bool) {
	if m == nil || m.IsConst() || m.Op != op.Mul || len(m.In) != 2 {
		return nil, false
	}
	for side, v := range m.In {
		if v == nil || v.Def == nil || v.Def.Op != op.Convert || len(v.Def.In) != 1 || v.Def.In[0] == nil {
			continue
		}
		if r := v.Def.In[0].Def; r != nil && r.Op == op.RmsNorm {
			return r, side == 1
		}
	}
	return nil, false
}

// normBF16 runs an stNormBF16 step.
func (r *crun) normBF16(s *pstep) error {
	p := r.c.pl
	rms, weightFirst := normChain(p.g.Nodes[s.node])
	eps := math.Ldexp(1, -23) // the f32 rms_norm's default
	if rms.Attrs.Has("eps") {
		eps = rms.Attrs.Float("eps")
	}
	shape := p.vals[s.out[0]].layout.Shape
	d := shape[len(shape)-1]
	rows := op.Numel(shape) / d
	out := as[dtype.BFloat16](r.mem(s.out[0]))[:rows*d]
	lx, lw := s.inL[0], s.inL[1]
	x := as[dtype.BFloat16](r.mem(s.in[0]))[lx.Offset:][:rows*d]
	wb := as[dtype.BFloat16](r.mem(s.in[1]))[lw.Offset:][:d]
	wbuf := getScratch(4 * d)
	defer putScratch(wbuf)
	w := as[float32](*wbuf)[:d]
	bf16Widen(w, wb)
	fusedRows(rows, d, func(lo, hi int) {
		buf := getScratch(4*3*d + 2*d)
		defer putScratch(buf)
		f := as[float32](*buf)
		xr, y, tmp := f[:d], f[d:2*d], f[2*d:3*d]
		ob := as[dtype.BFloat16]((*buf)[12*d:])[:d]
		for i := lo; i < hi; i++ {
			bf16Widen(xr, x[i*d:(i+1)*d])
			rmsNormRowF32(y, xr, nil, tmp, eps)
			bf16Narrow(ob, y)
			bf16Widen(y, ob)
			if weightFirst { // the mul's operand order (NaN payloads)
				vecMulF32(y, w, y)
			} else {
				vecMulF32(y, y, w)
			}
			bf16Narrow(out[i*d:(i+1)*d], y)
		}
	})
	normSteps.Add(1)
	return nil
}

// validateNorm checks an stNormBF16 step: a mul node ending a bf16
// RMSNorm chain over the last dimension, x contiguous bf16 of the output's
// shape, the weight a bf16 row broadcast over it, the output's own
// contiguous bf16 buffer.
func (p *plan) validateNorm(s pstep, stored, owned func(int) bool) error {
	if len(s.in) != 2 || len(s.inL) != 2 || len(s.out) != 1 || s.nOut != 1 || !owned(s.out[0]) || s.node < 0 || s.node >= len(p.g.Nodes) {
		return fmt.Errorf("%w: rms_norm step", errPlan)
	}
	rms, _ := normChain(p.g.Nodes[s.node])
	ov := p.vals[s.out[0]]
	shape := ov.layout.Shape
	if rms == nil || ov.dt != dtype.BF16 || len(shape) == 0 || shape[len(shape)-1] == 0 || !planIsContig(ov.layout) ||
		!slices.Equal(rms.Attrs.Ints("normalized_shape"), shape[len(shape)-1:]) {
		return fmt.Errorf("%w: rms_norm output", errPlan)
	}
	for i, id := range s.in {
		if id < 0 || !stored(id) || p.vals[id].dt != dtype.BF16 {
			return fmt.Errorf("%w: rms_norm input %d", errPlan, i)
		}
		v, l := p.vals[id], s.inL[i]
		limit := int64(0)
		if v.param >= 0 {
			limit = int64(p.g.Params[v.param].Meta.Numel())
		} else {
			limit = p.bufs[v.buf].size / int64(v.dt.Size())
		}
		if err := planCheckLayout(l, limit); err != nil {
			return fmt.Errorf("rms_norm input %d: %w", i, err)
		}
		if !slices.Equal(l.Shape, shape) || (i == 0 && !slices.Equal(l.Strides, op.ContiguousStrides(shape))) || l.Strides[len(l.Strides)-1] != 1 {
			return fmt.Errorf("%w: rms_norm input %d layout", errPlan, i)
		}
		if i == 1 {
			for k := range len(shape) - 1 {
				if l.Strides[k] != 0 && shape[k] != 1 {
					return fmt.Errorf("%w: rms_norm weight layout", errPlan)
				}
			}
		}
	}
	return nil
}
