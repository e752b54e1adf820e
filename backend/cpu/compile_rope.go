package cpu

import (
	"reflect"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// Rotary position embeddings as one step. Hugging Face's rotate_half form
// of RoPE,
//
//	x*cos + cat(-x[..., h:], x[..., :h], -1)*sin,
//
// traces to a neg and a cat, which no fused group takes, around two muls
// and an add, which it does: four steps for a few hundred elements, each
// costing more to launch than to compute (in a SmolLM2 decode step ~20 µs
// of each layer's ~190 went to rope). The planner recognizes the pattern
// and runs it as one stRope step with the same arithmetic: out[j] =
// x[j]*cos[j] + r[j]*sin[j], each product rounded to f32 before the sum, r
// = -x[j+h] below h and x[j-h] from h, which gives the bits of the
// unfused ops (negation is exact, and rounding is symmetric in sign). A
// bf16 model's rope (every value bf16) is taken too, each product and the
// sum rounded to bf16 as its ops round them (vec.Kernels.RopeBF16).

// ropeMatch is one recognized rope: the add node computing it from x, cos
// and sin.
type ropeMatch struct {
	x, cos, sin *ir.Value
	// nodes are the pattern's other nodes, which no step computes.
	nodes []*ir.Node
}

// findRopes returns the rope patterns of the live graph whose
// intermediates nothing else reads, keyed by their final add.
func (pl *planner) findRopes(users map[*ir.Value][]*ir.Node) map[*ir.Node]*ropeMatch {
	var found map[*ir.Node]*ropeMatch
	only := func(v *ir.Value) *ir.Node {
		if pl.outSet[v] || len(users[v]) != 1 {
			return nil
		}
		return users[v][0]
	}
	for _, c := range pl.g.Nodes {
		if !pl.live[c] || c.Op != op.Cat || len(c.In) != 2 || len(c.Out) != 1 {
			continue
		}
		// Every value of the pattern f32, or every one bf16.
		dt := c.Out[0].Meta.DType
		f32 := func(vs ...*ir.Value) bool {
			for _, v := range vs {
				if v == nil || v.Meta.DType != dt {
					return false
				}
			}
			return dt == dtype.F32 || dt == dtype.BF16
		}
		if !f32(c.In[0], c.In[1], c.Out[0]) {
			continue
		}
		shape := c.Out[0].Meta.Shape
		r := len(shape)
		if r == 0 || ropeAxis(c.Attrs, "dim", r) != r-1 || shape[r-1]%2 != 0 {
			continue
		}
		h := shape[r-1] / 2
		neg, lo := c.In[0].Def, c.In[1].Def
		if neg == nil || lo == nil || neg.Op != op.Neg || len(neg.In) != 1 || only(c.In[0]) != c {
			continue
		}
		hi := neg.In[0].Def
		x, ok := ropeHalf(hi, r, h, h)
		if !ok || only(neg.In[0]) != neg {
			continue
		}
		if x2, ok := ropeHalf(lo, r, 0, h); !ok || !ropeSameView(x2, x) || !slices.Equal(x.Meta.Shape, shape) || !f32(x) {
			continue
		}
		// rot*sin, then x*cos + rot*sin (either operand order).
		m := only(c.Out[0])
		if m == nil || m.Op != op.Mul || len(m.In) != 2 || !f32(m.Out[0]) || !slices.Equal(m.Out[0].Meta.Shape, shape) {
			continue
		}
		sin := ropeOther(m, c.Out[0])
		a := only(m.Out[0])
		if sin == nil || a == nil || a.Op != op.Add || len(a.In) != 2 || !planIsOne(a.Attrs["alpha"]) || !f32(a.Out[0]) {
			continue
		}
		pv := ropeOther(a, m.Out[0])
		if pv == nil || pv.Def == nil {
			continue
		}
		p := pv.Def
		if p.Op != op.Mul || len(p.In) != 2 || only(pv) != a || !slices.Equal(pv.Meta.Shape, shape) {
			continue
		}
		var cos *ir.Value
		switch {
		case ropeSameView(p.In[0], x) && !ropeSameView(p.In[1], x):
			cos = p.In[1]
		case ropeSameView(p.In[1], x) && !ropeSameView(p.In[0], x):
			cos = p.In[0]
		}
		if cos == nil || !f32(cos, sin) || !ropeBroadcasts(cos, shape) || !ropeBroadcasts(sin, shape) {
			continue
		}
		if found == nil {
			found = map[*ir.Node]*ropeMatch{}
		}
		found[a] = &ropeMatch{x: x, cos: cos, sin: sin, nodes: []*ir.Node{neg, c, m, p}}
	}
	return found
}

// ropeSameView reports whether a and b are the same value, or the same views
// (op and attributes) of the same value: a traced eager view, such as the
// transpose a model takes its heads through, is a new node at each use.
func ropeSameView(a, b *ir.Value) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil || a.Def == nil || b.Def == nil {
		return false
	}
	m, n := a.Def, b.Def
	if m.Op.Kind != op.View || m.Op != n.Op || len(m.In) != 1 || len(n.In) != 1 || len(m.Out) != 1 || len(n.Out) != 1 ||
		!reflect.DeepEqual(m.Attrs, n.Attrs) || !slices.Equal(a.Meta.Shape, b.Meta.Shape) {
		return false
	}
	return ropeSameView(m.In[0], n.In[0])
}

