package cpu

import (
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/op"
)

// In-place optimizer steps. An in-place kernel (adam_step, sgd_step) must
// not write the program's parameters, so the plan copies each in-place
// input first and the kernel updates the copy: for a training step that is
// one more read and write of every parameter and optimizer state than the
// eager update, each a full pass over memory. For the elementwise
// optimizer kernels the plan runs those copies inside the kernel step
// instead, a cache-sized chunk at a time: copy the chunk of each in-place
// input, update it while it is in cache. The elements, their order within
// a chunk and the arithmetic are the kernel's, so the results are the
// same bits.

// pfold is a kernel step that runs its in-place inputs' copies chunk by
// chunk (foldCopies).
type pfold struct {
	copies []int // the folded copy steps: each writes one in-place input
}

// foldChunk is the number of elements a folded step copies and updates at
// a time: with four or five f32 arrays it stays in L2 and below
// ParallelThreshold, so the kernel runs it on the calling thread.
const foldChunk = 4096

// foldable lists the elementwise in-place kernels whose every input has
// the parameter's shape.
var foldable = map[string]bool{"adam_step": true, "sgd_step": true}

// foldCopies finds, after memory planning (offsets known), the kernel
// steps whose in-place inputs are copies the plan made just before them,
// and returns per step index its fold (nil where none) and which steps the
// folds absorb.
func foldCopies(p *plan) (folds []*pfold, skip []bool) {
	folds, skip = make([]*pfold, len(p.steps)), make([]bool, len(p.steps))
	any := false
	for si, s := range p.steps {
		if s.kind != stKernel {
			continue
		}
		n := p.g.Nodes[s.node]
		if !foldable[n.Op.Name] || len(s.in) == 0 || s.in[0] < 0 {
			continue
		}
		shape := p.vals[s.in[0]].layout.Shape
		ok := true
		for i, id := range s.in {
			if id >= 0 && (!planIsContig(s.inL[i]) || !sameShape(s.inL[i].Shape, shape) || !planIsContig(p.vals[id].layout)) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		// The steps just before: copies; those writing an in-place input
		// from a contiguous source are folded.
		first := si
		for first > 0 && p.steps[first-1].kind == stCopy {
			first--
		}
		f := &pfold{}
		for _, i := range n.Op.Inplace {
			if i >= len(s.in) || s.in[i] < 0 {
				continue
			}
			for cj := first; cj < si; cj++ {
				c := p.steps[cj]
				if c.out[0] == s.in[i] && planIsContig(p.vals[c.in[0]].layout) && p.vals[c.in[0]].dt == p.vals[c.out[0]].dt {
					f.copies = append(f.copies, cj)
				}
			}
		}
		if len(f.copies) == 0 {
			continue
		}
		// The sources are read at the kernel step instead: nothing between
		// may write over them (an arena slot a dead source left).
		for _, cj := range f.copies {
			src := p.vals[p.steps[cj].in[0]]
			if src.buf < 0 {
				continue // a parameter: never written
			}
			for k := cj + 1; k < si; k++ {
				for _, o := range p.steps[k].out {
					if planBufOverlap(p, p.vals[o].buf, src.buf) {
						ok = false
					}
				}
			}
		}
		if !ok {
			continue
		}
		folds[si] = f
		for _, cj := range f.copies {
			skip[cj] = true
		}
		any = true
	}
	if !any {
		return nil, nil
	}
	return folds, skip
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// planBufOverlap reports whether buffers a and b may share memory.
func planBufOverlap(p *plan, a, b int) bool {
	if a < 0 || b < 0 {
		return false
	}
	if a == b {
		return true
	}
	x, y := p.bufs[a], p.bufs[b]
	if x.out || y.out || x.size == 0 || y.size == 0 {
		return false
	}
	return x.off < y.off+y.size && y.off < x.off+x.size
}

// foldedKernel runs launch l of kernel step s with the copies of fold f,
// chunk by chunk.
func (r *crun) foldedKernel(s *pstep, f *pfold, l *device.Launch) error {
	p := r.c.pl
	for _, cj := range f.copies {
		if err := r.define(p.steps[cj].out[0]); err != nil {
			return err
		}
	}
	total := op.Numel(l.In[0].Shape)
	type cp struct {
		src, dst []byte
		size     int
	}
	cps := make([]cp, len(f.copies))
	for k, cj := range f.copies {
		c := p.steps[cj]
		sv := p.vals[c.in[0]]
		sz := sv.dt.Size()
		cps[k] = cp{src: r.mem(c.in[0])[sv.layout.Offset*sz:], dst: r.mem(c.out[0]), size: sz}
	}
	nch := (total + foldChunk - 1) / foldChunk
	var firstErr error
	errs := make([]error, nch)
	parallelFor(nch, total*4, func(lo, hi int) {
		sub := &device.Launch{Op: l.Op, Attrs: l.Attrs, In: make([]device.Operand, len(l.In)), Out: l.Out}
		for ch := lo; ch < hi; ch++ {
			a, b := ch*foldChunk, min((ch+1)*foldChunk, total)
			for _, c := range cps {
				copy(c.dst[a*c.size:b*c.size], c.src[a*c.size:b*c.size])
			}
			for i, o := range l.In {
				if o.Buf == nil {
					sub.In[i] = o
					continue
				}
				o.Layout = op.Layout{Shape: []int{b - a}, Strides: []int{1}, Offset: o.Offset + a}
				sub.In[i] = o
			}
			errs[ch] = Exec(sub, func(b device.Buffer) []byte { return b.(*Buf).b })
		}
	})
	for _, err := range errs {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}
