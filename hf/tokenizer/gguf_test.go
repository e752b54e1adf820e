package tokenizer

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gotpu/gotpu/internal/testreq"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
)

// ggufModel is one GGUF tokenizer with references from transformers
// (testdata/tokenizers/gguf/<name>, written by tools/gguf/tok_ref.py).
type ggufModel struct {
	name    string
	env     string // overrides the path of the .gguf file
	file    string // the .gguf file's name in the cache directory
	fixture string // committed metadata fixture (tools/gguf/tok_extract.py), "" = read the .gguf
}

var ggufModels = []ggufModel{
	{"smollm2_135m", "GOTPU_GGUF_SMOLLM2", "SmolLM2-135M-Instruct.Q4_1.gguf", "testdata/gguf/smollm2_135m.tokmeta.json.gz"},
	// Gemma's vocabulary is not redistributed: only ids are committed and the
	// metadata is read from the fetched file.
	{"gemma3_270m", "GOTPU_GGUF_GEMMA3", "gemma-3-270m-q4_k_m.gguf", ""},
	// Synthetic files (tools/gguf/tok_synth.py) for the paths the real ones
	// leave untested.
	{"synth_llama_bpe", "", "", "testdata/gguf/synth_llama_bpe.tokmeta.json.gz"},
	{"synth_qwen2", "", "", "testdata/gguf/synth_qwen2.tokmeta.json.gz"},
	{"synth_tekken", "", "", "testdata/gguf/synth_tekken.tokmeta.json.gz"},
	{"synth_qwen35", "", "", "testdata/gguf/synth_qwen35.tokmeta.json.gz"},
	{"synth_gpt4o", "", "", "testdata/gguf/synth_gpt4o.tokmeta.json.gz"},
	{"synth_llama_spm", "", "", "testdata/gguf/synth_llama_spm.tokmeta.json.gz"},
	{"synth_phi3", "", "", "testdata/gguf/synth_phi3.tokmeta.json.gz"},
	{"synth_gemma", "", "", "testdata/gguf/synth_gemma.tokmeta.json.gz"},
	{"synth_gemma4", "", "", "testdata/gguf/synth_gemma4.tokmeta.json.gz"},
}

const ggufRefRoot = "../../testdata/tokenizers/gguf"

// ggufPath is where the .gguf file of m is expected: $<env>, else
// ${GOTPU_TESTDATA_CACHE:-~/.cache/gotpu-testdata}/gguf/<file>.
func ggufPath(m ggufModel) string {
	if p := os.Getenv(m.env); p != "" {
		return p
	}
	base := os.Getenv("GOTPU_TESTDATA_CACHE")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".cache", "gotpu-testdata")
	}
	return filepath.Join(base, "gguf", m.file)
}

// readGGUFFixture reads a tokmeta.json.gz fixture's "metadata" object.
func readGGUFFixture(path string) (map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var fx struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := json.NewDecoder(zr).Decode(&fx); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return fx.Metadata, nil
}

var ggufCache sync.Map // name -> *ggufLoaded

type ggufLoaded struct {
	md    GGUFMetadata
	tk    *Tokenizer
	parts *ggufParts
}

// loadGGUF builds m's tokenizer from its fixture or its .gguf file, skipping
// when the file is absent (failing under CI=true).
func loadGGUF(t *testing.T, m ggufModel) *ggufLoaded {
	t.Helper()
	if v, ok := ggufCache.Load(m.name); ok {
		return v.(*ggufLoaded)
	}
	var kv map[string]any
	var err error
	if m.fixture != "" {
		kv, err = readGGUFFixture(m.fixture)
	} else {
		p := ggufPath(m)
		if _, statErr := os.Stat(p); statErr != nil {
			msg := fmt.Sprintf("%s: %s absent (set $%s or fetch it with tools/gguf/fetch.sh)", m.name, p, m.env)
			testreq.Missing(t, "%s", msg)
		}
		kv, err = readGGUFTokenizerKV(p)
	}
	if err != nil {
		t.Fatalf("%s: %v", m.name, err)
	}
	md, err := GGUFMetadataFromMap(kv)
	if err != nil {
		t.Fatalf("%s: %v", m.name, err)
	}
	tk, parts, err := md.build()
	if err != nil {
		t.Fatalf("%s: FromGGUF: %v", m.name, err)
	}
	l := &ggufLoaded{md, tk, parts}
	ggufCache.Store(m.name, l)
	return l
}

