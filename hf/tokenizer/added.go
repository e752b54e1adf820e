package tokenizer

import (
	"unicode/utf8"
)

// AddedToken is an entry of tokenizer.json's added_tokens: a string that is
// matched in the input before normalization (or after, when Normalized) and
// always encoded as one token.
type AddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// addedVocab holds the added tokens and the two matchers (on the raw input
// and on the normalized text) used to split them out first.
type addedVocab struct {
	byContent map[string]uint32
	byID      map[uint32]*AddedToken
	// display is the string decode uses for an id: the normalized content
	// when normalization changes it.
	display   map[uint32]string
	special   map[string]bool
	raw, norm *tokenMatcher
}

// tokenMatcher finds added tokens with leftmost-longest semantics over a
// byte trie.
type tokenMatcher struct {
	first [256]bool
	next  map[uint64]int32
	value []int32 // per node: index into ids, or -1
	ids   []uint32
}

func newTokenMatcher() *tokenMatcher {
	return &tokenMatcher{next: make(map[uint64]int32), value: []int32{-1}}
}

func (t *tokenMatcher) add(s string, id uint32) {
	if s == "" {
		return
	}
	t.first[s[0]] = true
	node := int32(0)
	for i := 0; i < len(s); i++ {
		k := uint64(node)<<8 | uint64(s[i])
		child, ok := t.next[k]
		if !ok {
			child = int32(len(t.value))
			t.value = append(t.value, -1)
			t.next[k] = child
		}
		node = child
	}
	if t.value[node] < 0 {
		t.value[node] = int32(len(t.ids))
		t.ids = append(t.ids, id)
	} else {
		t.ids[t.value[node]] = id
	}
}

// longestAt returns the end and id of the longest token starting at i.
func (t *tokenMatcher) longestAt(s string, i int) (int, uint32, bool) {
	node := int32(0)
	end, id, ok := 0, uint32(0), false
	for j := i; j < len(s); j++ {
		child, in := t.next[uint64(node)<<8|uint64(s[j])]
		if !in {
			break
		}
		node = child
		if v := t.value[node]; v >= 0 {
			end, id, ok = j+1, t.ids[v], true
		}
	}
	return end, id, ok
}

// addedMatch is a found added token: its range in the text (after
// lstrip/rstrip extension) and its id.
type addedMatch struct {
	sp span
	id uint32
}

// find returns the added tokens in s, applying single_word, lstrip and rstrip
// exactly as HF's find_matches.
func (v *addedVocab) find(t *tokenMatcher, s string, dst []addedMatch) []addedMatch {
	if t == nil || len(t.ids) == 0 {
		return dst
	}
	startOffset := 0
	for i := 0; i < len(s); {
		if !t.first[s[i]] {
			i++
			continue
		}
		end, id, ok := t.longestAt(s, i)
		if !ok {
			i++
			continue
		}
		start, stop := i, end
		tok := v.byID[id]
		if tok.SingleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				i = end // the automaton resumes after the rejected match
				continue
			}
		}
		if tok.LStrip {
			ns := start
			for ns > 0 {
				r, size := utf8.DecodeLastRuneInString(s[:ns])
				if !isWhitespace(r) {
					break
				}
				ns -= size
			}
			start = max(ns, startOffset)
		}
		if tok.RStrip {
			for stop < len(s) {
				r, size := utf8.DecodeRuneInString(s[stop:])
				if !isWhitespace(r) {
					break
				}
				stop += size
			}
		}
		dst = append(dst, addedMatch{span{start, stop}, id})
		startOffset = stop
		i = end
		if stop > i {
			i = stop
		}
	}
	return dst
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isWordChar(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isWordChar(r)
}
