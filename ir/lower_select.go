package ir

import (
	"fmt"

	"github.com/gotpu/gotpu/op"
)

// maxLowerDepth bounds how deeply LowerIf expands composites inside
// decompositions; the op table's decompositions are far shallower, so
// reaching it means a decomposition that calls itself.
const maxLowerDepth = 32

// LowerIf returns g with the composite nodes that sel selects replaced by
// their decompositions, recursively: composites that a decomposition
// records are offered to sel in turn, and expanded when selected, so the
// result holds no composite node that sel selects. Nodes sel does not
// select, primitives, views and constants are copied unchanged. sel sees
// the nodes of intermediate graphs (with their inputs, outputs and
// attributes); it is only called on composite nodes. LowerIf(g, all) equals
// Lower(g). An error is a *TraceError naming the op, as from Lower.
func LowerIf(g *Graph, sel func(*Node) bool) (*Graph, error) {
	cur := g
	for depth := 0; ; depth++ {
		pending := false
		for _, n := range cur.Nodes {
			if !n.IsConst() && n.Op.Kind == op.Composite && sel(n) {
				pending = true
				break
			}
		}
		if !pending {
			if cur == g {
				return copyGraph(g), nil
			}
			return cur, nil
		}
		if depth == maxLowerDepth {
			return nil, &TraceError{Path: "lower", Err: fmt.Errorf("%w: decompositions nest deeper than %d levels", ErrShape, maxLowerDepth)}
		}
		next, err := lowerOnce(cur, sel)
		if err != nil {
			return nil, err
		}
		cur = next
	}
}

// copyGraph returns a copy of g with dense value IDs, as every pass does.
func copyGraph(g *Graph) *Graph {
	r := newRebuilder(g)
	for _, n := range g.Nodes {
		r.copyNode(n, r.mapIn(n.In))
	}
	return r.finish()
}

// lowerOnce expands the selected composites of g by one level: their
// decompositions are traced without decomposing further.
func lowerOnce(g *Graph, sel func(*Node) bool) (res *Graph, err error) {
	t := NewTracer(DefaultFloat(g.DefaultFloat))
	r := newRebuilderInto(g, t.g)
	defer func() {
		if rec := recover(); rec != nil {
			te, ok := rec.(*TraceError)
			if !ok {
				panic(rec)
			}
			res, err = nil, te
		}
	}()
	for _, n := range g.Nodes {
		in := r.mapIn(n.In)
		if n.IsConst() || n.Op.Kind != op.Composite || !sel(n) {
			r.copyNode(n, in)
			continue
		}
		want := make([]op.Meta, len(n.Out))
		for i, o := range n.Out {
			want[i] = o.Meta
		}
		outs := t.decomposeCall(n.Op, in, n.Attrs, want)
		for i, o := range n.Out {
			r.vmap[o] = outs[i].(*Value)
		}
	}
	return r.finish(), nil
}
