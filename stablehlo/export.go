// Package stablehlo exports gotpu IR graphs as StableHLO programs in MLIR
// text, and verifies such text structurally.
//
// Export walks an ir.Graph whose nodes are primitives, views and constants
// (run ir.Lower first) and calls each op's StableHLO emitter (op.Def's
// StableHLO slot, defined in package op) through an op.HLOEmitter that
// prints MLIR. The program is one module holding func.func @main, whose
// arguments are the graph's parameters and whose results are its outputs;
// every operation is printed in MLIR's generic form
//
//	%3 = "stablehlo.add"(%1, %2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
//
// with regions in parentheses after the operands and attributes in braces.
// CHLO ops (chlo.erf, chlo.erfc, chlo.erf_inv) are used where StableHLO has
// no op; StableHLO's own tooling legalizes them.
//
// Verify is a structural verifier for that text (no MLIR parser is
// available in Go): SSA well-formedness with region scoping, known op
// names, parseable types that agree between definitions and uses, the
// function's return types, and shape rules for the common ops.
package stablehlo

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// ErrExport is wrapped by every Export error.
var ErrExport = errors.New("stablehlo export")

// Export returns g as a StableHLO module named name (characters outside
// [A-Za-z0-9_] become '_') in MLIR text. g must hold only primitives, views
// and constants (ir.Lower's output); an op without an emitter, or one whose
// emitter fails (a data-dependent shape, an in-place op), is an error naming
// the op and its node.
func Export(g *ir.Graph, name string) (string, error) {
	if g == nil {
		return "", fmt.Errorf("%w: nil graph", ErrExport)
	}
	if err := g.Verify(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrExport, err)
	}
	f := &function{}
	body := &block{f: f, indent: "    "}
	vals := make(map[*ir.Value]op.HLOValue)
	var args []string
	for i, p := range g.Params {
		v := op.HLOValue{Name: fmt.Sprintf("%%arg%d", i), Type: op.HLOTypeOf(p.Meta)}
		vals[p] = v
		args = append(args, v.Name+": "+v.Type.String())
	}
	for _, n := range g.Nodes {
		if err := exportNode(body, n, vals); err != nil {
			return "", err
		}
		if f.err != nil {
			return "", fmt.Errorf("%w: %s: %v", ErrExport, nodeName(n), f.err)
		}
	}
	var outs []op.HLOValue
	var outTypes []string
	for _, o := range g.Outputs {
		v, ok := vals[o]
		if !ok {
			return "", fmt.Errorf("%w: output %%%d is not defined", ErrExport, o.ID)
		}
		outs = append(outs, v)
		outTypes = append(outTypes, v.Type.String())
	}
	body.Emit("func.return", outs, nil, nil)
	if f.err != nil {
		return "", fmt.Errorf("%w: %v", ErrExport, f.err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "module @%s {\n", symbol(name))
	fmt.Fprintf(&sb, "  func.func @main(%s) -> (%s) {\n", strings.Join(args, ", "), strings.Join(outTypes, ", "))
	for _, l := range body.lines {
		sb.WriteString(l)
		sb.WriteByte('\n')
	}
	sb.WriteString("  }\n}\n")
	return sb.String(), nil
}

func nodeName(n *ir.Node) string {
	var outs []string
	for _, o := range n.Out {
		outs = append(outs, fmt.Sprintf("%%%d", o.ID))
	}
	return fmt.Sprintf("%s (node %s)", n.Name(), strings.Join(outs, ","))
}

// exportNode emits one graph node and records its results.
func exportNode(body *block, n *ir.Node, vals map[*ir.Value]op.HLOValue) (err error) {
	if n.IsConst() {
		m := n.Out[0].Meta
		lit, err := op.HLODense(m.DType, m.Shape, n.Data)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrExport, nodeName(n), err)
		}
		vals[n.Out[0]] = body.Emit("stablehlo.constant", nil, []op.HLOAttr{{Name: "value", Value: lit}}, []op.HLOType{op.HLOTypeOf(m)})[0]
		return nil
	}
	if n.Op.StableHLO == nil {
		hint := ""
		if n.Op.Kind == op.Composite {
			hint = " (a composite: lower the graph with ir.Lower first)"
		}
		return fmt.Errorf("%w: %s has no StableHLO emitter%s: %w", ErrExport, nodeName(n), hint, op.ErrHLOUnsupported)
	}
	in := make([]op.HLOValue, len(n.In))
	for i, v := range n.In {
		if v != nil {
			in[i] = vals[v]
		}
	}
	out := make([]op.Meta, len(n.Out))
	for i, o := range n.Out {
		out[i] = o.Meta
	}
	defer func() {
		// Emitters index their inputs as the op's schema says; a graph
		// that contradicts it must give an error, not a crash.
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: emitter panicked: %v", ErrExport, nodeName(n), r)
		}
	}()
	res, err := n.Op.StableHLO(body, in, out, n.Attrs)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrExport, nodeName(n), err)
	}
	if len(res) != len(out) {
		return fmt.Errorf("%w: %s: emitter returned %d values for %d outputs", ErrExport, nodeName(n), len(res), len(out))
	}
	for i, v := range res {
		want := op.HLOTypeOf(out[i])
		if v.Type.String() != want.String() {
			return fmt.Errorf("%w: %s: emitter output %d is %s, the op's shape rule says %s", ErrExport, nodeName(n), i, v.Type, want)
		}
		vals[n.Out[i]] = v
	}
	return nil
}

