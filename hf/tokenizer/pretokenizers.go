package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// byteToRune is GPT-2's reversible map from bytes to printable characters.
var (
	byteToRune   [256]rune
	runeToByte   map[rune]byte
	byteLevelStr [256]string // byteToRune as strings
)

func init() {
	var bs []int
	for b := '!'; b <= '~'; b++ {
		bs = append(bs, int(b))
	}
	for b := 0xA1; b <= 0xAC; b++ {
		bs = append(bs, b)
	}
	for b := 0xAE; b <= 0xFF; b++ {
		bs = append(bs, b)
	}
	in := make(map[int]bool, 256)
	for _, b := range bs {
		in[b] = true
		byteToRune[b] = rune(b)
	}
	n := 0
	for b := 0; b < 256; b++ {
		if !in[b] {
			byteToRune[b] = rune(256 + n)
			n++
		}
	}
	runeToByte = make(map[rune]byte, 256)
	for b := 0; b < 256; b++ {
		runeToByte[byteToRune[b]] = byte(b)
		byteLevelStr[b] = string(byteToRune[b])
	}
}

// splitBehavior says what happens to the delimiters found by a split.
type splitBehavior int

const (
	behaviorRemoved splitBehavior = iota
	behaviorIsolated
	behaviorMergedWithPrevious
	behaviorMergedWithNext
	behaviorContiguous
)

