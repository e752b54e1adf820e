package constrain

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// testSchemas are the table of schemas the random walks run on.
var testSchemas = []struct {
	name, schema string
}{
	{"json_object", ""},
	{"person", `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"email":{"type":"string","maxLength":12}},"required":["name","age"],"additionalProperties":false}`},
	{"optional-only", `{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"null"},"c":{"type":"number"}}}`},
	{"required-last", `{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"},"z":{"type":"string","enum":["p","q r","s\"t"]}},"required":["z"]}`},
	{"shared-prefix-keys", `{"type":"object","properties":{"ab":{"type":"integer"},"a":{"type":"integer"},"abc":{"type":"integer"}},"required":["abc"]}`},
	{"array-bounds", `{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":4}`},
	{"array-of-objects", `{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string","minLength":1,"maxLength":3}}},"required":["id","tags"]},"maxItems":3}`},
	{"nullable", `{"type":"object","properties":{"v":{"type":["string","null"]},"w":{"anyOf":[{"type":"integer"},{"type":"array","items":{"type":"boolean"}},{"type":"null"}]}},"required":["v","w"]}`},
	{"enum-mixed", `{"enum":["red","green",1,2.5,true,null,{"k":[1,2]}]}`},
	{"const", `{"type":"object","properties":{"kind":{"const":"point"},"x":{"type":"number"}},"required":["kind","x"]}`},
	{"merged-lits", `{"anyOf":[{"const":"a"},{"enum":["ab","b"]},{"type":"integer"}]}`},
	{"pattern", `{"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]{5}(-[0-9]{4})?$"},"code":{"type":"string","pattern":"ab+c"},"id":{"type":"string","pattern":"^[A-Z][a-z]*$"}},"required":["zip","code","id"]}`},
	{"ref-recursive", `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},"required":["v"]}},"$ref":"#/$defs/node"}`},
	{"any", `{}`},
	{"top-number", `{"type":"number"}`},
	{"top-string", `{"type":"string","minLength":2,"maxLength":5}`},
	{"empty-object", `{"type":"object","properties":{}}`},
	{"anyOf-objects", `{"type":"array","items":{"anyOf":[{"type":"object","properties":{"a":{"type":"integer"},"k":{"const":"x"}},"required":["a"]},{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"boolean"}},"required":["b"]},{"type":"object","properties":{"k":{"const":"y"}}}]},"maxItems":3}`},
	{"anyOf-numbers", `{"type":"object","properties":{"n":{"anyOf":[{"type":"integer"},{"type":"number"},{"const":12}]},"s":{"anyOf":[{"type":"string","maxLength":2},{"type":"string","pattern":"^x+$"}]}},"required":["n","s"]}`},
	{"free-object-prop", `{"type":"object","properties":{"meta":{"type":"object"},"list":{"type":"array"}},"required":["meta","list"]}`},
}

// synthVocab is a small vocabulary with every single byte (so anything can
// be spelled) and multi-byte tokens that cross JSON structure: quotes with
// keys, closers with separators, split UTF-8 sequences.
func synthVocab() [][]byte {
	var v [][]byte
	v = append(v, nil) // id 0: a special token (EOS in the tests)
	for b := 0; b < 256; b++ {
		v = append(v, []byte{byte(b)})
	}
	for _, s := range []string{
		`{"`, `":`, `": `, `",`, `", "`, `"}`, `"]`, `}}`, `}]`, `]}`, `},{`, `}, {"`, `[{"`, `[]`, `{}`, `""`,
		`true`, `false`, `null`, `nul`, `tr`, `12`, `0.`, `.5`, `e+`, `1e`, `-1`, `00`, `007`, `3,`, `4]`, `5}`,
		`name`, `"name`, `"name":`, `"name": "`, `age`, `"age":`, `email`, `"id":`, `"tags":["`, `kids`, `"v":`,
		` "`, `, `, `,"`, ` `, `  `, `\n`, `\"`, `\\`, `\u00`, `\u00e9`, `\ud83d`, "\n", "\t",
		"é", "日本", "\xe6\x97", "\xa5", "\xf0\x9f\x98", "\x80", "\xed\xa0\x80", "\xc0\xaf",
		`red`, `"red"`, `gre`, `"p"`, `q r`, `s\"t`, `point`, `"point"`, `ab`, `abc`, `"ab":`, `"a":`, `"abc":`,
		`12345`, `-6789`, `ABC`, `Abc`, `bbb`, `{"k":[1,2]}`, `{"k":`, `2.5`, `1,2`,
	} {
		v = append(v, []byte(s))
	}
	return v
}

