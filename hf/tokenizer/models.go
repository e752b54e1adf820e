package tokenizer

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// wordPieceModel is BERT's greedy longest-match-first subword model.
type wordPieceModel struct {
	vocab    map[string]uint32
	vocabR   revVocab
	unk      string
	prefix   string
	maxChars int
}

func newWordPiece(vocab map[string]uint32, unk, prefix string, maxChars int) *wordPieceModel {
	m := &wordPieceModel{vocab: vocab, vocabR: newRevVocab(vocab), unk: unk, prefix: prefix, maxChars: maxChars}
	return m
}

func (m *wordPieceModel) tokenToID(tok string) (uint32, bool) { id, ok := m.vocab[tok]; return id, ok }
func (m *wordPieceModel) idToToken(id uint32) (string, bool)  { return m.vocabR.get(id) }
func (m *wordPieceModel) vocabSize() int                      { return len(m.vocab) }

func (m *wordPieceModel) unkToken(n int, dst []token) ([]token, error) {
	id, ok := m.vocab[m.unk]
	if !ok {
		return dst, fmt.Errorf("%w: WordPiece unk token %q not in vocabulary", ErrMalformed, m.unk)
	}
	return append(dst, token{id: id, start: 0, end: n, value: m.unk}), nil
}

func (m *wordPieceModel) tokenize(n *normStr, dst []token) ([]token, error) {
	w := n.norm
	if w == "" {
		return dst, nil
	}
	if utf8.RuneCountInString(w) > m.maxChars {
		return m.unkToken(len(w), dst)
	}
	mark := len(dst)
	var sb strings.Builder
	for start := 0; start < len(w); {
		end := len(w)
		found := false
		for start < end {
			var key string
			if start > 0 {
				sb.Reset()
				sb.WriteString(m.prefix)
				sb.WriteString(w[start:end])
				key = sb.String()
			} else {
				key = w[start:end]
			}
			if id, ok := m.vocab[key]; ok {
				dst = append(dst, token{id: id, start: start, end: end})
				found = true
				break
			}
			_, size := utf8.DecodeLastRuneInString(w[start:end])
			end -= size
		}
		if !found {
			return m.unkToken(len(w), dst[:mark])
		}
		start = end
	}
	return dst, nil
}

// wordLevelModel maps whole words to ids.
type wordLevelModel struct {
	vocab  map[string]uint32
	vocabR revVocab
	unk    string
}

func (m *wordLevelModel) tokenToID(tok string) (uint32, bool) { id, ok := m.vocab[tok]; return id, ok }
func (m *wordLevelModel) idToToken(id uint32) (string, bool)  { return m.vocabR.get(id) }
func (m *wordLevelModel) vocabSize() int                      { return len(m.vocab) }

func (m *wordLevelModel) tokenize(n *normStr, dst []token) ([]token, error) {
	if id, ok := m.vocab[n.norm]; ok {
		return append(dst, token{id: id, start: 0, end: len(n.norm)}), nil
	}
	id, ok := m.vocab[m.unk]
	if !ok {
		return dst, fmt.Errorf("%w: WordLevel unk token %q not in vocabulary", ErrMalformed, m.unk)
	}
	return append(dst, token{id: id, start: 0, end: len(n.norm), value: m.unk}), nil
}

// unigramModel is SentencePiece's unigram language model, decoded with
// Viterbi over the pieces found in a byte trie.
type unigramModel struct {
	pieces       []string
	scores       []float64
	toID         map[string]uint32
	unkID        int // -1 when absent
	byteFallback bool
	minScore     float64
	trie         *byteTrie
	byteIDs      [256]int32 // id of <0xNN>, or -1
}

const unkPenalty = 10.0

func newUnigram(pieces []string, scores []float64, unkID int, byteFallback bool) (*unigramModel, error) {
	if unkID >= 0 && (len(pieces) == 0 || unkID >= len(pieces)) {
		return nil, fmt.Errorf("%w: Unigram unk_id %d out of a vocabulary of %d", ErrMalformed, unkID, len(pieces))
	}
	m := &unigramModel{pieces: pieces, scores: scores, toID: make(map[string]uint32, len(pieces)),
		unkID: unkID, byteFallback: byteFallback, minScore: math.Inf(1), trie: newByteTrie()}
	for i, p := range pieces {
		m.toID[p] = uint32(i)
		if scores[i] < m.minScore {
			m.minScore = scores[i]
		}
	}
	// A duplicated piece resolves to the id the map keeps, as in HF.
	for _, p := range pieces {
		m.trie.insert(p, int32(m.toID[p]))
	}
	for b := 0; b < 256; b++ {
		m.byteIDs[b] = -1
		if id, ok := m.toID[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.byteIDs[b] = int32(id)
		}
	}
	return m, nil
}

func (m *unigramModel) tokenToID(tok string) (uint32, bool) { id, ok := m.toID[tok]; return id, ok }
func (m *unigramModel) idToToken(id uint32) (string, bool) {
	if int(id) < len(m.pieces) {
		return m.pieces[id], true
	}
	return "", false
}
func (m *unigramModel) vocabSize() int { return len(m.pieces) }

