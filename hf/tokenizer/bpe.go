package tokenizer

import (
	"fmt"
	"hash/maphash"
	"sync"
	"unicode/utf8"
)

// token is a model output: an id and its byte range in the normalized piece.
// value overrides the vocabulary string when non-empty.
type token struct {
	id         uint32
	start, end int
	value      string
}

// model turns one pre-tokenized word into tokens.
type model interface {
	tokenize(n *normStr, dst []token) ([]token, error)
	tokenToID(tok string) (uint32, bool)
	idToToken(id uint32) (string, bool)
	vocabSize() int
}

type mergeInfo struct {
	rank  uint32
	newID uint32
}

// bpeModel is a byte-pair-encoding model.
type bpeModel struct {
	vocab        map[string]uint32
	vocabR       revVocab
	merges       *pairTable
	unk          string
	hasUnk       bool
	prefix       string
	suffix       string
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool

	// Byte-level fast path: the id of each byte's byte-level character and a
	// vocabulary keyed by raw bytes.
	byteLevelOK bool
	byteIDs     [256]uint32
	rawVocab    map[string]uint32
	// fallbackIDs holds the id of each <0xNN> token, or -1.
	fallbackIDs [256]int64

	cache *wordCache
}

func pairKey(a, b uint32) uint64 { return uint64(a)<<32 | uint64(b) }

func newBPE(vocab map[string]uint32, merges [][2]string, unk *string, prefix, suffix string,
	fuseUnk, byteFallback, ignoreMerges bool) (*bpeModel, error) {
	m := &bpeModel{
		vocab:        vocab,
		vocabR:       newRevVocab(vocab),
		merges:       newPairTable(len(merges)),
		prefix:       prefix,
		suffix:       suffix,
		fuseUnk:      fuseUnk,
		byteFallback: byteFallback,
		ignoreMerges: ignoreMerges,
		cache:        newWordCache(),
	}
	if unk != nil {
		m.unk, m.hasUnk = *unk, true
	}
	for b := 0; b < 256; b++ {
		m.fallbackIDs[b] = -1
		if id, ok := vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.fallbackIDs[b] = int64(id)
		}
	}
	var buf []byte
	for i, mg := range merges {
		a, ok := vocab[mg[0]]
		if !ok {
			return nil, fmt.Errorf("%w: merge %d: token %q not in vocabulary", ErrMalformed, i, mg[0])
		}
		b, ok := vocab[mg[1]]
		if !ok {
			return nil, fmt.Errorf("%w: merge %d: token %q not in vocabulary", ErrMalformed, i, mg[1])
		}
		right := mg[1]
		if len(prefix) <= len(right) {
			right = right[len(prefix):]
		}
		buf = append(append(buf[:0], mg[0]...), right...)
		id, ok := vocab[string(buf)]
		if !ok {
			return nil, fmt.Errorf("%w: merge %d: merged token %q not in vocabulary", ErrMalformed, i, buf)
		}
		m.merges.put(pairKey(a, b), mergeInfo{uint32(i), id})
	}
	if prefix == "" && suffix == "" {
		m.byteLevelOK = true
		for b := 0; b < 256; b++ {
			id, ok := vocab[byteLevelStr[b]]
			if !ok {
				m.byteLevelOK = false
				break
			}
			m.byteIDs[b] = id
		}
		if m.byteLevelOK && ignoreMerges {
			m.rawVocab = make(map[string]uint32, len(vocab))
			for tok, id := range vocab {
				raw := make([]byte, 0, len(tok))
				ok := true
				for _, r := range tok {
					b, in := runeToByte[r]
					if !in {
						ok = false
						break
					}
					raw = append(raw, b)
				}
				if ok {
					m.rawVocab[string(raw)] = id
				}
			}
		}
	}
	return m, nil
}

func (m *bpeModel) tokenToID(tok string) (uint32, bool) { id, ok := m.vocab[tok]; return id, ok }
func (m *bpeModel) idToToken(id uint32) (string, bool)  { return m.vocabR.get(id) }
func (m *bpeModel) vocabSize() int                      { return len(m.vocab) }

// symbol is a BPE symbol: an id and its length in bytes of the word.
type symbol struct {
	id  uint32
	len int
}

func (m *bpeModel) tokenize(n *normStr, dst []token) ([]token, error) {
	w := n.norm
	if w == "" {
		return dst, nil
	}
	if m.ignoreMerges {
		var id uint32
		var ok bool
		if n.byteLevel {
			id, ok = m.rawVocab[w]
		} else {
			id, ok = m.vocab[w]
		}
		if ok {
			return append(dst, token{id: id, start: 0, end: len(w)}), nil
		}
	}
	if cached, ok := m.cache.get(w); ok {
		return appendCached(dst, cached), nil
	}
	var buf [64]symbol
	syms := buf[:0]
	var err error
	if n.byteLevel && m.byteLevelOK {
		for i := 0; i < len(w); i++ {
			syms = append(syms, symbol{m.byteIDs[w[i]], 1})
		}
	} else {
		src := w
		if n.byteLevel {
			// The vocabulary lacks some byte-level characters: map first and
			// let the character path apply unk/byte-fallback rules.
			bl := make([]byte, 0, 2*len(w))
			for i := 0; i < len(w); i++ {
				bl = append(bl, byteLevelStr[w[i]]...)
			}
			src = string(bl)
		}
		if syms, err = m.initialSymbols(src, syms); err != nil {
			return dst, err
		}
		if n.byteLevel {
			// Lengths refer to the byte-level string; bring them back to raw bytes.
			syms = rawLengths(src, syms)
		}
	}
	syms = m.mergeSymbols(syms)
	start := len(dst)
	pos := 0
	for _, s := range syms {
		dst = append(dst, token{id: s.id, start: pos, end: pos + s.len})
		pos += s.len
	}
	m.cache.put(w, dst[start:])
	return dst, nil
}