// splitNorm cuts n according to pieces and behavior, appending non-empty
// sub-pieces to dst.
func splitNorm(n *normStr, pieces []piece, behavior splitBehavior, dst []normStr, sc *scratch) []normStr {
	out := sc.rngs[:0]
	defer func() { sc.rngs = out[:0] }()
	switch behavior {
	case behaviorIsolated:
		for _, p := range pieces {
			out = append(out, rng{p.sp, false})
		}
	case behaviorRemoved:
		for _, p := range pieces {
			out = append(out, rng{p.sp, p.isMatch})
		}
	case behaviorContiguous:
		prev := false
		for _, p := range pieces {
			if p.isMatch == prev && len(out) > 0 {
				out[len(out)-1].sp.end = p.sp.end
			} else {
				out = append(out, rng{p.sp, false})
			}
			prev = p.isMatch
		}
	case behaviorMergedWithPrevious:
		prev := false
		for _, p := range pieces {
			if p.isMatch && !prev && len(out) > 0 {
				out[len(out)-1].sp.end = p.sp.end
			} else {
				out = append(out, rng{p.sp, false})
			}
			prev = p.isMatch
		}
	case behaviorMergedWithNext:
		prev := false
		for i := len(pieces) - 1; i >= 0; i-- {
			p := pieces[i]
			if p.isMatch && !prev && len(out) > 0 {
				out[len(out)-1].sp.start = p.sp.start
			} else {
				out = append(out, rng{p.sp, false})
			}
			prev = p.isMatch
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	for _, r := range out {
		if r.remove || r.sp.end <= r.sp.start {
			continue
		}
		dst = append(dst, n.slice(r.sp.start, r.sp.end))
	}
	return dst
}

// scratch holds buffers reused across pre-tokenization calls of one encode.
type scratch struct {
	spans  []span
	pieces []piece
	rngs   []rng
	bufs   [][]normStr
}

type rng struct {
	sp     span
	remove bool
}

func (sc *scratch) getBuf() []normStr {
	if n := len(sc.bufs); n > 0 {
		b := sc.bufs[n-1]
		sc.bufs = sc.bufs[:n-1]
		return b[:0]
	}
	return make([]normStr, 0, 16)
}

func (sc *scratch) putBuf(b []normStr) {
	clear(b)
	sc.bufs = append(sc.bufs, b[:0])
}

// preTokenizer cuts one piece into words, appending them to dst.
type preTokenizer interface {
	split(n normStr, dst []normStr, sc *scratch) ([]normStr, error)
}

type seqPreTokenizer []preTokenizer

func (s seqPreTokenizer) split(n normStr, dst []normStr, sc *scratch) ([]normStr, error) {
	cur := append(sc.getBuf(), n)
	next := sc.getBuf()
	defer func() {
		sc.putBuf(cur)
		sc.putBuf(next)
	}()
	var err error
	for _, p := range s {
		next = next[:0]
		for _, c := range cur {
			if next, err = p.split(c, next, sc); err != nil {
				return dst, err
			}
		}
		cur, next = next, cur
	}
	return append(dst, cur...), nil
}

// patternSplit splits with a pattern and a behavior (Split, Punctuation,
// Digits, WhitespaceSplit, ...).
type patternSplit struct {
	pat      pattern
	behavior splitBehavior
	invert   bool
}

func (p *patternSplit) split(n normStr, dst []normStr, sc *scratch) ([]normStr, error) {
	if n.norm == "" {
		return dst, nil
	}
	m := p.pat.findAll(n.norm, sc.spans[:0])
	sc.spans = m[:0]
	if p.behavior == behaviorIsolated {
		// Every piece is kept: cut directly at the match boundaries.
		prev := 0
		for _, x := range m {
			if prev < x.start {
				dst = append(dst, n.slice(prev, x.start))
			}
			if x.end > x.start {
				dst = append(dst, n.slice(x.start, x.end))
			}
			prev = max(prev, x.end)
		}
		if prev < len(n.norm) {
			dst = append(dst, n.slice(prev, len(n.norm)))
		}
		return dst, nil
	}
	pieces := splitPieces(n.norm, m, p.invert, sc.pieces[:0])
	sc.pieces = pieces[:0]
	return splitNorm(&n, pieces, p.behavior, dst, sc), nil
}

// whitespacePreTokenizer implements `\w+|[^\w\s]+` (matches kept, the rest
// removed).
type whitespacePreTokenizer struct{}

type wordRunPattern struct{}

func (wordRunPattern) findAll(s string, dst []span) []span {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if isWordChar(r) {
			j := i + size
			for j < len(s) {
				r2, sz := utf8.DecodeRuneInString(s[j:])
				if !isWordChar(r2) {
					break
				}
				j += sz
			}
			dst = append(dst, span{i, j})
			i = j
			continue
		}
		if !isWhitespace(r) {
			j := i + size
			for j < len(s) {
				r2, sz := utf8.DecodeRuneInString(s[j:])
				if isWordChar(r2) || isWhitespace(r2) {
					break
				}
				j += sz
			}
			dst = append(dst, span{i, j})
			i = j
			continue
		}
		i += size
	}
	return dst
}

func (whitespacePreTokenizer) split(n normStr, dst []normStr, sc *scratch) ([]normStr, error) {
	p := patternSplit{pat: wordRunPattern{}, behavior: behaviorRemoved, invert: true}
	return p.split(n, dst, sc)
}

// bertPreTokenizer splits on whitespace (removed) then isolates punctuation.
type bertPreTokenizer struct{}

func (bertPreTokenizer) split(n normStr, dst []normStr, sc *scratch) ([]normStr, error) {
	ws := patternSplit{pat: &runePattern{isWhitespace}, behavior: behaviorRemoved}
	words, _ := ws.split(n, sc.getBuf(), sc)
	pu := patternSplit{pat: &runePattern{isPunctuation}, behavior: behaviorIsolated}
	for _, w := range words {
		dst, _ = pu.split(w, dst, sc)
	}
	sc.putBuf(words)
	return dst, nil
}

// metaspacePreTokenizer replaces spaces with the replacement character,
// prepends it according to the scheme and splits before each occurrence.
type metaspacePreTokenizer struct {
	replacement string
	prepend     string // "always", "first", "never"
	splitWords  bool
}

func (m *metaspacePreTokenizer) split(n normStr, dst []normStr, sc *scratch) ([]normStr, error) {
	if strings.IndexByte(n.norm, ' ') >= 0 {
		lp := literalPattern{" "}
		n.replaceMatches(lp.findAll(n.norm, nil), m.replacement)
	}
	switch m.prepend {
	case "always":
		if !strings.HasPrefix(n.norm, m.replacement) {
			n.prepend(m.replacement)
		}
	case "first":
		if !strings.HasPrefix(n.norm, m.replacement) && n.shift == 0 {
			n.prepend(m.replacement)
		}
	}
	if !m.splitWords {
		if n.norm == "" {
			return dst, nil
		}
		return append(dst, n), nil
	}
	rep, _ := utf8.DecodeRuneInString(m.replacement)
	p := patternSplit{pat: &runePattern{func(r rune) bool { return r == rep }}, behavior: behaviorMergedWithNext}
	return p.split(n, dst, sc)
}

// byteLevelPreTokenizer is GPT-2's pre-tokenizer: optional prefix space,
// the GPT-2 regex split, and the byte-to-character mapping. When lazy is set
// the mapping is left to the BPE model, which works on raw bytes.
type byteLevelPreTokenizer struct {
	addPrefixSpace bool
	useRegex       bool
	lazy           bool
}

var gpt2Hand = &handPattern{handGPT2}

func (b *byteLevelPreTokenizer) split(n normStr, dst []normStr, sc *scratch) ([]normStr, error) {
	if b.addPrefixSpace && !strings.HasPrefix(n.norm, " ") {
		n.prepend(" ")
	}
	start := len(dst)
	if b.useRegex {
		m := gpt2Hand.findAll(n.norm, sc.spans[:0])
		sc.spans = m[:0]
		for _, x := range m {
			if x.end > x.start {
				dst = append(dst, n.slice(x.start, x.end))
			}
		}
	} else if n.norm != "" {
		dst = append(dst, n)
	}
	for i := start; i < len(dst); i++ {
		if b.lazy {
			dst[i].byteLevel = true
		} else {
			byteLevelTransform(&dst[i])
		}
	}
	return dst, nil
}

// charDelimiterSplit splits on one character, removing it.
type charDelimiterSplit struct{ delim rune }

func (c charDelimiterSplit) split(n normStr, dst []normStr, sc *scratch) ([]normStr, error) {
	p := patternSplit{pat: &runePattern{func(r rune) bool { return r == c.delim }}, behavior: behaviorRemoved}
	return p.split(n, dst, sc)
}
