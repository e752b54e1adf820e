package ir

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// fingerprintVersion changes whenever the serialization below changes, so
// keys from an older encoding never collide with newer ones.
const fingerprintVersion = "gotpu-ir-fingerprint/2"

// Fingerprint returns the SHA-256 (lowercase hex) of a canonical
// serialization of the graph's structure: parameter shapes and dtypes, each
// node's op name, normalized attributes (sorted by name, typed, floats by
// their IEEE bits), inputs by position (parameter index, or defining node
// index and output index), output shapes and dtypes, constant payloads, and
// the graph outputs. Value IDs, pointers and map order do not enter it, so
// it is the same across runs, processes and machines for the same graph;
// DefaultFloat does not enter it either, nor do the values of dynamic
// attributes (op.Def.DynamicAttrs: seeds, learning rates, step counts),
// which compiled programs take per run.
func (g *Graph) Fingerprint() string {
	h := sha256.New()
	_, _ = h.Write([]byte(g.canonical()))
	return hex.EncodeToString(h.Sum(nil))
}

// canonical returns the serialization Fingerprint hashes.
func (g *Graph) canonical() string {
	var sb strings.Builder
	sb.WriteString(fingerprintVersion)
	sb.WriteByte('\n')
	ref := make(map[*Value]string, g.NumValues())
	fmt.Fprintf(&sb, "params %d\n", len(g.Params))
	for i, p := range g.Params {
		if p == nil {
			sb.WriteString("p nil\n")
			continue
		}
		ref[p] = "p" + strconv.Itoa(i)
		fmt.Fprintf(&sb, "p %s\n", metaKey(p.Meta))
	}
	fmt.Fprintf(&sb, "nodes %d\n", len(g.Nodes))
	for j, n := range g.Nodes {
		if n == nil {
			sb.WriteString("nil\n")
			continue
		}
		if n.IsConst() {
			fmt.Fprintf(&sb, "c %d", len(n.Out))
			for _, o := range n.Out {
				sb.WriteByte(' ')
				sb.WriteString(outKey(o))
			}
			fmt.Fprintf(&sb, " data %d %s", len(n.Data), hex.EncodeToString(n.Data))
		} else {
			fmt.Fprintf(&sb, "n %s attrs %d", strconv.Quote(n.Op.Name), len(n.Attrs))
			dyn := n.Op.DynamicAttrs()
			for _, k := range sortedKeys(n.Attrs) {
				if slices.Contains(dyn, k) {
					// Run-time data (a seed, a learning rate): not structure.
					fmt.Fprintf(&sb, " %s=dynamic", strconv.Quote(k))
					continue
				}
				fmt.Fprintf(&sb, " %s=%s", strconv.Quote(k), attrKey(n.Attrs[k]))
			}
			fmt.Fprintf(&sb, " in %d", len(n.In))
			for _, v := range n.In {
				sb.WriteByte(' ')
				sb.WriteString(refKey(ref, v))
			}
			fmt.Fprintf(&sb, " out %d", len(n.Out))
			for _, o := range n.Out {
				sb.WriteByte(' ')
				sb.WriteString(outKey(o))
			}
		}
		sb.WriteByte('\n')
		for k, o := range n.Out {
			if o != nil {
				ref[o] = "n" + strconv.Itoa(j) + "." + strconv.Itoa(k)
			}
		}
	}
	fmt.Fprintf(&sb, "outputs %d", len(g.Outputs))
	for _, v := range g.Outputs {
		sb.WriteByte(' ')
		sb.WriteString(refKey(ref, v))
	}
	sb.WriteByte('\n')
	return sb.String()
}

func refKey(ref map[*Value]string, v *Value) string {
	if v == nil {
		return "_"
	}
	if r, ok := ref[v]; ok {
		return r
	}
	return "?" // undefined here: Verify rejects such a graph
}

func outKey(o *Value) string {
	if o == nil {
		return "nil"
	}
	return metaKey(o.Meta)
}

// metaKey encodes a shape, dtype and wrapped flag: "f32[2,3]" or "f32[]w".
func metaKey(m op.Meta) string {
	s := metaString(m)
	if m.Wrapped {
		s += "w"
	}
	return s
}

// attrKey encodes an attribute value with its type, floats as IEEE bits.
func attrKey(v any) string {
	switch x := v.(type) {
	case nil:
		return "none"
	case int:
		return "i:" + strconv.Itoa(x)
	case int64:
		return "l:" + strconv.FormatInt(x, 10)
	case float64:
		return "f:" + strconv.FormatUint(math.Float64bits(x), 16)
	case bool:
		return "b:" + strconv.FormatBool(x)
	case string:
		return "s:" + strconv.Quote(x)
	case dtype.DType:
		return "t:" + x.String()
	case []int:
		parts := make([]string, len(x))
		for i, d := range x {
			parts[i] = strconv.Itoa(d)
		}
		return "I:[" + strings.Join(parts, ",") + "]"
	case []float64:
		parts := make([]string, len(x))
		for i, f := range x {
			parts[i] = strconv.FormatUint(math.Float64bits(f), 16)
		}
		return "F:[" + strings.Join(parts, ",") + "]"
	}
	// Not a normalized attribute (Verify rejects it); still deterministic
	// for the value types fmt prints without pointers.
	return "?:" + strconv.Quote(fmt.Sprintf("%T:%v", v, v))
}
