package tokenizer

import (
	"unicode/utf8"
)

// span is a byte range [start, end) in a string.
type span struct{ start, end int }

// aspan is the compact form of span used for per-byte alignments.
type aspan struct{ start, end int32 }

// change is one output character of a transformation, with HF's change
// semantics: 0 replaces the next input character, +1 inserts a character
// (aligned with the previous one), and -n replaces the next input character
// and removes the n characters after it.
type change struct {
	r rune
	n int
}

// normStr is a piece of text under normalization that keeps, for every byte of
// the normalized text, the range of the original text it came from. This is
// what lets Encode report offsets into the caller's string whatever the
// normalizers did.
//
// When align is nil the piece is untouched: norm == orig and each byte aligns
// with the original character that contains it. Splitting keeps that cheap
// form; only a transformation materializes the alignments.
type normStr struct {
	orig  string  // the original text this piece covers
	norm  string  // the normalized text
	align []aspan // per normalized byte, relative to orig; nil means identity
	shift int     // byte offset of orig in the whole input
	// byteLevel marks a piece whose byte-level (GPT-2) mapping is still to be
	// applied: the model consumes its raw bytes directly.
	byteLevel bool
}

func newNormStr(s string, shift int) normStr {
	return normStr{orig: s, norm: s, shift: shift}
}

// charSpanAt returns the byte range of the character of s that contains byte i.
func charSpanAt(s string, i int) span {
	start := i
	for start > 0 && !utf8.RuneStart(s[start]) {
		start--
	}
	_, size := utf8.DecodeRuneInString(s[start:])
	return span{start, start + size}
}

// alignAt returns the original range that normalized byte i comes from.
func (n *normStr) alignAt(i int) span {
	if n.align == nil {
		return charSpanAt(n.orig, i)
	}
	return span{int(n.align[i].start), int(n.align[i].end)}
}

// materialize builds explicit alignments for an identity piece.
func (n *normStr) materialize() {
	if n.align != nil {
		return
	}
	a := make([]aspan, len(n.norm))
	for i := 0; i < len(n.norm); {
		_, size := utf8.DecodeRuneInString(n.norm[i:])
		for k := 0; k < size; k++ {
			a[i+k] = aspan{int32(i), int32(i + size)}
		}
		i += size
	}
	n.align = a
}

// origRange converts a normalized byte range into a range of the original
// piece (relative to orig), as HF's convert_offsets does.
func (n *normStr) origRange(start, end int) span {
	if start >= end {
		return span{start, end}
	}
	if n.align == nil {
		return span{charSpanAt(n.orig, start).start, charSpanAt(n.orig, end-1).end}
	}
	return span{int(n.align[start].start), int(n.align[end-1].end)}
}

// slice returns the sub-piece for the normalized byte range [start, end).
func (n *normStr) slice(start, end int) normStr {
	o := n.origRange(start, end)
	if o.start > o.end || o.end > len(n.orig) {
		o = span{0, 0}
	}
	out := normStr{
		orig:      n.orig[o.start:o.end],
		norm:      n.norm[start:end],
		shift:     n.shift + o.start,
		byteLevel: n.byteLevel,
	}
	if n.align != nil {
		out.align = make([]aspan, end-start)
		d := int32(o.start)
		for i, a := range n.align[start:end] {
			out.align[i] = aspan{a.start - d, a.end - d}
		}
	}
	return out
}

// transformRange rewrites the normalized bytes [nStart, nEnd) with dest,
// skipping initialOffset characters of the replaced text first, and tracks
// alignments exactly as HF's NormalizedString::transform_range.
func (n *normStr) transformRange(nStart, nEnd int, dest []change, initialOffset int) {
	n.materialize()
	region := n.norm[nStart:nEnd]
	pos := 0 // byte position in region of the next replaced character
	for k := 0; k < initialOffset && pos < len(region); k++ {
		_, size := utf8.DecodeRuneInString(region[pos:])
		pos += size
	}
	offset := nStart + pos
	buf := make([]byte, 0, len(region)+8)
	al := make([]aspan, 0, len(region)+8)
	var enc [utf8.UTFMax]byte
	for _, d := range dest {
		idx := offset
		var a aspan
		if d.n > 0 {
			if idx >= 1 && idx-1 < len(n.align) {
				a = n.align[idx-1]
			}
		} else if idx < len(n.align) {
			a = n.align[idx]
		} else if len(n.align) > 0 {
			last := n.align[len(n.align)-1]
			a = aspan{last.end, last.end}
		}
		if d.n <= 0 && pos < len(region) {
			_, size := utf8.DecodeRuneInString(region[pos:])
			pos += size
			offset += size
		}
		for k := 0; k < -d.n && pos < len(region); k++ {
			_, size := utf8.DecodeRuneInString(region[pos:])
			pos += size
			offset += size
		}
		w := utf8.EncodeRune(enc[:], d.r)
		buf = append(buf, enc[:w]...)
		for k := 0; k < w; k++ {
			al = append(al, a)
		}
	}
	newAlign := make([]aspan, 0, len(n.align)-(nEnd-nStart)+len(al))
	newAlign = append(newAlign, n.align[:nStart]...)
	newAlign = append(newAlign, al...)
	newAlign = append(newAlign, n.align[nEnd:]...)
	n.norm = n.norm[:nStart] + string(buf) + n.norm[nEnd:]
	n.align = newAlign
}

