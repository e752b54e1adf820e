package constrain

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// validate is a tiny independent JSON-schema validator for the subset the
// compiler supports (tests only). It works on encoding/json's decoding of
// both the schema and the value, and also checks this package's output
// form: properties in schema order, whitespace only as allowed.
func validate(schemaText, text string) error {
	var schema any
	if err := json.Unmarshal([]byte(schemaText), &schema); err != nil {
		return fmt.Errorf("schema: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("parse: %v", err)
	}
	if dec.More() {
		return fmt.Errorf("trailing data")
	}
	var plain any
	if err := json.Unmarshal([]byte(text), &plain); err != nil {
		return fmt.Errorf("encoding/json.Unmarshal: %v", err)
	}
	if err := checkWhitespace(text); err != nil {
		return err
	}
	vd := &validator{root: schema}
	return vd.check(schema, v, "")
}

// checkWhitespace: outside strings, whitespace is only one space right
// after ':' or ','.
func checkWhitespace(text string) error {
	in, esc := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case in && esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\n' || c == '\t' || c == '\r'):
			if c != ' ' || i == 0 || (text[i-1] != ':' && text[i-1] != ',') {
				return fmt.Errorf("whitespace %q at %d outside the policy in %q", c, i, text)
			}
		}
	}
	return nil
}

type validator struct{ root any }

func (vd *validator) check(s, v any, path string) error {
	switch sch := s.(type) {
	case bool:
		if !sch {
			return fmt.Errorf("%s: false schema", path)
		}
		return nil
	case map[string]any:
		return vd.checkMap(sch, v, path)
	}
	return fmt.Errorf("bad schema %T", s)
}

func (vd *validator) checkMap(s map[string]any, v any, path string) error {
	if ref, ok := s["$ref"].(string); ok {
		parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
		var target any = vd.root
		for _, p := range parts {
			target = target.(map[string]any)[p]
		}
		return vd.check(target, v, path)
	}
	if c, ok := s["const"]; ok {
		if !equalJSON(c, v) {
			return fmt.Errorf("%s: %v is not const %v", path, v, c)
		}
	}
	if e, ok := s["enum"].([]any); ok {
		if !slices.ContainsFunc(e, func(x any) bool { return equalJSON(x, v) }) {
			return fmt.Errorf("%s: %v not in enum %v", path, v, e)
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		alts, ok := s[kw].([]any)
		if !ok {
			continue
		}
		n := 0
		for _, a := range alts {
			if vd.check(a, v, path) == nil {
				n++
			}
		}
		if n == 0 || (kw == "oneOf" && n > 1) {
			return fmt.Errorf("%s: %d alternatives of %s match", path, n, kw)
		}
	}
	if t, ok := s["type"]; ok {
		var types []string
		switch x := t.(type) {
		case string:
			types = []string{x}
		case []any:
			for _, y := range x {
				types = append(types, y.(string))
			}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return hasType(t, v) }) {
			return fmt.Errorf("%s: %v (%T) is not of type %v", path, v, v, types)
		}
	}
	switch x := v.(type) {
	case string:
		n := utf8.RuneCountInString(x)
		if m, ok := s["minLength"].(float64); ok && float64(n) < m {
			return fmt.Errorf("%s: %q shorter than %v", path, x, m)
		}
		if m, ok := s["maxLength"].(float64); ok && float64(n) > m {
			return fmt.Errorf("%s: %q longer than %v", path, x, m)
		}
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(x) {
			return fmt.Errorf("%s: %q does not match %q", path, x, p)
		}
	case []any:
		if m, ok := s["minItems"].(float64); ok && float64(len(x)) < m {
			return fmt.Errorf("%s: %d items < %v", path, len(x), m)
		}
		if m, ok := s["maxItems"].(float64); ok && float64(len(x)) > m {
			return fmt.Errorf("%s: %d items > %v", path, len(x), m)
		}
		if it, ok := s["items"]; ok {
			for i, e := range x {
				if err := vd.check(it, e, fmt.Sprintf("%s/%d", path, i)); err != nil {
					return err
				}
			}
		}
	case map[string]any:
		props, hasProps := s["properties"].(map[string]any)
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, ok := x[r.(string)]; !ok {
					return fmt.Errorf("%s: required %q missing", path, r)
				}
			}
		}
		for k, e := range x {
			ps, ok := props[k]
			if !ok {
				if hasProps || s["additionalProperties"] == false {
					return fmt.Errorf("%s: additional property %q", path, k)
				}
				continue
			}
			if err := vd.check(ps, e, path+"/"+k); err != nil {
				return err
			}
		}
	}
	return nil
}

func hasType(t string, v any) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		return ok && !strings.ContainsAny(string(n), ".eE")
	}
	return false
}

// equalJSON compares a schema value (float64 numbers) with a decoded value
// (json.Number numbers).
func equalJSON(a, b any) bool {
	return reflect.DeepEqual(normalize(a), normalize(b))
}

func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	}
	return v
}

// checkOrder checks that the object keys of text appear in the order of
// the schema's properties (the compiler's ordering policy); it walks both
// with encoding/json's token stream.
func checkOrder(schemaText, text string) error {
	var schema any
	_ = json.Unmarshal([]byte(schemaText), &schema)
	_ = schema
	// Orders are checked per object by the key sequence only: collect each
	// object's keys in text order and check they are a subsequence of some
	// properties list of the schema text, in that list's order.
	orders := propertyOrders(schemaText)
	dec := json.NewDecoder(strings.NewReader(text))
	var stack [][]string
	var inObj []bool
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, nil)
				inObj = append(inObj, true)
				expectKey = true
				continue
			case '[':
				inObj = append(inObj, false)
			case '}':
				keys := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				inObj = inObj[:len(inObj)-1]
				if !orderOK(keys, orders) {
					return fmt.Errorf("keys %v not in any properties order %v", keys, orders)
				}
			case ']':
				inObj = inObj[:len(inObj)-1]
			}
		case string:
			if expectKey {
				stack[len(stack)-1] = append(stack[len(stack)-1], t)
				expectKey = false
				continue
			}
		}
		expectKey = len(inObj) > 0 && inObj[len(inObj)-1]
	}
	return nil
}

// propertyOrders returns the key order of every "properties" object in the
// schema text.
func propertyOrders(schemaText string) [][]string {
	var out [][]string
	dec := json.NewDecoder(strings.NewReader(schemaText))
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return nil
		}
		if d == '[' {
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err := dec.Token()
			return err
		}
		for dec.More() {
			kt, _ := dec.Token()
			k := kt.(string)
			if k == "properties" {
				if _, err := dec.Token(); err != nil { // '{'
					return err
				}
				var keys []string
				for dec.More() {
					pk, _ := dec.Token()
					keys = append(keys, pk.(string))
					if err := walk(); err != nil {
						return err
					}
				}
				dec.Token() // '}'
				out = append(out, keys)
				continue
			}
			if err := walk(); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	_ = walk()
	return out
}

func orderOK(keys []string, orders [][]string) bool {
	if len(keys) <= 1 {
		return true
	}
	for _, o := range orders {
		j := 0
		for _, p := range o {
			if j < len(keys) && keys[j] == p {
				j++
			}
		}
		if j == len(keys) {
			return true
		}
	}
	// Free objects have any order; accept when no list contains them all.
	for _, o := range orders {
		if slices.Contains(o, keys[0]) {
			return false
		}
	}
	return true
}
