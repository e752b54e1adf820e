package tokenizer

import (
	"fmt"
	"unicode/utf8"
)

// Encoding is the result of encoding one text (or pair of texts).
type Encoding struct {
	// IDs are the token ids.
	IDs []int
	// TypeIDs are the segment (token type) ids.
	TypeIDs []int
	// Tokens are the token strings.
	Tokens []string
	// Offsets are the [start, end) byte offsets of each token in the input
	// string; tokens added by post-processing or padding have [0, 0]. See
	// RuneOffsets for code point offsets.
	Offsets [][2]int
	// WordIDs is the index of the pre-tokenized word each token comes from,
	// -1 for tokens added by post-processing or padding.
	WordIDs []int
	// SequenceIDs says which input (0 or 1) a token comes from, -1 for added
	// special tokens and padding.
	SequenceIDs []int
	// SpecialTokensMask is 1 for tokens added by post-processing or padding.
	SpecialTokensMask []int
	// AttentionMask is 0 for padding, 1 elsewhere.
	AttentionMask []int
	// Overflowing holds the parts removed by truncation (each one post-processed).
	Overflowing []Encoding
}

// Len returns the number of tokens.
func (e *Encoding) Len() int { return len(e.IDs) }

func (e *Encoding) appendToken(id int, tok string, off [2]int, word, typeID, seq, special int) {
	e.IDs = append(e.IDs, id)
	e.Tokens = append(e.Tokens, tok)
	e.Offsets = append(e.Offsets, off)
	e.WordIDs = append(e.WordIDs, word)
	e.TypeIDs = append(e.TypeIDs, typeID)
	e.SequenceIDs = append(e.SequenceIDs, seq)
	e.SpecialTokensMask = append(e.SpecialTokensMask, special)
	e.AttentionMask = append(e.AttentionMask, 1)
}

func (e *Encoding) appendAll(o *Encoding) {
	e.IDs = append(e.IDs, o.IDs...)
	e.Tokens = append(e.Tokens, o.Tokens...)
	e.Offsets = append(e.Offsets, o.Offsets...)
	e.WordIDs = append(e.WordIDs, o.WordIDs...)
	e.TypeIDs = append(e.TypeIDs, o.TypeIDs...)
	e.SequenceIDs = append(e.SequenceIDs, o.SequenceIDs...)
	e.SpecialTokensMask = append(e.SpecialTokensMask, o.SpecialTokensMask...)
	e.AttentionMask = append(e.AttentionMask, o.AttentionMask...)
}

func (e *Encoding) sub(start, stop int) Encoding {
	cp := func(x []int) []int { return append([]int(nil), x[start:stop]...) }
	return Encoding{
		IDs:               cp(e.IDs),
		TypeIDs:           cp(e.TypeIDs),
		Tokens:            append([]string(nil), e.Tokens[start:stop]...),
		Offsets:           append([][2]int(nil), e.Offsets[start:stop]...),
		WordIDs:           cp(e.WordIDs),
		SequenceIDs:       cp(e.SequenceIDs),
		SpecialTokensMask: cp(e.SpecialTokensMask),
		AttentionMask:     cp(e.AttentionMask),
	}
}

// RuneOffsets converts byte offsets into the given text to code point offsets
// (Python's character offsets). It uses the same rule as Hugging Face's
// converter, including keeping an offset pair unchanged when its start lies
// at the very end of the text.
func RuneOffsets(text string, offsets [][2]int) [][2]int {
	idx := make([]int, len(text)+1)
	n := 0
	for i := range text {
		idx[i] = n
		n++
	}
	// Continuation bytes map to their character's index.
	cur := 0
	for i := 0; i < len(text); i++ {
		if utf8.RuneStart(text[i]) {
			cur = idx[i]
		}
		idx[i] = cur
	}
	out := make([][2]int, len(offsets))
	for k, o := range offsets {
		s, e := o[0], o[1]
		switch {
		case s < 0 || s > len(text) || e < 0 || e > len(text):
			out[k] = o
		case s < len(text) && e < len(text):
			out[k] = [2]int{idx[s], idx[e]}
		case s < len(text):
			out[k] = [2]int{idx[s], idx[e-1] + 1}
		default:
			out[k] = o
		}
	}
	return out
}

// TruncationStrategy says which sequence of a pair loses tokens first.
type TruncationStrategy string

