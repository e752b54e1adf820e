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
//
// A structure fingerprinted before in this process is found in a memo
// (fingerprint_memo.go) instead of being serialized and hashed again.
func (g *Graph) Fingerprint() string {
	sc := fpScratchPool.Get().(*fpScratch)
	defer fpScratchPool.Put(sc)
	ok := g.structTokens(sc)
	if ok {
		if fp, hit := fingerprints.get(sc.toks); hit {
			return fp
		}
	}
	sum := sha256.Sum256([]byte(g.canonical()))
	fp := hex.EncodeToString(sum[:])
	if ok {
		fingerprints.put(sc.toks, fp)
	}
	return fp
}

// canonical returns the serialization Fingerprint hashes. It is built with
// appends (no fmt, few allocations): fingerprints are taken on every Fused
// flush and compiled call.
func (g *Graph) canonical() string {
	b := make([]byte, 0, 64*(len(g.Nodes)+len(g.Params)+4))
	b = append(b, fingerprintVersion...)
	b = append(b, '\n')
	type ref struct{ node, idx int } // node -1: parameter idx
	refs := make(map[*Value]ref, g.NumValues())
	appendRef := func(b []byte, v *Value) []byte {
		if v == nil {
			return append(b, '_')
		}
		r, ok := refs[v]
		if !ok {
			return append(b, '?') // undefined here: Verify rejects such a graph
		}
		if r.node < 0 {
			return strconv.AppendInt(append(b, 'p'), int64(r.idx), 10)
		}
		b = strconv.AppendInt(append(b, 'n'), int64(r.node), 10)
		return strconv.AppendInt(append(b, '.'), int64(r.idx), 10)
	}
	appendOut := func(b []byte, o *Value) []byte {
		if o == nil {
			return append(b, "nil"...)
		}
		return appendMetaKey(b, o.Meta)
	}
	b = strconv.AppendInt(append(b, "params "...), int64(len(g.Params)), 10)
	b = append(b, '\n')
	for i, p := range g.Params {
		if p == nil {
			b = append(b, "p nil\n"...)
			continue
		}
		refs[p] = ref{-1, i}
		b = appendMetaKey(append(b, "p "...), p.Meta)
		b = append(b, '\n')
	}
	b = strconv.AppendInt(append(b, "nodes "...), int64(len(g.Nodes)), 10)
	b = append(b, '\n')
	for j, n := range g.Nodes {
		if n == nil {
			b = append(b, "nil\n"...)
			continue
		}
		if n.IsConst() {
			b = strconv.AppendInt(append(b, "c "...), int64(len(n.Out)), 10)
			for _, o := range n.Out {
				b = appendOut(append(b, ' '), o)
			}
			b = strconv.AppendInt(append(b, " data "...), int64(len(n.Data)), 10)
			b = hex.AppendEncode(append(b, ' '), n.Data)
		} else {
			b = strconv.AppendQuote(append(b, "n "...), n.Op.Name)
			b = strconv.AppendInt(append(b, " attrs "...), int64(len(n.Attrs)), 10)
			dyn := n.Op.DynamicAttrs()
			for _, k := range sortedKeys(n.Attrs) {
				b = strconv.AppendQuote(append(b, ' '), k)
				if slices.Contains(dyn, k) {
					// Run-time data (a seed, a learning rate): not structure.
					b = append(b, "=dynamic"...)
					continue
				}
				b = appendAttrKey(append(b, '='), n.Attrs[k])
			}
			b = strconv.AppendInt(append(b, " in "...), int64(len(n.In)), 10)
			for _, v := range n.In {
				b = appendRef(append(b, ' '), v)
			}
			b = strconv.AppendInt(append(b, " out "...), int64(len(n.Out)), 10)
			for _, o := range n.Out {
				b = appendOut(append(b, ' '), o)
			}
		}
		b = append(b, '\n')
		for k, o := range n.Out {
			if o != nil {
				refs[o] = ref{j, k}
			}
		}
	}
	b = strconv.AppendInt(append(b, "outputs "...), int64(len(g.Outputs)), 10)
	for _, v := range g.Outputs {
		b = appendRef(append(b, ' '), v)
	}
	b = append(b, '\n')
	return string(b)
}

// appendMetaKey appends metaKey(m).
func appendMetaKey(b []byte, m op.Meta) []byte {
	b = append(b, m.DType.String()...)
	b = append(b, '[')
	for i, d := range m.Shape {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(d), 10)
	}
	b = append(b, ']')
	if m.Wrapped {
		b = append(b, 'w')
	}
	return b
}

// appendAttrKey appends attrKey(v), without allocating for the common
// attribute types.
func appendAttrKey(b []byte, v any) []byte {
	switch x := v.(type) {
	case int:
		return strconv.AppendInt(append(b, "i:"...), int64(x), 10)
	case int64:
		return strconv.AppendInt(append(b, "l:"...), x, 10)
	case float64:
		return strconv.AppendUint(append(b, "f:"...), math.Float64bits(x), 16)
	case bool:
		return strconv.AppendBool(append(b, "b:"...), x)
	case []int:
		b = append(b, "I:["...)
		for i, d := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(d), 10)
		}
		return append(b, ']')
	}
	return append(b, attrKey(v)...)
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
