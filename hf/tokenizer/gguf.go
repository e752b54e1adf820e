package tokenizer

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// GGUF metadata keys that FromGGUF reads (llama.cpp's names).
const (
	GGUFKeyArchitecture   = "general.architecture"
	GGUFKeyModel          = "tokenizer.ggml.model"
	GGUFKeyPre            = "tokenizer.ggml.pre"
	GGUFKeyTokens         = "tokenizer.ggml.tokens"
	GGUFKeyScores         = "tokenizer.ggml.scores"
	GGUFKeyTokenType      = "tokenizer.ggml.token_type"
	GGUFKeyMerges         = "tokenizer.ggml.merges"
	GGUFKeyBOSTokenID     = "tokenizer.ggml.bos_token_id"
	GGUFKeyEOSTokenID     = "tokenizer.ggml.eos_token_id"
	GGUFKeyUnknownTokenID = "tokenizer.ggml.unknown_token_id"
	GGUFKeyPaddingTokenID = "tokenizer.ggml.padding_token_id"
	GGUFKeyAddBOSToken    = "tokenizer.ggml.add_bos_token"
	GGUFKeyAddEOSToken    = "tokenizer.ggml.add_eos_token"
	GGUFKeyAddSpacePrefix = "tokenizer.ggml.add_space_prefix"
	GGUFKeyChatTemplate   = "tokenizer.chat_template"
)

// GGUF token types (tokenizer.ggml.token_type), llama.cpp's llama_token_type.
const (
	GGUFTokenUndefined   int32 = 0
	GGUFTokenNormal      int32 = 1
	GGUFTokenUnknown     int32 = 2
	GGUFTokenControl     int32 = 3
	GGUFTokenUserDefined int32 = 4
	GGUFTokenUnused      int32 = 5
	GGUFTokenByte        int32 = 6
)

// GGUFMetadata holds the tokenizer metadata of a GGUF file: the values of the
// keys above, with the Go types a GGUF reader produces for them. Optional
// scalars are pointers (nil = key absent); Merges is nil when the key is
// absent and non-nil (possibly empty) when present, because an absent merge
// list means "derive the merges from the vocabulary".
type GGUFMetadata struct {
	Architecture   string    // general.architecture (string), e.g. "llama", "gemma3", "qwen2", "phi3"
	Model          string    // tokenizer.ggml.model (string): "gpt2", "llama", "gemma4", ...; required
	Pre            string    // tokenizer.ggml.pre (string), e.g. "smollm", "llama-bpe", "qwen2", "default"
	Tokens         []string  // tokenizer.ggml.tokens (array of string), the vocabulary by id; required
	Scores         []float32 // tokenizer.ggml.scores (array of float32), one per token
	TokenTypes     []int32   // tokenizer.ggml.token_type (array of int32), one per token (GGUFToken*)
	Merges         []string  // tokenizer.ggml.merges (array of string), "left right" pairs
	BOSTokenID     *uint32   // tokenizer.ggml.bos_token_id (uint32)
	EOSTokenID     *uint32   // tokenizer.ggml.eos_token_id (uint32)
	UnknownTokenID *uint32   // tokenizer.ggml.unknown_token_id (uint32)
	PaddingTokenID *uint32   // tokenizer.ggml.padding_token_id (uint32)
	AddBOSToken    *bool     // tokenizer.ggml.add_bos_token (bool)
	AddEOSToken    *bool     // tokenizer.ggml.add_eos_token (bool)
	AddSpacePrefix *bool     // tokenizer.ggml.add_space_prefix (bool); transformers ignores it, so does FromGGUF
	ChatTemplate   string    // tokenizer.chat_template (string); not used for tokenization
}

