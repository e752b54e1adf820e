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

// Chains of a bf16 model's small ops as one step each. Hugging Face's
// models on bf16 activations run a few row-sized ops in a row whose every
// result is rounded to bf16, each a step that reads its row from memory
// the products have just flushed. Two such chains are recognized (their
// intermediates read by nothing else) and run as one step with the same
// arithmetic, so the same bits:
//
//   - LlamaRMSNorm, weight * rms_norm(x.to(float32)).to(bfloat16): convert,
//     rms_norm, convert and mul (stNormBF16; twice a layer, 0.39 ms of a
//     SmolLM2-135M bf16 decode step of 12, 4-8 ms of a 128-token prefill):
//     x widened, the f32 kernel's vec.Kernels.RMSNormRow, rounded, widened, times
//     the widened weight, rounded;
//   - the gated MLP's act(gate) * up with act silu or gelu (stGLUBF16):
//     gate widened, the activation's vec kernel, rounded, widened, times
//     the widened up, rounded.
//
// Each mul keeps its operand order (NaN payloads).

// chainMatch is one recognized chain: its final mul, the step kind, the
// step's inputs (contig: must the input be contiguous, else only along
// its last dimension) and the chain's other nodes, which no step computes.
type chainMatch struct {
	kind   uint8
	in     []*ir.Value
	contig []bool
	nodes  []*ir.Node
}

// findChainsBF16 returns the chains of the live graph, keyed by their
// final mul.
func (pl *planner) findChainsBF16(users map[*ir.Value][]*ir.Node) map[*ir.Node]*chainMatch {
	var found map[*ir.Node]*chainMatch
	add := func(m *ir.Node, c *chainMatch) {
		if found == nil {
			found = map[*ir.Node]*chainMatch{}
		}
		found[m] = c
	}
	for m, c := range pl.findNormsBF16(users) {
		add(m, c)
	}
	for m, c := range pl.findGLUsBF16(procKS, users) {
		if found[m] == nil {
			add(m, c)
		}
	}
	return found
}

// onlyUser returns v's one user when v is not a graph output and has
// exactly one, else nil.
func (pl *planner) onlyUser(users map[*ir.Value][]*ir.Node, v *ir.Value) *ir.Node {
	if v == nil || pl.outSet[v] || len(users[v]) != 1 {
		return nil
	}
	return users[v][0]
}

// isDType reports whether v exists and has dtype dt.
func isDType(v *ir.Value, dt dtype.DType) bool { return v != nil && v.Meta.DType == dt }

