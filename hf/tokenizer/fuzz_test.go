package tokenizer

import (
	"errors"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// FuzzFromBytes checks that arbitrary tokenizer.json bytes never panic the
// loader, and that a loaded tokenizer encodes and decodes without panicking.
func FuzzFromBytes(f *testing.F) {
	seeds := []string{
		`{}`,
		`{"model": null}`,
		`{"version": "2.0", "model": {"type": "BPE", "vocab": {}, "merges": []}}`,
		`{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}}`,
		`{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]], "byte_fallback": true, "unk_token": "a", "fuse_unk": true}}`,
		`{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a c"]}}`,
		`{"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1, "##b": 2}, "unk_token": "[UNK]"}, "pre_tokenizer": {"type": "BertPreTokenizer"}, "normalizer": {"type": "BertNormalizer", "lowercase": true}}`,
		`{"model": {"type": "Unigram", "vocab": [["<unk>", 0], ["a", -1.5], ["ab", -2]], "unk_id": 0, "byte_fallback": false}, "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"}}`,
		`{"model": {"type": "Unigram", "vocab": [["a", -1.5]], "unk_id": 3}}`,
		`{"normalizer": {"type": "Precompiled", "precompiled_charsmap": "AAAA"}, "model": {"type": "WordLevel", "vocab": {"<unk>": 0}, "unk_token": "<unk>"}}`,
		`{"normalizer": {"type": "Replace", "pattern": {"Regex": "(?!x)"}, "content": ""}, "model": {"type": "WordLevel", "vocab": {"<unk>": 0}, "unk_token": "<unk>"}}`,
		`{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\s+|x*"}, "behavior": "MergedWithNext", "invert": true}, "model": {"type": "WordLevel", "vocab": {"<unk>": 0}, "unk_token": "<unk>"}}`,
		`{"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}, "model": {"type": "WordLevel", "vocab": {"<unk>": 0}, "unk_token": "<unk>"}}`,
		`{"added_tokens": [{"id": 5, "content": "<x>", "special": true, "lstrip": true, "rstrip": true, "single_word": true, "normalized": false}], "model": {"type": "WordLevel", "vocab": {"<unk>": 0}, "unk_token": "<unk>"}, "truncation": {"max_length": 1, "stride": 0, "strategy": "LongestFirst", "direction": "Left"}, "padding": {"strategy": {"Fixed": 4}, "direction": "Left", "pad_id": 0, "pad_type_id": 0, "pad_token": "<unk>"}}`,
		`{"decoder": {"type": "Sequence", "decoders": [{"type": "Strip", "content": " ", "start": 3, "stop": 3}, {"type": "ByteFallback"}, {"type": "BPEDecoder"}]}, "model": {"type": "WordLevel", "vocab": {"<unk>": 0, "<0xE2>": 1}, "unk_token": "<unk>"}}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), "a <x> b\u00e9")
	}
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		tk, err := FromBytes(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error without a sentinel: %v", err)
			}
			return
		}
		e, err := tk.TryEncode(text, true)
		if err != nil {
			return
		}
		if _, err := tk.Decode(e.IDs, false); err != nil {
			t.Fatalf("decode: %v", err)
		}
		_, _ = tk.EncodePair(text, text, true)
	})
}

var fuzzTokenizers = map[string]*Tokenizer{}

func fuzzTokenizer(t testing.TB, name string) *Tokenizer {
	if tk, ok := fuzzTokenizers[name]; ok {
		return tk
	}
	p := filepath.Join(refRoot, name, "tokenizer.json")
	tk, err := FromFile(p)
	if err != nil {
		t.Fatalf("load %s: %v", p, err)
	}
	fuzzTokenizers[name] = tk
	return tk
}

// checkEncoding verifies structural invariants of an encoding of text.
func checkEncoding(t *testing.T, text string, e Encoding) {
	n := e.Len()
	if len(e.Tokens) != n || len(e.Offsets) != n || len(e.TypeIDs) != n || len(e.WordIDs) != n ||
		len(e.AttentionMask) != n || len(e.SpecialTokensMask) != n {
		t.Fatalf("field lengths differ from %d ids", n)
	}
	prev := 0
	for i, o := range e.Offsets {
		if o[0] < 0 || o[1] > len(text) || o[0] > o[1] {
			t.Fatalf("token %d %q offsets %v outside [0,%d]", i, e.Tokens[i], o, len(text))
		}
		if e.SpecialTokensMask[i] == 0 {
			if o[0] < prev {
				t.Fatalf("token %d offsets %v go back before %d", i, o, prev)
			}
			prev = o[0]
		}
	}
}

// FuzzEncodeGPT2 checks that decode(encode(x)) == x for the byte-level BPE
// of GPT-2 on any valid UTF-8, and the encoding invariants.
func FuzzEncodeGPT2(f *testing.F) {
	for _, s := range []string{"", "Hello world", "  spaces\t\n\n x", "don't I'LL", "日本語 😀👍🏽", "<|endoftext|>a<|endoftext|>", "e\u0301\u0302", "12345 6789.0", "\x00\x7f\u0085\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			return
		}
		tk := fuzzTokenizer(t, "gpt2")
		e, err := tk.TryEncode(text, false)
		if err != nil {
			t.Fatalf("encode %q: %v", text, err)
		}
		checkEncoding(t, text, e)
		got, err := tk.Decode(e.IDs, false)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if got != text {
			t.Fatalf("decode(encode(%q)) = %q", text, got)
		}
	})
}

// FuzzEncodeLlama2 checks SentencePiece-style BPE with byte fallback: no
// panics, valid offsets, and a round trip for text without the metaspace
// character or special-token strings.
func FuzzEncodeLlama2(f *testing.F) {
	for _, s := range []string{"", "Hello world", " leading", "trailing ", "日本語 😀", "<s>x</s>", "\u2581", "\x00\ufffd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			return
		}
		tk := fuzzTokenizer(t, "llama2")
		e, err := tk.TryEncode(text, true)
		if err != nil {
			t.Fatalf("encode %q: %v", text, err)
		}
		checkEncoding(t, text, e)
		if _, err := tk.Decode(e.IDs, true); err != nil {
			t.Fatalf("decode: %v", err)
		}
	})
}
