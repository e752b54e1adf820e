package tokenizer

import (
	"sync"
	"unicode"
)

// Character class bits used by the pattern matchers and pre-tokenizers.
const (
	clsL     uint8 = 1 << iota // \p{L}
	clsN                       // \p{N}
	clsSpace                   // White_Space (Rust char::is_whitespace, Oniguruma \s)
	clsUp                      // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (o200k "upper" class)
	clsLow                     // [\p{Ll}\p{Lm}\p{Lo}\p{M}] (o200k "lower" class)
	clsM                       // \p{M}
	clsP                       // punctuation: ASCII punctuation or \p{P}
	clsNd                      // \p{Nd}
)

var (
	bmpClassOnce sync.Once
	bmpClass     []uint8 // class bits for every rune below 0x10000
)

func computeClass(r rune) uint8 {
	var c uint8
	if unicode.IsLetter(r) {
		c |= clsL
	}
	if unicode.IsNumber(r) {
		c |= clsN
	}
	if unicode.Is(unicode.White_Space, r) {
		c |= clsSpace
	}
	isM := unicode.IsMark(r)
	if isM {
		c |= clsM
	}
	if unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo) || isM {
		c |= clsUp
	}
	if unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo) || isM {
		c |= clsLow
	}
	if (r < 0x80 && (r >= '!' && r <= '/' || r >= ':' && r <= '@' || r >= '[' && r <= '`' || r >= '{' && r <= '~')) || unicode.IsPunct(r) {
		c |= clsP
	}
	if unicode.Is(unicode.Nd, r) {
		c |= clsNd
	}
	return c
}

func initBMPClass() {
	t := make([]uint8, 0x10000)
	for r := rune(0); r < 0x10000; r++ {
		t[r] = computeClass(r)
	}
	bmpClass = t
}

// classOf returns the class bits of r.
func classOf(r rune) uint8 {
	if r < 0x10000 && r >= 0 {
		bmpClassOnce.Do(initBMPClass)
		return bmpClass[r]
	}
	return computeClass(r)
}

// isWhitespace is Rust's char::is_whitespace (the White_Space property).
func isWhitespace(r rune) bool {
	if r < 0x80 {
		return r == ' ' || (r >= '\t' && r <= '\r')
	}
	return classOf(r)&clsSpace != 0
}

// isPunctuation is HF's is_punc / is_bert_punc.
func isPunctuation(r rune) bool { return classOf(r)&clsP != 0 }

// isNumeric is Rust's char::is_numeric (\p{N}).
func isNumeric(r rune) bool {
	if r < 0x80 {
		return r >= '0' && r <= '9'
	}
	return classOf(r)&clsN != 0
}

// isOther is the unicode_categories "Other" group: Cc, Cf, Cn, Co, Cs.
func isOther(r rune) bool {
	if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) {
		return true
	}
	// Cn: unassigned code points.
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C)
}

// isWordChar is the Unicode \w of Rust's regex crate and Oniguruma:
// letters, marks, decimal numbers and connector punctuation (plus the
// Alphabetic and Join_Control extras of the Rust definition).
func isWordChar(r rune) bool {
	if r < 0x80 {
		return r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
	}
	c := classOf(r)
	if c&(clsL|clsM|clsNd) != 0 {
		return true
	}
	return unicode.In(r, unicode.Pc, unicode.Nl, unicode.Other_Alphabetic, unicode.Join_Control)
}

// isChineseChar is BERT's definition of a CJK ideograph.
func isChineseChar(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF ||
		r >= 0x3400 && r <= 0x4DBF ||
		r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x2A700 && r <= 0x2B73F ||
		r >= 0x2B740 && r <= 0x2B81F ||
		r >= 0x2B920 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF ||
		r >= 0x2F800 && r <= 0x2FA1F
}