// Truncation strategies, as in tokenizer.json.
const (
	LongestFirst TruncationStrategy = "LongestFirst"
	OnlyFirst    TruncationStrategy = "OnlyFirst"
	OnlySecond   TruncationStrategy = "OnlySecond"
)

// Truncation configures truncation to a maximum length.
type Truncation struct {
	MaxLength int                `json:"max_length"`
	Stride    int                `json:"stride"`
	Strategy  TruncationStrategy `json:"strategy"`
	// Direction is "Right" (drop the end, default) or "Left".
	Direction string `json:"direction"`
}

// Padding configures padding. Fixed > 0 pads to that length; otherwise each
// batch is padded to its longest encoding.
type Padding struct {
	Fixed           int
	Left            bool
	PadToMultipleOf int
	PadID           int
	PadTypeID       int
	PadToken        string
}

// truncate cuts e to maxLen tokens, moving the rest to Overflowing (with
// stride tokens of overlap), as HF's Encoding::truncate.
func (e *Encoding) truncate(maxLen, stride int, left bool) error {
	n := e.Len()
	if maxLen >= n {
		return nil
	}
	if maxLen == 0 {
		whole := *e
		*e = Encoding{Overflowing: []Encoding{whole}}
		return nil
	}
	if stride >= maxLen {
		return fmt.Errorf("%w: stride %d must be less than the maximum length %d", ErrInvalidConfig, stride, maxLen)
	}
	step := maxLen - stride
	var parts [][2]int
	if !left {
		for start := 0; start < n; start += step {
			stop := min(start+maxLen, n)
			parts = append(parts, [2]int{start, stop})
			if stop == n {
				break
			}
		}
	} else {
		for s := n - 1; s >= 0; s -= step {
			stop := s + 1
			start := max(stop-maxLen, 0)
			if start >= stop {
				break
			}
			parts = append(parts, [2]int{start, stop})
			if start == 0 {
				break
			}
		}
	}
	first := e.sub(parts[0][0], parts[0][1])
	for _, p := range parts[1:] {
		first.Overflowing = append(first.Overflowing, e.sub(p[0], p[1]))
	}
	*e = first
	return nil
}

func truncatePair(a, b *Encoding, t *Truncation, maxLen int) error {
	left := t.Direction == "Left"
	if maxLen == 0 {
		if err := a.truncate(0, t.Stride, left); err != nil {
			return err
		}
		if b != nil {
			return b.truncate(0, t.Stride, left)
		}
		return nil
	}
	total := a.Len()
	if b != nil {
		total += b.Len()
	}
	if total <= maxLen {
		return nil
	}
	remove := total - maxLen
	switch t.Strategy {
	case OnlyFirst, OnlySecond:
		target := a
		if t.Strategy == OnlySecond {
			if b == nil {
				return fmt.Errorf("%w: truncation OnlySecond needs a pair of sequences", ErrInvalidConfig)
			}
			target = b
		}
		if target.Len() <= remove {
			return fmt.Errorf("%w: sequence too short to truncate %d tokens", ErrInvalidConfig, remove)
		}
		return target.truncate(target.Len()-remove, t.Stride, left)
	default:
		if b == nil {
			return a.truncate(total-remove, t.Stride, left)
		}
		n1, n2 := a.Len(), b.Len()
		swap := false
		if n1 > n2 {
			swap = true
			n1, n2 = n2, n1
		}
		if n1 > maxLen {
			n2 = n1
		} else {
			n2 = max(n1, maxLen-n1)
		}
		if n1+n2 > maxLen {
			n1 = maxLen / 2
			n2 = n1 + maxLen%2
		}
		if swap {
			n1, n2 = n2, n1
		}
		if err := a.truncate(n1, t.Stride, left); err != nil {
			return err
		}
		return b.truncate(n2, t.Stride, left)
	}
}

// pad extends e to length target.
func (e *Encoding) pad(target int, p *Padding) {
	for i := range e.Overflowing {
		e.Overflowing[i].pad(target, p)
	}
	n := target - e.Len()
	if n <= 0 {
		return
	}
	var pe Encoding
	for i := 0; i < n; i++ {
		pe.appendToken(p.PadID, p.PadToken, [2]int{0, 0}, -1, p.PadTypeID, -1, 1)
		pe.AttentionMask[i] = 0
	}
	if p.Left {
		pe.appendAll(e)
		pe.Overflowing = e.Overflowing
		*e = pe
	} else {
		e.appendAll(&pe)
	}
}
