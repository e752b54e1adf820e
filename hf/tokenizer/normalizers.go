package tokenizer

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites a piece of text in place, keeping alignments.
type normalizer interface {
	normalize(n *normStr) error
}

type seqNormalizer []normalizer

func (s seqNormalizer) normalize(n *normStr) error {
	for _, x := range s {
		if err := x.normalize(n); err != nil {
			return err
		}
	}
	return nil
}

// unicodeNormalizer applies NFC, NFD, NFKC or NFKD.
type unicodeNormalizer struct{ form norm.Form }

func (u unicodeNormalizer) normalize(n *normStr) error {
	applyForm(n, u.form)
	return nil
}

// applyForm normalizes segment by segment (between normalization
// boundaries). Changed segments are decomposed character by character,
// reordered and recomposed while tracking where each output character comes
// from, the way HF's unicode-normalization-alignments does: a decomposition
// inserts characters after the first, a composition removes the absorbed
// character and charges the removal to the composed one.
func applyForm(n *normStr, f norm.Form) {
	s := n.norm
	if f.IsNormalString(s) {
		return
	}
	dest := make([]change, 0, len(s))
	for i := 0; i < len(s); {
		k := f.NextBoundaryInString(s[i:], true)
		if k <= 0 {
			k = len(s) - i
		}
		seg := s[i : i+k]
		out := f.String(seg)
		if out == seg {
			for _, r := range seg {
				dest = append(dest, change{r, 0})
			}
		} else if aligned, ok := alignedForm(seg, out, f); ok {
			dest = append(dest, aligned...)
		} else {
			dest = appendSegmentChanges(dest, seg, out)
		}
		i += k
	}
	n.transform(dest, 0)
}

// appendSegmentChanges aligns out with seg position by position (fallback).
func appendSegmentChanges(dest []change, seg, out string) []change {
	a := utf8.RuneCountInString(seg)
	b := utf8.RuneCountInString(out)
	j := 0
	for _, r := range out {
		c := 0
		if b >= a {
			if j >= a {
				c = 1
			}
		} else if j == b-1 {
			c = -(a - b)
		}
		dest = append(dest, change{r, c})
		j++
	}
	if b == 0 && len(dest) > 0 {
		dest[len(dest)-1].n -= a
	}
	return dest
}

func ccc(r rune) uint8 {
	var buf [utf8.UTFMax]byte
	w := utf8.EncodeRune(buf[:], r)
	return norm.NFD.Properties(buf[:w]).CCC()
}

// composePair returns the primary composite of a and b, if any.
func composePair(a, b rune) (rune, bool) {
	s := norm.NFC.String(string([]rune{a, b}))
	r, size := utf8.DecodeRuneInString(s)
	if size == len(s) && r != utf8.RuneError {
		return r, true
	}
	return 0, false
}

// alignedForm computes the changes for one segment, or false when its
// simulation does not reproduce the library's output.
func alignedForm(seg, want string, f norm.Form) ([]change, bool) {
	dec := norm.NFD
	if f == norm.NFKC || f == norm.NFKD {
		dec = norm.NFKD
	}
	var out []change
	for _, r := range seg {
		first := true
		for _, x := range dec.String(string(r)) {
			c := 1
			if first {
				c = 0
			}
			out = append(out, change{x, c})
			first = false
		}
	}
	// Canonical ordering: stable sort of each run of non-starters by class.
	for i := 0; i < len(out); {
		if ccc(out[i].r) == 0 {
			i++
			continue
		}
		j := i
		for j < len(out) && ccc(out[j].r) != 0 {
			j++
		}
		run := out[i:j]
		for a := 1; a < len(run); a++ {
			for b := a; b > 0 && ccc(run[b-1].r) > ccc(run[b].r); b-- {
				run[b-1], run[b] = run[b], run[b-1]
			}
		}
		i = j
	}
	if f == norm.NFC || f == norm.NFKC {
		comp := out[:0:0]
		starter := -1
		for _, c := range out {
			cc := ccc(c.r)
			if starter >= 0 {
				last := comp[len(comp)-1]
				blocked := len(comp)-1 != starter && (ccc(last.r) == 0 || ccc(last.r) >= cc)
				if !blocked {
					if r, ok := composePair(comp[starter].r, c.r); ok {
						comp[starter].r = r
						comp[starter].n += c.n - 1
						continue
					}
				}
			}
			if cc == 0 {
				starter = len(comp)
			}
			comp = append(comp, c)
		}
		out = comp
	}
	var sb []rune
	for _, c := range out {
		sb = append(sb, c.r)
	}
	return out, string(sb) == want
}

