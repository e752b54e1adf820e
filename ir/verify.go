package ir

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gotpu/gotpu/op"
)

// Verify checks that g is a well-formed SSA graph: values are defined once
// with unique IDs, every input is defined before its use and every output is
// defined; each node's arity fits its op, its attributes are exactly their
// normalized form, its inputs are already promoted (op.PromotedDTypes would
// convert nothing) and of a dtype the op supports, and its output shapes and
// dtypes equal what the op's shape rule computes from its inputs; constants
// hold exactly their bytes. In-place ops are rejected. The error wraps
// ErrInvalid and names the first bad node.
func (g *Graph) Verify() error {
	ids := make(map[int]bool, g.NumValues())
	defined := make(map[*Value]bool, g.NumValues())
	define := func(v *Value) error {
		if v == nil {
			return fmt.Errorf("nil value")
		}
		if defined[v] {
			return fmt.Errorf("%s is defined twice", valueName(v))
		}
		if ids[v.ID] {
			return fmt.Errorf("value id %s is not unique", valueName(v))
		}
		if err := checkMeta(v.Meta); err != nil {
			return fmt.Errorf("%s: %v", valueName(v), err)
		}
		defined[v], ids[v.ID] = true, true
		return nil
	}
	for i, p := range g.Params {
		if err := define(p); err != nil {
			return fmt.Errorf("%w: parameter %d: %v", ErrInvalid, i, err)
		}
		if p.Def != nil || p.Index != i {
			return fmt.Errorf("%w: parameter %d: %s claims to be output %d of a node or parameter %d", ErrInvalid, i, valueName(p), p.Index, p.Index)
		}
		if p.Meta.Wrapped {
			return fmt.Errorf("%w: parameter %d: %s is marked as a wrapped scalar", ErrInvalid, i, valueName(p))
		}
	}
	for j, n := range g.Nodes {
		if n == nil {
			return fmt.Errorf("%w: node %d is nil", ErrInvalid, j)
		}
		if err := g.verifyNode(n, defined); err != nil {
			return fmt.Errorf("%w: node %d (%s): %w", ErrInvalid, j, nodeLabel(n), err)
		}
		for k, o := range n.Out {
			if err := define(o); err != nil {
				return fmt.Errorf("%w: node %d (%s): output %d: %v", ErrInvalid, j, nodeLabel(n), k, err)
			}
		}
	}
	for i, v := range g.Outputs {
		if v == nil || !defined[v] {
			return fmt.Errorf("%w: output %d (%s) is not defined in the graph", ErrInvalid, i, valueName(v))
		}
	}
	return nil
}

// nodeLabel names a node in errors: "%5 = add".
func nodeLabel(n *Node) string {
	outs := make([]string, len(n.Out))
	for i, o := range n.Out {
		outs[i] = valueName(o)
	}
	return strings.Join(outs, ", ") + " = " + n.Name()
}

func checkMeta(m op.Meta) error {
	if !m.DType.Valid() {
		return fmt.Errorf("invalid dtype %v", m.DType)
	}
	for _, d := range m.Shape {
		if d < 0 {
			return fmt.Errorf("negative dimension in shape %v", m.Shape)
		}
	}
	return nil
}

func (g *Graph) verifyNode(n *Node, defined map[*Value]bool) error {
	for k, o := range n.Out {
		if o == nil {
			return fmt.Errorf("output %d is nil", k)
		}
		if o.Def != n || o.Index != k {
			return fmt.Errorf("output %d (%s) does not point back to its node and position", k, valueName(o))
		}
	}
	if n.IsConst() {
		if len(n.In) != 0 || len(n.Attrs) != 0 {
			return fmt.Errorf("constant has inputs or attributes")
		}
		if len(n.Out) != 1 {
			return fmt.Errorf("constant has %d outputs, want 1", len(n.Out))
		}
		m := n.Out[0].Meta
		if err := checkMeta(m); err != nil {
			return err
		}
		if want := op.Numel(m.Shape) * m.DType.Size(); len(n.Data) != want {
			return fmt.Errorf("constant %s holds %d bytes, want %d", metaString(m), len(n.Data), want)
		}
		return nil
	}
	d := n.Op
	if reg, ok := op.Lookup(d.Name); !ok || reg != d {
		return fmt.Errorf("op %q is not the registered op of that name", d.Name)
	}
	if len(d.Inplace) > 0 {
		return fmt.Errorf("%w: %s", ErrInplace, d.Name)
	}
	if err := d.CheckArity(len(n.In)); err != nil {
		return err
	}
	for i, v := range n.In {
		if v == nil {
			if !d.InputOptional(i) {
				return fmt.Errorf("input %d (%s) is required", i, inputName(d, i))
			}
			continue
		}
		if !defined[v] {
			return fmt.Errorf("input %d (%s) is not defined before its use", i, valueName(v))
		}
	}
	na, err := d.Normalize(n.Attrs)
	if err != nil {
		return fmt.Errorf("attributes: %v", err)
	}
	if len(na) != len(n.Attrs) {
		return fmt.Errorf("attributes {%s} are not normalized (want {%s})", attrsString(n.Attrs), attrsString(na))
	}
	for k, v := range na {
		if cur, ok := n.Attrs[k]; !ok || attrKey(cur) != attrKey(v) {
			return fmt.Errorf("attribute %s=%s is not normalized (want %s)", k, attrString(n.Attrs[k]), attrString(v))
		}
	}
	metas := make([]op.Meta, len(n.In))
	for i, v := range n.In {
		if v != nil {
			metas[i] = v.Meta
		}
	}
	targets, _ := op.PromotedDTypes(d, metas, na, g.DefaultFloat)
	for i, v := range n.In {
		if v != nil && targets[i] != v.Meta.DType {
			return fmt.Errorf("input %d (%s) is %s but promotion wants %s (missing convert)", i, valueName(v), v.Meta.DType, targets[i])
		}
	}
	for _, v := range n.In {
		if v != nil {
			if !d.DTypes.Has(v.Meta.DType) {
				return fmt.Errorf("%s does not support dtype %s (supports %s)", d.Name, v.Meta.DType, d.DTypes)
			}
			break
		}
	}
	want, err := inferNode(d, n.In, na)
	if err != nil {
		return err
	}
	if len(want) != len(n.Out) {
		return fmt.Errorf("has %d outputs, shape rule says %d", len(n.Out), len(want))
	}
	for k, o := range n.Out {
		if o.Meta.DType != want[k].DType || !slices.Equal(o.Meta.Shape, want[k].Shape) || o.Meta.Wrapped {
			return fmt.Errorf("output %d (%s) is %s, shape rule says %s", k, valueName(o), metaKey(o.Meta), metaString(want[k]))
		}
	}
	return nil
}
