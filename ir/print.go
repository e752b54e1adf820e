package ir

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// maxPrintedElems bounds how many elements of a constant String prints.
const maxPrintedElems = 16

// String returns the graph's canonical text form:
//
//	graph(%0: f32[4,8], %1: f32[16,8]) {
//	  %2 = linear(%0, %1, _) {precision="highest"} : f32[4,16]
//	  %3 = constant 0.5 (wrapped) : f32[]
//	  %4 = mul(%2, %3) : f32[4,16]
//	  return %4
//	}
//
// Attributes are sorted by name; "_" is an absent optional input; integer
// attributes print without a decimal point and float ones with one (1 vs
// 1.0), as promotion tells them apart. It is stable across runs.
func (g *Graph) String() string {
	var sb strings.Builder
	sb.WriteString("graph(")
	for i, p := range g.Params {
		if i > 0 {
			sb.WriteString(", ")
		}
		if p == nil {
			sb.WriteString("<nil>")
			continue
		}
		fmt.Fprintf(&sb, "%s: %s", valueName(p), metaString(p.Meta))
	}
	sb.WriteString(") {\n")
	for _, n := range g.Nodes {
		sb.WriteString("  ")
		sb.WriteString(n.String())
		sb.WriteByte('\n')
	}
	sb.WriteString("  return ")
	for i, v := range g.Outputs {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(valueName(v))
	}
	sb.WriteString("\n}\n")
	return sb.String()
}

// String returns the node's line of the graph's text form.
func (n *Node) String() string {
	if n == nil {
		return "<nil node>"
	}
	var sb strings.Builder
	for i, o := range n.Out {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(valueName(o))
	}
	if len(n.Out) == 0 {
		sb.WriteString("()")
	}
	sb.WriteString(" = ")
	if n.IsConst() {
		sb.WriteString("constant ")
		if len(n.Out) == 1 && n.Out[0] != nil {
			sb.WriteString(constString(n.Out[0].Meta, n.Data))
			if n.Out[0].Meta.Wrapped {
				sb.WriteString(" (wrapped)")
			}
		} else {
			fmt.Fprintf(&sb, "<%d outputs>", len(n.Out))
		}
	} else {
		sb.WriteString(n.Op.Name)
		sb.WriteByte('(')
		for i, v := range n.In {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(valueName(v))
		}
		sb.WriteByte(')')
		if len(n.Attrs) > 0 {
			sb.WriteString(" {")
			sb.WriteString(attrsString(n.Attrs))
			sb.WriteByte('}')
		}
	}
	sb.WriteString(" : ")
	for i, o := range n.Out {
		if i > 0 {
			sb.WriteString(", ")
		}
		if o == nil {
			sb.WriteString("<nil>")
			continue
		}
		sb.WriteString(metaString(o.Meta))
	}
	return sb.String()
}

func valueName(v *Value) string {
	if v == nil {
		return "_"
	}
	return "%" + strconv.Itoa(v.ID)
}

// metaString renders a shape and dtype as "f32[2,3]" ("f32[]" for 0-d).
func metaString(m op.Meta) string {
	var sb strings.Builder
	sb.WriteString(m.DType.String())
	sb.WriteByte('[')
	for i, d := range m.Shape {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(d))
	}
	sb.WriteByte(']')
	return sb.String()
}

func sortedKeys(a op.Attrs) []string { return appendSortedKeys(make([]string, 0, len(a)), a) }

// appendSortedKeys appends a's attribute names to keys, sorted.
func appendSortedKeys(keys []string, a op.Attrs) []string {
	n := len(keys)
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys[n:])
	return keys
}

func attrsString(a op.Attrs) string {
	var sb strings.Builder
	for i, k := range sortedKeys(a) {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.WriteString(attrString(a[k]))
	}
	return sb.String()
}

// attrString renders one normalized attribute value.
func attrString(v any) string {
	switch x := v.(type) {
	case nil:
		return "none"
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return floatString(x, 64)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return strconv.Quote(x)
	case dtype.DType:
		return x.String()
	case []int:
		parts := make([]string, len(x))
		for i, d := range x {
			parts[i] = strconv.Itoa(d)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case []float64:
		parts := make([]string, len(x))
		for i, f := range x {
			parts[i] = floatString(f, 64)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

// floatString formats f exactly (shortest round-trip form) and marks it as
// a float ("2.0", not "2").
func floatString(f float64, bits int) string {
	s := strconv.FormatFloat(f, 'g', -1, bits)
	if math.IsInf(f, 0) || math.IsNaN(f) || strings.ContainsAny(s, ".e") {
		return s
	}
	return s + ".0"
}

// constString renders a constant's elements ("0.5", "[1, 2, 3]").
func constString(m op.Meta, raw []byte) string {
	n := op.Numel(m.Shape)
	if !m.DType.Valid() || n < 0 || len(raw) != n*m.DType.Size() {
		return fmt.Sprintf("<%d bytes>", len(raw))
	}
	elem := func(i int) string {
		switch {
		case m.DType == dtype.Bool:
			return strconv.FormatBool(raw[i] != 0)
		case m.DType.IsFloat():
			bits := 32
			if m.DType == dtype.F64 {
				bits = 64
			}
			return floatString(dtype.Float64At(m.DType, raw, i), bits)
		default:
			return strconv.FormatInt(dtype.Int64At(m.DType, raw, i), 10)
		}
	}
	if len(m.Shape) == 0 {
		return elem(0)
	}
	parts := make([]string, 0, min(n, maxPrintedElems)+1)
	for i := 0; i < n && i < maxPrintedElems; i++ {
		parts = append(parts, elem(i))
	}
	if n > maxPrintedElems {
		parts = append(parts, fmt.Sprintf("... (%d elements)", n))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
