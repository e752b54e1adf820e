package constrain

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// genValue writes a random value valid for schema s (encoding/json's
// decoding of the schema) in the output form: properties in order, spaces
// after ':' and ',' when spaced. Patterns take a value from patternSamples.
func genValue(rng *rand.Rand, root, s any, b *strings.Builder, spaced bool, depth int) {
	sep, colon := ",", ":"
	if spaced {
		sep, colon = ", ", ": "
	}
	m, _ := s.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		target := root
		for _, p := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			target = target.(map[string]any)[p]
		}
		genValue(rng, root, target, b, spaced, depth)
		return
	}
	if c, ok := m["const"]; ok {
		t, _ := canonical(toOrdered(c))
		b.WriteString(t)
		return
	}
	if e, ok := m["enum"].([]any); ok {
		t, _ := canonical(toOrdered(e[rng.IntN(len(e))]))
		b.WriteString(t)
		return
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if alts, ok := m[kw].([]any); ok {
			genValue(rng, root, alts[rng.IntN(len(alts))], b, spaced, depth)
			return
		}
	}
	typ, _ := m["type"].(string)
	if ts, ok := m["type"].([]any); ok {
		typ = ts[rng.IntN(len(ts))].(string)
	}
	if typ == "" {
		if _, ok := m["properties"]; ok {
			typ = "object"
		} else {
			types := []string{"null", "boolean", "integer", "number", "string", "array", "object"}
			if depth > 3 {
				types = types[:5]
			}
			typ = types[rng.IntN(len(types))]
		}
	}
	switch typ {
	case "null":
		b.WriteString("null")
	case "boolean":
		b.WriteString([]string{"true", "false"}[rng.IntN(2)])
	case "integer":
		fmt.Fprintf(b, "%d", rng.Int64N(2e15)-1e15)
	case "number":
		b.WriteString([]string{"0", "-0.5", "1e5", "3.25E-7", "123456789012", "-7e+12", "0.000001"}[rng.IntN(7)])
	case "string":
		if p, ok := m["pattern"].(string); ok {
			ss := patternSamples[p]
			b.WriteString(encodeString(ss[rng.IntN(len(ss))]))
			return
		}
		lo, hi := 0, 8
		if v, ok := m["minLength"].(float64); ok {
			lo = int(v)
		}
		if v, ok := m["maxLength"].(float64); ok {
			hi = int(v)
		}
		n := lo + rng.IntN(hi-lo+1)
		pool := []rune("ab Z09_\"\\/\n\t\u00e9日😀{}[],:")
		var rs []rune
		for range n {
			rs = append(rs, pool[rng.IntN(len(pool))])
		}
		b.WriteString(encodeString(string(rs)))
	case "array":
		lo, hi := 0, 3
		if v, ok := m["minItems"].(float64); ok {
			lo = int(v)
		}
		if v, ok := m["maxItems"].(float64); ok {
			hi = int(v)
		}
		if depth > 3 {
			hi = lo
		}
		n := lo + rng.IntN(hi-lo+1)
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteString(sep)
			}
			genValue(rng, root, m["items"], b, spaced, depth+1)
		}
		b.WriteByte(']')
	case "object":
		b.WriteByte('{')
		req := map[string]bool{}
		if r, ok := m["required"].([]any); ok {
			for _, x := range r {
				req[x.(string)] = true
			}
		}
		first := true
		for _, k := range propertyKeys(m) {
			if !req[k] && rng.IntN(2) == 0 {
				continue
			}
			if !first {
				b.WriteString(sep)
			}
			first = false
			b.WriteString(encodeString(k) + colon)
			genValue(rng, root, m["properties"].(map[string]any)[k], b, spaced, depth+1)
		}
		if _, ok := m["properties"]; !ok && depth < 3 && rng.IntN(2) == 0 {
			b.WriteString(`"k\u00e9y"` + colon)
			genValue(rng, root, nil, b, spaced, depth+1)
		}
		b.WriteByte('}')
	}
}

// propertyKeys returns the properties of an object schema in schema text
// order, recovered by re-encoding (encoding/json sorts map keys, so the
// order comes from orderedProps, filled when the test schema is parsed).
func propertyKeys(m map[string]any) []string {
	if keys, ok := m["\x00order"].([]string); ok {
		return keys
	}
	return nil
}

// parseWithOrder decodes a schema with encoding/json and records each
// properties object's key order under "\x00order" in its parent.
func parseWithOrder(schema string) any {
	o, err := decodeOrdered([]byte(schema))
	if err != nil {
		panic(err)
	}
	return fromOrdered(o)
}

func fromOrdered(v any) any {
	switch x := v.(type) {
	case *object:
		m := map[string]any{}
		for _, k := range x.keys {
			m[k] = fromOrdered(x.m[k])
		}
		if p, ok := x.m["properties"].(*object); ok {
			m["\x00order"] = p.keys
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fromOrdered(e)
		}
		return out
	case json.Number:
		f, _ := x.Float64()
		return f
	}
	return v
}

// toOrdered turns a generic value into the decoder's form for canonical.
func toOrdered(v any) any {
	switch x := v.(type) {
	case map[string]any:
		o := &object{m: map[string]any{}}
		for k, e := range x {
			if k == "\x00order" {
				continue
			}
			o.keys = append(o.keys, k)
			o.m[k] = toOrdered(e)
		}
		return o
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toOrdered(e)
		}
		return out
	case float64:
		return json.Number(fmt.Sprint(x))
	}
	return v
}

var patternSamples = map[string][]string{
	"^[0-9]{5}(-[0-9]{4})?$": {"12345", "00000-1234"},
	"ab+c":                   {"abc", "xxabbbc", "abc\"\\\n"},
	"^[A-Z][a-z]*$":          {"A", "Hello"},
	"^x+$":                   {"x", "xxxxx"},
}

// TestGeneratedValuesAccepted is the other direction of the random walks:
// values generated from each schema (independently of the automaton), in
// both whitespace forms, are accepted and complete.
func TestGeneratedValuesAccepted(t *testing.T) {
	v, err := NewVocab(synthVocab(), []int{0})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range testSchemas {
		schema := tc.schema
		if schema == "" {
			schema = `{"type":"object"}`
		}
		root := parseWithOrder(schema)
		gr := compileFor(t, v, tc.schema)
		rng := rand.New(rand.NewPCG(7, uint64(len(tc.name))))
		for i := range 50 {
			var b strings.Builder
			genValue(rng, root, root, &b, i%2 == 1, 0)
			text := b.String()
			if err := validate(schema, text); err != nil {
				t.Fatalf("%s: generator made an invalid %q: %v", tc.name, text, err)
			}
			if i < 2 {
				t.Logf("%s: %s", tc.name, text)
			}
			if ok, complete := accepts(gr, text); !ok || !complete {
				t.Fatalf("%s: %q: accepted %v, complete %v", tc.name, text, ok, complete)
			}
		}
	}
}