// byteTok maps each byte to its single-byte token id in synthVocab.
func byteTok(b byte) int { return int(b) + 1 }

func compileFor(t testing.TB, v *Vocab, schema string) *Grammar {
	t.Helper()
	if schema == "" {
		return v.JSONObject()
	}
	g, err := v.Schema([]byte(schema))
	if err != nil {
		t.Fatalf("Schema(%s): %v", schema, err)
	}
	return g
}

// shortestCompletion returns the shortest byte string that completes the
// value from s (breadth-first over bytes, states deduplicated by key).
func (g *grammar) shortestCompletion(s mstate) ([]byte, bool) {
	type item struct {
		s    mstate
		path []byte
	}
	seen := map[string]bool{string(s.key(nil)): true}
	queue := []item{{s, nil}}
	for len(queue) > 0 && len(seen) < 200000 {
		it := queue[0]
		queue = queue[1:]
		if g.canEndM(&it.s) {
			return it.path, true
		}
		for c := 0; c < 256; c++ {
			var ns mstate
			if !g.stepM(&it.s, byte(c), &ns) {
				continue
			}
			k := string(ns.key(nil))
			if seen[k] {
				continue
			}
			seen[k] = true
			queue = append(queue, item{ns, append(slices.Clone(it.path), byte(c))})
		}
	}
	return nil, false
}

// bruteAllowed is Allowed without the trie: every token stepped byte by
// byte.
func (gr *Grammar) bruteAllowed(s mstate) []int32 {
	var out []int32
	for id, t := range gr.v.tokens {
		if len(t) == 0 {
			continue
		}
		cur := s
		ok := true
		for _, b := range t {
			var next mstate
			if !gr.g.stepM(&cur, b, &next) {
				ok = false
				break
			}
			cur = next
		}
		if ok {
			out = append(out, int32(id))
		}
	}
	return out
}

// randomWalk generates one sequence: random allowed tokens for a while,
// then the shortest completion in single-byte tokens, then EOS. It checks
// every step against the brute-force mask and Accept's verdicts.
func randomWalk(t *testing.T, gr *Grammar, rng *rand.Rand, steps int, brute bool, byteID func(byte) int) string {
	t.Helper()
	c := gr.New()
	allow := make([]bool, gr.v.Size())
	var out, pending []byte
	for step := 0; ; step++ {
		clear(allow)
		more := c.Allowed(allow)
		var ids []int
		for id, ok := range allow {
			if ok && !slices.Contains(gr.v.eos, id) {
				ids = append(ids, id)
			}
		}
		if brute {
			want := gr.bruteAllowed(c.s)
			got := make([]int32, len(ids))
			for i, id := range ids {
				got[i] = int32(id)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("after %q: trie walk allows %d tokens, brute force %d", out, len(got), len(want))
			}
		}
		if more != (len(ids) > 0) {
			t.Fatalf("after %q: Allowed returned %v with %d tokens", out, more, len(ids))
		}
		eosOK := allow[gr.v.eos[0]]
		if eosOK != gr.g.canEndM(&c.s) {
			t.Fatalf("after %q: EOS allowed %v, complete %v", out, eosOK, gr.g.canEndM(&c.s))
		}
		if !more && !eosOK {
			t.Fatalf("dead end after %q", out)
		}
		// A disallowed token must be rejected and leave the state alone.
		for try := 0; try < 3; try++ {
			id := 1 + rng.IntN(gr.v.Size()-1)
			if !allow[id] {
				before := string(c.s.key(nil))
				if err := c.Accept(id); err == nil {
					t.Fatalf("after %q: Accept(%d %q) succeeded for a disallowed token", out, id, gr.v.tokens[id])
				}
				if string(c.s.key(nil)) != before {
					t.Fatalf("a rejected Accept changed the state")
				}
			}
		}
		var pick int
		switch {
		case step < steps && len(ids) > 0 && !(eosOK && rng.IntN(4) == 0):
			pick = ids[rng.IntN(len(ids))]
		case eosOK:
			if err := c.Accept(gr.v.eos[0]); err != nil {
				t.Fatalf("Accept(EOS) after %q: %v", out, err)
			}
			if c.Allowed(allow) {
				t.Fatalf("Allowed true after EOS")
			}
			return string(out)
		default:
			if len(pending) == 0 {
				comp, ok := gr.g.shortestCompletion(c.s)
				if !ok || len(comp) == 0 {
					t.Fatalf("no completion after %q", out)
				}
				pending = comp
			}
			pick = byteID(pending[0])
			pending = pending[1:]
			if !allow[pick] {
				t.Fatalf("after %q: completion byte %q not allowed", out, gr.v.tokens[pick])
			}
		}
		if err := c.Accept(pick); err != nil {
			t.Fatalf("after %q: Accept(%d %q): %v", out, pick, gr.v.tokens[pick], err)
		}
		out = append(out, gr.v.tokens[pick]...)
		if step > steps+2000 {
			t.Fatalf("walk does not end: %q", out)
		}
	}
}