// rawLengths converts symbol lengths over a byte-level string into lengths
// over the raw bytes it encodes (each byte-level character is one raw byte).
func rawLengths(bl string, syms []symbol) []symbol {
	pos := 0
	for i := range syms {
		end := pos + syms[i].len
		if end > len(bl) {
			end = len(bl)
		}
		syms[i].len = utf8.RuneCountInString(bl[pos:end])
		pos = end
	}
	return syms
}

func appendCached(dst []token, c []uint32) []token {
	pos := 0
	for i := 0; i+1 < len(c); i += 2 {
		l := int(c[i+1])
		dst = append(dst, token{id: c[i], start: pos, end: pos + l})
		pos += l
	}
	return dst
}

// initialSymbols splits w into characters and looks them up, applying
// continuing_subword_prefix, end_of_word_suffix, byte_fallback and unk.
func (m *bpeModel) initialSymbols(w string, syms []symbol) ([]symbol, error) {
	unkID, unkLen, haveUnk := uint32(0), 0, false
	for i := 0; i < len(w); {
		_, size := utf8.DecodeRuneInString(w[i:])
		s := w[i : i+size]
		if i > 0 && m.prefix != "" {
			s = m.prefix + s
		}
		if i+size == len(w) && m.suffix != "" {
			s = s + m.suffix
		}
		i += size
		if id, ok := m.vocab[s]; ok {
			if haveUnk {
				syms = append(syms, symbol{unkID, unkLen})
				haveUnk = false
			}
			syms = append(syms, symbol{id, size})
			continue
		}
		if m.byteFallback {
			ok := true
			for k := 0; k < len(s); k++ {
				if m.fallbackIDs[s[k]] < 0 {
					ok = false
					break
				}
			}
			if ok {
				// HF does not flush a pending unk here.
				for k := 0; k < len(s); k++ {
					syms = append(syms, symbol{uint32(m.fallbackIDs[s[k]]), 1})
				}
				continue
			}
		}
		if m.hasUnk {
			id, ok := m.vocab[m.unk]
			if !ok {
				return syms, fmt.Errorf("%w: unk token %q not in vocabulary", ErrMalformed, m.unk)
			}
			switch {
			case haveUnk && m.fuseUnk:
				unkLen += size
			case haveUnk:
				syms = append(syms, symbol{unkID, unkLen})
				unkID, unkLen = id, size
			default:
				unkID, unkLen, haveUnk = id, size, true
			}
		}
	}
	if haveUnk {
		syms = append(syms, symbol{unkID, unkLen})
	}
	return syms, nil
}

const noRank = ^uint32(0)

// mergeSymbols applies merges lowest rank first, leftmost first among equal
// ranks (the order of HF's priority queue).
func (m *bpeModel) mergeSymbols(syms []symbol) []symbol {
	if len(syms) < 2 {
		return syms
	}
	if len(syms) > 256 {
		return m.mergeHeap(syms)
	}
	var rbuf [64]mergeInfo
	ranks := rbuf[:0]
	for i := 0; i+1 < len(syms); i++ {
		mi, ok := m.merges.get(pairKey(syms[i].id, syms[i+1].id))
		if !ok {
			mi.rank = noRank
		}
		ranks = append(ranks, mi)
	}
	for {
		best, bi := noRank, -1
		for i, r := range ranks {
			if r.rank < best {
				best, bi = r.rank, i
			}
		}
		if bi < 0 {
			return syms
		}
		syms[bi] = symbol{ranks[bi].newID, syms[bi].len + syms[bi+1].len}
		syms = append(syms[:bi+1], syms[bi+2:]...)
		ranks = append(ranks[:bi], ranks[bi+1:]...)
		if bi > 0 {
			mi, ok := m.merges.get(pairKey(syms[bi-1].id, syms[bi].id))
			if !ok {
				mi.rank = noRank
			}
			ranks[bi-1] = mi
		}
		if bi < len(ranks) {
			mi, ok := m.merges.get(pairKey(syms[bi].id, syms[bi+1].id))
			if !ok {
				mi.rank = noRank
			}
			ranks[bi] = mi
		}
	}
}

type mergeEntry struct {
	pos   int
	rank  uint32
	newID uint32
}

// mergeQueue is a binary min-heap of merge candidates ordered by (rank, pos).
type mergeQueue []mergeEntry