// TestGGUFParity checks every corpus sample, with and without special
// tokens, against transformers' GGUF tokenizer: ids, and where committed
// tokens and offsets; both decodings.
func TestGGUFParity(t *testing.T) {
	for _, m := range ggufModels {
		t.Run(m.name, func(t *testing.T) {
			l := loadGGUF(t, m)
			lines := readRef(t, filepath.Join(ggufRefRoot, m.name, "ref.jsonl"))
			if len(lines) == 0 {
				t.Fatal("empty ref.jsonl")
			}
			bad := 0
			for i := range lines {
				if msg := compareLine(l.tk, &lines[i]); msg != "" {
					bad++
					if bad <= 5 {
						t.Errorf("%s add_special=%v text=%q: %s", lines[i].ID, lines[i].AddSpecial, trunc(lines[i].Text), msg)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d lines differ", m.name, bad, len(lines))
			} else {
				t.Logf("%s: %d lines id-exact with transformers' GGUF tokenizer", m.name, len(lines))
			}
		})
	}
}

// ggufMeta is the part of testdata/tokenizers/gguf/<name>/meta.json the tests use.
type ggufMeta struct {
	GGUF struct {
		File   string `json:"file"`
		SHA256 string `json:"sha256"`
	} `json:"gguf"`
	Tokenizer struct {
		Len             int            `json:"len"`
		SpecialTokenIDs map[string]int `json:"special_token_ids"`
		AddBOS          bool           `json:"add_bos_token"`
		AddEOS          bool           `json:"add_eos_token"`
	} `json:"tokenizer"`
	Pipeline struct {
		Normalizer    json.RawMessage `json:"normalizer"`
		PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
		PostProcessor json.RawMessage `json:"post_processor"`
		Decoder       json.RawMessage `json:"decoder"`
		Model         struct {
			UnkToken     *string `json:"unk_token"`
			FuseUnk      bool    `json:"fuse_unk"`
			ByteFallback bool    `json:"byte_fallback"`
			VocabSize    int     `json:"vocab_size"`
			MergesCount  int     `json:"merges_count"`
			VocabSHA256  string  `json:"vocab_sha256"`
			MergesSHA256 string  `json:"merges_sha256"`
		} `json:"model"`
		AddedTokens struct {
			Count     int    `json:"count"`
			Special   int    `json:"special"`
			IDsSHA256 string `json:"ids_sha256"`
		} `json:"added_tokens"`
	} `json:"pipeline"`
}

func readGGUFMeta(t *testing.T, name string) ggufMeta {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ggufRefRoot, name, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m ggufMeta
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func jsonEqual(t *testing.T, what, got string, want json.RawMessage) {
	t.Helper()
	var g, w any
	if got == "" {
		got = "null"
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestGGUFPipeline compares the pipeline FromGGUF assembles with the one
// transformers built (meta.json): components, the model's options, digests
// of the vocabulary and of the (possibly derived) merges, the added tokens,
// and the special tokens.
func TestGGUFPipeline(t *testing.T) {
	for _, m := range ggufModels {
		t.Run(m.name, func(t *testing.T) {
			l := loadGGUF(t, m)
			meta := readGGUFMeta(t, m.name)
			jsonEqual(t, "normalizer", l.parts.normalizer, meta.Pipeline.Normalizer)
			jsonEqual(t, "pre_tokenizer", l.parts.preTokenizer, meta.Pipeline.PreTokenizer)
			jsonEqual(t, "post_processor", l.parts.postProcessor, meta.Pipeline.PostProcessor)
			jsonEqual(t, "decoder", l.parts.decoder, meta.Pipeline.Decoder)

			bpe := l.tk.model.(*bpeModel)
			mm := meta.Pipeline.Model
			if !reflect.DeepEqual(ptrIf(bpe.hasUnk, bpe.unk), mm.UnkToken) || bpe.fuseUnk != mm.FuseUnk || bpe.byteFallback != mm.ByteFallback {
				t.Errorf("model options: unk %v/%q fuse %v byte_fallback %v, want %v %v %v",
					bpe.hasUnk, bpe.unk, bpe.fuseUnk, bpe.byteFallback, mm.UnkToken, mm.FuseUnk, mm.ByteFallback)
			}
			if len(bpe.vocab) != mm.VocabSize {
				t.Errorf("vocab size %d, want %d", len(bpe.vocab), mm.VocabSize)
			}
			type entry struct {
				tok string
				id  uint32
			}
			ents := make([]entry, 0, len(bpe.vocab))
			for tok, id := range bpe.vocab {
				ents = append(ents, entry{tok, id})
			}
			sort.Slice(ents, func(i, j int) bool {
				if ents[i].id != ents[j].id {
					return ents[i].id < ents[j].id
				}
				return ents[i].tok < ents[j].tok
			})
			var sb strings.Builder
			for _, e := range ents {
				fmt.Fprintf(&sb, "%d\t%s\n", e.id, e.tok)
			}
			if got := sha256Hex(sb.String()); got != mm.VocabSHA256 {
				t.Errorf("vocabulary digest %s, want %s", got, mm.VocabSHA256)
			}
			if len(l.parts.merges) != mm.MergesCount {
				t.Errorf("%d merges, want %d", len(l.parts.merges), mm.MergesCount)
			}
			sb.Reset()
			for _, mg := range l.parts.merges {
				sb.WriteString(mg[0] + " " + mg[1] + "\n")
			}
			if got := sha256Hex(sb.String()); got != mm.MergesSHA256 {
				t.Errorf("merges digest %s, want %s", got, mm.MergesSHA256)
			}

			ids := make([]int, 0, len(l.tk.added.byID))
			for id := range l.tk.added.byID {
				ids = append(ids, int(id))
			}
			sort.Ints(ids)
			sb.Reset()
			sb.WriteString("[")
			nSpecial := 0
			for i, id := range ids {
				if i > 0 {
					sb.WriteString(",")
				}
				sp := l.tk.added.byID[uint32(id)].Special
				if sp {
					nSpecial++
				}
				fmt.Fprintf(&sb, "[%d,%v]", id, sp)
			}
			sb.WriteString("]")
			at := meta.Pipeline.AddedTokens
			if len(ids) != at.Count || nSpecial != at.Special || sha256Hex(sb.String()) != at.IDsSHA256 {
				t.Errorf("added tokens: %d (%d special) digest %s, want %d (%d special) %s",
					len(ids), nSpecial, sha256Hex(sb.String()), at.Count, at.Special, at.IDsSHA256)
			}
			if got := l.tk.VocabSize(); got != meta.Tokenizer.Len {
				t.Errorf("VocabSize %d, want len(tokenizer) %d", got, meta.Tokenizer.Len)
			}
			for name, want := range meta.Tokenizer.SpecialTokenIDs {
				var idp *uint32
				switch name {
				case "bos_token":
					idp = l.md.BOSTokenID
				case "eos_token":
					idp = l.md.EOSTokenID
				case "unk_token":
					idp = l.md.UnknownTokenID
				case "pad_token":
					idp = l.md.PaddingTokenID
				}
				if idp != nil && int(*idp) != want {
					t.Errorf("%s id %d, want %d", name, *idp, want)
				}
				if tok, ok := l.tk.IDToToken(want); !ok || !l.tk.IsSpecial(want) {
					t.Errorf("%s %d (%q) is not a special token", name, want, tok)
				}
			}
			if l.md.addsBOS() != meta.Tokenizer.AddBOS || l.md.addsEOS() != meta.Tokenizer.AddEOS {
				t.Errorf("add_bos %v add_eos %v, want %v %v", l.md.addsBOS(), l.md.addsEOS(), meta.Tokenizer.AddBOS, meta.Tokenizer.AddEOS)
			}
		})
	}
}

func ptrIf(ok bool, s string) *string {
	if !ok {
		return nil
	}
	return &s
}

// TestGGUFGenerateMerges checks merge derivation against transformers'
// generate_merges on a small vocabulary with a duplicated token (values
// printed by transformers 5.24).
func TestGGUFGenerateMerges(t *testing.T) {
	toks := []string{"a", "b", "c", "ab", "bc", "abc", "ca", "cab", "é", "éa", "a"}
	scores := []float64{0, 0, 0, -1, -1, -2, -1, -3, 0, -1, -5}
	got := generateMerges(toks, func(i int) float64 { return scores[i] })
	want := [][2]string{{"a", "b"}, {"b", "c"}, {"c", "a"}, {"é", "a"}, {"ab", "c"}, {"a", "bc"}, {"ca", "b"}, {"c", "ab"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("by score:\n got %q\nwant %q", got, want)
	}
	got = generateMerges(toks, func(i int) float64 { return -float64(i) })
	want = [][2]string{{"a", "b"}, {"b", "c"}, {"ab", "c"}, {"a", "bc"}, {"c", "a"}, {"ca", "b"}, {"c", "ab"}, {"é", "a"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("by position:\n got %q\nwant %q", got, want)
	}
}

// tinyGGUF is a valid byte-level vocabulary: the 256 byte characters, three
// merges, control tokens and a user-defined one.
func tinyGGUF() GGUFMetadata {
	var toks []string
	var types []int32
	for b := 0; b < 256; b++ {
		toks = append(toks, byteLevelStr[b])
		types = append(types, GGUFTokenNormal)
	}
	toks = append(toks, "he", "ll", "hell", "<s>", "</s>", "<tool>")
	types = append(types, GGUFTokenNormal, GGUFTokenNormal, GGUFTokenNormal, GGUFTokenControl, GGUFTokenControl, GGUFTokenUserDefined)
	return GGUFMetadata{
		Architecture: "llama", Model: "gpt2", Pre: "default",
		Tokens: toks, TokenTypes: types, Merges: []string{"h e", "l l", "he ll"},
		BOSTokenID: ptr(uint32(259)), EOSTokenID: ptr(uint32(260)), AddBOSToken: ptr(true),
	}
}

func TestGGUFSpecialTokens(t *testing.T) {
	md := tinyGGUF()
	tk, err := FromGGUF(md)
	if err != nil {
		t.Fatal(err)
	}
	e := tk.Encode("hello</s><tool>", true)
	// BOS; "hell" "o"; </s> and <tool> matched whole; GPT2Tokenizer's default
	// "<|endoftext|>" is not in this vocabulary, so it gets id 262.
	if want := []int{259, 258, int('o'), 260, 261}; !reflect.DeepEqual(e.IDs, want) {
		t.Errorf("ids %v, want %v (tokens %q)", e.IDs, want, e.Tokens)
	}
	if id, ok := tk.TokenToID("<|endoftext|>"); !ok || id != 262 || !tk.IsSpecial(262) {
		t.Errorf("<|endoftext|> = %d %v, want special 262", id, ok)
	}
	if tk.IsSpecial(261) || !tk.IsSpecial(259) || !tk.IsSpecial(260) {
		t.Error("control tokens must be special, user-defined ones not")
	}
	if e := tk.Encode("hello", false); e.IDs[0] == 259 {
		t.Errorf("add_special_tokens=false added BOS: %v", e.IDs)
	}
	d, _ := tk.Decode(e.IDs, true)
	dk, _ := tk.Decode(e.IDs, false)
	if d != "hello<tool>" || dk != "<s>hello</s><tool>" {
		t.Errorf("decode %q / %q", d, dk)
	}
	if tk.VocabSize() != 263 {
		t.Errorf("VocabSize %d, want 263", tk.VocabSize())
	}

	// add_bos_token false; add_eos_token true appends EOS.
	md.AddBOSToken, md.AddEOSToken = ptr(false), ptr(true)
	tk, err = FromGGUF(md)
	if err != nil {
		t.Fatal(err)
	}
	if e := tk.Encode("he", true); !reflect.DeepEqual(e.IDs, []int{256, 260}) {
		t.Errorf("eos only: %v", e.IDs)
	}
	// No BOS id: no BOS whatever the flag says.
	md.AddBOSToken, md.AddEOSToken, md.BOSTokenID = ptr(true), nil, nil
	tk, err = FromGGUF(md)
	if err != nil {
		t.Fatal(err)
	}
	if e := tk.Encode("he", true); !reflect.DeepEqual(e.IDs, []int{256}) {
		t.Errorf("no bos id: %v", e.IDs)
	}
	// A "llama" vocabulary without add_bos_token adds BOS (transformers'
	// default); gemma4 never does.
	spm := GGUFMetadata{Model: "llama", Tokens: []string{"<unk>", "<s>", "</s>", "▁", "h", "▁h"},
		Scores: []float32{0, 0, 0, -1, -2, -3}, BOSTokenID: ptr(uint32(1))}
	tk, err = FromGGUF(spm)
	if err != nil {
		t.Fatal(err)
	}
	if e := tk.Encode("h", true); !reflect.DeepEqual(e.IDs, []int{1, 5}) {
		t.Errorf("llama default bos: %v %q", e.IDs, e.Tokens)
	}
	spm.Model = "gemma4"
	spm.AddBOSToken = ptr(true)
	tk, err = FromGGUF(spm)
	if err != nil {
		t.Fatal(err)
	}
	if e := tk.Encode("h", true); len(e.IDs) == 0 || e.IDs[0] == 1 {
		t.Errorf("gemma4 added bos: %v", e.IDs)
	}
}

func TestGGUFMetadataFromMap(t *testing.T) {
	md := tinyGGUF()
	kv := map[string]any{
		GGUFKeyArchitecture: "llama", GGUFKeyModel: "gpt2", GGUFKeyPre: "default",
		GGUFKeyTokens: md.Tokens, GGUFKeyTokenType: md.TokenTypes, GGUFKeyMerges: md.Merges,
		GGUFKeyBOSTokenID: uint32(259), GGUFKeyEOSTokenID: uint32(260), GGUFKeyAddBOSToken: true,
		"general.name": "ignored",
	}
	got, err := GGUFMetadataFromMap(kv)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, md) {
		t.Errorf("got %+v", got)
	}
	// The same values after a JSON round trip (float64 numbers, []any).
	b, err := json.Marshal(kv)
	if err != nil {
		t.Fatal(err)
	}
	var jkv map[string]any
	if err := json.Unmarshal(b, &jkv); err != nil {
		t.Fatal(err)
	}
	if got, err = GGUFMetadataFromMap(jkv); err != nil || !reflect.DeepEqual(got, md) {
		t.Errorf("from JSON: %v %+v", err, got)
	}
	// A present but empty merge list is not an absent one.
	if got, _ := GGUFMetadataFromMap(map[string]any{GGUFKeyMerges: []any{}}); got.Merges == nil {
		t.Error("empty merges read as absent")
	}
	scores, _ := GGUFMetadataFromMap(map[string]any{GGUFKeyScores: []float32{-1.5}, GGUFKeyAddEOSToken: false})
	if !reflect.DeepEqual(scores.Scores, []float32{-1.5}) || scores.AddEOSToken == nil || *scores.AddEOSToken {
		t.Errorf("scores/add_eos: %+v", scores)
	}
	for key, v := range map[string]any{
		GGUFKeyModel:       7,
		GGUFKeyTokens:      "abc",
		GGUFKeyMerges:      []any{"a b", 3},
		GGUFKeyScores:      []any{"x"},
		GGUFKeyTokenType:   []any{1.5},
		GGUFKeyBOSTokenID:  -1,
		GGUFKeyEOSTokenID:  "2",
		GGUFKeyAddBOSToken: 1,
	} {
		_, err := GGUFMetadataFromMap(map[string]any{key: v})
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%v: error %v, want ErrMalformed naming the key", key, v, err)
		}
	}
}

func TestGGUFErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(*GGUFMetadata)
		is     error
		key    string
	}{
		{"no model", func(m *GGUFMetadata) { m.Model = "" }, ErrMalformed, GGUFKeyModel},
		{"bert", func(m *GGUFMetadata) { m.Model = "bert" }, ErrUnsupported, GGUFKeyModel},
		{"t5", func(m *GGUFMetadata) { m.Model = "t5" }, ErrUnsupported, GGUFKeyModel},
		{"no tokens", func(m *GGUFMetadata) { m.Tokens = nil }, ErrMalformed, GGUFKeyTokens},
		{"invalid utf-8", func(m *GGUFMetadata) { m.Tokens[3] = "\xff" }, ErrMalformed, GGUFKeyTokens},
		{"token types", func(m *GGUFMetadata) { m.TokenTypes = m.TokenTypes[:10] }, ErrMalformed, GGUFKeyTokenType},
		{"scores", func(m *GGUFMetadata) { m.Scores = []float32{1} }, ErrMalformed, GGUFKeyScores},
		{"nan score", func(m *GGUFMetadata) {
			m.Scores = make([]float32, len(m.Tokens))
			m.Scores[5] = float32(math.NaN())
		}, ErrMalformed, GGUFKeyScores},
		{"no merges nor scores", func(m *GGUFMetadata) { m.Merges = nil }, ErrMalformed, GGUFKeyScores},
		{"llama without scores", func(m *GGUFMetadata) { m.Model, m.Merges = "llama", nil }, ErrMalformed, GGUFKeyScores},
		{"bos out of range", func(m *GGUFMetadata) { m.BOSTokenID = ptr(uint32(len(m.Tokens))) }, ErrMalformed, GGUFKeyBOSTokenID},
		{"eos out of range", func(m *GGUFMetadata) { m.EOSTokenID = ptr(uint32(1 << 30)) }, ErrMalformed, GGUFKeyEOSTokenID},
		{"pad out of range", func(m *GGUFMetadata) { m.PaddingTokenID = ptr(uint32(1 << 30)) }, ErrMalformed, GGUFKeyPaddingTokenID},
		{"merge shape", func(m *GGUFMetadata) { m.Merges = []string{"h e", "hell"} }, ErrMalformed, GGUFKeyMerges},
		{"merge token", func(m *GGUFMetadata) { m.Merges = []string{"h e", "he zz"} }, ErrMalformed, GGUFKeyMerges},
	} {
		t.Run(c.name, func(t *testing.T) {
			md := tinyGGUF()
			md.Tokens = append([]string(nil), md.Tokens...)
			c.mutate(&md)
			_, err := FromGGUF(md)
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.key) {
				t.Errorf("error %v, want %v naming %s", err, c.is, c.key)
			}
		})
	}
}

// TestGGUFFixtureMatchesFile checks that the committed SmolLM2 fixture holds
// exactly the metadata of the real file, when that file is present.
func TestGGUFFixtureMatchesFile(t *testing.T) {
	m := ggufModels[0]
	p := ggufPath(m)
	if _, err := os.Stat(p); err != nil {
		testreq.Missing(t, "%s absent; run tools/gguf/fetch.sh to fetch it", p)
	}
	fromFile, err := readGGUFTokenizerKV(p)
	if err != nil {
		t.Fatal(err)
	}
	fromFixture, err := readGGUFFixture(m.fixture)
	if err != nil {
		t.Fatal(err)
	}
	a, err := GGUFMetadataFromMap(fromFile)
	if err != nil {
		t.Fatal(err)
	}
	b, err := GGUFMetadataFromMap(fromFixture)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("the fixture differs from the file's metadata; rerun tools/gguf/tok_ref.py --fixtures")
	}
}