// GGUFMetadataFromMap reads the keys above from a GGUF key/value map. Values
// may have the exact GGUF types (string, []string, []float32, []int32,
// uint32, bool) or any other Go integer/float type of the right kind, and
// arrays may also be []any — so the output of encoding/json (float64,
// []any) works as well. Other keys are ignored. A value of the wrong kind is
// an ErrMalformed error naming its key.
func GGUFMetadataFromMap(kv map[string]any) (GGUFMetadata, error) {
	var md GGUFMetadata
	var err error
	str := func(key string, dst *string) {
		v, ok := kv[key]
		if !ok || err != nil {
			return
		}
		s, isStr := v.(string)
		if !isStr {
			err = fmt.Errorf("%w: %s: want a string, got %T", ErrMalformed, key, v)
			return
		}
		*dst = s
	}
	str(GGUFKeyArchitecture, &md.Architecture)
	str(GGUFKeyModel, &md.Model)
	str(GGUFKeyPre, &md.Pre)
	str(GGUFKeyChatTemplate, &md.ChatTemplate)
	if err != nil {
		return md, err
	}
	if v, ok := kv[GGUFKeyTokens]; ok {
		if md.Tokens, err = stringArray(GGUFKeyTokens, v); err != nil {
			return md, err
		}
	}
	if v, ok := kv[GGUFKeyMerges]; ok {
		if md.Merges, err = stringArray(GGUFKeyMerges, v); err != nil {
			return md, err
		}
		if md.Merges == nil {
			md.Merges = []string{}
		}
	}
	if v, ok := kv[GGUFKeyScores]; ok {
		if md.Scores, err = float32Array(GGUFKeyScores, v); err != nil {
			return md, err
		}
	}
	if v, ok := kv[GGUFKeyTokenType]; ok {
		if md.TokenTypes, err = int32Array(GGUFKeyTokenType, v); err != nil {
			return md, err
		}
	}
	for _, f := range []struct {
		key string
		dst **uint32
	}{
		{GGUFKeyBOSTokenID, &md.BOSTokenID},
		{GGUFKeyEOSTokenID, &md.EOSTokenID},
		{GGUFKeyUnknownTokenID, &md.UnknownTokenID},
		{GGUFKeyPaddingTokenID, &md.PaddingTokenID},
	} {
		v, ok := kv[f.key]
		if !ok {
			continue
		}
		n, ok := integerValue(v)
		if !ok || n < 0 || n > math.MaxUint32 {
			return md, fmt.Errorf("%w: %s: want a uint32, got %T %v", ErrMalformed, f.key, v, v)
		}
		u := uint32(n)
		*f.dst = &u
	}
	for _, f := range []struct {
		key string
		dst **bool
	}{
		{GGUFKeyAddBOSToken, &md.AddBOSToken},
		{GGUFKeyAddEOSToken, &md.AddEOSToken},
		{GGUFKeyAddSpacePrefix, &md.AddSpacePrefix},
	} {
		v, ok := kv[f.key]
		if !ok {
			continue
		}
		b, ok := v.(bool)
		if !ok {
			return md, fmt.Errorf("%w: %s: want a bool, got %T", ErrMalformed, f.key, v)
		}
		*f.dst = &b
	}
	return md, nil
}