func (q mergeQueue) less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].pos < q[j].pos
}

func (q *mergeQueue) push(e mergeEntry) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *mergeQueue) pop() mergeEntry {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h.less(l, m) {
			m = l
		}
		if r < len(h) && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// mergeHeap is the priority-queue form of mergeSymbols for long words.
func (m *bpeModel) mergeHeap(syms []symbol) []symbol {
	type node struct {
		id         uint32
		len        int
		prev, next int
	}
	nodes := make([]node, len(syms))
	for i, s := range syms {
		nodes[i] = node{s.id, s.len, i - 1, i + 1}
	}
	nodes[len(nodes)-1].next = -1
	h := make(mergeQueue, 0, len(syms))
	for i := 0; i+1 < len(syms); i++ {
		if mi, ok := m.merges.get(pairKey(syms[i].id, syms[i+1].id)); ok {
			h.push(mergeEntry{i, mi.rank, mi.newID})
		}
	}
	for len(h) > 0 {
		top := h.pop()
		cur := &nodes[top.pos]
		if cur.len == 0 || cur.next == -1 {
			continue
		}
		right := nodes[cur.next]
		if mi, ok := m.merges.get(pairKey(cur.id, right.id)); !ok || mi.newID != top.newID {
			continue
		}
		rightPos := cur.next
		cur.id = top.newID
		cur.len += right.len
		cur.next = right.next
		nodes[rightPos].len = 0
		if right.next >= 0 {
			nodes[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if mi, ok := m.merges.get(pairKey(nodes[cur.prev].id, cur.id)); ok {
				h.push(mergeEntry{cur.prev, mi.rank, mi.newID})
			}
		}
		if cur.next >= 0 {
			if mi, ok := m.merges.get(pairKey(cur.id, nodes[cur.next].id)); ok {
				h.push(mergeEntry{top.pos, mi.rank, mi.newID})
			}
		}
	}
	out := syms[:0]
	for i := 0; i >= 0 && i < len(nodes); i = nodes[i].next {
		out = append(out, symbol{nodes[i].id, nodes[i].len})
	}
	return out
}

// wordCache is a bounded, sharded cache from words to their tokens, stored as
// (id, length) pairs. Once a shard is full it stops admitting new words.
type wordCache struct {
	seed   maphash.Seed
	shards [16]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]uint32
}

const (
	cacheShardCap = 4096
	cacheMaxWord  = 256
)

func newWordCache() *wordCache {
	c := &wordCache{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = make(map[string][]uint32)
	}
	return c
}

func (c *wordCache) shard(w string) *cacheShard {
	return &c.shards[maphash.String(c.seed, w)&15]
}

func (c *wordCache) get(w string) ([]uint32, bool) {
	if c == nil || len(w) >= cacheMaxWord {
		return nil, false
	}
	s := c.shard(w)
	s.mu.RLock()
	v, ok := s.m[w]
	s.mu.RUnlock()
	return v, ok
}

func (c *wordCache) put(w string, toks []token) {
	if c == nil || len(w) >= cacheMaxWord {
		return
	}
	s := c.shard(w)
	s.mu.RLock()
	full := len(s.m) >= cacheShardCap
	s.mu.RUnlock()
	if full {
		return
	}
	v := make([]uint32, 0, 2*len(toks))
	for _, t := range toks {
		v = append(v, t.id, uint32(t.end-t.start))
	}
	key := string([]byte(w)) // do not pin the caller's input
	s.mu.Lock()
	if len(s.m) < cacheShardCap {
		s.m[key] = v
	}
	s.mu.Unlock()
}

// pairTable is an open-addressing hash table from a pair of ids to its merge,
// faster than a Go map for the hundreds of thousands of merges of large
// vocabularies.
type pairTable struct {
	keys  []uint64
	vals  []mergeInfo
	shift uint
	n     int
}

const emptyPair = ^uint64(0)

func newPairTable(n int) *pairTable {
	size, shift := 16, uint(60)
	for size < 2*n {
		size *= 2
		shift--
	}
	t := &pairTable{keys: make([]uint64, size), vals: make([]mergeInfo, size), shift: shift}
	for i := range t.keys {
		t.keys[i] = emptyPair
	}
	return t
}

func (t *pairTable) slot(k uint64) int { return int((k * 0x9E3779B97F4A7C15) >> t.shift) }

// put inserts or replaces (a later merge of the same pair wins, as in HF).
func (t *pairTable) put(k uint64, v mergeInfo) {
	mask := len(t.keys) - 1
	for i := t.slot(k); ; i = (i + 1) & mask {
		switch t.keys[i] {
		case emptyPair:
			t.keys[i], t.vals[i] = k, v
			t.n++
			return
		case k:
			t.vals[i] = v
			return
		}
	}
}

func (t *pairTable) get(k uint64) (mergeInfo, bool) {
	mask := len(t.keys) - 1
	for i := t.slot(k); ; i = (i + 1) & mask {
		switch t.keys[i] {
		case k:
			return t.vals[i], true
		case emptyPair:
			return mergeInfo{}, false
		}
	}
}