func TestRandomWalks(t *testing.T) {
	v, err := NewVocab(synthVocab(), []int{0})
	if err != nil {
		t.Fatal(err)
	}
	walks := 60
	if testing.Short() {
		walks = 20
	}
	for _, tc := range testSchemas {
		t.Run(tc.name, func(t *testing.T) {
			gr := compileFor(t, v, tc.schema)
			rng := rand.New(rand.NewPCG(1, uint64(len(tc.name))))
			schema := tc.schema
			if schema == "" {
				schema = `{"type":"object"}`
			}
			distinct := map[string]bool{}
			for w := 0; w < walks; w++ {
				text := randomWalk(t, gr, rng, 1+rng.IntN(40), w < 10, byteTok)
				if err := validate(schema, text); err != nil {
					t.Fatalf("walk %d produced %q: %v", w, text, err)
				}
				if err := checkOrder(schema, text); err != nil {
					t.Fatalf("walk %d produced %q: %v", w, text, err)
				}
				distinct[text] = true
			}
			t.Logf("%d walks, %d distinct texts, e.g. %q", walks, len(distinct), firstKey(distinct))
		})
	}
}

func firstKey(m map[string]bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	slices.SortStableFunc(keys, func(a, b string) int { return len(b) - len(a) })
	return keys[0]
}

// accepts feeds text byte by byte and reports whether every byte is
// accepted and the result is complete.
func accepts(gr *Grammar, text string) (ok, complete bool) {
	c := gr.New()
	for i := 0; i < len(text); i++ {
		if c.Accept(byteTok(text[i])) != nil {
			return false, false
		}
	}
	return true, c.Complete()
}

func TestAcceptReject(t *testing.T) {
	v, err := NewVocab(synthVocab(), []int{0})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		schema string
		good   []string // complete values
		bad    []string // rejected at some byte or incomplete
	}{
		{`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"]}`,
			[]string{`{"a":1}`, `{"a": -12}`, `{"a":0, "b":"x"}`, `{"a":0,"b":"\u00e9\n"}`},
			[]string{`{}`, `{"b":"x"}`, `{"b":"x","a":1}`, `{"a":1.5}`, `{"a":01}`, `{ "a":1}`, `{"a":1 }`, `{"a":1,}`, `{"a":1,"c":2}`, `{"a":1}x`, `{"a":1}{`, `{"a":  1}`, `{"a":1,"b":"x"`}},
		{`{"type":"array","items":{"type":"number"},"minItems":1,"maxItems":2}`,
			[]string{`[1]`, `[1.5e3, -0.25]`, `[0,1E+99]`},
			[]string{`[]`, `[1,2,3]`, `[1.]`, `[.5]`, `[1e]`, `[1e100]`, `[12345678901234567]`, `[NaN]`, `[1,]`}},
		{`{"type":"string","maxLength":3}`,
			[]string{`"abc"`, `"日本語"`, `""`, `"\"\\"`},
			[]string{`"abcd"`, `"\u0041"`, "\"a\nb\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", `"ab`}},
		{`{"type":"string","pattern":"^a[0-9]+$"}`,
			[]string{`"a1"`, `"a0123"`},
			[]string{`"a"`, `"ab"`, `"ba1"`, `"a1 "`}},
		{`{"enum":["x","xy",12,1]}`,
			[]string{`"x"`, `"xy"`, `12`, `1`},
			[]string{`"y"`, `123`, `2`, `"xyz"`}},
		{`{"type":["boolean","null"]}`,
			[]string{`true`, `false`, `null`},
			[]string{`nul`, `True`, `0`}},
		{"", // json_object
			[]string{`{}`, `{"a":[1,{"b":null}], "c": "d"}`, `{"":""}`},
			[]string{`[]`, `1`, `{"a"}`, `{'a':1}`, `{"a":1,,"b":2}`}},
	}
	for _, tc := range cases {
		gr := compileFor(t, v, tc.schema)
		for _, s := range tc.good {
			if ok, complete := accepts(gr, s); !ok || !complete {
				t.Errorf("schema %s: %q: accepted %v, complete %v; want both", tc.schema, s, ok, complete)
			}
		}
		for _, s := range tc.bad {
			if ok, complete := accepts(gr, s); ok && complete {
				t.Errorf("schema %s: %q accepted as complete", tc.schema, s)
			}
		}
	}
}