type viterbiNode struct {
	id     int
	score  float64
	start  int
	filled bool
}

// encode returns the best segmentation of s as byte ranges with their ids
// (unk ranges fused), HF's encode_optimized.
func (m *unigramModel) encode(s string) ([]span, []int, error) {
	unkScore := m.minScore - unkPenalty
	best := make([]viterbiNode, len(s)+1)
	best[0].filled = true
	for start := 0; start < len(s); {
		base := best[start].score
		_, mblen := utf8.DecodeRuneInString(s[start:])
		single := false
		m.trie.prefixes(s, start, func(end int, id int32) {
			cand := m.scores[id] + base
			t := &best[end]
			if !t.filled || cand > t.score {
				*t = viterbiNode{id: int(id), score: cand, start: start, filled: true}
			}
			if end-start == mblen {
				single = true
			}
		})
		if !single {
			if m.unkID < 0 {
				return nil, nil, fmt.Errorf("%w: Unigram model has no unk_id for %q", ErrMalformed, s[start:start+mblen])
			}
			cand := unkScore + base
			t := &best[start+mblen]
			if !t.filled || cand > t.score {
				*t = viterbiNode{id: m.unkID, score: cand, start: start, filled: true}
			}
		}
		start += mblen
	}
	var spans []span
	var ids []int
	for end := len(s); end > 0; {
		nd := best[end]
		if nd.id == m.unkID && len(ids) > 0 && ids[len(ids)-1] == m.unkID && m.unkID >= 0 && spans[len(spans)-1].start == end {
			spans[len(spans)-1].start = nd.start
		} else {
			spans = append(spans, span{nd.start, end})
			ids = append(ids, nd.id)
		}
		end = nd.start
	}
	for i, j := 0, len(spans)-1; i < j; i, j = i+1, j-1 {
		spans[i], spans[j] = spans[j], spans[i]
		ids[i], ids[j] = ids[j], ids[i]
	}
	return spans, ids, nil
}

func (m *unigramModel) tokenize(n *normStr, dst []token) ([]token, error) {
	w := n.norm
	if w == "" {
		return dst, nil
	}
	spans, _, err := m.encode(w)
	if err != nil {
		return dst, err
	}
	for _, sp := range spans {
		str := w[sp.start:sp.end]
		if id, ok := m.toID[str]; ok {
			dst = append(dst, token{id: id, start: sp.start, end: sp.end})
			continue
		}
		if m.byteFallback {
			ok := true
			for k := 0; k < len(str); k++ {
				if m.byteIDs[str[k]] < 0 {
					ok = false
					break
				}
			}
			if ok {
				for k := 0; k < len(str); k++ {
					dst = append(dst, token{id: uint32(m.byteIDs[str[k]]), start: sp.start, end: sp.end})
				}
				continue
			}
		}
		if m.unkID < 0 {
			return dst, fmt.Errorf("%w: Unigram model has no unk_id", ErrMalformed)
		}
		dst = append(dst, token{id: uint32(m.unkID), start: sp.start, end: sp.end, value: str})
	}
	return dst, nil
}

// byteTrie is a trie over bytes, used for Unigram common-prefix search.
type byteTrie struct {
	next  map[uint64]int32 // (node << 8 | byte) -> child
	value []int32          // per node: piece id or -1
}

func newByteTrie() *byteTrie {
	return &byteTrie{next: make(map[uint64]int32), value: []int32{-1}}
}

func (t *byteTrie) insert(s string, id int32) {
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
	t.value[node] = id
}

// prefixes calls f for every piece that starts at s[start:], shortest first.
func (t *byteTrie) prefixes(s string, start int, f func(end int, id int32)) {
	node := int32(0)
	for i := start; i < len(s); i++ {
		child, ok := t.next[uint64(node)<<8|uint64(s[i])]
		if !ok {
			return
		}
		node = child
		if v := t.value[node]; v >= 0 {
			f(i+1, v)
		}
	}
}

// revVocab maps ids back to token strings: a slice when ids are dense, a map
// otherwise.
type revVocab struct {
	dense  []string
	has    []bool
	sparse map[uint32]string
}

func newRevVocab(vocab map[string]uint32) revVocab {
	maxID := uint32(0)
	for _, id := range vocab {
		maxID = max(maxID, id)
	}
	var r revVocab
	if int(maxID) < 2*len(vocab)+1024 {
		r.dense = make([]string, int(maxID)+1)
		r.has = make([]bool, int(maxID)+1)
		for tok, id := range vocab {
			r.dense[id] = tok
			r.has[id] = true
		}
		return r
	}
	r.sparse = make(map[uint32]string, len(vocab))
	for tok, id := range vocab {
		r.sparse[id] = tok
	}
	return r
}

func (r *revVocab) get(id uint32) (string, bool) {
	if r.sparse != nil {
		s, ok := r.sparse[id]
		return s, ok
	}
	if int(id) < len(r.dense) && r.has[id] {
		return r.dense[id], true
	}
	return "", false
}