// ropeAxis returns attribute name of a as an axis of a rank-r shape, or -1.
func ropeAxis(a op.Attrs, name string, r int) int {
	d, ok := a[name].(int)
	if !ok {
		return -1
	}
	if d < 0 {
		d += r
	}
	if d < 0 || d >= r {
		return -1
	}
	return d
}

// ropeHalf reports whether n is narrow(x, last dim, start, length) and
// returns x.
func ropeHalf(n *ir.Node, r, start, length int) (*ir.Value, bool) {
	if n == nil || n.Op != op.Narrow || len(n.In) != 1 || n.In[0] == nil || len(n.In[0].Meta.Shape) != r {
		return nil, false
	}
	a := n.Attrs
	s, ok1 := a["start"].(int)
	l, ok2 := a["length"].(int)
	if !ok1 || !ok2 || ropeAxis(a, "dim", r) != r-1 || s != start || l != length {
		return nil, false
	}
	return n.In[0], true
}

// ropeOther returns n's input other than v (v must be one of its two).
func ropeOther(n *ir.Node, v *ir.Value) *ir.Value {
	switch {
	case n.In[0] == v && n.In[1] != v:
		return n.In[1]
	case n.In[1] == v && n.In[0] != v:
		return n.In[0]
	}
	return nil
}

// ropeBroadcasts reports whether v broadcasts to shape without changing
// its rank or its last dimension.
func ropeBroadcasts(v *ir.Value, shape []int) bool {
	s := v.Meta.Shape
	if len(s) != len(shape) || s[len(s)-1] != shape[len(shape)-1] {
		return false
	}
	for i, d := range s {
		if d != 1 && d != shape[i] {
			return false
		}
	}
	return true
}

// emitRope plans the rope ending at add node j (emitRowStep).
func (pl *planner) emitRope(j int, n *ir.Node, m *ropeMatch) error {
	return pl.emitRowStep(j, n, stRope, "rope", []*ir.Value{m.x, m.cos, m.sin}, nil)
}

// ropeSteps counts stRope steps run (tests check the pattern was taken).
var ropeSteps atomic.Uint64

// rope runs an stRope step.
func (r *crun) rope(s *pstep) error {
	if r.c.pl.vals[s.out[0]].dt == dtype.BF16 {
		ropeRows(r, s, as[dtype.BFloat16], func(d, x, c, s []dtype.BFloat16, h int) { r.ks.vec.RopeBF16(d, x, c, s, h) })
	} else {
		ropeRows(r, s, as[float32], func(d, x, c, s []float32, h int) { r.ks.vec.Rope(d, x, c, s, h) })
	}
	ropeSteps.Add(1)
	return nil
}

// ropeRows runs an stRope step's rows through row, its operands viewed by
// as.
func ropeRows[T float32 | dtype.BFloat16](r *crun, s *pstep, as func([]byte) []T, row func(dst, xr, cr, sr []T, h int)) {
	p := r.c.pl
	out := as(r.mem(s.out[0]))
	x, c, sn := as(r.mem(s.in[0])), as(r.mem(s.in[1])), as(r.mem(s.in[2]))
	lx, lc, ls := s.inL[0], s.inL[1], s.inL[2]
	shape := p.vals[s.out[0]].layout.Shape
	rank := len(shape)
	w := shape[rank-1]
	h := w / 2
	rows := op.Numel(shape) / max(w, 1)
	// Rows are shared out; each range starts from its first row's index.
	parallelFor(rows, rows*w*int(unsafe.Sizeof(T(0))), func(lo, hi int) {
		var idx [maxPlanRank]int
		ox, oc, os := lx.Offset, lc.Offset, ls.Offset
		for d, r := rank-2, lo; d >= 0; d-- {
			idx[d] = r % shape[d]
			r /= shape[d]
			ox, oc, os = ox+idx[d]*lx.Strides[d], oc+idx[d]*lc.Strides[d], os+idx[d]*ls.Strides[d]
		}
		for i := lo; i < hi; i++ {
			row(out[i*w:(i+1)*w], x[ox:ox+w], c[oc:oc+w], sn[os:os+w], h)
			// Next row: advance the leading dimensions' index.
			for d := rank - 2; d >= 0; d-- {
				idx[d]++
				ox, oc, os = ox+lx.Strides[d], oc+lc.Strides[d], os+ls.Strides[d]
				if idx[d] < shape[d] {
					break
				}
				ox, oc, os = ox-lx.Strides[d]*shape[d], oc-lc.Strides[d]*shape[d], os-ls.Strides[d]*shape[d]
				idx[d] = 0
			}
		}
	})
}
