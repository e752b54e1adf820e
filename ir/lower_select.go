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
	res, _, err := LowerIfOrigin(g, sel)
	return res, err
}

// LowerIfOrigin is LowerIf that also returns, for every node of the
// result, the index in g.Nodes of the node it comes from (itself, or the
// composite whose decomposition produced it). Executors use it to apply a
// source node's run-time attributes (device.RunOptions.Dynamic) to the
// nodes its decomposition produced.
func LowerIfOrigin(g *Graph, sel func(*Node) bool) (*Graph, []int, error) {
	cur := g
	origin := make([]int, len(g.Nodes))
	for j := range origin {
		origin[j] = j
	}
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
				return copyGraph(g), origin, nil
			}
			return cur, origin, nil
		}
		if depth == maxLowerDepth {
			return nil, nil, &TraceError{Path: "lower", Err: fmt.Errorf("%w: decompositions nest deeper than %d levels", ErrShape, maxLowerDepth)}
		}
		next, from, err := lowerOnce(cur, sel)
		if err != nil {
			return nil, nil, err
		}
		o := make([]int, len(from))
		for j, f := range from {
			o[j] = origin[f]
		}
		cur, origin = next, o
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
// decompositions are traced without decomposing further. from[j] is the
// index in g.Nodes of the node result node j comes from.
func lowerOnce(g *Graph, sel func(*Node) bool) (res *Graph, from []int, err error) {
	t := NewTracer(DefaultFloat(g.DefaultFloat))
	r := newRebuilderInto(g, t.g)
	defer func() {
		if rec := recover(); rec != nil {
			te, ok := rec.(*TraceError)
			if !ok {
				panic(rec)
			}
			res, from, err = nil, nil, te
		}
	}()
	for j, n := range g.Nodes {
		in := r.mapIn(n.In)
		if n.IsConst() || n.Op.Kind != op.Composite || !sel(n) {
			r.copyNode(n, in)
			from = append(from, j)
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
		for len(from) < len(t.g.Nodes) {
			from = append(from, j)
		}
	}
	return r.finish(), from, nil
}
