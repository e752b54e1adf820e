package tokenizer

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// pattern finds the non-overlapping matches of a split or replace pattern.
type pattern interface {
	findAll(s string, dst []span) []span
}

// Known pre-tokenization regexes that use Oniguruma features Go's regexp lacks
// ((?!\S) lookahead). They get hand-written matchers, which are also what make
// pre-tokenization fast.
const (
	// gpt2Pattern is the GPT-2 / ByteLevel regex.
	gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// cl100kPattern is the GPT-4 (cl100k) regex, also used by Llama 3.
	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// qwenPattern is the Qwen2/Qwen3 regex (single digits).
	qwenPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// o200kPattern is the GPT-4o (o200k) regex.
	o200kPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

type handKind int

const (
	handGPT2 handKind = iota
	handCL100k
	handQwen
	handO200k
)

// handPattern is a hand-coded matcher for one of the known regex families.
// Every position of the input is covered by some match, so the matches tile
// the string.
type handPattern struct{ kind handKind }

var asciiClass [128]uint8

func init() {
	for r := rune(0); r < 128; r++ {
		asciiClass[r] = computeClass(r)
	}
}

// at decodes the rune at i with its class bits.
func at(s string, i int) (rune, int, uint8) {
	b := s[i]
	if b < utf8.RuneSelf {
		return rune(b), 1, asciiClass[b]
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	return r, size, classOf(r)
}

const clsLN = clsL | clsN

// isOtherCls reports [^\s\p{L}\p{N}].
func isOtherCls(c uint8) bool { return c&(clsL|clsN|clsSpace) == 0 }

// runWhile returns the end of the run of characters from i whose class
// intersects mask.
func runWhile(s string, i int, mask uint8) int {
	for i < len(s) {
		b := s[i]
		if b < utf8.RuneSelf {
			if asciiClass[b]&mask == 0 {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if classOf(r)&mask == 0 {
			return i
		}
		i += size
	}
	return i
}

// runOther returns the end of the run of [^\s\p{L}\p{N}] characters from i.
func runOther(s string, i int) int {
	for i < len(s) {
		_, size, c := at(s, i)
		if !isOtherCls(c) {
			return i
		}
		i += size
	}
	return i
}

// contraction matches 's|'t|'re|'ve|'m|'ll|'d at i (optionally ignoring
// case, with Oniguruma's folding of U+017F to s) and returns its end or -1.
func contraction(s string, i int, fold bool) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return -1
	}
	lower := func(b byte) byte {
		if fold && b >= 'A' && b <= 'Z' {
			return b + 32
		}
		return b
	}
	c := lower(s[i+1])
	switch c {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v', 'l':
		if i+2 < len(s) {
			d := lower(s[i+2])
			if (c == 'r' || c == 'v') && d == 'e' || c == 'l' && d == 'l' {
				return i + 3
			}
		}
	}
	if fold && strings.HasPrefix(s[i+1:], "\u017f") {
		return i + 3
	}
	return -1
}

// spaceTail implements `\s+(?!\S)|\s+` at a whitespace character i.
func spaceTail(s string, i int) int {
	j := runWhile(s, i, clsSpace)
	if j == len(s) {
		return j
	}
	_, lastSize := utf8.DecodeLastRuneInString(s[:j])
	if j-lastSize > i {
		return j - lastSize
	}
	return j
}

// newlineRun implements `\s*[\r\n]+` at i: the whitespace run up to and
// including its last \r or \n, or -1.
func newlineRun(s string, i int) int {
	j := runWhile(s, i, clsSpace)
	for k := j - 1; k >= i; k-- {
		if s[k] == '\n' || s[k] == '\r' {
			return k + 1
		}
	}
	return -1
}

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

func (p *handPattern) findAll(s string, dst []span) []span {
	for i := 0; i < len(s); {
		var e int
		switch p.kind {
		case handGPT2:
			e = nextGPT2(s, i)
		case handCL100k:
			e = nextCL100k(s, i, 3)
		case handQwen:
			e = nextCL100k(s, i, 1)
		default:
			e = nextO200k(s, i)
		}
		if e <= i { // cannot happen: every character is covered
			_, size := utf8.DecodeRuneInString(s[i:])
			e = i + size
		}
		dst = append(dst, span{i, e})
		i = e
	}
	return dst
}

func nextGPT2(s string, i int) int {
	r0, sz0, c0 := at(s, i)
	if r0 == '\'' {
		if e := contraction(s, i, false); e > 0 {
			return e
		}
	}
	if r0 == ' ' && i+1 < len(s) {
		_, _, c1 := at(s, i+1)
		switch {
		case c1&clsL != 0:
			return runWhile(s, i+1, clsL)
		case c1&clsN != 0:
			return runWhile(s, i+1, clsN)
		case isOtherCls(c1):
			return runOther(s, i+1)
		}
	}
	switch {
	case c0&clsL != 0:
		return runWhile(s, i, clsL)
	case c0&clsN != 0:
		return runWhile(s, i, clsN)
	case isOtherCls(c0):
		return runOther(s, i)
	}
	_ = sz0
	return spaceTail(s, i)
}

func nextCL100k(s string, i int, maxDigits int) int {
	r0, sz0, c0 := at(s, i)
	if r0 == '\'' {
		if e := contraction(s, i, true); e > 0 {
			return e
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c0&clsL != 0 {
		return runWhile(s, i, clsL)
	}
	if c0&clsN == 0 && !isCRLF(r0) && i+sz0 < len(s) {
		if _, _, c1 := at(s, i+sz0); c1&clsL != 0 {
			return runWhile(s, i+sz0, clsL)
		}
	}
	// \p{N}{1,3}
	if c0&clsN != 0 {
		j := i
		for k := 0; k < maxDigits && j < len(s); k++ {
			_, size, c := at(s, j)
			if c&clsN == 0 {
				break
			}
			j += size
		}
		return j
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	if e := otherRun(s, i, r0, c0, "\r\n"); e > 0 {
		return e
	}
	// \s*[\r\n]+
	if e := newlineRun(s, i); e > 0 {
		return e
	}
	return spaceTail(s, i)
}

// otherRun implements ` ?[^\s\p{L}\p{N}]+[tail]*` at i, or returns -1.
func otherRun(s string, i int, r0 rune, c0 uint8, tail string) int {
	j := -1
	if r0 == ' ' && i+1 < len(s) {
		if _, _, c1 := at(s, i+1); isOtherCls(c1) {
			j = runOther(s, i+1)
		}
	}
	if j < 0 && isOtherCls(c0) {
		j = runOther(s, i)
	}
	if j < 0 {
		return -1
	}
	for j < len(s) && strings.IndexByte(tail, s[j]) >= 0 {
		j++
	}
	return j
}

// upperLower implements [U]*[W]+ at p (o200k), returning the end or -1.
func upperLower(s string, p int) int {
	j := runWhile(s, p, clsUp)
	if j < len(s) {
		if _, _, c := at(s, j); c&clsLow != 0 {
			return runWhile(s, j, clsLow)
		}
	}
	// Backtrack into the upper run for its last character that is also lower.
	for k := j; k > p; {
		r, size := utf8.DecodeLastRuneInString(s[p:k])
		k -= size
		if classOf(r)&clsLow != 0 {
			return k + size
		}
	}
	return -1
}

func nextO200k(s string, i int) int {
	r0, sz0, c0 := at(s, i)
	prefixOK := c0&clsLN == 0 && !isCRLF(r0) && i+sz0 < len(s)
	// Alternative 1: prefix? [U]*[W]+ contraction?
	if prefixOK {
		if e := upperLower(s, i+sz0); e > 0 {
			return withContraction(s, e)
		}
	}
	if e := upperLower(s, i); e > 0 {
		return withContraction(s, e)
	}
	// Alternative 2: prefix? [U]+[W]* contraction?
	if prefixOK {
		if _, _, c1 := at(s, i+sz0); c1&clsUp != 0 {
			e := runWhile(s, runWhile(s, i+sz0, clsUp), clsLow)
			return withContraction(s, e)
		}
	}
	if c0&clsUp != 0 {
		e := runWhile(s, runWhile(s, i, clsUp), clsLow)
		return withContraction(s, e)
	}
	if c0&clsN != 0 {
		j := i
		for k := 0; k < 3 && j < len(s); k++ {
			_, size, c := at(s, j)
			if c&clsN == 0 {
				break
			}
			j += size
		}
		return j
	}
	if e := otherRun(s, i, r0, c0, "\r\n/"); e > 0 {
		return e
	}
	if e := newlineRun(s, i); e > 0 {
		return e
	}
	return spaceTail(s, i)
}

func withContraction(s string, e int) int {
	if e < len(s) && s[e] == '\'' {
		if c := contraction(s, e, true); c > 0 {
			return c
		}
	}
	return e
}

// literalPattern matches a fixed string.
type literalPattern struct{ lit string }

func (p *literalPattern) findAll(s string, dst []span) []span {
	if p.lit == "" {
		return dst
	}
	for i := 0; i <= len(s); {
		k := strings.Index(s[i:], p.lit)
		if k < 0 {
			break
		}
		dst = append(dst, span{i + k, i + k + len(p.lit)})
		i += k + len(p.lit)
	}
	return dst
}

// runePattern matches every single character for which f is true.
type runePattern struct{ f func(rune) bool }

func (p *runePattern) findAll(s string, dst []span) []span {
	for i, r := range s {
		if p.f(r) {
			dst = append(dst, span{i, i + utf8.RuneLen(r)})
		}
	}
	return dst
}

// regexpPattern is an Oniguruma pattern translated to Go's RE2 syntax.
type regexpPattern struct{ re *regexp.Regexp }

func (p *regexpPattern) findAll(s string, dst []span) []span {
	for _, m := range p.re.FindAllStringIndex(s, -1) {
		dst = append(dst, span{m[0], m[1]})
	}
	return dst
}

// compilePattern builds a matcher for an Oniguruma regex from tokenizer.json.
func compilePattern(src string) (pattern, error) {
	switch src {
	case gpt2Pattern:
		return &handPattern{handGPT2}, nil
	case cl100kPattern:
		return &handPattern{handCL100k}, nil
	case qwenPattern:
		return &handPattern{handQwen}, nil
	case o200kPattern:
		return &handPattern{handO200k}, nil
	}
	const tail = `|\s+(?!\S)|\s+`
	if strings.HasSuffix(src, tail) && len(src) > len(tail) {
		// The usual `\s+(?!\S)|\s+` ending needs a lookahead: match the
		// other alternatives with Go's regexp, anchored at each position, and
		// the whitespace ending by hand.
		re, err := translateRegexp(`^(?:` + src[:len(src)-len(tail)] + `)`)
		if err == nil {
			return &tailPattern{re}, nil
		}
	}
	re, err := translateRegexp(src)
	if err != nil {
		return nil, fmt.Errorf("%w: regex %q: %v", ErrUnsupported, src, err)
	}
	return &regexpPattern{re}, nil
}

// Unicode-aware replacements of Oniguruma's shorthand classes, which Go's
// regexp defines as ASCII-only.
const (
	reSpaceSet = `\t\n\v\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`
	reWordSet  = `\p{L}\p{M}\p{Nd}\p{Pc}`
	reDigitSet = `\p{Nd}`
)

// translateRegexp rewrites \s, \S, \d, \D, \w, \W into explicit Unicode
// classes and compiles the result with Go's regexp (leftmost-first, like a
// backtracking engine for the RE2-compatible subset).
func translateRegexp(src string) (*regexp.Regexp, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '\\' && i+1 < len(src) {
			n := src[i+1]
			var set string
			neg := false
			switch n {
			case 's', 'S':
				set, neg = reSpaceSet, n == 'S'
			case 'd', 'D':
				set, neg = reDigitSet, n == 'D'
			case 'w', 'W':
				set, neg = reWordSet, n == 'W'
			}
			if set != "" {
				switch {
				case !inClass && !neg:
					b.WriteString("[" + set + "]")
				case !inClass && neg:
					b.WriteString("[^" + set + "]")
				case inClass && !neg:
					b.WriteString(set)
				default:
					return nil, fmt.Errorf("negated class \\%c inside a character class", n)
				}
				i++
				continue
			}
			b.WriteByte(c)
			b.WriteByte(n)
			i++
			continue
		}
		switch c {
		case '[':
			if !inClass {
				inClass = true
				b.WriteByte(c)
				if i+1 < len(src) && src[i+1] == '^' {
					b.WriteByte('^')
					i++
				}
				if i+1 < len(src) && src[i+1] == ']' {
					b.WriteString(`\]`)
					i++
				}
				continue
			}
		case ']':
			inClass = false
		}
		b.WriteByte(c)
	}
	return regexp.Compile(b.String())
}

// tailPattern is `(?:prefix)|\s+(?!\S)|\s+`: the prefix is tried first at
// each position (leftmost-first, as a backtracking engine would), then the
// whitespace alternatives.
type tailPattern struct{ re *regexp.Regexp }

func (p *tailPattern) findAll(s string, dst []span) []span {
	for i := 0; i < len(s); {
		if m := p.re.FindStringIndex(s[i:]); m != nil && m[1] > 0 {
			dst = append(dst, span{i, i + m[1]})
			i += m[1]
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if isWhitespace(r) {
			e := spaceTail(s, i)
			dst = append(dst, span{i, e})
			i = e
			continue
		}
		i += size
	}
	return dst
}

// splitPieces turns matches into the (range, isMatch) list covering s.
func splitPieces(s string, matches []span, invert bool, dst []piece) []piece {
	if s == "" {
		return append(dst, piece{span{0, 0}, false})
	}
	prev := 0
	for _, m := range matches {
		if prev < m.start {
			dst = append(dst, piece{span{prev, m.start}, invert})
		}
		dst = append(dst, piece{m, !invert})
		prev = m.end
	}
	if prev < len(s) {
		dst = append(dst, piece{span{prev, len(s)}, invert})
	}
	return dst
}

// piece is one range of a split with whether it is a delimiter match.
type piece struct {
	sp      span
	isMatch bool
}