// findNormsBF16 returns the bf16 RMSNorm chains of the live graph, keyed
// by their final mul.
func (pl *planner) findNormsBF16(users map[*ir.Value][]*ir.Node) map[*ir.Node]*chainMatch {
	found := map[*ir.Node]*chainMatch{}
	only := func(v *ir.Value) *ir.Node { return pl.onlyUser(users, v) }
	is := isDType
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
			found[m] = &chainMatch{kind: stNormBF16, in: []*ir.Value{x, w}, contig: []bool{true, false}, nodes: []*ir.Node{c1, rms, c2}}
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

// emitChain plans the chain ending at mul node j as one step of its kind
// (emitRowStep).
func (pl *planner) emitChain(j int, n *ir.Node, m *chainMatch) error {
	return pl.emitRowStep(j, n, m.kind, "bf16 chain", m.in, m.contig)
}

// emitRowStep plans node j (output n.Out[0]) as one step of kind that
// reads ins row by row: each input broadcast to the output's shape,
// copied where contig says it must be contiguous and is not, or where it
// is not contiguous along the last dimension (contig nil: that alone).
// what names the step in errors.
func (pl *planner) emitRowStep(j int, n *ir.Node, kind uint8, what string, ins []*ir.Value, contig []bool) error {
	p := pl.p
	shape := n.Out[0].Meta.Shape
	s := pstep{kind: kind, node: j, dyn: -1, nOut: 1}
	for i, v := range ins {
		id, ok := pl.vid[v]
		if !ok {
			return fmt.Errorf("cpu: compile: node %d (%s): an input is not defined", j, what)
		}
		if l := p.vals[id].layout; contig != nil && contig[i] && !slices.Equal(l.Strides, op.ContiguousStrides(l.Shape)) ||
			len(l.Strides) == 0 || l.Strides[len(l.Strides)-1] != 1 {
			id = pl.copyOf(id)
		}
		l, ok := planCloneLayout(p.vals[id].layout).BroadcastTo(shape)
		if !ok {
			return fmt.Errorf("cpu: compile: node %d (%s): input of shape %v does not broadcast to %v", j, what, p.vals[id].layout.Shape, shape)
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

// normSteps and gluSteps count the chain steps run (tests check the
// patterns were taken).
var normSteps, gluSteps atomic.Uint64

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
	r.ks.vec.Widen(w, wb)
	fusedRows(rows, d, func(lo, hi int) {
		buf := getScratch(4*3*d + 2*d)
		defer putScratch(buf)
		f := as[float32](*buf)
		xr, y, tmp := f[:d], f[d:2*d], f[2*d:3*d]
		ob := as[dtype.BFloat16]((*buf)[12*d:])[:d]
		for i := lo; i < hi; i++ {
			r.ks.vec.Widen(xr, x[i*d:(i+1)*d])
			r.ks.vec.RMSNormRow(y, xr, nil, tmp, eps)
			r.ks.vec.Narrow(ob, y)
			r.ks.vec.Widen(y, ob)
			if weightFirst { // the mul's operand order (NaN payloads)
				r.ks.vec.Mul(y, w, y)
			} else {
				r.ks.vec.Mul(y, y, w)
			}
			r.ks.vec.Narrow(out[i*d:(i+1)*d], y)
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
		l := s.inL[i]
		if err := planCheckLayout(l, p.valueLimit(id)); err != nil {
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

// gluAct returns the vec kernel of activation node a (silu, or gelu
// exact or tanh) as its bf16 kernel runs it, or nil; the kernel is the
// CPU level's when the step runs.
func gluAct(ks *kset, a *ir.Node) func(dst, x []float32) {
	switch {
	case a == nil || a.IsConst():
		return nil
	case a.Op == op.Silu:
		return func(d, x []float32) { ks.vec.Silu(d, x) }
	case a.Op == op.Gelu && a.Attrs.String("approximate") == "tanh":
		return func(d, x []float32) { ks.vec.GeluTanh(d, x) }
	case a.Op == op.Gelu && (a.Attrs.String("approximate") == "" || a.Attrs.String("approximate") == "none"):
		return func(d, x []float32) { ks.vec.Gelu(d, x) }
	}
	return nil
}

// findGLUsBF16 returns the bf16 act(gate) * up chains of the live graph
// (gate and up of the output's shape), keyed by their mul.
func (pl *planner) findGLUsBF16(ks *kset, users map[*ir.Value][]*ir.Node) map[*ir.Node]*chainMatch {
	found := map[*ir.Node]*chainMatch{}
	for _, m := range pl.g.Nodes {
		if !pl.live[m] || m.Op != op.Mul || len(m.In) != 2 || len(m.Out) != 1 || !isDType(m.Out[0], dtype.BF16) {
			continue
		}
		shape := m.Out[0].Meta.Shape
		for side := range 2 {
			av, up := m.In[side], m.In[1-side]
			a := av.Def
			if gluAct(ks, a) == nil || len(a.In) != 1 || pl.onlyUser(users, av) != m || !isDType(av, dtype.BF16) ||
				!isDType(a.In[0], dtype.BF16) || !isDType(up, dtype.BF16) || av == up ||
				!slices.Equal(a.In[0].Meta.Shape, shape) || !slices.Equal(up.Meta.Shape, shape) {
				continue
			}
			found[m] = &chainMatch{kind: stGLUBF16, in: []*ir.Value{a.In[0], up}, contig: []bool{true, true}, nodes: []*ir.Node{a}}
			break
		}
	}
	return found
}

// gluChain returns the activation node of the chain whose mul is m and
// whether it is the mul's first operand; nil when m is not such a mul.
func gluChain(ks *kset, m *ir.Node) (act *ir.Node, actFirst bool) {
	if m == nil || m.IsConst() || m.Op != op.Mul || len(m.In) != 2 {
		return nil, false
	}
	for side, v := range m.In {
		if v != nil && gluAct(ks, v.Def) != nil {
			return v.Def, side == 0
		}
	}
	return nil, false
}

// gluBF16 runs an stGLUBF16 step.
func (r *crun) gluBF16(s *pstep) error {
	p := r.c.pl
	act, actFirst := gluChain(r.ks, p.g.Nodes[s.node])
	f := gluAct(r.ks, act)
	n := op.Numel(p.vals[s.out[0]].layout.Shape)
	out := as[dtype.BFloat16](r.mem(s.out[0]))[:n]
	g := as[dtype.BFloat16](r.mem(s.in[0]))[s.inL[0].Offset:][:n]
	u := as[dtype.BFloat16](r.mem(s.in[1]))[s.inL[1].Offset:][:n]
	vecParallel(n, func(lo, hi int) {
		buf := getScratch(4*2*bf16Block + 2*bf16Block)
		defer putScratch(buf)
		fb := as[float32](*buf)
		a, b := fb[:bf16Block], fb[bf16Block:2*bf16Block]
		ab := as[dtype.BFloat16]((*buf)[8*bf16Block:])[:bf16Block]
		for i := lo; i < hi; i += bf16Block {
			k := min(bf16Block, hi-i)
			r.ks.vec.Widen(a[:k], g[i:i+k])
			f(a[:k], a[:k])
			r.ks.vec.Narrow(ab[:k], a[:k])
			r.ks.vec.Widen(a[:k], ab[:k])
			r.ks.vec.Widen(b[:k], u[i:i+k])
			if actFirst {
				r.ks.vec.Mul(a[:k], a[:k], b[:k])
			} else {
				r.ks.vec.Mul(a[:k], b[:k], a[:k])
			}
			r.ks.vec.Narrow(out[i:i+k], a[:k])
		}
	})
	gluSteps.Add(1)
	return nil
}

// validateGLU checks an stGLUBF16 step: a mul node of an activation
// chain, gate and up contiguous bf16 of the output's shape, the output's
// own contiguous bf16 buffer.
func (p *plan) validateGLU(s pstep, stored, owned func(int) bool) error {
	if len(s.in) != 2 || len(s.inL) != 2 || len(s.out) != 1 || s.nOut != 1 || !owned(s.out[0]) || s.node < 0 || s.node >= len(p.g.Nodes) {
		return fmt.Errorf("%w: glu step", errPlan)
	}
	act, _ := gluChain(procKS, p.g.Nodes[s.node])
	ov := p.vals[s.out[0]]
	if act == nil || ov.dt != dtype.BF16 || !planIsContig(ov.layout) {
		return fmt.Errorf("%w: glu output", errPlan)
	}
	shape := ov.layout.Shape
	for i, id := range s.in {
		if id < 0 || !stored(id) || p.vals[id].dt != dtype.BF16 {
			return fmt.Errorf("%w: glu input %d", errPlan, i)
		}
		l := s.inL[i]
		if err := planCheckLayout(l, p.valueLimit(id)); err != nil {
			return fmt.Errorf("glu input %d: %w", i, err)
		}
		if !slices.Equal(l.Shape, shape) || !slices.Equal(l.Strides, op.ContiguousStrides(shape)) {
			return fmt.Errorf("%w: glu input %d layout", errPlan, i)
		}
	}
	return nil
}
