package tokenizer

import (
	"unicode/utf8"
)

// seqEnc is an encoding with the text its offsets refer to.
type seqEnc struct {
	enc  Encoding
	text string
}

// postProcessor adds special tokens and adjusts offsets after the model.
type postProcessor interface {
	addedTokens(pair bool) int
	processEncodings(encs []seqEnc, addSpecial bool) ([]seqEnc, error)
}

type seqProcessor []postProcessor

func (s seqProcessor) addedTokens(pair bool) int {
	n := 0
	for _, p := range s {
		n += p.addedTokens(pair)
	}
	return n
}

func (s seqProcessor) processEncodings(encs []seqEnc, addSpecial bool) ([]seqEnc, error) {
	var err error
	for _, p := range s {
		if encs, err = p.processEncodings(encs, addSpecial); err != nil {
			return nil, err
		}
	}
	return encs, nil
}

func isTrimmable(r rune) bool { return r == 0x120 || isWhitespace(r) }

// trimOffsets removes leading/trailing spaces of byte-level tokens from their
// offsets, counting in characters of the original text as HF does on
// character offsets.
func trimOffsets(e *Encoding, text string, addPrefixSpace bool) {
	for i, tok := range e.Tokens {
		leading := 0
		for _, r := range tok {
			if !isTrimmable(r) {
				break
			}
			leading++
		}
		trailing := 0
		for k := len(tok); k > 0; {
			r, size := utf8.DecodeLastRuneInString(tok[:k])
			if !isTrimmable(r) {
				break
			}
			trailing++
			k -= size
		}
		if leading == 0 && trailing == 0 {
			continue
		}
		off := e.Offsets[i]
		if off[0] < 0 || off[1] > len(text) || off[0] > off[1] {
			continue
		}
		if leading > 0 {
			if (i == 0 || off[0] == 0) && addPrefixSpace && leading == 1 {
				leading = 0
			}
			s := off[0]
			for k := 0; k < leading && s < len(text); k++ {
				_, size := utf8.DecodeRuneInString(text[s:])
				s += size
			}
			off[0] = min(s, off[1])
		}
		if trailing > 0 {
			end, k := off[1], 0
			for ; k < trailing && end > 0; k++ {
				_, size := utf8.DecodeLastRuneInString(text[:end])
				end -= size
			}
			if k == trailing {
				off[1] = max(end, off[0])
			}
		}
		e.Offsets[i] = off
	}
}

type byteLevelProcessor struct {
	addPrefixSpace, trim bool
}

func (byteLevelProcessor) addedTokens(bool) int { return 0 }

func (b byteLevelProcessor) processEncodings(encs []seqEnc, _ bool) ([]seqEnc, error) {
	if b.trim {
		for i := range encs {
			trimOffsets(&encs[i].enc, encs[i].text, b.addPrefixSpace)
			for k := range encs[i].enc.Overflowing {
				trimOffsets(&encs[i].enc.Overflowing[k], encs[i].text, b.addPrefixSpace)
			}
		}
	}
	return encs, nil
}

// specialEnc builds the encoding of template special tokens.
func specialEnc(ids []int, toks []string, typeID int) seqEnc {
	var e Encoding
	for i := range ids {
		e.appendToken(ids[i], toks[i], [2]int{0, 0}, -1, typeID, -1, 1)
	}
	return seqEnc{enc: e}
}

func setTypeIDs(e *Encoding, t int) {
	for i := range e.TypeIDs {
		e.TypeIDs[i] = t
	}
}

type bertProcessor struct {
	sepTok, clsTok string
	sepID, clsID   int
}

func (bertProcessor) addedTokens(pair bool) int {
	if pair {
		return 3
	}
	return 2
}

func (b bertProcessor) processEncodings(encs []seqEnc, addSpecial bool) ([]seqEnc, error) {
	if !addSpecial {
		return encs, nil
	}
	var out []seqEnc
	for i, e := range encs {
		if i == 0 {
			out = append(out, specialEnc([]int{b.clsID}, []string{b.clsTok}, 0))
		}
		setTypeIDs(&e.enc, i)
		out = append(out, e, specialEnc([]int{b.sepID}, []string{b.sepTok}, i))
	}
	return out, nil
}

type robertaProcessor struct {
	sepTok, clsTok       string
	sepID, clsID         int
	trim, addPrefixSpace bool
}

func (robertaProcessor) addedTokens(pair bool) int {
	if pair {
		return 4
	}
	return 2
}

func (r robertaProcessor) processEncodings(encs []seqEnc, addSpecial bool) ([]seqEnc, error) {
	if r.trim {
		for i := range encs {
			trimOffsets(&encs[i].enc, encs[i].text, r.addPrefixSpace)
		}
	}
	for i := range encs {
		setTypeIDs(&encs[i].enc, 0)
	}
	if !addSpecial {
		return encs, nil
	}
	var out []seqEnc
	for i, e := range encs {
		if i == 0 {
			out = append(out, specialEnc([]int{r.clsID}, []string{r.clsTok}, 0))
		} else {
			out = append(out, specialEnc([]int{r.sepID}, []string{r.sepTok}, 0))
		}
		out = append(out, e, specialEnc([]int{r.sepID}, []string{r.sepTok}, 0))
	}
	return out, nil
}

// templatePiece is one element of a TemplateProcessing template.
type templatePiece struct {
	isSeq   bool
	seqB    bool   // sequence B (pair) rather than A
	special string // special token name
	typeID  int
}

type templateSpecial struct {
	ids    []int
	tokens []string
}

type templateProcessor struct {
	single, pair []templatePiece
	specials     map[string]templateSpecial
}

func (t *templateProcessor) addedTokens(pair bool) int {
	tpl := t.single
	if pair {
		tpl = t.pair
	}
	n := 0
	for _, p := range tpl {
		if !p.isSeq {
			n += len(t.specials[p.special].ids)
		}
	}
	return n
}

func (t *templateProcessor) processEncodings(encs []seqEnc, addSpecial bool) ([]seqEnc, error) {
	tpl := t.single
	if len(encs) == 2 {
		tpl = t.pair
	}
	out := make([]seqEnc, 0, len(tpl))
	var used [2]bool
	for _, p := range tpl {
		if p.isSeq {
			i := 0
			if p.seqB {
				i = 1
			}
			if i >= len(encs) {
				continue
			}
			e := encs[i]
			if used[i] { // a sequence used twice must not share its slices
				e.enc = e.enc.sub(0, e.enc.Len())
			}
			used[i] = true
			setTypeIDs(&e.enc, p.typeID)
			out = append(out, e)
			continue
		}
		if !addSpecial {
			continue
		}
		sp := t.specials[p.special]
		out = append(out, specialEnc(sp.ids, sp.tokens, p.typeID))
	}
	return out, nil
}
