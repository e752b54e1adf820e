package cache

import (
	"container/list"
	"sync"
)

// memTier is tier 1: payloads held in process, bounded by total bytes,
// least recently used evicted first.
type memTier struct {
	mu        sync.Mutex
	max       int64 // byte budget; <= 0 disables the tier
	bytes     int64
	ll        *list.List // front is most recently used; values are *memItem
	items     map[string]*list.Element
	evictions int64
}

type memItem struct {
	hash    string
	payload []byte
}

func newMemTier(max int64) *memTier {
	return &memTier{max: max, ll: list.New(), items: make(map[string]*list.Element)}
}

// get returns the payload for hash and marks it most recently used.
func (m *memTier) get(hash string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.items[hash]
	if !ok {
		return nil, false
	}
	m.ll.MoveToFront(e)
	return e.Value.(*memItem).payload, true
}

// add stores payload for hash, evicting least recently used entries until
// the total fits the budget. A payload larger than the whole budget is
// not stored.
func (m *memTier) add(hash string, payload []byte) {
	size := int64(len(payload))
	m.mu.Lock()
	defer m.mu.Unlock()
	if size > m.max || m.max <= 0 {
		return
	}
	if e, ok := m.items[hash]; ok {
		it := e.Value.(*memItem)
		m.bytes += size - int64(len(it.payload))
		it.payload = payload
		m.ll.MoveToFront(e)
	} else {
		m.items[hash] = m.ll.PushFront(&memItem{hash: hash, payload: payload})
		m.bytes += size
	}
	for m.bytes > m.max {
		e := m.ll.Back()
		it := e.Value.(*memItem)
		m.ll.Remove(e)
		delete(m.items, it.hash)
		m.bytes -= int64(len(it.payload))
		m.evictions++
	}
}

// remove drops hash from the tier.
func (m *memTier) remove(hash string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.items[hash]; ok {
		m.ll.Remove(e)
		delete(m.items, hash)
		m.bytes -= int64(len(e.Value.(*memItem).payload))
	}
}

// usage returns the number of entries, resident bytes and evictions so far.
func (m *memTier) usage() (entries int, bytes, evictions int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.items), m.bytes, m.evictions
}