func TestSchemaErrors(t *testing.T) {
	cases := []struct {
		schema, keyword, msg string
	}{
		{`{"type":"number","minimum":1}`, "minimum", ""},
		{`{"type":"string","format":"date-time"}`, "format", ""},
		{`{"allOf":[{"type":"string"}]}`, "allOf", ""},
		{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":true}`, "additionalProperties", ""},
		{`{"type":"object","properties":{"a":{"type":"object","patternProperties":{}}}}`, "patternProperties", "/properties/a"},
		{`{"oneOf":[{"type":"object"},{"type":"object","properties":{"a":{}}}]}`, "oneOf", "first character"},
		{`{"type":"string","pattern":"\\bword"}`, "pattern", `\b`},
		{`{"type":"array","items":[{"type":"string"}]}`, "items", "tuple"},
		{`{"$ref":"http://example.com/s.json"}`, "$ref", ""},
		{`{"type":"string","minItems":1}`, "minItems", "not a keyword of type string"},
		{`false`, "false", ""},
	}
	for _, tc := range cases {
		_, err := compileSchema([]byte(tc.schema))
		var ue *UnsupportedError
		if !errors.As(err, &ue) || ue.Keyword != tc.keyword {
			t.Errorf("%s: err %v, want an UnsupportedError for %q", tc.schema, err, tc.keyword)
			continue
		}
		if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), tc.keyword) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v: want ErrSchema naming %q and %q", tc.schema, err, tc.keyword, tc.msg)
		}
	}
	for _, bad := range []string{`{`, `{"type":"strin"}`, `{"type":"string","maxLength":-1}`, `{"enum":[]}`,
		`{"type":"object","properties":{"a":{}},"required":["b"]}`, `{"type":"string","minLength":3,"maxLength":2}`,
		`{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, `{} {}`,
		`{"$defs":{"a":{"type":"object","properties":{"x":{"$ref":"#/$defs/a"}},"required":["x"]}},"$ref":"#/$defs/a"}`,
		`{"$defs":{"a":{"type":"array","items":{"$ref":"#/$defs/a"},"minItems":1}},"$ref":"#/$defs/a"}`} {
		if _, err := compileSchema([]byte(bad)); !errors.Is(err, ErrSchema) {
			t.Errorf("%s: err %v, want ErrSchema", bad, err)
		}
	}
}

func TestVocabTrie(t *testing.T) {
	toks := [][]byte{[]byte("ab"), nil, []byte("a"), []byte("abc"), []byte("b"), []byte("ab"), []byte("x"), []byte("ba")}
	v, err := NewVocab(toks, []int{6})
	if err != nil {
		t.Fatal(err)
	}
	// Paths: a(2) ab(0,5) abc(3) b(4) ba(7); x is EOS and not in the trie.
	var got []string
	for i := 1; i < len(v.b); i++ {
		got = append(got, fmt.Sprintf("%c%d:%d%v", v.b[i], v.depth[i], v.end[i], v.ids[v.tok[i]:v.tok[i+1]]))
	}
	want := []string{"a1:4[2]", "b2:4[0 5]", "c3:4[3]", "b1:6[4]", "a2:6[7]"}
	if !slices.Equal(got, want) {
		t.Fatalf("trie %v, want %v", got, want)
	}
	if _, err := NewVocab(toks, []int{8}); err == nil {
		t.Fatal("EOS outside the vocabulary accepted")
	}
}

func TestNewAndEOS(t *testing.T) {
	c, err := New([]byte(`{"type":"integer"}`), synthVocab(), []int{0})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Accept(0); err == nil {
		t.Fatal("EOS accepted before the value")
	}
	for _, b := range []byte("42") {
		if err := c.Accept(byteTok(b)); err != nil {
			t.Fatal(err)
		}
	}
	allow := make([]bool, len(synthVocab()))
	if !c.Allowed(allow) || !allow[0] || !allow[byteTok('7')] || allow[byteTok('.')] {
		t.Fatalf("after 42: want digits and EOS allowed, '.' not")
	}
	if err := c.Accept(0); err != nil || !c.Done() {
		t.Fatalf("EOS after 42: %v", err)
	}
	if err := c.Accept(byteTok('1')); err == nil {
		t.Fatal("token after EOS accepted")
	}
	if _, err := New([]byte(`{"type":"number","maximum":3}`), synthVocab(), []int{0}); err == nil {
		t.Fatal("unsupported keyword accepted")
	}
}

func TestResponseFormat(t *testing.T) {
	v, err := NewVocab(synthVocab(), []int{0})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		rf      string
		nilG    bool
		good    string
		errWant string
	}{
		{rf: `{"type":"text"}`, nilG: true},
		{rf: `{"type":"json_object"}`, good: `{"a": [1]}`},
		{rf: `{"type":"json_schema","json_schema":{"name":"n","strict":true,"schema":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}}}`, good: `{"x": 3}`},
		{rf: `{"type":"json_schema","json_schema":{"name":"n"}}`, good: `[true]`},
		{rf: `{"type":"json_schema"}`, errWant: "json_schema is missing"},
		{rf: `{"type":"yaml"}`, errWant: `unknown type "yaml"`},
		{rf: `{"type":"json_schema","json_schema":{"schema":{"type":"integer","minimum":0}}}`, errWant: `"minimum"`},
	}
	for _, tc := range cases {
		g, err := v.ResponseFormat([]byte(tc.rf))
		switch {
		case tc.errWant != "":
			if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), tc.errWant) {
				t.Errorf("%s: err %v, want ErrSchema with %q", tc.rf, err, tc.errWant)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.rf, err)
		case tc.nilG != (g == nil):
			t.Errorf("%s: grammar %v", tc.rf, g)
		case g != nil:
			if ok, complete := accepts(g, tc.good); !ok || !complete {
				t.Errorf("%s: %q not accepted", tc.rf, tc.good)
			}
		}
	}
}

// FuzzCompile: any schema text compiles or fails with ErrSchema, never
// panics; a compiled one accepts the shortest completion from the start.
func FuzzCompile(f *testing.F) {
	for _, tc := range testSchemas {
		f.Add(tc.schema)
	}
	f.Add(`{"anyOf":[{"$ref":"#/definitions/x"},{"type":"null"}],"definitions":{"x":{"items":{"pattern":"a|b*"}}}}`)
	f.Fuzz(func(t *testing.T, schema string) {
		g, err := compileSchema([]byte(schema))
		if err != nil {
			if !errors.Is(err, ErrSchema) {
				t.Fatalf("%s: error %v does not wrap ErrSchema", schema, err)
			}
			return
		}
		s := g.startM()
		comp, ok := g.shortestCompletion(s)
		if !ok {
			return // the search is bounded; deep schemas may exceed it
		}
		for _, c := range comp {
			var next mstate
			if !g.stepM(&s, c, &next) {
				t.Fatalf("%s: completion %q rejected", schema, comp)
			}
			s = next
		}
		if !g.canEndM(&s) {
			t.Fatalf("%s: completion %q incomplete", schema, comp)
		}
	})
}