// lowercaseNormalizer is Rust's char::to_lowercase on every character.
type lowercaseNormalizer struct{}

func (lowercaseNormalizer) normalize(n *normStr) error {
	lowercase(n)
	return nil
}

func lowercase(n *normStr) {
	changed := false
	for _, r := range n.norm {
		if r == 0x130 || unicode.ToLower(r) != r {
			changed = true
			break
		}
	}
	if !changed {
		return
	}
	dest := make([]change, 0, len(n.norm))
	for _, r := range n.norm {
		if r == 0x130 { // İ lowercases to i + combining dot above
			dest = append(dest, change{'i', 0}, change{0x307, 1})
			continue
		}
		dest = append(dest, change{unicode.ToLower(r), 0})
	}
	n.transform(dest, 0)
}

type stripNormalizer struct{ left, right bool }

func (s stripNormalizer) normalize(n *normStr) error {
	n.lrstrip(s.left, s.right)
	return nil
}

type stripAccentsNormalizer struct{}

func (stripAccentsNormalizer) normalize(n *normStr) error {
	n.filter(func(r rune) bool { return classOf(r)&clsM == 0 })
	return nil
}

type replaceNormalizer struct {
	pat     pattern
	content string
}

func (r *replaceNormalizer) normalize(n *normStr) error {
	m := r.pat.findAll(n.norm, nil)
	// Drop empty matches: they replace nothing in HF either way.
	k := 0
	for _, x := range m {
		if x.end > x.start {
			m[k] = x
			k++
		}
	}
	n.replaceMatches(m[:k], r.content)
	return nil
}

type prependNormalizer struct{ s string }

func (p prependNormalizer) normalize(n *normStr) error {
	if n.norm != "" {
		n.prepend(p.s)
	}
	return nil
}

type nmtNormalizer struct{}

func (nmtNormalizer) normalize(n *normStr) error {
	n.filter(func(r rune) bool {
		return !(r >= 1 && r <= 8 || r == 0xB || r >= 0xE && r <= 0x1F || r == 0x7F || r == 0x8F || r == 0x9F)
	})
	n.mapRunes(func(r rune) rune {
		switch {
		case r == 9, r == 0xA, r == 0xC, r == 0xD, r == 0x1680, r >= 0x200B && r <= 0x200F,
			r == 0x2028, r == 0x2029, r == 0x2581, r == 0xFEFF, r == 0xFFFD:
			return ' '
		}
		return r
	})
	return nil
}

type byteLevelNormalizer struct{}

func (byteLevelNormalizer) normalize(n *normStr) error {
	byteLevelTransform(n)
	return nil
}

// byteLevelTransform maps every byte to its GPT-2 byte-level character.
func byteLevelTransform(n *normStr) {
	if n.norm == "" {
		return
	}
	dest := make([]change, 0, len(n.norm))
	s := n.norm
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		for k := 0; k < size; k++ {
			c := 0
			if k > 0 {
				c = 1
			}
			dest = append(dest, change{byteToRune[s[i+k]], c})
		}
		i += size
	}
	n.transform(dest, 0)
}

// bertNormalizer is BERT's text cleanup, CJK spacing, accent stripping and
// lowercasing.
type bertNormalizer struct {
	cleanText, handleChinese, lowercase bool
	stripAccents                        *bool
}

func (b *bertNormalizer) normalize(n *normStr) error {
	if b.cleanText {
		n.filter(func(r rune) bool {
			return !(r == 0 || r == 0xFFFD || (r != '\t' && r != '\n' && r != '\r' && isOther(r)))
		})
		n.mapRunes(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' || isWhitespace(r) {
				return ' '
			}
			return r
		})
	}
	if b.handleChinese {
		has := false
		for _, r := range n.norm {
			if isChineseChar(r) {
				has = true
				break
			}
		}
		if has {
			dest := make([]change, 0, len(n.norm))
			for _, r := range n.norm {
				if isChineseChar(r) {
					dest = append(dest, change{' ', 0}, change{r, 1}, change{' ', 1})
				} else {
					dest = append(dest, change{r, 0})
				}
			}
			n.transform(dest, 0)
		}
	}
	strip := b.lowercase
	if b.stripAccents != nil {
		strip = *b.stripAccents
	}
	if strip {
		applyForm(n, norm.NFD)
		n.filter(func(r rune) bool { return !unicode.Is(unicode.Mn, r) })
	}
	if b.lowercase {
		lowercase(n)
	}
	return nil
}

