package tokenizer

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
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
