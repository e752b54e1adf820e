package constrain

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/gguf"
	"github.com/gotpu/gotpu/hf/tokenizer"
)

// ggufPath returns a model from tools/gguf/fetch.sh's cache. An absent file
// skips the test only under -short outside CI (CI=true fetches the files).
func ggufPath(t testing.TB, file string) string {
	t.Helper()
	cache := os.Getenv("GOTPU_TESTDATA_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "gotpu-testdata")
	}
	path := filepath.Join(cache, "gguf", file)
	if _, err := os.Stat(path); err != nil {
		if testing.Short() && os.Getenv("CI") != "true" {
			t.Skipf("%s not found; run tools/gguf/fetch.sh to download it", path)
		}
		t.Fatalf("%s not found (tools/gguf/fetch.sh downloads it): %v", path, err)
	}
	return path
}

// loadTokenizer reads a GGUF file's tokenizer and EOS id.
func loadTokenizer(t testing.TB, file string) (*tokenizer.Tokenizer, int) {
	t.Helper()
	f, err := gguf.Open(ggufPath(t, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	md := f.Metadata()
	kv := map[string]any{}
	for _, e := range md.All() {
		if !strings.HasPrefix(e.Key, "tokenizer.") && e.Key != tokenizer.GGUFKeyArchitecture {
			continue
		}
		v := e.Value.Any()
		if a, ok := v.(*gguf.Array); ok {
			v = a.Values()
		}
		kv[e.Key] = v
	}
	tm, err := tokenizer.GGUFMetadataFromMap(kv)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(tm)
	if err != nil {
		t.Fatal(err)
	}
	eos, err := md.Int(tokenizer.GGUFKeyEOSTokenID)
	if err != nil {
		t.Fatal(err)
	}
	return tok, int(eos)
}

func smolVocab(t testing.TB) (*Vocab, *tokenizer.Tokenizer, [][]byte) {
	tok, eos := loadTokenizer(t, "SmolLM2-135M-Instruct.Q4_1.gguf")
	tb := TokenBytes(tok)
	v, err := NewVocab(tb, []int{eos})
	if err != nil {
		t.Fatal(err)
	}
	return v, tok, tb
}

// TestTokenBytesSmolLM2 checks the byte-level BPE mapping: every token's
// bytes, decoded as a sequence, give the tokenizer's own decoding.
func TestTokenBytesSmolLM2(t *testing.T) {
	tok, _ := loadTokenizer(t, "SmolLM2-135M-Instruct.Q4_1.gguf")
	tb := TokenBytes(tok)
	if !isByteLevel(tok) {
		t.Fatal("SmolLM2 not detected as byte-level")
	}
	single, special := 0, 0
	for id, b := range tb {
		if len(b) == 1 {
			single++
		}
		if b == nil {
			special++
			if !tok.IsSpecial(id) {
				s, _ := tok.IDToToken(id)
				t.Errorf("token %d %q has no bytes", id, s)
			}
		}
	}
	// SmolLM2 lacks 21 byte tokens (some control bytes and bytes that never
	// occur in UTF-8); every printable ASCII byte must be there.
	for c := byte(0x20); c < 0x7F; c++ {
		if !slices.ContainsFunc(tb, func(b []byte) bool { return len(b) == 1 && b[0] == c }) {
			t.Errorf("no single-byte token for %q", c)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		ids := make([]int, 1+rng.IntN(8))
		var want []byte
		for i := range ids {
			for {
				ids[i] = rng.IntN(len(tb))
				if tb[ids[i]] != nil {
					break
				}
			}
			want = append(want, tb[ids[i]]...)
		}
		got, err := tok.Decode(ids, false)
		if err != nil {
			t.Fatal(err)
		}
		if got != lossy(want) {
			t.Fatalf("ids %v: Decode %q, TokenBytes %q", ids, got, want)
		}
	}
	t.Logf("%d tokens, %d special (nil), %d single-byte", len(tb), special, single)
}

// lossy replaces invalid UTF-8 like the tokenizer's decoder (one U+FFFD
// per maximal invalid subsequence; strings.ToValidUTF8 merges runs, so
// compare through it on both sides only when valid).
func lossy(b []byte) string {
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

func TestTokenBytesGemma(t *testing.T) {
	if testing.Short() {
		t.Skip("loading Gemma's 262k-token tokenizer takes seconds; runs without -short")
	}
	tok, _ := loadTokenizer(t, "gemma-3-270m-q4_k_m.gguf")
	tb := TokenBytes(tok)
	if isByteLevel(tok) {
		t.Fatal("Gemma detected as byte-level")
	}
	for tokStr, want := range map[string]string{"<0x0A>": "\n", "▁the": " the", "{\"": "{\"", "<0xE6>": "\xe6"} {
		id, ok := tok.TokenToID(tokStr)
		if !ok {
			t.Errorf("token %q missing", tokStr)
			continue
		}
		if string(tb[id]) != want {
			t.Errorf("token %q: bytes %q, want %q", tokStr, tb[id], want)
		}
	}
	eos, _ := tok.TokenToID("<eos>")
	if tb[eos] != nil {
		t.Errorf("<eos> has bytes %q", tb[eos])
	}
}

// TestSmolLM2Walks runs the random walks over the real vocabulary (random
// real tokens, byte-level completion at the end) and times Allowed.
func TestSmolLM2Walks(t *testing.T) {
	v, tok, tb := smolVocab(t)
	byteID := map[byte]int{}
	for id, b := range tb {
		if len(b) == 1 {
			byteID[b[0]] = id
		}
	}
	t.Logf("vocabulary %d tokens, trie %d nodes, longest token %d bytes", v.Size(), v.Nodes(), v.maxDepth)
	walks := 8
	if testing.Short() {
		walks = 2
	}
	for _, tc := range testSchemas {
		t.Run(tc.name, func(t *testing.T) {
			gr := compileFor(t, v, tc.schema)
			schema := tc.schema
			if schema == "" {
				schema = `{"type":"object"}`
			}
			rng := rand.New(rand.NewPCG(5, uint64(len(tc.name))))
			for w := 0; w < walks; w++ {
				text := randomWalk(t, gr, rng, 1+rng.IntN(30), w == 0, func(b byte) int { return byteID[b] })
				if err := validate(schema, text); err != nil {
					t.Fatalf("walk %d produced %q: %v", w, text, err)
				}
				if err := checkOrder(schema, text); err != nil {
					t.Fatalf("walk %d produced %q: %v", w, text, err)
				}
			}
		})
	}
	// The tokenizer's own encoding of a valid text must be accepted token
	// by token (the mask never blocks the natural tokenization).
	gr := compileFor(t, v, testSchemas[1].schema)
	text := `{"name": "Ada Lovelace", "age": 36, "email":"ada@x.org"}`
	c := gr.New()
	allow := make([]bool, v.Size())
	for _, id := range tok.Encode(text, false).IDs {
		clear(allow)
		c.Allowed(allow)
		if !allow[id] {
			t.Fatalf("token %d %q of %q not allowed", id, tb[id], text)
		}
		if err := c.Accept(id); err != nil {
			t.Fatal(err)
		}
	}
	if !c.Complete() {
		t.Fatalf("%q not complete", text)
	}
}

// BenchmarkAllowedSmolLM2Generation times Allowed and Accept over a whole
// 56-byte generation on SmolLM2's vocabulary, per step: cold (the memo
// cleared before each generation) and warm (the memo kept).
func BenchmarkAllowedSmolLM2Generation(b *testing.B) {
	v, _, tb := smolVocab(b)
	byteID := map[byte]int{}
	for id, t := range tb {
		if len(t) == 1 {
			byteID[t[0]] = id
		}
	}
	schema := testSchemas[1].schema
	text := `{"name": "Ada Lovelace", "age": 36, "email":"ada@x.org"}`
	for _, warm := range []bool{false, true} {
		name := "cold"
		if warm {
			name = "warm"
		}
		b.Run(name, func(b *testing.B) {
			gr := compileFor(b, v, schema)
			allow := make([]bool, v.Size())
			gen := func() {
				c := gr.New()
				for i := 0; i < len(text); i++ {
					clear(allow)
					c.Allowed(allow)
					if err := c.Accept(byteID[text[i]]); err != nil {
						b.Fatal(err)
					}
				}
			}
			gen()
			b.ResetTimer()
			for b.Loop() {
				if !warm {
					gr.mu.Lock()
					clear(gr.memo)
					gr.mu.Unlock()
				}
				gen()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(text)), "ns/step")
		})
	}
}

// BenchmarkAllowedSmolLM2 measures one Allowed on SmolLM2's vocabulary in
// typical states: cold (memo cleared every time: the trie walk) and warm.
func BenchmarkAllowedSmolLM2(b *testing.B) {
	v, _, tb := smolVocab(b)
	byteID := map[byte]int{}
	for id, t := range tb {
		if len(t) == 1 {
			byteID[t[0]] = id
		}
	}
	schema := testSchemas[1].schema
	for _, bc := range []struct{ name, prefix string }{
		{"start", ``},
		{"key", `{"`},
		{"string-body", `{"name": "Ada Lo`},
		{"number", `{"name": "Ada", "age": 3`},
		{"bounded-string", `{"name": "Ada", "age": 36, "email":"ad`},
	} {
		for _, memo := range []bool{false, true} {
			name := bc.name + "/cold"
			if memo {
				name = bc.name + "/warm"
			}
			b.Run(name, func(b *testing.B) {
				gr := compileFor(b, v, schema)
				c := gr.New()
				for i := 0; i < len(bc.prefix); i++ {
					if err := c.Accept(byteID[bc.prefix[i]]); err != nil {
						b.Fatal(err)
					}
				}
				allow := make([]bool, v.Size())
				c.Allowed(allow)
				b.ResetTimer()
				cpu0 := cpuNow()
				for b.Loop() {
					if !memo {
						gr.mu.Lock()
						clear(gr.memo)
						gr.mu.Unlock()
					}
					clear(allow)
					c.Allowed(allow)
				}
				b.ReportMetric(float64(cpuNow()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}
