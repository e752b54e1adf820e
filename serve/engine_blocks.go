package serve

import (
	"container/list"
	"slices"
)

// blockPool allocates the paged cache's blocks and keeps the prefix cache:
// a block that holds a full block of tokens is registered under the hash
// of those tokens chained with its parent block's hash, so a later
// sequence with the same prefix takes the block instead of recomputing
// it. Blocks are reference counted; an unreferenced registered block
// stays cached in LRU order until an allocation needs it. A lookup also
// compares the tokens and the parent hash, so a hash collision costs a
// miss, not wrong keys.
type blockPool struct {
	ref    []int
	hashed []bool
	hash   []uint64
	parent []uint64
	toks   [][]int
	elem   []*list.Element // position in lru while unreferenced and hashed
	free   []int           // unreferenced, unhashed
	lru    *list.List      // unreferenced, hashed; front is the oldest
	cache  map[uint64]int
	used   int // blocks with ref > 0
}

func newBlockPool(n int) *blockPool {
	p := &blockPool{ref: make([]int, n), hashed: make([]bool, n), hash: make([]uint64, n),
		parent: make([]uint64, n), toks: make([][]int, n), elem: make([]*list.Element, n),
		lru: list.New(), cache: map[uint64]int{}}
	for i := n - 1; i >= 0; i-- {
		p.free = append(p.free, i)
	}
	return p
}

// available is the number of blocks an allocation can still get.
func (p *blockPool) available() int { return len(p.free) + p.lru.Len() }

// alloc returns a block with one reference, evicting the least recently
// used cached block when no block is free.
func (p *blockPool) alloc() (int, bool) {
	var b int
	switch {
	case len(p.free) > 0:
		b = p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
	case p.lru.Len() > 0:
		b = p.lru.Remove(p.lru.Front()).(int)
		p.elem[b] = nil
		p.unhash(b)
	default:
		return 0, false
	}
	p.ref[b] = 1
	p.used++
	return b, true
}

// take adds a reference to b (a prefix-cache hit).
func (p *blockPool) take(b int) {
	if p.ref[b] == 0 {
		if p.elem[b] != nil {
			p.lru.Remove(p.elem[b])
			p.elem[b] = nil
		}
		p.used++
	}
	p.ref[b]++
}

// release drops a reference to b.
func (p *blockPool) release(b int) {
	p.ref[b]--
	if p.ref[b] > 0 {
		return
	}
	p.used--
	if p.hashed[b] {
		p.elem[b] = p.lru.PushBack(b)
		return
	}
	p.free = append(p.free, b)
}

// unhash removes b from the prefix cache (it is about to be rewritten).
func (p *blockPool) unhash(b int) {
	if !p.hashed[b] {
		return
	}
	if p.cache[p.hash[b]] == b {
		delete(p.cache, p.hash[b])
	}
	p.hashed[b] = false
	p.toks[b] = nil
}

// register records b as holding toks after the block of hash parent.
// When another block already holds them, b stays private.
func (p *blockPool) register(b int, h, parent uint64, toks []int) {
	if _, ok := p.cache[h]; ok || p.hashed[b] {
		return
	}
	p.cache[h] = b
	p.hashed[b] = true
	p.hash[b], p.parent[b], p.toks[b] = h, parent, slices.Clone(toks)
}

// lookup returns the cached block holding toks after parent.
func (p *blockPool) lookup(h, parent uint64, toks []int) (int, bool) {
	b, ok := p.cache[h]
	if !ok || p.parent[b] != parent || !slices.Equal(p.toks[b], toks) {
		return 0, false
	}
	return b, true
}

// blockHash chains a block's tokens onto its parent's hash (FNV-1a over
// the parent hash and the token ids).
func blockHash(parent uint64, toks []int) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	mix := func(v uint64) {
		for i := 0; i < 8; i++ {
			h ^= v & 0xff
			h *= prime
			v >>= 8
		}
	}
	mix(parent)
	for _, t := range toks {
		mix(uint64(t))
	}
	return h
}