// precompiledNormalizer is SentencePiece's precompiled_charsmap: a
// darts-clone double-array trie over UTF-8 bytes whose values index
// NUL-terminated replacement strings.
type precompiledNormalizer struct {
	trie       []uint32
	normalized string
}

func newPrecompiled(b64 string) (*precompiledNormalizer, error) {
	blob, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("precompiled_charsmap: %w", err)
	}
	if len(blob) == 0 {
		return &precompiledNormalizer{}, nil
	}
	if len(blob) < 4 {
		return nil, fmt.Errorf("precompiled_charsmap: %w: %d bytes", ErrMalformed, len(blob))
	}
	size := int(binary.LittleEndian.Uint32(blob))
	if size%4 != 0 || 4+size > len(blob) {
		return nil, fmt.Errorf("precompiled_charsmap: %w: trie size %d of %d bytes", ErrMalformed, size, len(blob))
	}
	trie := make([]uint32, size/4)
	for i := range trie {
		trie[i] = binary.LittleEndian.Uint32(blob[4+4*i:])
	}
	rest := blob[4+size:]
	if !utf8.Valid(rest) {
		return nil, fmt.Errorf("precompiled_charsmap: %w: replacement strings are not UTF-8", ErrMalformed)
	}
	return &precompiledNormalizer{trie: trie, normalized: string(rest)}, nil
}

func dartsOffset(u uint32) uint32 { return (u >> 10) << ((u & (1 << 9)) >> 6) }
func dartsLabel(u uint32) uint32  { return u & ((1 << 31) | 0xFF) }
func dartsHasLeaf(u uint32) bool  { return (u>>8)&1 == 1 }
func dartsValue(u uint32) uint32  { return u & ((1 << 31) - 1) }

// firstPrefix returns the value of the shortest key that is a prefix of key
// (what HF's transform uses), or false.
func (p *precompiledNormalizer) firstPrefix(key string) (string, bool) {
	if len(p.trie) == 0 {
		return "", false
	}
	pos := dartsOffset(p.trie[0])
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == 0 {
			break
		}
		pos ^= uint32(c)
		if int(pos) >= len(p.trie) {
			return "", false
		}
		u := p.trie[pos]
		if dartsLabel(u) != uint32(c) {
			return "", false
		}
		pos ^= dartsOffset(u)
		if dartsHasLeaf(u) {
			if int(pos) >= len(p.trie) {
				return "", false
			}
			return p.at(int(dartsValue(p.trie[pos])))
		}
	}
	return "", false
}

func (p *precompiledNormalizer) at(idx int) (string, bool) {
	if idx > len(p.normalized) {
		return "", false
	}
	end := idx
	for end < len(p.normalized) && p.normalized[end] != 0 {
		end++
	}
	return p.normalized[idx:end], true
}

// precompiledReplace appends the changes turning oldPart into newPart, as
// HF's precompiled replace helper (including its quirks).
func precompiledReplace(dest []change, oldPart, newPart string) []change {
	diff := utf8.RuneCountInString(newPart) - utf8.RuneCountInString(oldPart)
	start := len(dest)
	for _, r := range newPart {
		dest = append(dest, change{r, 0})
	}
	switch {
	case diff > 0:
		for k := len(dest) - 1; k >= start && k > len(dest)-1-diff; k-- {
			dest[k].n = 1
		}
	case diff < 0:
		if len(dest) > 0 {
			dest[len(dest)-1].n += diff
		}
	}
	return dest
}

func (p *precompiledNormalizer) normalize(n *normStr) error {
	if len(p.trie) == 0 {
		return nil
	}
	s := n.norm
	dest := make([]change, 0, len(s))
	modified := false
	state := -1
	for rest := s; rest != ""; {
		var g string
		g, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		if len(g) < 6 {
			if rep, ok := p.firstPrefix(g); ok {
				modified = true
				dest = precompiledReplace(dest, g, rep)
				continue
			}
		}
		for i, r := range g {
			part := g[i : i+utf8.RuneLen(r)]
			if rep, ok := p.firstPrefix(part); ok {
				modified = true
				dest = precompiledReplace(dest, part, rep)
			} else {
				dest = append(dest, change{r, 0})
			}
		}
	}
	if modified {
		n.transform(dest, 0)
	}
	return nil
}