// symbol makes name a bare MLIR symbol.
func symbol(name string) string {
	var sb strings.Builder
	for i, r := range name {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if ok {
			sb.WriteRune(r)
		} else {
			sb.WriteByte('_')
		}
	}
	if sb.Len() == 0 {
		return "main"
	}
	return sb.String()
}

// function holds the state shared by a function's blocks.
type function struct {
	next int
	err  error
}

func (f *function) fail(format string, args ...any) {
	if f.err == nil {
		f.err = fmt.Errorf(format, args...)
	}
}

// block prints operations into lines; it implements op.HLOEmitter.
type block struct {
	f      *function
	indent string
	lines  []string
}

func typeList(ts []op.HLOType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.String()
	}
	return strings.Join(s, ", ")
}

// Emit prints one operation in generic form (op.HLOEmitter).
func (b *block) Emit(name string, operands []op.HLOValue, attrs []op.HLOAttr, results []op.HLOType, regions ...op.HLORegion) []op.HLOValue {
	var names, inTypes []string
	for i, v := range operands {
		if !v.Valid() {
			b.f.fail("%s: operand %d is absent", name, i)
		}
		names = append(names, v.Name)
		inTypes = append(inTypes, v.Type.String())
	}
	for _, t := range results {
		if slices.ContainsFunc(t.Shape, func(d int) bool { return d < 0 }) {
			b.f.fail("%s: result type %s has a negative dimension", name, t)
		}
	}
	var out []op.HLOValue
	lhs := ""
	if len(results) > 0 {
		id := b.f.next
		b.f.next++
		base := fmt.Sprintf("%%%d", id)
		if len(results) == 1 {
			out = []op.HLOValue{{Name: base, Type: results[0]}}
			lhs = base + " = "
		} else {
			for i, t := range results {
				out = append(out, op.HLOValue{Name: fmt.Sprintf("%s#%d", base, i), Type: t})
			}
			lhs = fmt.Sprintf("%s:%d = ", base, len(results))
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s%s%q(%s)", b.indent, lhs, name, strings.Join(names, ", "))
	if len(regions) > 0 {
		sb.WriteString(" (")
		for i, r := range regions {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(b.region(name, r))
		}
		sb.WriteString(")")
	}
	if len(attrs) > 0 {
		parts := make([]string, len(attrs))
		for i, a := range attrs {
			parts[i] = a.Name + " = " + a.Value
		}
		sb.WriteString(" {" + strings.Join(parts, ", ") + "}")
	}
	res := typeList(results)
	if len(results) != 1 {
		res = "(" + res + ")"
	}
	fmt.Fprintf(&sb, " : (%s) -> %s", strings.Join(inTypes, ", "), res)
	b.lines = append(b.lines, sb.String())
	return out
}

// region prints r as "{ ^bb0(args): ops stablehlo.return }".
func (b *block) region(name string, r op.HLORegion) string {
	nb := &block{f: b.f, indent: b.indent + "  "}
	var args []op.HLOValue
	var decl []string
	for _, t := range r.Args {
		v := op.HLOValue{Name: fmt.Sprintf("%%%d", b.f.next), Type: t}
		b.f.next++
		args = append(args, v)
		decl = append(decl, v.Name+": "+t.String())
	}
	var ret []op.HLOValue
	if r.Body == nil {
		b.f.fail("%s: region without a body", name)
	} else {
		ret = r.Body(nb, args)
	}
	if len(ret) == 0 {
		b.f.fail("%s: region body returns nothing", name)
	}
	nb.Emit("stablehlo.return", ret, nil, nil)
	var sb strings.Builder
	sb.WriteString("{\n")
	fmt.Fprintf(&sb, "%s^bb0(%s):\n", b.indent+"  ", strings.Join(decl, ", "))
	for _, l := range nb.lines {
		sb.WriteString(l + "\n")
	}
	sb.WriteString(b.indent + "}")
	return sb.String()
}