// transform rewrites the whole normalized text.
func (n *normStr) transform(dest []change, initialOffset int) {
	n.transformRange(0, len(n.norm), dest, initialOffset)
}

// mapRunes applies a one-to-one character mapping; it keeps the identity form
// when nothing changes.
func (n *normStr) mapRunes(f func(rune) rune) {
	changed := false
	for _, r := range n.norm {
		if f(r) != r {
			changed = true
			break
		}
	}
	if !changed {
		return
	}
	dest := make([]change, 0, len(n.norm))
	for _, r := range n.norm {
		dest = append(dest, change{f(r), 0})
	}
	n.transform(dest, 0)
}

// filter keeps only the characters for which keep is true.
func (n *normStr) filter(keep func(rune) bool) {
	all := true
	for _, r := range n.norm {
		if !keep(r) {
			all = false
			break
		}
	}
	if all {
		return
	}
	removed := 0
	removedStart := 0
	var dest []change
	var last rune
	haveLast := false
	for _, r := range n.norm {
		if keep(r) {
			if haveLast {
				dest = append(dest, change{last, -removed})
			} else {
				removedStart = removed
			}
			last = r
			haveLast = true
			removed = 0
		} else {
			removed++
		}
	}
	if haveLast {
		dest = append(dest, change{last, -removed})
	}
	n.transform(dest, removedStart)
}

// prepend inserts s before the first character (aligned with it).
func (n *normStr) prepend(s string) {
	if n.norm == "" {
		return
	}
	first, size := utf8.DecodeRuneInString(n.norm)
	var dest []change
	i := 0
	for _, r := range s {
		c := 0
		if i != 0 {
			c = 1
		}
		dest = append(dest, change{r, c})
		i++
	}
	dest = append(dest, change{first, 1})
	n.transformRange(0, size, dest, 0)
}

// appendStr adds s after the last character (aligned with it).
func (n *normStr) appendStr(s string) {
	if n.norm == "" {
		var dest []change
		for _, r := range s {
			dest = append(dest, change{r, 1})
		}
		n.transformRange(0, 0, dest, 0)
		return
	}
	last, size := utf8.DecodeLastRuneInString(n.norm)
	dest := []change{{last, 0}}
	for _, r := range s {
		dest = append(dest, change{r, 1})
	}
	n.transformRange(len(n.norm)-size, len(n.norm), dest, 0)
}

// replaceMatches replaces every match [start,end) with content, aligning the
// inserted characters with the last byte of the match (as HF does).
func (n *normStr) replaceMatches(matches []span, content string) {
	if len(matches) == 0 {
		return
	}
	n.materialize()
	grow := len(matches) * (len(content) + 1)
	buf := make([]byte, 0, len(n.norm)+grow)
	al := make([]aspan, 0, len(n.norm)+grow)
	last := 0
	for _, m := range matches {
		buf = append(buf, n.norm[last:m.start]...)
		al = append(al, n.align[last:m.start]...)
		var a aspan
		if m.end >= 1 {
			a = n.align[m.end-1]
		}
		buf = append(buf, content...)
		for k := 0; k < len(content); k++ {
			al = append(al, a)
		}
		last = m.end
	}
	buf = append(buf, n.norm[last:]...)
	al = append(al, n.align[last:]...)
	n.norm = string(buf)
	n.align = al
}

// lrstrip removes leading and/or trailing whitespace.
func (n *normStr) lrstrip(left, right bool) {
	runes := []rune(n.norm)
	lead, trail := 0, 0
	if left {
		for lead < len(runes) && isWhitespace(runes[lead]) {
			lead++
		}
	}
	if right {
		for trail < len(runes)-lead && isWhitespace(runes[len(runes)-1-trail]) {
			trail++
		}
	}
	if lead == 0 && trail == 0 {
		return
	}
	var dest []change
	for i, r := range runes {
		if i < lead || i >= len(runes)-trail {
			continue
		}
		if i == len(n.norm)-trail-1 {
			dest = append(dest, change{r, -trail})
		} else {
			dest = append(dest, change{r, 0})
		}
	}
	n.transform(dest, lead)
}
