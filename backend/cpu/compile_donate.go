package cpu

import (
	"slices"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/op"
)

// Buffer donation (device.RunOptions.Donate). A functional in-place update
// — an optimizer step writing its weights and state, any x.add_(y) under
// a program — is planned as a copy of the parameter into the output's
// fresh buffer followed by the in-place kernel on the copy. When the
// caller lends the parameter's buffer to that output, and the parameter is
// read by no step after the copy, the copy is skipped: the kernel updates
// the parameter's own bytes and its buffer is returned as the output. For
// the MNIST MLP's AdamW step that is three weight-sized copies per
// parameter (the weight, and both moments) no longer made.

// donation is a copy step a lent parameter buffer can replace.
type donation struct {
	step   int // the stCopy step
	param  int // parameter copied
	output int // the output index the copy's buffer becomes
	buf    int // the plan buffer of the copy
}

// donations lists the plan's replaceable copies, computed once per
// program (the plan is immutable after compiling or loading).
func (c *cprogram) donations() []donation {
	c.donateOnce.Do(func() { c.donate = planDonations(c.pl) })
	return c.donate
}

func planDonations(p *plan) []donation {
	outIdx := map[int]int{} // buffer -> output index, for buffers that are exactly one output
	for k, id := range p.outputs {
		b := p.vals[id].buf
		if _, dup := outIdx[b]; dup {
			outIdx[b] = -1
			continue
		}
		outIdx[b] = k
	}
	// lastRead[i] is the last step reading parameter i (directly or
	// through a view).
	lastRead := make([]int, len(p.g.Params))
	for i := range lastRead {
		lastRead[i] = -1
	}
	for si, s := range p.steps {
		for _, id := range s.in {
			if id >= 0 && p.vals[id].param >= 0 {
				lastRead[p.vals[id].param] = si
			}
		}
	}
	var ds []donation
	for si, s := range p.steps {
		if s.kind != stCopy {
			continue
		}
		in, out := p.vals[s.in[0]], p.vals[s.out[0]]
		if in.param < 0 || lastRead[in.param] != si || out.buf < 0 || !p.bufs[out.buf].out || in.dt != out.dt {
			continue
		}
		k, ok := outIdx[out.buf]
		if !ok || k < 0 {
			continue
		}
		pm := p.g.Params[in.param].Meta
		full := func(l op.Layout, shape []int) bool {
			return l.Offset == 0 && slices.Equal(l.Shape, shape) && slices.Equal(l.Strides, op.ContiguousStrides(shape))
		}
		if !full(in.layout, pm.Shape) || !full(out.layout, pm.Shape) ||
			p.bufs[out.buf].size != int64(op.Numel(pm.Shape)*pm.DType.Size()) {
			continue
		}
		ds = append(ds, donation{step: si, param: in.param, output: k, buf: out.buf})
	}
	return ds
}

// applyDonations binds the lent parameters' buffers to the outputs they
// replace, marking their copy steps skipped. in are the Run's inputs;
// r.params must be set (a parameter copied to a temporary because of its
// layout is not lent).
func (r *crun) applyDonations(in []device.Operand, opts device.RunOptions) {
	if len(opts.Donate) == 0 {
		return
	}
	for _, d := range r.c.donations() {
		if opts.Donated(d.param) != d.output {
			continue
		}
		b, ok := in[d.param].Buf.(*Buf)
		if !ok || len(r.params[d.param]) == 0 || &r.params[d.param][0] != &b.b[0] {
			continue
		}
		if r.skip == nil {
			r.skip = make([]bool, len(r.c.pl.steps))
			r.lent = make([]*Buf, len(r.c.pl.bufs))
		}
		r.skip[d.step] = true
		r.lent[d.buf] = b
		r.bufs[d.buf] = r.params[d.param]
	}
}

// elideDeadCopies removes the copy an in-place kernel's input gets (see
// emitKernel) when the copied value's buffer is referenced by nothing
// after the copy: the copy then takes over that buffer instead. Chained
// in-place updates (w.add_(x); w.mul_(y)) so copy their value once, from
// the parameter — a copy buffer donation can then remove too — rather than
// once per update.
func (pl *planner) elideDeadCopies() {
	p := pl.p
	full := func(v pvalue) bool {
		return v.buf >= 0 && v.layout.Offset == 0 && slices.Equal(v.layout.Strides, op.ContiguousStrides(v.layout.Shape)) &&
			int64(op.Numel(v.layout.Shape)*v.dt.Size()) == p.bufs[v.buf].size
	}
	for {
		lastRef := make([]int, len(p.bufs))
		for i := range lastRef {
			lastRef[i] = -1
		}
		for si, s := range p.steps {
			for _, ids := range [][]int{s.in, s.out} {
				for _, id := range ids {
					if id >= 0 && p.vals[id].buf >= 0 {
						lastRef[p.vals[id].buf] = si
					}
				}
			}
		}
		for _, id := range p.outputs {
			if b := p.vals[id].buf; b >= 0 {
				lastRef[b] = len(p.steps)
			}
		}
		done := true
		for si, s := range p.steps {
			if s.kind != stCopy {
				continue
			}
			a, b := p.vals[s.in[0]], p.vals[s.out[0]]
			if !full(a) || !full(b) || a.dt != b.dt || a.buf == b.buf || p.bufs[a.buf].out || lastRef[a.buf] != si ||
				p.bufs[a.buf].size != p.bufs[b.buf].size {
				continue
			}
			ba, bb := a.buf, b.buf
			for i := range p.vals {
				if p.vals[i].buf == bb {
					p.vals[i].buf = ba
				}
			}
			p.bufs[ba].out = p.bufs[bb].out
			p.bufs[bb] = pbuf{}
			p.steps = slices.Delete(p.steps, si, si+1)
			done = false
			break
		}
		if done {
			return
		}
	}
}