func stringArray(key string, v any) ([]string, error) {
	switch a := v.(type) {
	case []string:
		return a, nil
	case []any:
		out := make([]string, len(a))
		for i, x := range a {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("%w: %s[%d]: want a string, got %T", ErrMalformed, key, i, x)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: %s: want an array of strings, got %T", ErrMalformed, key, v)
}

func float32Array(key string, v any) ([]float32, error) {
	switch a := v.(type) {
	case []float32:
		return a, nil
	case []float64:
		out := make([]float32, len(a))
		for i, x := range a {
			out[i] = float32(x)
		}
		return out, nil
	case []any:
		out := make([]float32, len(a))
		for i, x := range a {
			f, ok := floatValue(x)
			if !ok {
				return nil, fmt.Errorf("%w: %s[%d]: want a number, got %T", ErrMalformed, key, i, x)
			}
			out[i] = float32(f)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: %s: want an array of float32, got %T", ErrMalformed, key, v)
}

func int32Array(key string, v any) ([]int32, error) {
	if a, ok := v.([]int32); ok {
		return a, nil
	}
	var n int
	var at func(int) any
	switch a := v.(type) {
	case []any:
		n, at = len(a), func(i int) any { return a[i] }
	case []int:
		n, at = len(a), func(i int) any { return a[i] }
	case []int64:
		n, at = len(a), func(i int) any { return a[i] }
	case []uint32:
		n, at = len(a), func(i int) any { return a[i] }
	case []float64:
		n, at = len(a), func(i int) any { return a[i] }
	default:
		return nil, fmt.Errorf("%w: %s: want an array of int32, got %T", ErrMalformed, key, v)
	}
	out := make([]int32, n)
	for i := range out {
		x, ok := integerValue(at(i))
		if !ok || x < math.MinInt32 || x > math.MaxInt32 {
			return nil, fmt.Errorf("%w: %s[%d]: want an int32, got %v", ErrMalformed, key, i, at(i))
		}
		out[i] = int32(x)
	}
	return out, nil
}

// integerValue converts any Go integer, an integral float or a json.Number.
func integerValue(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint:
		return int64(x), x <= math.MaxInt64
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	case float32:
		return int64(x), float32(int64(x)) == x
	case float64:
		return int64(x), x == math.Trunc(x) && math.Abs(x) < 1<<62
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	}
	return 0, false
}

func floatValue(v any) (float64, bool) {
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	n, ok := integerValue(v)
	return float64(n), ok
}

// ggufKind is the tokenizer builder transformers picks for a file.
type ggufKind int

const (
	ggufByteLevel     ggufKind = iota // tokenizer.ggml.model "gpt2": GPT2Tokenizer
	ggufSentencePiece                 // "llama": LlamaTokenizer
	ggufPhi3                          // "llama" in a phi3 file: LlamaTokenizer with a Prepend/Replace normalizer
	ggufGemma                         // "llama" in a gemma/gemma2/gemma3 file: GemmaTokenizer, merges in file order
	ggufGemma4                        // "gemma4": GemmaTokenizer, merges by score, no BOS
)

// ggufPreSplits is transformers' GGUF_PRE_TOKENIZER_SPLITS: the
// tokenizer.ggml.pre values whose pre-tokenizer becomes
// Sequence[Split(regex, isolated), ByteLevel(use_regex=false)].
var ggufPreSplits = map[string]string{
	"llama3":       cl100kPattern,
	"llama-v3":     cl100kPattern,
	"llama-bpe":    cl100kPattern,
	"falcon3":      cl100kPattern,
	"falcon-h1":    cl100kPattern,
	"pixtral":      cl100kPattern,
	"midm-2.0":     cl100kPattern,
	"lfm2":         cl100kPattern,
	"jina-v5-nano": cl100kPattern,
	"dbrx":         cl100kPattern,
	"smaug-bpe":    cl100kPattern,
	"tekken": `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*` +
		`|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	"qwen2":            qwenPattern,
	"deepseek-r1-qwen": qwenPattern,
	"kormo":            qwenPattern,
	"f2llmv2":          qwenPattern,
	"megrez":           qwenPattern,
	"qwen35": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}` +
		`| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	"gpt-4o":     o200kPattern,
	"llama4":     o200kPattern,
	"kanana2":    o200kPattern,
	"talkie":     o200kPattern,
	"minimax-m2": o200kPattern,
}

// GGUFPreTokenizers returns the tokenizer.ggml.pre values that select a
// pre-tokenization regex (any other value keeps the model's default:
// GPT-2's ByteLevel regex for "gpt2" vocabularies).
func GGUFPreTokenizers() []string {
	out := make([]string, 0, len(ggufPreSplits))
	for k := range ggufPreSplits {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ggufPipeline is one tokenizer class's pipeline as tokenizer.json fragments.
type ggufPipeline struct {
	normalizer, preTokenizer, decoder string // JSON, "" = none
	unk                               *string
	fuseUnk, byteFallback             bool
	defaults                          []string // the class's default named special tokens, in transformers' order
}

var (
	gpt2Pipeline = ggufPipeline{
		preTokenizer: `{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}`,
		decoder:      `{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true}`,
		defaults:     []string{"<|endoftext|>"}, // bos, eos and unk
	}
	llamaPipeline = ggufPipeline{
		preTokenizer: `{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":false}`,
		decoder: `{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},` +
			`{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]}`,
		fuseUnk: true, byteFallback: true,
		defaults: []string{"<s>", "</s>", "<unk>"},
	}
	gemmaPipeline = ggufPipeline{
		normalizer:   `{"type":"Replace","pattern":{"String":" "},"content":"▁"}`,
		preTokenizer: `{"type":"Split","pattern":{"String":" "},"behavior":"MergedWithPrevious","invert":false}`,
		decoder: `{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},` +
			`{"type":"ByteFallback"},{"type":"Fuse"}]}`,
		unk:     ptr("<unk>"),
		fuseUnk: true, byteFallback: true,
		defaults: []string{"<bos>", "<eos>", "<unk>", "<pad>", "<mask>"},
	}
	phi3Normalizer = `{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},` +
		`{"type":"Replace","pattern":{"String":" "},"content":"▁"}]}`
)

func ptr[T any](v T) *T { return &v }

// ggufGemmaArchs are the architectures AutoTokenizer serves with
// GemmaTokenizer, whose default mask_token "<mask>" it registers as special.
var ggufGemmaArchs = map[string]bool{"gemma": true, "gemma2": true, "gemma3": true}

func ggufSelect(md *GGUFMetadata) (ggufKind, error) {
	switch md.Model {
	case "llama":
		switch md.Architecture {
		case "gemma", "gemma2", "gemma3":
			return ggufGemma, nil
		case "phi3":
			return ggufPhi3, nil
		}
		return ggufSentencePiece, nil
	case "gpt2":
		return ggufByteLevel, nil
	case "gemma4":
		return ggufGemma4, nil
	case "":
		return 0, fmt.Errorf("%w: %s is missing", ErrMalformed, GGUFKeyModel)
	}
	return 0, fmt.Errorf("%w: %s %q (supported: gpt2, llama, gemma4)", ErrUnsupported, GGUFKeyModel, md.Model)
}

// FromGGUF builds the tokenizer described by a GGUF file's tokenizer
// metadata, the same way transformers 5.24 does for
// AutoTokenizer.from_pretrained(dir, gguf_file=...)
// (transformers/integrations/gguf/gguf_tokenizer_mapping.py), so that ids,
// tokens, offsets and decodings are those of the transformers tokenizer.
//
// tokenizer.ggml.model selects the model:
//
//   - "gpt2": byte-level BPE (GPT2Tokenizer). Tokens not spelled in GPT-2's
//     byte alphabet are re-spelled byte by byte; merges from
//     tokenizer.ggml.merges (or derived from tokenizer.ggml.scores).
//     Pre-tokenization is GPT-2's ByteLevel regex unless tokenizer.ggml.pre
//     names another regex (GGUFPreTokenizers: llama-bpe, qwen2, tekken,
//     gpt-4o, ...); no normalizer (not even NFC for qwen2).
//   - "llama": SentencePiece-style BPE with byte fallback (LlamaTokenizer:
//     Metaspace with prepend_scheme "first"), merges derived from the
//     vocabulary ordered by tokenizer.ggml.scores. In gemma, gemma2 and
//     gemma3 files it is GemmaTokenizer instead (spaces become "▁" in a
//     normalizer, whitespace-only tokens are re-spelled as "▁" runs, merges
//     are ordered by token id); in phi3 files a Prepend("▁")+Replace
//     normalizer replaces Metaspace.
//   - "gemma4": GemmaTokenizer with merges ordered by score, never a BOS.
//
// A tokenizer.ggml.merges key, when present, always provides the merges.
// The tokenizer.ggml.pre regex table applies whatever the model (as in
// transformers); general.architecture is optional.
//
// Control tokens (token type 3) become special added tokens (in "gpt2"
// vocabularies only those spelled in the byte alphabet), user-defined
// tokens (type 4) non-special added tokens, and the bos/eos/unknown/padding
// tokens special ones, as do the tokenizer class's default special tokens
// (e.g. "<|endoftext|>" for every "gpt2" vocabulary: an id after the
// vocabulary when the file lacks it, as in transformers). With
// add_special_tokens the BOS token is prepended when
// tokenizer.ggml.add_bos_token is true (default: true for "llama" models
// without the key) and the EOS token appended when add_eos_token is true.
//
// Errors name the offending key: a missing tokenizer.ggml.model or
// tokens, an unsupported model (ErrUnsupported; "bert", "t5", "rwkv", ...
// are not supported, transformers 5.24 does not build them either), arrays
// whose length differs from the token list, special token ids out of range,
// merges that are not two tokens of the vocabulary.
func FromGGUF(md GGUFMetadata) (*Tokenizer, error) {
	t, _, err := md.build()
	return t, err
}

// ggufParts is what build assembled, as tokenizer.json fragments, for tests
// to compare with the pipeline transformers builds.
type ggufParts struct {
	normalizer, preTokenizer, postProcessor, decoder string
	merges                                           [][2]string
}

func (md *GGUFMetadata) build() (*Tokenizer, *ggufParts, error) {
	kind, err := ggufSelect(md)
	if err != nil {
		return nil, nil, err
	}
	if err := md.validate(); err != nil {
		return nil, nil, err
	}
	var p ggufPipeline
	switch kind {
	case ggufByteLevel:
		p = gpt2Pipeline
	case ggufSentencePiece:
		p = llamaPipeline
	case ggufPhi3:
		p = llamaPipeline
		p.normalizer, p.preTokenizer = phi3Normalizer, ""
	case ggufGemma, ggufGemma4:
		p = gemmaPipeline
	}

	// The model's vocabulary: later duplicates win, as in a Python dict.
	spelled := md.Tokens
	switch kind {
	case ggufByteLevel:
		spelled = respellByteLevel(md.Tokens)
	case ggufGemma:
		spelled = respellGemmaSpaces(md.Tokens)
	}
	vocab := make(map[string]uint32, len(spelled))
	for i, tok := range spelled {
		vocab[tok] = uint32(i)
	}

	var merges [][2]string
	if md.Merges != nil {
		merges = make([][2]string, len(md.Merges))
		for i, m := range md.Merges {
			a, b, ok := splitMerge(m)
			if !ok {
				return nil, nil, fmt.Errorf("%w: %s[%d] %q is not two tokens separated by one space", ErrMalformed, GGUFKeyMerges, i, m)
			}
			merges[i] = [2]string{a, b}
		}
	} else {
		mergeTokens := md.Tokens
		var score func(last int) float64
		if kind == ggufGemma {
			// Gemma's scores do not follow its merge order; the token order does.
			mergeTokens = spelled
			score = func(last int) float64 { return -float64(last) }
		} else {
			if md.Scores == nil {
				return nil, nil, fmt.Errorf("%w: %s is missing (needed to derive merges when %s is absent)", ErrMalformed, GGUFKeyScores, GGUFKeyMerges)
			}
			score = func(last int) float64 { return float64(md.Scores[last]) }
		}
		merges = generateMerges(mergeTokens, score)
	}
	bpe, err := newBPE(vocab, merges, p.unk, "", "", p.fuseUnk, p.byteFallback, false)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", GGUFKeyMerges, err)
	}

	t := &Tokenizer{model: bpe}
	preTok := p.preTokenizer
	if re, ok := ggufPreSplits[md.Pre]; ok {
		reJSON, _ := json.Marshal(re)
		preTok = `{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":` + string(reJSON) +
			`},"behavior":"Isolated","invert":false},` +
			`{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]}`
	}
	if p.normalizer != "" {
		if t.normalizer, err = buildNormalizer(json.RawMessage(p.normalizer)); err != nil {
			return nil, nil, fmt.Errorf("normalizer: %w", err)
		}
	}
	if preTok != "" {
		if t.preTok, err = buildPreTokenizer(json.RawMessage(preTok)); err != nil {
			return nil, nil, fmt.Errorf("%s %q: pre_tokenizer: %w", GGUFKeyPre, md.Pre, err)
		}
	}
	if t.decoder, err = buildDecoder(json.RawMessage(p.decoder)); err != nil {
		return nil, nil, fmt.Errorf("decoder: %w", err)
	}

	added := md.addedTokens(kind, p, vocab)
	if err := t.addTokens(added); err != nil {
		return nil, nil, fmt.Errorf("added tokens: %w", err)
	}

	post, err := md.postProcessor(t)
	if err != nil {
		return nil, nil, err
	}
	if t.post, err = buildPostProcessor(json.RawMessage(post)); err != nil {
		return nil, nil, fmt.Errorf("post_processor: %w", err)
	}
	t.enableLazyByteLevel()
	return t, &ggufParts{p.normalizer, preTok, post, p.decoder, merges}, nil
}

func (md *GGUFMetadata) validate() error {
	if len(md.Tokens) == 0 {
		return fmt.Errorf("%w: %s is missing or empty", ErrMalformed, GGUFKeyTokens)
	}
	if len(md.Tokens) > math.MaxUint32 {
		return fmt.Errorf("%w: %s has %d tokens", ErrMalformed, GGUFKeyTokens, len(md.Tokens))
	}
	for i, tok := range md.Tokens {
		if !utf8.ValidString(tok) {
			return fmt.Errorf("%w: %s[%d] is not valid UTF-8", ErrMalformed, GGUFKeyTokens, i)
		}
	}
	if md.Scores != nil && len(md.Scores) != len(md.Tokens) {
		return fmt.Errorf("%w: %s has %d entries for %d tokens", ErrMalformed, GGUFKeyScores, len(md.Scores), len(md.Tokens))
	}
	for i, s := range md.Scores {
		if math.IsNaN(float64(s)) {
			return fmt.Errorf("%w: %s[%d] is NaN", ErrMalformed, GGUFKeyScores, i)
		}
	}
	if md.TokenTypes != nil && len(md.TokenTypes) != len(md.Tokens) {
		return fmt.Errorf("%w: %s has %d entries for %d tokens", ErrMalformed, GGUFKeyTokenType, len(md.TokenTypes), len(md.Tokens))
	}
	for _, f := range []struct {
		key string
		id  *uint32
	}{
		{GGUFKeyBOSTokenID, md.BOSTokenID},
		{GGUFKeyEOSTokenID, md.EOSTokenID},
		{GGUFKeyUnknownTokenID, md.UnknownTokenID},
		{GGUFKeyPaddingTokenID, md.PaddingTokenID},
	} {
		if f.id != nil && int64(*f.id) >= int64(len(md.Tokens)) {
			return fmt.Errorf("%w: %s %d is out of the %d tokens", ErrMalformed, f.key, *f.id, len(md.Tokens))
		}
	}
	return nil
}

// respellByteLevel writes every token that uses characters outside GPT-2's
// byte alphabet as the byte-level spelling of its UTF-8 bytes.
func respellByteLevel(tokens []string) []string {
	out := make([]string, len(tokens))
	var sb strings.Builder
	for i, tok := range tokens {
		if inByteAlphabet(tok) {
			out[i] = tok
			continue
		}
		sb.Reset()
		for k := 0; k < len(tok); k++ {
			sb.WriteString(byteLevelStr[tok[k]])
		}
		out[i] = sb.String()
	}
	return out
}

func inByteAlphabet(s string) bool {
	for _, r := range s {
		if _, ok := runeToByte[r]; !ok {
			return false
		}
	}
	return true
}

// respellGemmaSpaces writes each token made only of whitespace that holds a
// space as that many "▁" (Gemma files store "  " where the model looks up
// "▁▁").
func respellGemmaSpaces(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		out[i] = tok
		if !strings.Contains(tok, " ") {
			continue
		}
		allSpace := true
		for _, r := range tok {
			if !pyIsSpace(r) {
				allSpace = false
				break
			}
		}
		if allSpace {
			out[i] = strings.Repeat("▁", utf8.RuneCountInString(tok))
		}
	}
	return out
}

// pyIsSpace is Python's str.isspace for one character (Go's unicode.IsSpace
// plus the information separators U+001C..U+001F).
func pyIsSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// generateMerges derives BPE merges from a vocabulary, as transformers'
// generate_merges(vocab, vocab_scores): every split of every token into two
// tokens of the vocabulary is a merge; a token's merges are ordered by the
// ids of their halves, and all merges by score, then the lengths (in
// characters) of the left and right halves, all descending, ties kept in
// token order. Duplicated tokens count once, at their first position, with
// the id and score of their last occurrence (Python dict semantics).
func generateMerges(tokens []string, score func(last int) float64) [][2]string {
	last := make(map[string]int32, len(tokens))
	for i, tok := range tokens {
		last[tok] = int32(i)
	}
	// A candidate merge: token tok cut at byte offset cut.
	type cand struct {
		score      float64
		tok, cut   int32
		lenL, lenR int32
		idL, idR   int32
		seq        int32 // position before the final sort (its tie-break)
	}
	var seen map[string]bool
	if len(last) != len(tokens) {
		seen = make(map[string]bool, len(last))
	}
	var all, local []cand
	for ti, tok := range tokens {
		if seen != nil {
			if seen[tok] {
				continue
			}
			seen[tok] = true
		}
		s := score(int(last[tok]))
		local = local[:0]
		n := int32(utf8.RuneCountInString(tok))
		k := int32(0)
		for i := range tok {
			if i == 0 {
				continue
			}
			k++
			il, okL := last[tok[:i]]
			if !okL {
				continue
			}
			if ir, okR := last[tok[i:]]; okR {
				local = append(local, cand{score: s, tok: int32(ti), cut: int32(i), lenL: k, lenR: n - k, idL: il, idR: ir})
			}
		}
		slices.SortStableFunc(local, func(a, b cand) int {
			if c := cmp.Compare(a.idL, b.idL); c != 0 {
				return c
			}
			return cmp.Compare(a.idR, b.idR)
		})
		for _, c := range local {
			c.seq = int32(len(all))
			all = append(all, c)
		}
	}
	slices.SortFunc(all, func(x, y cand) int {
		if x.score != y.score {
			if x.score > y.score {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(y.lenL, x.lenL); c != 0 {
			return c
		}
		if c := cmp.Compare(y.lenR, x.lenR); c != 0 {
			return c
		}
		return cmp.Compare(x.seq, y.seq)
	})
	out := make([][2]string, len(all))
	for i, c := range all {
		tok := tokens[c.tok]
		out[i] = [2]string{tok[:c.cut], tok[c.cut:]}
	}
	return out
}

// addedTokens lists the added tokens in the order transformers adds them:
// the class's default special tokens, control tokens, user-defined tokens,
// then the file's named special tokens (and GemmaTokenizer's "<mask>") not
// added yet. A token added again with other flags takes the new flags, but
// stays special for decoding once it was special (tokenizers keeps a set).
func (md *GGUFMetadata) addedTokens(kind ggufKind, p ggufPipeline, vocab map[string]uint32) []AddedToken {
	special := func(s string) AddedToken { return AddedToken{Content: s, Special: true} }
	var out []AddedToken
	present := map[string]bool{}
	for _, s := range p.defaults {
		out = append(out, special(s))
		present[s] = true
	}
	for i, tt := range md.TokenTypes {
		tok := md.Tokens[i]
		if tt == GGUFTokenControl && (kind != ggufByteLevel || inByteAlphabet(tok)) {
			out = append(out, special(tok))
			present[tok] = true
		}
	}
	for i, tt := range md.TokenTypes {
		tok := md.Tokens[i]
		if tt != GGUFTokenUserDefined {
			continue
		}
		if _, ok := vocab[tok]; ok || present[tok] {
			out = append(out, AddedToken{Content: tok})
			present[tok] = true
		}
	}
	// The wrapper class registers its named special tokens, those not added
	// yet only.
	named := func(s string) {
		if !present[s] {
			out = append(out, special(s))
			present[s] = true
		}
	}
	for _, id := range []*uint32{md.BOSTokenID, md.EOSTokenID, md.UnknownTokenID, md.PaddingTokenID} {
		if id != nil {
			named(md.Tokens[*id])
		}
	}
	if ggufGemmaArchs[md.Architecture] {
		named("<mask>")
	}
	return out
}

// addsBOS and addsEOS resolve tokenizer.ggml.add_bos_token/add_eos_token as
// transformers does.
func (md *GGUFMetadata) addsBOS() bool {
	if md.BOSTokenID == nil || md.Model == "gemma4" {
		return false
	}
	if md.AddBOSToken != nil {
		return *md.AddBOSToken
	}
	return md.Model == "llama"
}

func (md *GGUFMetadata) addsEOS() bool {
	return md.EOSTokenID != nil && md.AddEOSToken != nil && *md.AddEOSToken
}

// postProcessor is the TemplateProcessing transformers' update_post_processor
// writes: [bos] $A [eos], and for pairs [bos] $A [eos] [bos] $B [eos].
func (md *GGUFMetadata) postProcessor(t *Tokenizer) (string, error) {
	type piece map[string]map[string]any
	type special struct {
		ID     string   `json:"id"`
		IDs    []int    `json:"ids"`
		Tokens []string `json:"tokens"`
	}
	specials := map[string]special{}
	var single, pair []piece
	tok := func(id *uint32, typeID int) piece {
		s := md.Tokens[*id]
		return piece{"SpecialToken": {"id": s, "type_id": typeID}}
	}
	reg := func(id *uint32) error {
		s := md.Tokens[*id]
		tid, ok := t.TokenToID(s)
		if !ok {
			return fmt.Errorf("%w: special token %q not in the vocabulary", ErrMalformed, s)
		}
		specials[s] = special{s, []int{tid}, []string{s}}
		return nil
	}
	bos, eos := md.addsBOS(), md.addsEOS()
	for typeID, seq := range []string{"A", "B"} {
		var part []piece
		if bos {
			part = append(part, tok(md.BOSTokenID, typeID))
		}
		part = append(part, piece{"Sequence": {"id": seq, "type_id": typeID}})
		if eos {
			part = append(part, tok(md.EOSTokenID, typeID))
		}
		if typeID == 0 {
			single = part
		}
		pair = append(pair, part...)
	}
	if bos {
		if err := reg(md.BOSTokenID); err != nil {
			return "", fmt.Errorf("%s: %w", GGUFKeyBOSTokenID, err)
		}
	}
	if eos {
		if err := reg(md.EOSTokenID); err != nil {
			return "", fmt.Errorf("%s: %w", GGUFKeyEOSTokenID, err)
		}
	}
	b, err := json.Marshal(map[string]any{"type": "TemplateProcessing", "single": single, "pair": pair, "special_tokens": specials})
	return string(b), err
}
