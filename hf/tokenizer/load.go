package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// FromFile loads a tokenizer.json file.
func FromFile(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tokenizer: %w", err)
	}
	t, err := FromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return t, nil
}

type fileJSON struct {
	Version       *string         `json:"version"`
	Truncation    json.RawMessage `json:"truncation"`
	Padding       json.RawMessage `json:"padding"`
	AddedTokens   []AddedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	Model         json.RawMessage `json:"model"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
}

func isNull(r json.RawMessage) bool {
	r = bytes.TrimSpace(r)
	return len(r) == 0 || bytes.Equal(r, []byte("null"))
}

// component is the generic shape of a typed tokenizer.json component.
type component map[string]json.RawMessage

func (c component) typ() string {
	var s string
	if raw, ok := c["type"]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

func (c component) str(key, def string) (string, error) {
	raw, ok := c[key]
	if !ok || isNull(raw) {
		return def, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%w: field %q: %v", ErrMalformed, key, err)
	}
	return s, nil
}

func (c component) optStr(key string) (*string, error) {
	raw, ok := c[key]
	if !ok || isNull(raw) {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%w: field %q: %v", ErrMalformed, key, err)
	}
	return &s, nil
}

func (c component) boolean(key string, def bool) (bool, error) {
	raw, ok := c[key]
	if !ok || isNull(raw) {
		return def, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, fmt.Errorf("%w: field %q: %v", ErrMalformed, key, err)
	}
	return b, nil
}

func (c component) integer(key string, def int) (int, error) {
	raw, ok := c[key]
	if !ok || isNull(raw) {
		return def, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("%w: field %q: %v", ErrMalformed, key, err)
	}
	return n, nil
}

// buildSequence builds the components listed under key of a Sequence
// component with build, naming the failing position in errors.
func buildSequence[T any](c component, key string, build func(json.RawMessage) (T, error)) ([]T, error) {
	items, err := c.list(key)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(items))
	for i, it := range items {
		x, err := build(it)
		if err != nil {
			return nil, fmt.Errorf("Sequence[%d]: %w", i, err)
		}
		out = append(out, x)
	}
	return out, nil
}

func (c component) list(key string) ([]json.RawMessage, error) {
	raw, ok := c[key]
	if !ok || isNull(raw) {
		return nil, nil
	}
	var l []json.RawMessage
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("%w: field %q: %v", ErrMalformed, key, err)
	}
	return l, nil
}

func parseComponent(raw json.RawMessage, what string) (component, error) {
	fields, err := scanObjectRaw(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	c := make(component, len(fields))
	for k, v := range fields {
		c[k] = v
	}
	return c, nil
}

// FromBytes loads a tokenizer from the contents of a tokenizer.json file.
func FromBytes(data []byte) (*Tokenizer, error) {
	fields, err := scanObjectRaw(data)
	if err != nil {
		return nil, err
	}
	var f fileJSON
	f.Truncation, f.Padding = fields["truncation"], fields["padding"]
	f.Normalizer, f.PreTokenizer = fields["normalizer"], fields["pre_tokenizer"]
	f.Model, f.PostProcessor, f.Decoder = fields["model"], fields["post_processor"], fields["decoder"]
	if raw, ok := fields["version"]; ok && !isNull(raw) {
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("%w: version: %v", ErrMalformed, err)
		}
		f.Version = &v
	}
	if raw, ok := fields["added_tokens"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &f.AddedTokens); err != nil {
			return nil, fmt.Errorf("%w: added_tokens: %v", ErrMalformed, err)
		}
	}
	if f.Version != nil && *f.Version != "1.0" {
		return nil, fmt.Errorf("%w: tokenizer version %q", ErrUnsupported, *f.Version)
	}
	if isNull(f.Model) {
		return nil, fmt.Errorf("%w: missing model", ErrMalformed)
	}
	t := &Tokenizer{}
	if !isNull(f.Normalizer) {
		if t.normalizer, err = buildNormalizer(f.Normalizer); err != nil {
			return nil, fmt.Errorf("normalizer: %w", err)
		}
	}
	if !isNull(f.PreTokenizer) {
		if t.preTok, err = buildPreTokenizer(f.PreTokenizer); err != nil {
			return nil, fmt.Errorf("pre_tokenizer: %w", err)
		}
	}
	if t.model, err = buildModel(f.Model); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if !isNull(f.PostProcessor) {
		if t.post, err = buildPostProcessor(f.PostProcessor); err != nil {
			return nil, fmt.Errorf("post_processor: %w", err)
		}
	}
	if !isNull(f.Decoder) {
		if t.decoder, err = buildDecoder(f.Decoder); err != nil {
			return nil, fmt.Errorf("decoder: %w", err)
		}
	}
	if !isNull(f.Truncation) {
		var tr Truncation
		if err := json.Unmarshal(f.Truncation, &tr); err != nil {
			return nil, fmt.Errorf("truncation: %w: %v", ErrMalformed, err)
		}
		if err := t.SetTruncation(&tr); err != nil {
			return nil, fmt.Errorf("truncation: %w", err)
		}
	}
	if !isNull(f.Padding) {
		p, err := parsePadding(f.Padding)
		if err != nil {
			return nil, fmt.Errorf("padding: %w", err)
		}
		t.padding = p
	}
	if err := t.addTokens(f.AddedTokens); err != nil {
		return nil, fmt.Errorf("added_tokens: %w", err)
	}
	t.enableLazyByteLevel()
	return t, nil
}

func parsePadding(raw json.RawMessage) (*Padding, error) {
	var pj struct {
		Strategy        json.RawMessage `json:"strategy"`
		Direction       string          `json:"direction"`
		PadToMultipleOf *int            `json:"pad_to_multiple_of"`
		PadID           int             `json:"pad_id"`
		PadTypeID       int             `json:"pad_type_id"`
		PadToken        string          `json:"pad_token"`
	}
	if err := json.Unmarshal(raw, &pj); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	p := &Padding{Left: pj.Direction == "Left", PadID: pj.PadID, PadTypeID: pj.PadTypeID, PadToken: pj.PadToken}
	if pj.PadToMultipleOf != nil {
		p.PadToMultipleOf = *pj.PadToMultipleOf
	}
	var fixed struct {
		Fixed int `json:"Fixed"`
	}
	if len(pj.Strategy) > 0 && pj.Strategy[0] == '{' {
		if err := json.Unmarshal(pj.Strategy, &fixed); err != nil {
			return nil, fmt.Errorf("%w: strategy: %v", ErrMalformed, err)
		}
		p.Fixed = fixed.Fixed
	}
	return p, nil
}

// addTokens registers added tokens as HF does: an existing vocabulary entry
// keeps its id, new contents get ids after the vocabulary.
func (t *Tokenizer) addTokens(toks []AddedToken) error {
	v := &t.added
	v.byContent = make(map[string]uint32)
	v.byID = make(map[uint32]*AddedToken)
	v.display = make(map[uint32]string)
	v.special = make(map[string]bool)
	// A new token gets the id after the highest added id when that is past
	// the vocabulary, else the vocabulary size (tokenizers' AddedVocabulary;
	// the two differ when a vocabulary with duplicated tokens leaves ids
	// past its size).
	vocabSize := uint32(t.model.vocabSize())
	maxAdded, anyAdded := uint32(0), false
	for i := range toks {
		tok := toks[i]
		if tok.Content == "" {
			continue
		}
		if id, ok := v.byContent[tok.Content]; ok && *v.byID[id] == tok {
			continue
		}
		var id uint32
		if x, ok := v.byContent[tok.Content]; ok {
			id = x
		} else if x, ok := t.model.tokenToID(tok.Content); ok {
			id = x
		} else {
			id = vocabSize
			if anyAdded && (maxAdded >= vocabSize || vocabSize == 0) {
				id = maxAdded + 1
			}
		}
		if !anyAdded || id > maxAdded {
			maxAdded, anyAdded = id, true
		}
		tok.ID = int(id)
		v.byContent[tok.Content] = id
		v.byID[id] = &tok
		v.display[id] = tok.Content
		if tok.Special {
			v.special[tok.Content] = true
		}
	}
	v.raw, v.norm = newTokenMatcher(), newTokenMatcher()
	ids := make([]uint32, 0, len(v.byID))
	for id := range v.byID {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		tok := v.byID[id]
		if !tok.Normalized {
			v.raw.add(tok.Content, id)
			continue
		}
		pat := tok.Content
		if t.normalizer != nil {
			n := newNormStr(tok.Content, 0)
			if err := t.normalizer.normalize(&n); err != nil {
				return fmt.Errorf("normalize added token %q: %w", tok.Content, err)
			}
			if n.norm != tok.Content {
				v.display[id] = n.norm
				pat = n.norm
			}
		}
		v.norm.add(pat, id)
	}
	return nil
}

// enableLazyByteLevel lets a final ByteLevel pre-tokenizer hand raw bytes to
// a BPE model whose vocabulary holds the whole byte alphabet.
func (t *Tokenizer) enableLazyByteLevel() {
	bpe, ok := t.model.(*bpeModel)
	if !ok || !bpe.byteLevelOK {
		return
	}
	var last preTokenizer = t.preTok
	for {
		s, ok := last.(seqPreTokenizer)
		if !ok || len(s) == 0 {
			break
		}
		last = s[len(s)-1]
	}
	if bl, ok := last.(*byteLevelPreTokenizer); ok {
		if bpe.ignoreMerges && bpe.rawVocab == nil {
			return
		}
		bl.lazy = true
	}
}

func parsePattern(raw json.RawMessage) (pattern, error) {
	var p struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("%w: pattern: %v", ErrMalformed, err)
	}
	switch {
	case p.String != nil:
		return &literalPattern{*p.String}, nil
	case p.Regex != nil:
		return compilePattern(*p.Regex)
	}
	return nil, fmt.Errorf("%w: pattern needs String or Regex", ErrMalformed)
}

func buildNormalizer(raw json.RawMessage) (normalizer, error) {
	c, err := parseComponent(raw, "normalizer")
	if err != nil {
		return nil, err
	}
	switch typ := c.typ(); typ {
	case "Sequence":
		items, err := buildSequence(c, "normalizers", buildNormalizer)
		if err != nil {
			return nil, err
		}
		return seqNormalizer(items), nil
	case "NFC":
		return unicodeNormalizer{norm.NFC}, nil
	case "NFD":
		return unicodeNormalizer{norm.NFD}, nil
	case "NFKC":
		return unicodeNormalizer{norm.NFKC}, nil
	case "NFKD":
		return unicodeNormalizer{norm.NFKD}, nil
	case "Lowercase":
		return lowercaseNormalizer{}, nil
	case "Strip":
		l, err := c.boolean("strip_left", true)
		if err != nil {
			return nil, err
		}
		r, err := c.boolean("strip_right", true)
		if err != nil {
			return nil, err
		}
		return stripNormalizer{l, r}, nil
	case "StripAccents":
		return stripAccentsNormalizer{}, nil
	case "Nmt":
		return nmtNormalizer{}, nil
	case "ByteLevel":
		return byteLevelNormalizer{}, nil
	case "Replace":
		pat, err := parsePattern(c["pattern"])
		if err != nil {
			return nil, fmt.Errorf("Replace: %w", err)
		}
		content, err := c.str("content", "")
		if err != nil {
			return nil, err
		}
		return &replaceNormalizer{pat, content}, nil
	case "Prepend":
		s, err := c.str("prepend", "")
		if err != nil {
			return nil, err
		}
		return prependNormalizer{s}, nil
	case "BertNormalizer":
		b := &bertNormalizer{}
		if b.cleanText, err = c.boolean("clean_text", true); err != nil {
			return nil, err
		}
		if b.handleChinese, err = c.boolean("handle_chinese_chars", true); err != nil {
			return nil, err
		}
		if b.lowercase, err = c.boolean("lowercase", true); err != nil {
			return nil, err
		}
		if raw, ok := c["strip_accents"]; ok && !isNull(raw) {
			var v bool
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("%w: strip_accents: %v", ErrMalformed, err)
			}
			b.stripAccents = &v
		}
		return b, nil
	case "Precompiled":
		s, err := c.str("precompiled_charsmap", "")
		if err != nil {
			return nil, err
		}
		return newPrecompiled(s)
	case "":
		return nil, fmt.Errorf("%w: normalizer without a type", ErrMalformed)
	default:
		return nil, fmt.Errorf("%w: normalizer type %q", ErrUnsupported, typ)
	}
}

func parseBehavior(c component) (splitBehavior, error) {
	s, err := c.str("behavior", "Isolated")
	if err != nil {
		return 0, err
	}
	switch s {
	case "Removed":
		return behaviorRemoved, nil
	case "Isolated":
		return behaviorIsolated, nil
	case "MergedWithPrevious":
		return behaviorMergedWithPrevious, nil
	case "MergedWithNext":
		return behaviorMergedWithNext, nil
	case "Contiguous":
		return behaviorContiguous, nil
	}
	return 0, fmt.Errorf("%w: split behavior %q", ErrUnsupported, s)
}

func buildPreTokenizer(raw json.RawMessage) (preTokenizer, error) {
	c, err := parseComponent(raw, "pre_tokenizer")
	if err != nil {
		return nil, err
	}
	switch typ := c.typ(); typ {
	case "Sequence":
		items, err := buildSequence(c, "pretokenizers", buildPreTokenizer)
		if err != nil {
			return nil, err
		}
		return seqPreTokenizer(items), nil
	case "ByteLevel":
		b := &byteLevelPreTokenizer{}
		if b.addPrefixSpace, err = c.boolean("add_prefix_space", true); err != nil {
			return nil, err
		}
		if b.useRegex, err = c.boolean("use_regex", true); err != nil {
			return nil, err
		}
		return b, nil
	case "Metaspace":
		rep, err := c.str("replacement", "▁")
		if err != nil {
			return nil, err
		}
		if utf8.RuneCountInString(rep) != 1 {
			return nil, fmt.Errorf("%w: Metaspace replacement %q must be one character", ErrMalformed, rep)
		}
		scheme, err := c.str("prepend_scheme", "always")
		if err != nil {
			return nil, err
		}
		if raw, ok := c["add_prefix_space"]; ok && string(bytes.TrimSpace(raw)) == "false" {
			if _, has := c["prepend_scheme"]; has && scheme != "never" {
				return nil, fmt.Errorf("%w: Metaspace add_prefix_space does not match prepend_scheme", ErrMalformed)
			}
			scheme = "never"
		}
		switch scheme {
		case "always", "first", "never":
		default:
			return nil, fmt.Errorf("%w: Metaspace prepend_scheme %q", ErrUnsupported, scheme)
		}
		sp, err := c.boolean("split", true)
		if err != nil {
			return nil, err
		}
		return &metaspacePreTokenizer{replacement: rep, prepend: scheme, splitWords: sp}, nil
	case "Whitespace":
		return whitespacePreTokenizer{}, nil
	case "WhitespaceSplit":
		return &patternSplit{pat: &runePattern{isWhitespace}, behavior: behaviorRemoved}, nil
	case "BertPreTokenizer":
		return bertPreTokenizer{}, nil
	case "Punctuation":
		b, err := parseBehavior(c)
		if err != nil {
			return nil, err
		}
		return &patternSplit{pat: &runePattern{isPunctuation}, behavior: b}, nil
	case "Digits":
		ind, err := c.boolean("individual_digits", false)
		if err != nil {
			return nil, err
		}
		b := behaviorContiguous
		if ind {
			b = behaviorIsolated
		}
		return &patternSplit{pat: &runePattern{isNumeric}, behavior: b}, nil
	case "Split":
		pat, err := parsePattern(c["pattern"])
		if err != nil {
			return nil, fmt.Errorf("Split: %w", err)
		}
		b, err := parseBehavior(c)
		if err != nil {
			return nil, err
		}
		inv, err := c.boolean("invert", false)
		if err != nil {
			return nil, err
		}
		return &patternSplit{pat: pat, behavior: b, invert: inv}, nil
	case "CharDelimiterSplit":
		d, err := c.str("delimiter", "")
		if err != nil {
			return nil, err
		}
		r, size := utf8.DecodeRuneInString(d)
		if size == 0 || size != len(d) {
			return nil, fmt.Errorf("%w: CharDelimiterSplit delimiter %q must be one character", ErrMalformed, d)
		}
		return charDelimiterSplit{r}, nil
	case "":
		return nil, fmt.Errorf("%w: pre_tokenizer without a type", ErrMalformed)
	default:
		return nil, fmt.Errorf("%w: pre_tokenizer type %q", ErrUnsupported, typ)
	}
}

func buildModel(raw json.RawMessage) (model, error) {
	c, err := parseComponent(raw, "model")
	if err != nil {
		return nil, err
	}
	typ := c.typ()
	if typ == "" { // untagged, as older files: infer from the fields
		switch {
		case c["merges"] != nil:
			typ = "BPE"
		case c["max_input_chars_per_word"] != nil || c["continuing_subword_prefix"] != nil:
			typ = "WordPiece"
		case len(bytes.TrimSpace(c["vocab"])) > 0 && bytes.TrimSpace(c["vocab"])[0] == '[':
			typ = "Unigram"
		default:
			typ = "WordLevel"
		}
	}
	switch typ {
	case "BPE":
		return buildBPE(c)
	case "WordPiece":
		vocab, err := parseVocab(c)
		if err != nil {
			return nil, err
		}
		unk, err := c.str("unk_token", "[UNK]")
		if err != nil {
			return nil, err
		}
		prefix, err := c.str("continuing_subword_prefix", "##")
		if err != nil {
			return nil, err
		}
		maxChars, err := c.integer("max_input_chars_per_word", 100)
		if err != nil {
			return nil, err
		}
		if _, ok := vocab[unk]; !ok {
			return nil, fmt.Errorf("%w: WordPiece unk_token %q not in vocabulary", ErrMalformed, unk)
		}
		return newWordPiece(vocab, unk, prefix, maxChars), nil
	case "WordLevel":
		vocab, err := parseVocab(c)
		if err != nil {
			return nil, err
		}
		unk, err := c.str("unk_token", "<unk>")
		if err != nil {
			return nil, err
		}
		m := &wordLevelModel{vocab: vocab, vocabR: newRevVocab(vocab), unk: unk}
		return m, nil
	case "Unigram":
		pieces, scores, err := parseUnigramVocabFast(c["vocab"])
		if err != nil {
			return nil, err
		}
		unkID, err := c.integer("unk_id", -1)
		if err != nil {
			return nil, err
		}
		bf, err := c.boolean("byte_fallback", false)
		if err != nil {
			return nil, err
		}
		return newUnigram(pieces, scores, unkID, bf)
	default:
		return nil, fmt.Errorf("%w: model type %q", ErrUnsupported, typ)
	}
}

func parseVocab(c component) (map[string]uint32, error) {
	raw, ok := c["vocab"]
	if !ok || isNull(raw) {
		return nil, fmt.Errorf("%w: missing vocab", ErrMalformed)
	}
	vocab, err := parseVocabFast(raw)
	if err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	return vocab, nil
}

func buildBPE(c component) (model, error) {
	vocab, err := parseVocab(c)
	if err != nil {
		return nil, err
	}
	rawMerges, ok := c["merges"]
	if !ok || isNull(rawMerges) {
		return nil, fmt.Errorf("%w: BPE without merges", ErrMalformed)
	}
	merges, err := parseMergesFast(rawMerges)
	if err != nil {
		return nil, fmt.Errorf("merges: %w", err)
	}
	unk, err := c.optStr("unk_token")
	if err != nil {
		return nil, err
	}
	prefix, err := c.str("continuing_subword_prefix", "")
	if err != nil {
		return nil, err
	}
	suffix, err := c.str("end_of_word_suffix", "")
	if err != nil {
		return nil, err
	}
	fuse, err := c.boolean("fuse_unk", false)
	if err != nil {
		return nil, err
	}
	bf, err := c.boolean("byte_fallback", false)
	if err != nil {
		return nil, err
	}
	im, err := c.boolean("ignore_merges", false)
	if err != nil {
		return nil, err
	}
	return newBPE(vocab, merges, unk, prefix, suffix, fuse, bf, im)
}

// splitMerge splits "a b" into exactly two parts on a single space.
func splitMerge(s string) (string, string, bool) {
	i := bytes.IndexByte([]byte(s), ' ')
	if i < 0 {
		return "", "", false
	}
	a, b := s[:i], s[i+1:]
	if bytes.IndexByte([]byte(b), ' ') >= 0 {
		return "", "", false
	}
	return a, b, true
}

func parseTokenID(raw json.RawMessage) (string, int, error) {
	var pair [2]json.RawMessage
	if err := json.Unmarshal(raw, &pair); err != nil {
		return "", 0, fmt.Errorf("%w: expected [token, id]: %v", ErrMalformed, err)
	}
	var s string
	var id int
	if err := json.Unmarshal(pair[0], &s); err != nil {
		return "", 0, fmt.Errorf("%w: expected [token, id]: %v", ErrMalformed, err)
	}
	if err := json.Unmarshal(pair[1], &id); err != nil {
		return "", 0, fmt.Errorf("%w: expected [token, id]: %v", ErrMalformed, err)
	}
	return s, id, nil
}

func buildPostProcessor(raw json.RawMessage) (postProcessor, error) {
	c, err := parseComponent(raw, "post_processor")
	if err != nil {
		return nil, err
	}
	switch typ := c.typ(); typ {
	case "Sequence":
		items, err := buildSequence(c, "processors", buildPostProcessor)
		if err != nil {
			return nil, err
		}
		return seqProcessor(items), nil
	case "ByteLevel":
		b := byteLevelProcessor{}
		if b.addPrefixSpace, err = c.boolean("add_prefix_space", true); err != nil {
			return nil, err
		}
		if b.trim, err = c.boolean("trim_offsets", true); err != nil {
			return nil, err
		}
		return b, nil
	case "BertProcessing", "RobertaProcessing":
		sepTok, sepID, err := parseTokenID(c["sep"])
		if err != nil {
			return nil, fmt.Errorf("%s sep: %w", typ, err)
		}
		clsTok, clsID, err := parseTokenID(c["cls"])
		if err != nil {
			return nil, fmt.Errorf("%s cls: %w", typ, err)
		}
		if typ == "BertProcessing" {
			return bertProcessor{sepTok, clsTok, sepID, clsID}, nil
		}
		r := robertaProcessor{sepTok: sepTok, clsTok: clsTok, sepID: sepID, clsID: clsID}
		if r.trim, err = c.boolean("trim_offsets", true); err != nil {
			return nil, err
		}
		if r.addPrefixSpace, err = c.boolean("add_prefix_space", true); err != nil {
			return nil, err
		}
		return r, nil
	case "TemplateProcessing":
		return buildTemplate(c)
	case "":
		return nil, fmt.Errorf("%w: post_processor without a type", ErrMalformed)
	default:
		return nil, fmt.Errorf("%w: post_processor type %q", ErrUnsupported, typ)
	}
}

func buildTemplate(c component) (postProcessor, error) {
	t := &templateProcessor{specials: map[string]templateSpecial{}}
	if raw, ok := c["special_tokens"]; ok && !isNull(raw) {
		var sp map[string]struct {
			ID     string   `json:"id"`
			IDs    []int    `json:"ids"`
			Tokens []string `json:"tokens"`
		}
		if err := json.Unmarshal(raw, &sp); err != nil {
			return nil, fmt.Errorf("%w: TemplateProcessing special_tokens: %v", ErrMalformed, err)
		}
		for k, v := range sp {
			if len(v.IDs) != len(v.Tokens) {
				return nil, fmt.Errorf("%w: TemplateProcessing special token %q: %d ids for %d tokens", ErrMalformed, k, len(v.IDs), len(v.Tokens))
			}
			t.specials[k] = templateSpecial{v.IDs, v.Tokens}
		}
	}
	parse := func(key string) ([]templatePiece, error) {
		raw, ok := c[key]
		if !ok || isNull(raw) {
			return nil, nil
		}
		var items []map[string]struct {
			ID     string `json:"id"`
			TypeID int    `json:"type_id"`
		}
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, fmt.Errorf("%w: TemplateProcessing %s: %v", ErrMalformed, key, err)
		}
		var out []templatePiece
		for _, it := range items {
			if s, ok := it["Sequence"]; ok {
				if s.ID != "A" && s.ID != "B" {
					return nil, fmt.Errorf("%w: TemplateProcessing sequence id %q", ErrMalformed, s.ID)
				}
				out = append(out, templatePiece{isSeq: true, seqB: s.ID == "B", typeID: s.TypeID})
			} else if s, ok := it["SpecialToken"]; ok {
				if _, ok := t.specials[s.ID]; !ok {
					return nil, fmt.Errorf("%w: TemplateProcessing special token %q is not defined", ErrMalformed, s.ID)
				}
				out = append(out, templatePiece{special: s.ID, typeID: s.TypeID})
			} else {
				return nil, fmt.Errorf("%w: TemplateProcessing %s item needs Sequence or SpecialToken", ErrMalformed, key)
			}
		}
		return out, nil
	}
	var err error
	if t.single, err = parse("single"); err != nil {
		return nil, err
	}
	if t.pair, err = parse("pair"); err != nil {
		return nil, err
	}
	return t, nil
}

func buildDecoder(raw json.RawMessage) (decoder, error) {
	c, err := parseComponent(raw, "decoder")
	if err != nil {
		return nil, err
	}
	switch typ := c.typ(); typ {
	case "Sequence":
		items, err := buildSequence(c, "decoders", buildDecoder)
		if err != nil {
			return nil, err
		}
		return seqDecoder(items), nil
	case "ByteLevel":
		return byteLevelDecoder{}, nil
	case "Metaspace":
		rep, err := c.str("replacement", "▁")
		if err != nil {
			return nil, err
		}
		r, size := utf8.DecodeRuneInString(rep)
		if size == 0 || size != len(rep) {
			return nil, fmt.Errorf("%w: Metaspace replacement %q must be one character", ErrMalformed, rep)
		}
		scheme, err := c.str("prepend_scheme", "always")
		if err != nil {
			return nil, err
		}
		if raw, ok := c["add_prefix_space"]; ok && string(bytes.TrimSpace(raw)) == "false" {
			scheme = "never"
		}
		return metaspaceDecoder{replacement: r, prepend: scheme != "never"}, nil
	case "WordPiece":
		prefix, err := c.str("prefix", "##")
		if err != nil {
			return nil, err
		}
		cl, err := c.boolean("cleanup", true)
		if err != nil {
			return nil, err
		}
		return wordPieceDecoder{prefix, cl}, nil
	case "ByteFallback":
		return byteFallbackDecoder{}, nil
	case "Fuse":
		return fuseDecoder{}, nil
	case "Strip":
		content, err := c.str("content", " ")
		if err != nil {
			return nil, err
		}
		r, size := utf8.DecodeRuneInString(content)
		if size == 0 || size != len(content) {
			return nil, fmt.Errorf("%w: Strip content %q must be one character", ErrMalformed, content)
		}
		start, err := c.integer("start", 0)
		if err != nil {
			return nil, err
		}
		stop, err := c.integer("stop", 0)
		if err != nil {
			return nil, err
		}
		return stripDecoder{r, start, stop}, nil
	case "Replace":
		pat, err := parsePattern(c["pattern"])
		if err != nil {
			return nil, fmt.Errorf("Replace: %w", err)
		}
		content, err := c.str("content", "")
		if err != nil {
			return nil, err
		}
		return &replaceDecoder{pat, content}, nil
	case "BPEDecoder":
		s, err := c.str("suffix", "</w>")
		if err != nil {
			return nil, err
		}
		return bpeDecoder{s}, nil
	case "CTC":
		pad, err := c.str("pad_token", "<pad>")
		if err != nil {
			return nil, err
		}
		delim, err := c.str("word_delimiter_token", "|")
		if err != nil {
			return nil, err
		}
		cl, err := c.boolean("cleanup", true)
		if err != nil {
			return nil, err
		}
		return ctcDecoder{pad, delim, cl}, nil
	case "":
		return nil, fmt.Errorf("%w: decoder without a type", ErrMalformed)
	default:
		return nil, fmt.Errorf("%w: decoder type %q", ErrUnsupported, typ)
	}
}
