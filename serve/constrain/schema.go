package constrain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ErrSchema is wrapped by every schema compilation error (errors.Is).
var ErrSchema = errors.New("constrain: invalid or unsupported JSON schema")

// UnsupportedError is a schema keyword (or keyword value) the compiler does
// not support; Path is the JSON pointer of the schema holding it.
type UnsupportedError struct {
	Keyword string
	Path    string
	Detail  string
}

func (e *UnsupportedError) Error() string {
	p := e.Path
	if p == "" {
		p = "/"
	}
	msg := fmt.Sprintf("constrain: unsupported JSON-schema keyword %q at %s", e.Keyword, p)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap makes an UnsupportedError match ErrSchema.
func (e *UnsupportedError) Unwrap() error { return ErrSchema }

func schemaErr(path, format string, args ...any) error {
	if path == "" {
		path = "/"
	}
	return fmt.Errorf("%w: at %s: %s", ErrSchema, path, fmt.Sprintf(format, args...))
}

type kind uint8

const (
	kRoot    kind = iota // items = the top-level value
	kUnion               // alts, dispatched on the first byte
	kLits                // a finite set of literal JSON texts (enum, const, true/false/null)
	kNumber              // any JSON number
	kInteger             // a JSON integer
	kString              // a JSON string, optionally bounded or matched by a pattern
	kObject              // an object with known properties in order
	kFreeObj             // any JSON object
	kArray               // an array of items
)

// Limits of numbers (see the package doc).
const (
	maxIntDigits  = 16
	maxFracDigits = 16
	maxExpDigits  = 2
)

type prop struct {
	name     string
	node     int32
	required bool
}

// node is one compiled schema. Nodes refer to each other by index, so
// recursive schemas ($ref) are plain cycles.
type node struct {
	kind kind
	// kRoot, kArray: the child; kArray also its bounds (maxItems -1 = none).
	items              int32
	minItems, maxItems int32
	// kString: bounds in code points (-1 = none), an optional pattern; free
	// strings (no bounds, no pattern) keep a constant state in their body.
	minLen, maxLen int32
	pat            *dfa
	free           bool
	// kLits: the literals; kObject: the keys ("name" with quotes).
	trie *trie
	// kObject: properties in order; nextReq[p] is the first required
	// property at or after p (len(props) when none).
	props   []prop
	nextReq []int32
	// kUnion: the alternatives and, per first byte, the one to run (-1
	// none, -2 several: multi[b] lists them, and all are followed).
	alts  []int32
	first *[256]int32
	multi map[byte][]int32
	oneOf bool
	// ref is the $ref target of a placeholder node until it is resolved.
	ref string
}

type grammar struct {
	nodes []node
	// builtin nodes
	any, freeStr int32
}

type compiler struct {
	g     *grammar
	defs  map[string]any // "#/$defs/x" -> schema
	refs  map[string]int32
	nrefs int
}

// compileSchema compiles a JSON schema document.
func compileSchema(doc []byte) (*grammar, error) {
	root, err := decodeOrdered(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	c := newCompiler()
	if m, ok := root.(*object); ok {
		for _, kw := range []string{"$defs", "definitions"} {
			d, ok := m.m[kw]
			if !ok {
				continue
			}
			dm, ok := d.(*object)
			if !ok {
				return nil, schemaErr("/"+kw, "must be an object")
			}
			for _, name := range dm.keys {
				c.defs["#/"+kw+"/"+escapePointer(name)] = dm.m[name]
			}
		}
	}
	top, err := c.compile(root, "")
	if err != nil {
		return nil, err
	}
	if err := c.finish(top); err != nil {
		return nil, err
	}
	return c.g, nil
}

// jsonObjectGrammar is response_format json_object: any JSON object.
func jsonObjectGrammar() *grammar {
	c := newCompiler()
	top := c.add(node{kind: kFreeObj})
	if err := c.finish(top); err != nil {
		panic(err) // the builtin grammar always compiles
	}
	return c.g
}

func newCompiler() *compiler {
	c := &compiler{g: &grammar{}, defs: map[string]any{}, refs: map[string]int32{}}
	c.add(node{kind: kRoot}) // node 0
	c.g.freeStr = c.add(node{kind: kString, minLen: 0, maxLen: -1, free: true})
	c.g.any = c.add(node{kind: kUnion})
	obj := c.add(node{kind: kFreeObj})
	arr := c.add(node{kind: kArray, items: c.g.any, maxItems: -1})
	num := c.add(node{kind: kNumber})
	lits := c.add(node{kind: kLits, trie: newTrie([]string{"true", "false", "null"})})
	c.g.nodes[c.g.any].alts = []int32{obj, arr, c.g.freeStr, num, lits}
	return c
}

func (c *compiler) add(n node) int32 {
	c.g.nodes = append(c.g.nodes, n)
	return int32(len(c.g.nodes) - 1)
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// annotations are keywords with no effect on validation.
var annotations = map[string]bool{
	"title": true, "description": true, "$schema": true, "$id": true, "$comment": true,
	"examples": true, "default": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"$defs": true, "definitions": true,
}

// keywordsOf lists the keywords each type accepts.
var typeKeywords = map[string][]string{
	"object":  {"properties", "required", "additionalProperties"},
	"array":   {"items", "minItems", "maxItems"},
	"string":  {"minLength", "maxLength", "pattern"},
	"number":  nil,
	"integer": nil,
	"boolean": nil,
	"null":    nil,
}

var known = func() map[string]bool {
	m := map[string]bool{"type": true, "enum": true, "const": true, "anyOf": true, "oneOf": true, "$ref": true}
	for _, kws := range typeKeywords {
		for _, k := range kws {
			m[k] = true
		}
	}
	return m
}()

func (c *compiler) compile(s any, path string) (int32, error) {
	switch v := s.(type) {
	case bool:
		if v {
			return c.g.any, nil
		}
		return 0, &UnsupportedError{Keyword: "false", Path: path, Detail: "a schema that matches nothing"}
	case *object:
		return c.compileObject(v.m, path)
	default:
		return 0, schemaErr(path, "a schema must be an object or a boolean, got %T", s)
	}
}

func (c *compiler) compileObject(m map[string]any, path string) (int32, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !known[k] && !annotations[k] {
			return 0, &UnsupportedError{Keyword: k, Path: path}
		}
	}
	if ref, ok := m["$ref"]; ok {
		r, ok := ref.(string)
		if !ok {
			return 0, schemaErr(path+"/$ref", "must be a string")
		}
		for _, k := range keys {
			if k != "$ref" && !annotations[k] {
				return 0, &UnsupportedError{Keyword: k, Path: path, Detail: "keywords next to $ref"}
			}
		}
		if id, ok := c.refs[r]; ok {
			return id, nil
		}
		if r == "#" {
			return 0, &UnsupportedError{Keyword: "$ref", Path: path, Detail: `"#" (the root)`}
		}
		target, ok := c.defs[r]
		if !ok {
			return 0, &UnsupportedError{Keyword: "$ref", Path: path, Detail: fmt.Sprintf("%q is not a #/$defs/... or #/definitions/... entry", r)}
		}
		// A placeholder first, so that a recursive reference finds it.
		id := c.add(node{kind: kUnion, ref: r})
		c.refs[r] = id
		c.nrefs++
		if c.nrefs > 1000 {
			return 0, schemaErr(path, "too many $refs")
		}
		to, err := c.compile(target, strings.TrimPrefix(r, "#"))
		if err != nil {
			return 0, err
		}
		// The placeholder becomes a one-alternative union.
		c.g.nodes[id].alts = []int32{to}
		return id, nil
	}
	if v, ok := m["const"]; ok {
		if _, also := m["enum"]; also {
			return 0, &UnsupportedError{Keyword: "const", Path: path, Detail: "together with enum"}
		}
		return c.literals([]any{v}, path+"/const")
	}
	if v, ok := m["enum"]; ok {
		vs, ok := v.([]any)
		if !ok || len(vs) == 0 {
			return 0, schemaErr(path+"/enum", "must be a non-empty array")
		}
		return c.literals(vs, path+"/enum")
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		v, ok := m[kw]
		if !ok {
			continue
		}
		for _, k := range keys {
			if k != kw && !annotations[k] {
				return 0, &UnsupportedError{Keyword: k, Path: path, Detail: "keywords next to " + kw}
			}
		}
		vs, ok := v.([]any)
		if !ok || len(vs) == 0 {
			return 0, schemaErr(path+"/"+kw, "must be a non-empty array")
		}
		alts := make([]int32, len(vs))
		for i, a := range vs {
			id, err := c.compile(a, fmt.Sprintf("%s/%s/%d", path, kw, i))
			if err != nil {
				return 0, err
			}
			alts[i] = id
		}
		return c.add(node{kind: kUnion, alts: alts, oneOf: kw == "oneOf"}), nil
	}
	var types []string
	switch t := m["type"].(type) {
	case nil:
		if _, ok := m["type"]; ok {
			return 0, schemaErr(path+"/type", "must be a string or an array of strings")
		}
		switch {
		case has(m, "properties", "required", "additionalProperties"):
			types = []string{"object"}
		case has(m, "items", "minItems", "maxItems"):
			types = []string{"array"}
		case has(m, "minLength", "maxLength", "pattern"):
			types = []string{"string"}
		default:
			return c.g.any, nil
		}
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			s, ok := x.(string)
			if !ok {
				return 0, schemaErr(path+"/type", "must be a string or an array of strings")
			}
			types = append(types, s)
		}
		if len(types) == 0 {
			return 0, schemaErr(path+"/type", "is empty")
		}
	default:
		return 0, schemaErr(path+"/type", "must be a string or an array of strings")
	}
	for _, t := range types {
		if _, ok := typeKeywords[t]; !ok {
			return 0, schemaErr(path+"/type", "unknown type %q", t)
		}
	}
	// Every type-specific keyword must belong to one of the types.
	for _, k := range keys {
		if annotations[k] || k == "type" {
			continue
		}
		ok := false
		for _, t := range types {
			ok = ok || slices.Contains(typeKeywords[t], k)
		}
		if !ok {
			return 0, &UnsupportedError{Keyword: k, Path: path, Detail: fmt.Sprintf("not a keyword of type %s", strings.Join(types, "/"))}
		}
	}
	alts := make([]int32, 0, len(types))
	for _, t := range types {
		id, err := c.typed(t, m, path)
		if err != nil {
			return 0, err
		}
		alts = append(alts, id)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return c.add(node{kind: kUnion, alts: alts}), nil
}

func has(m map[string]any, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

func (c *compiler) typed(t string, m map[string]any, path string) (int32, error) {
	switch t {
	case "null":
		return c.add(node{kind: kLits, trie: newTrie([]string{"null"})}), nil
	case "boolean":
		return c.add(node{kind: kLits, trie: newTrie([]string{"true", "false"})}), nil
	case "number":
		return c.add(node{kind: kNumber}), nil
	case "integer":
		return c.add(node{kind: kInteger}), nil
	case "string":
		n := node{kind: kString, maxLen: -1}
		var err error
		if n.minLen, err = count(m, "minLength", path, 0); err != nil {
			return 0, err
		}
		if n.maxLen, err = count(m, "maxLength", path, -1); err != nil {
			return 0, err
		}
		if n.maxLen >= 0 && n.minLen > n.maxLen {
			return 0, schemaErr(path, "minLength %d > maxLength %d", n.minLen, n.maxLen)
		}
		if p, ok := m["pattern"]; ok {
			ps, ok := p.(string)
			if !ok {
				return 0, schemaErr(path+"/pattern", "must be a string")
			}
			d, err := compilePattern(ps)
			if err != nil {
				return 0, &UnsupportedError{Keyword: "pattern", Path: path, Detail: err.Error()}
			}
			n.pat = d
		}
		n.free = n.minLen == 0 && n.maxLen < 0 && n.pat == nil
		if n.free {
			return c.g.freeStr, nil
		}
		return c.add(n), nil
	case "array":
		n := node{kind: kArray, items: c.g.any}
		var err error
		if n.minItems, err = count(m, "minItems", path, 0); err != nil {
			return 0, err
		}
		if n.maxItems, err = count(m, "maxItems", path, -1); err != nil {
			return 0, err
		}
		if n.maxItems >= 0 && n.minItems > n.maxItems {
			return 0, schemaErr(path, "minItems %d > maxItems %d", n.minItems, n.maxItems)
		}
		if it, ok := m["items"]; ok {
			if _, isList := it.([]any); isList {
				return 0, &UnsupportedError{Keyword: "items", Path: path, Detail: "an array of schemas (tuple validation)"}
			}
			id, err := c.compile(it, path+"/items")
			if err != nil {
				return 0, err
			}
			n.items = id
		}
		return c.add(n), nil
	case "object":
		return c.object(m, path)
	}
	return 0, schemaErr(path, "unknown type %q", t)
}

func count(m map[string]any, key, path string, def int32) (int32, error) {
	v, ok := m[key]
	if !ok {
		return def, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, schemaErr(path+"/"+key, "must be a non-negative integer")
	}
	i, err := strconv.ParseInt(string(n), 10, 32)
	if err != nil || i < 0 || i > 1<<20 {
		return 0, schemaErr(path+"/"+key, "must be a non-negative integer up to 2^20, got %s", n)
	}
	return int32(i), nil
}

func (c *compiler) object(m map[string]any, path string) (int32, error) {
	if ap, ok := m["additionalProperties"]; ok {
		if b, isBool := ap.(bool); !isBool || b {
			if _, hasProps := m["properties"]; hasProps || !isBool {
				return 0, &UnsupportedError{Keyword: "additionalProperties", Path: path, Detail: "only false is supported (with properties)"}
			}
		}
	}
	pv, ok := m["properties"]
	if !ok {
		if _, ok := m["required"]; ok {
			return 0, &UnsupportedError{Keyword: "required", Path: path, Detail: "without properties"}
		}
		if ap, ok := m["additionalProperties"]; ok && ap == false {
			return c.add(node{kind: kLits, trie: newTrie([]string{"{}"})}), nil
		}
		return c.add(node{kind: kFreeObj}), nil
	}
	po, ok := pv.(*object)
	if !ok {
		return 0, schemaErr(path+"/properties", "must be an object")
	}
	// The properties' order is the schema text's (decodeOrdered keeps it).
	names, pm := po.keys, po.m
	req := map[string]bool{}
	if rv, ok := m["required"]; ok {
		rs, ok := rv.([]any)
		if !ok {
			return 0, schemaErr(path+"/required", "must be an array of strings")
		}
		for _, r := range rs {
			s, ok := r.(string)
			if !ok {
				return 0, schemaErr(path+"/required", "must be an array of strings")
			}
			if _, ok := pm[s]; !ok {
				return 0, schemaErr(path+"/required", "%q is not a property", s)
			}
			req[s] = true
		}
	}
	if len(names) == 0 {
		return c.add(node{kind: kLits, trie: newTrie([]string{"{}"})}), nil
	}
	id := c.add(node{kind: kObject})
	props := make([]prop, len(names))
	keys := make([]string, len(names))
	for i, name := range names {
		child, err := c.compile(pm[name], path+"/properties/"+escapePointer(name))
		if err != nil {
			return 0, err
		}
		props[i] = prop{name: name, node: child, required: req[name]}
		keys[i] = encodeString(name)
	}
	next := make([]int32, len(props)+1)
	next[len(props)] = int32(len(props))
	for i := len(props) - 1; i >= 0; i-- {
		next[i] = next[i+1]
		if props[i].required {
			next[i] = int32(i)
		}
	}
	n := &c.g.nodes[id]
	n.props, n.nextReq, n.trie = props, next, newTrie(keys)
	return id, nil
}

// literals compiles enum/const values to their compact JSON texts.
func (c *compiler) literals(vs []any, path string) (int32, error) {
	texts := make([]string, 0, len(vs))
	for i, v := range vs {
		t, err := canonical(v)
		if err != nil {
			return 0, schemaErr(fmt.Sprintf("%s/%d", path, i), "%v", err)
		}
		if !slices.Contains(texts, t) {
			texts = append(texts, t)
		}
	}
	return c.add(node{kind: kLits, trie: newTrie(texts)}), nil
}

// canonical is the compact JSON text of a decoded value: no whitespace,
// object keys sorted, numbers as written, no HTML escaping.
func canonical(v any) (string, error) {
	var b strings.Builder
	if err := writeCanonical(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeCanonical(b *strings.Builder, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		b.WriteString(string(x))
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	case string:
		b.WriteString(encodeString(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case *object:
		keys := slices.Clone(x.keys)
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(encodeString(k))
			b.WriteByte(':')
			if err := writeCanonical(b, x.m[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("unexpected value %T", v)
	}
	return nil
}

// encodeString is s as a JSON string literal, without HTML escaping.
func encodeString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// finish resolves the root and the unions' first-byte tables.
func (c *compiler) finish(top int32) error {
	g := c.g
	g.nodes[0].items = top
	firsts := make([]*[256]bool, len(g.nodes))
	state := make([]uint8, len(g.nodes)) // 0 new, 1 in progress, 2 done
	var first func(id int32) (*[256]bool, error)
	first = func(id int32) (*[256]bool, error) {
		if state[id] == 2 {
			return firsts[id], nil
		}
		if state[id] == 1 {
			return nil, schemaErr("", "a $ref cycle that consumes nothing (left recursion)")
		}
		state[id] = 1
		var f [256]bool
		n := &g.nodes[id]
		switch n.kind {
		case kRoot:
			return nil, schemaErr("", "internal: root in a union")
		case kLits:
			for _, e := range n.trie.nodes[0].edges {
				f[e.b] = true
			}
		case kNumber, kInteger:
			f['-'] = true
			for b := '0'; b <= '9'; b++ {
				f[b] = true
			}
		case kString:
			f['"'] = true
		case kObject, kFreeObj:
			f['{'] = true
		case kArray:
			f['['] = true
		case kUnion:
			var cand [256][]int32
			for _, a := range n.alts {
				af, err := first(a)
				if err != nil {
					return nil, err
				}
				for b, ok := range af {
					if ok && !slices.Contains(cand[b], a) {
						cand[b] = append(cand[b], a)
					}
				}
			}
			table := new([256]int32)
			var multi map[byte][]int32
			merged := map[string]int32{}
			for b := range table {
				as := cand[b]
				switch len(as) {
				case 0:
					table[b] = -1
					continue
				case 1:
					table[b] = as[0]
					f[b] = true
					continue
				}
				f[b] = true
				key := fmt.Sprint(as)
				if m, ok := merged[key]; ok {
					table[b] = m
					continue
				}
				if m, ok := c.mergeLits(as); ok {
					merged[key] = m
					table[b] = m
					continue
				}
				if g.nodes[id].oneOf {
					return nil, &UnsupportedError{Keyword: "oneOf", Detail: fmt.Sprintf("two alternatives can start with %q; oneOf alternatives must differ in their first character (enum/const alternatives are merged; anyOf allows overlaps)", rune(b))}
				}
				if multi == nil {
					multi = map[byte][]int32{}
				}
				multi[byte(b)] = as
				table[b] = -2
			}
			n = &g.nodes[id] // mergeLits may have grown g.nodes
			n.first, n.multi = table, multi
		}
		firsts[id] = &f
		state[id] = 2
		return &f, nil
	}
	for id := range g.nodes {
		if _, err := first(int32(id)); err != nil && g.nodes[id].kind != kRoot {
			return err
		}
		firsts = append(firsts, make([]*[256]bool, len(g.nodes)-len(firsts))...)
		state = append(state, make([]uint8, len(g.nodes)-len(state))...)
	}
	return g.checkFinite()
}

// checkFinite rejects schemas with no finite value (a required property
// or a minItems array that always recurses): the automaton could never
// finish one.
func (g *grammar) checkFinite() error {
	fin := make([]bool, len(g.nodes))
	for changed := true; changed; {
		changed = false
		for id := range g.nodes {
			if fin[id] {
				continue
			}
			n := &g.nodes[id]
			ok := false
			switch n.kind {
			case kRoot:
				ok = fin[n.items]
			case kLits, kNumber, kInteger, kString, kFreeObj:
				ok = true
			case kArray:
				ok = n.minItems == 0 || fin[n.items]
			case kObject:
				ok = true
				for _, p := range n.props {
					ok = ok && (!p.required || fin[p.node])
				}
			case kUnion:
				for _, a := range n.alts {
					ok = ok || fin[a]
				}
			}
			if ok {
				fin[id], changed = true, true
			}
		}
	}
	if !fin[0] {
		return schemaErr("", "the schema has no finite value (a required property or minItems recursion never ends)")
	}
	return nil
}

// mergeLits merges literal-set nodes (unions of one alternative are looked
// through) into a new node; false when one is not a literal set.
func (c *compiler) mergeLits(ids []int32) (int32, bool) {
	var texts []string
	for _, id := range ids {
		n := &c.g.nodes[c.throughUnions(id)]
		if n.kind != kLits {
			return 0, false
		}
		for _, t := range n.trie.texts {
			if !slices.Contains(texts, t) {
				texts = append(texts, t)
			}
		}
	}
	return c.add(node{kind: kLits, trie: newTrie(texts)}), true
}

func (c *compiler) throughUnions(id int32) int32 {
	for i := 0; i < 100; i++ {
		n := &c.g.nodes[id]
		if n.kind != kUnion || len(n.alts) != 1 {
			return id
		}
		id = n.alts[0]
	}
	return id
}

// trie is a byte trie over a few strings (literals, object keys).
type trie struct {
	texts []string
	nodes []tnode
}

type tedge struct {
	b  byte
	to int32
}

type tnode struct {
	edges []tedge
	term  int32   // index of the text ending here, -1 none
	idx   []int32 // sorted indices of the texts below (and at) this node
}

func newTrie(texts []string) *trie {
	t := &trie{texts: texts, nodes: []tnode{{term: -1}}}
	for i, s := range texts {
		at := int32(0)
		t.nodes[0].idx = append(t.nodes[0].idx, int32(i))
		for j := 0; j < len(s); j++ {
			to, ok := t.child(at, s[j])
			if !ok {
				t.nodes = append(t.nodes, tnode{term: -1})
				to = int32(len(t.nodes) - 1)
				t.nodes[at].edges = append(t.nodes[at].edges, tedge{s[j], to})
			}
			at = to
			t.nodes[at].idx = append(t.nodes[at].idx, int32(i))
		}
		t.nodes[at].term = int32(i)
	}
	return t
}

func (t *trie) child(at int32, b byte) (int32, bool) {
	for _, e := range t.nodes[at].edges {
		if e.b == b {
			return e.to, true
		}
	}
	return 0, false
}

// anyIn reports whether a text below node at has an index in [lo, hi].
func (t *trie) anyIn(at, lo, hi int32) bool {
	idx := t.nodes[at].idx
	i, _ := slices.BinarySearch(idx, lo)
	return i < len(idx) && idx[i] <= hi
}

// object is a decoded JSON object that remembers its keys' order.
type object struct {
	keys []string
	m    map[string]any
}

// decodeOrdered decodes one JSON document: objects as *object, numbers as
// json.Number, the rest as encoding/json does.
func decodeOrdered(doc []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the schema")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > 200 {
		return nil, errors.New("schema nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{m: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string) // the decoder only yields string keys here
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := o.m[k]; dup {
					return nil, fmt.Errorf("duplicate key %q", k)
				}
				o.keys = append(o.keys, k)
				o.m[k] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return a, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return tok, nil
	}
}
