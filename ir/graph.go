// Package ir is gotpu's graph IR: a typed, static-shape SSA graph of op-table
// calls shared by the fused eager mode, compile and export.
//
// A Graph has parameters (its inputs), nodes in topological order and
// outputs. Every node applies one op of package op (by its *op.Def, with
// attributes normalized by Def.Normalize) to input Values and defines output
// Values; a Constant node instead holds the raw little-endian bytes of a
// small literal tensor, such as a Go scalar materialised by type promotion.
// Values are functional: a view node (reshape, permute, slice, ...) defines a
// new value whose elements are those the view selects from a contiguous
// input; layouts and storage sharing are the runtime's business.
//
// A Tracer implements op.Builder and records the calls a Go function makes
// into a Graph, applying type promotion exactly as the eager runtime does
// (op.PromotedDTypes) and running each op's shape rule. Passes (DCE, CSE,
// Lower) are functions from a Graph to a new Graph; they never modify their
// argument. String prints a canonical text form, Fingerprint hashes the
// structure for cache keys, and Verify checks well-formedness.
package ir

import (
	"slices"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Value is one SSA value of a Graph: a parameter, or output Index of the
// node Def.
type Value struct {
	// ID names the value in the graph's text form (%ID); unique in a graph.
	ID int
	// Meta is the value's static shape and dtype. Wrapped is set only on
	// constants that hold a materialised Go scalar (they keep promoting like
	// a Python number, as in the eager runtime).
	Meta op.Meta
	// Def is the node that defines the value; nil for a parameter.
	Def *Node
	// Index is the output index in Def, or the parameter index.
	Index int

	g *Graph
}

// IsParam reports whether v is a parameter of its graph.
func (v *Value) IsParam() bool { return v.Def == nil }

// Node is one operation of a Graph.
type Node struct {
	// Op is the op applied; nil for a Constant node.
	Op *op.Def
	// Attrs are the normalized attributes (nil for a Constant). They are
	// shared between graphs derived by passes and must not be modified.
	Attrs op.Attrs
	// In are the inputs; a nil entry is an absent optional input.
	In []*Value
	// Out are the outputs, in the op's output order.
	Out []*Value
	// Data is a Constant node's payload: the little-endian bytes of its one
	// contiguous output. Shared between derived graphs; do not modify.
	Data []byte
}

// IsConst reports whether n is a Constant node.
func (n *Node) IsConst() bool { return n.Op == nil }

// Name returns the op name, or "constant".
func (n *Node) Name() string {
	if n.Op == nil {
		return "constant"
	}
	return n.Op.Name
}

// Graph is a static-shape SSA graph. Build one with a Tracer, or by hand with
// Param, AddNode, AddConst and SetOutputs (which do not check anything; call
// Verify).
type Graph struct {
	// Params are the graph's inputs in order.
	Params []*Value
	// Nodes are in topological order: every input is defined earlier.
	Nodes []*Node
	// Outputs are the values the graph returns (a value may appear twice, and
	// a parameter may be an output).
	Outputs []*Value
	// DefaultFloat is the default floating dtype the graph was traced with
	// (torch.get_default_dtype); Lower and Verify apply promotion with it.
	// It does not take part in the fingerprint: promotion is explicit in
	// the graph as convert nodes and typed constants.
	DefaultFloat dtype.DType

	nextID int
}

// New returns an empty graph with default float dtype f32.
func New() *Graph { return &Graph{DefaultFloat: dtype.F32} }

func (g *Graph) newValue(m op.Meta, def *Node, idx int) *Value {
	v := &Value{ID: g.nextID, Meta: cloneMeta(m), Def: def, Index: idx, g: g}
	g.nextID++
	return v
}

// Param appends a parameter of shape and dtype m (Wrapped is cleared).
func (g *Graph) Param(m op.Meta) *Value {
	m.Wrapped = false
	v := g.newValue(m, nil, len(g.Params))
	g.Params = append(g.Params, v)
	return v
}

// AddNode appends a node applying d with attributes a to in, defining one
// output per entry of out. It checks nothing: a Tracer checks calls, Verify
// checks graphs.
func (g *Graph) AddNode(d *op.Def, a op.Attrs, in []*Value, out []op.Meta) *Node {
	if len(out) == 1 && len(in) <= len(nodeBlock{}.in) && len(out[0].Shape) <= len(nodeBlock{}.sh) {
		// The common node, in one allocation: the Fused mode records a
		// graph op by op, and these were five or six allocations each.
		b := &nodeBlock{}
		n, v := &b.n, &b.v
		n.Op, n.Attrs = d, a
		if in != nil {
			n.In = b.in[:len(in):len(in)]
			copy(n.In, in)
		}
		m := out[0]
		sh := b.sh[:len(m.Shape):len(m.Shape)]
		copy(sh, m.Shape)
		*v = Value{ID: g.nextID, Meta: op.Meta{Shape: sh, DType: m.DType, Wrapped: m.Wrapped}, Def: n, g: g}
		g.nextID++
		b.out[0] = v
		n.Out = b.out[:]
		g.Nodes = append(g.Nodes, n)
		return n
	}
	n := &Node{Op: d, Attrs: a, In: slices.Clone(in)}
	n.Out = make([]*Value, 0, len(out))
	for i, m := range out {
		n.Out = append(n.Out, g.newValue(m, n, i))
	}
	g.Nodes = append(g.Nodes, n)
	return n
}

// nodeBlock is a node of one output, at most four inputs and an output
// of rank at most four, with its value and slices' arrays (AddNode).
type nodeBlock struct {
	n   Node
	v   Value
	out [1]*Value
	in  [4]*Value
	sh  [4]int
}

// AddConst appends a Constant node of shape and dtype m holding raw
// (little-endian element bytes, row-major) and returns its value.
func (g *Graph) AddConst(m op.Meta, raw []byte) *Value {
	n := &Node{Data: raw}
	n.Out = []*Value{g.newValue(m, n, 0)}
	g.Nodes = append(g.Nodes, n)
	return n.Out[0]
}

// SetOutputs sets the graph's outputs.
func (g *Graph) SetOutputs(vs ...*Value) { g.Outputs = slices.Clone(vs) }

// NumValues returns the number of values defined (parameters and node outputs).
func (g *Graph) NumValues() int {
	n := len(g.Params)
	for _, nd := range g.Nodes {
		if nd != nil {
			n += len(nd.Out)
		}
	}
	return n
}

// Uses returns, for every value, the number of times it is used as a node
// input or a graph output.
func (g *Graph) Uses() map[*Value]int {
	u := make(map[*Value]int)
	for _, n := range g.Nodes {
		if n == nil {
			continue
		}
		for _, v := range n.In {
			if v != nil {
				u[v]++
			}
		}
	}
	for _, v := range g.Outputs {
		u[v]++
	}
	return u
}

func cloneMeta(m op.Meta) op.Meta {
	s := slices.Clone(m.Shape)
	if s == nil {
		s = []int{}
	}
	return op.Meta{Shape: s, DType: m.DType, Wrapped: m.Wrapped}
}

// rebuilder copies nodes of a source graph into a new graph, remapping values.
type rebuilder struct {
	src, dst *Graph
	vmap     map[*Value]*Value
}

func newRebuilder(src *Graph) *rebuilder {
	dst := New()
	dst.DefaultFloat = src.DefaultFloat
	return newRebuilderInto(src, dst)
}

// newRebuilderInto is newRebuilder appending to dst, which must be empty.
func newRebuilderInto(src, dst *Graph) *rebuilder {
	r := &rebuilder{src: src, dst: dst, vmap: make(map[*Value]*Value)}
	for _, p := range src.Params {
		r.vmap[p] = dst.Param(p.Meta)
	}
	return r
}

// mapIn returns the new values of n's inputs.
func (r *rebuilder) mapIn(in []*Value) []*Value {
	out := make([]*Value, len(in))
	for i, v := range in {
		if v != nil {
			out[i] = r.vmap[v]
		}
	}
	return out
}

// copyNode appends a copy of n with inputs in and maps its outputs.
func (r *rebuilder) copyNode(n *Node, in []*Value) *Node {
	var nn *Node
	if n.IsConst() {
		v := r.dst.AddConst(n.Out[0].Meta, n.Data)
		nn = v.Def
	} else {
		metas := make([]op.Meta, len(n.Out))
		for i, o := range n.Out {
			metas[i] = o.Meta
		}
		nn = r.dst.AddNode(n.Op, n.Attrs, in, metas)
	}
	for i, o := range n.Out {
		r.vmap[o] = nn.Out[i]
	}
	return nn
}

func (r *rebuilder) finish() *Graph {
	outs := make([]*Value, len(r.src.Outputs))
	for i, v := range r.src.Outputs {
		outs[i] = r.vmap[v]
	}
	r.dst.SetOutputs(outs...)
	return r.dst
}
