package ir

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gotpu/gotpu/op"
)

// A pass maps a graph to a new graph; it never modifies its argument. Value
// IDs of the result are dense, in definition order.

// DCE returns g without the nodes none of whose outputs reach a graph
// output. Parameters are kept (they are the graph's signature), used or
// not. Random ops are removed like any other when unused: their draws are
// fixed by their seed and offset attributes, not by their execution.
func DCE(g *Graph) *Graph {
	live := make(map[*Value]bool)
	for _, v := range g.Outputs {
		live[v] = true
	}
	keep := make([]bool, len(g.Nodes))
	for j := len(g.Nodes) - 1; j >= 0; j-- {
		n := g.Nodes[j]
		for _, o := range n.Out {
			if live[o] {
				keep[j] = true
				break
			}
		}
		if keep[j] {
			for _, v := range n.In {
				if v != nil {
					live[v] = true
				}
			}
		}
	}
	r := newRebuilder(g)
	for j, n := range g.Nodes {
		if keep[j] {
			r.copyNode(n, r.mapIn(n.In))
		}
	}
	return r.finish()
}

// CSE returns g with common subexpressions merged: a node applying the same
// op with the same attributes to the same inputs as an earlier node (or a
// constant equal in shape, dtype, wrapped flag and bytes to an earlier one)
// is dropped and its uses read the earlier node's outputs. Random ops are
// never merged: two draws are two draws, even with equal attributes.
func CSE(g *Graph) *Graph {
	r := newRebuilder(g)
	seen := make(map[string]*Node)
	for _, n := range g.Nodes {
		in := r.mapIn(n.In)
		if n.IsConst() || !n.Op.Random {
			key := cseKey(n, in)
			if prev, ok := seen[key]; ok && len(prev.Out) == len(n.Out) {
				for k, o := range n.Out {
					r.vmap[o] = prev.Out[k]
				}
				continue
			}
			seen[key] = r.copyNode(n, in)
			continue
		}
		r.copyNode(n, in)
	}
	return r.finish()
}

// cseKey identifies what a node computes from its (remapped) inputs.
func cseKey(n *Node, in []*Value) string {
	var sb strings.Builder
	if n.IsConst() {
		sb.WriteString("const ")
		for _, o := range n.Out {
			sb.WriteString(metaKey(o.Meta))
			sb.WriteByte(' ')
		}
		sb.WriteString(hex.EncodeToString(n.Data))
		return sb.String()
	}
	sb.WriteString(strconv.Quote(n.Op.Name))
	for _, k := range sortedKeys(n.Attrs) {
		fmt.Fprintf(&sb, " %s=%s", strconv.Quote(k), attrKey(n.Attrs[k]))
	}
	sb.WriteString(" (")
	for _, v := range in {
		if v == nil {
			sb.WriteString(" _")
		} else {
			sb.WriteString(" " + strconv.Itoa(v.ID))
		}
	}
	sb.WriteString(")")
	return sb.String()
}

// Lower returns g with every composite node replaced by its decomposition,
// traced recursively (with g.DefaultFloat for promotion), so that the result
// holds only primitives, views and constants. Primitive, view and constant
// nodes are copied unchanged. An error (a decomposition that fails or
// disagrees with its op's shape rule) is a *TraceError naming the op.
func Lower(g *Graph) (res *Graph, err error) {
	t := NewTracer(Decompose(true), DefaultFloat(g.DefaultFloat))
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
		if n.IsConst() || n.Op.Kind != op.Composite {
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

// FoldParams returns g with parameter i replaced by a constant of bytes
// konst[i] (in the parameter's meta) where konst[i] is not nil — the graph
// keeps only the other parameters, in order. g itself is returned when
// nothing is folded; otherwise g is unchanged.
func FoldParams(g *Graph, konst [][]byte) *Graph {
	if !slices.ContainsFunc(konst, func(b []byte) bool { return b != nil }) {
		return g
	}
	dst := New()
	dst.DefaultFloat = g.DefaultFloat
	r := &rebuilder{src: g, dst: dst, vmap: make(map[*Value]*Value, len(g.Params)+len(g.Nodes))}
	for i, p := range g.Params {
		if i < len(konst) && konst[i] != nil {
			r.vmap[p] = dst.AddConst(p.Meta, konst[i])
		} else {
			r.vmap[p] = dst.Param(p.Meta)
		}
	}
	for _, n := range g.Nodes {
		r.copyNode(n, r.mapIn(n.In))
	}
	return r.finish()
}
