package ir

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/gotpu/gotpu/dtype"
)

// The fingerprint memo. A Fused-mode training loop flushes the same graph
// structure every step, and compile.Fn fingerprints every trace it makes;
// building the canonical serialization (quoted names, formatted numbers,
// a map from values to positions) and hashing it costs tens of
// microseconds a graph, a noticeable share of a small step. So
// Fingerprint first encodes the structure as a stream of words — the same
// information as the canonical form, each variable-length part prefixed by
// its length and each kind of item by a tag, so that two streams are equal
// exactly when the canonical forms are — and looks that stream up in a
// process-wide memo. A hit compares the whole stream, not just its hash: the
// memo never returns another structure's fingerprint.

// Stream tags. Each item of the stream starts with one, so that items of
// different kinds never read alike.
const (
	tokHeader uint64 = iota + 1
	tokNil
	tokMeta
	tokConst
	tokOp
	tokDynamic
	tokParamRef
	tokNodeRef
	tokUndefRef
	tokOutputs
	tokAttrNil
	tokAttrInt
	tokAttrInt64
	tokAttrFloat
	tokAttrBool
	tokAttrString
	tokAttrDType
	tokAttrInts
	tokAttrFloats
	tokAttrOther
)

// fpScratch is the reusable state of one stream encoding.
type fpScratch struct {
	toks []uint64
	// slot[id] is the value with that ID defined so far in the walk, and
	// ref[id] its position (parameter i: i; node j output k: j<<32|k).
	slot []*Value
	ref  []uint64
	keys []string
}

var fpScratchPool = sync.Pool{New: func() any { return &fpScratch{} }}

// structTokens encodes g's structure into sc.toks. It reports false (and
// the caller falls back to the canonical form alone) for a graph whose
// value IDs are not distinct numbers below its next ID: positions are
// found through an ID-indexed table instead of a map.
func (g *Graph) structTokens(sc *fpScratch) bool {
	n := g.nextID
	if cap(sc.slot) < n {
		sc.slot = make([]*Value, n)
		sc.ref = make([]uint64, n)
	}
	sc.slot, sc.ref = sc.slot[:n], sc.ref[:n]
	defer clear(sc.slot) // keep no graph alive from the pool
	t := append(sc.toks[:0], tokHeader, uint64(len(g.Params)))
	define := func(v *Value, r uint64) bool {
		if v.ID < 0 || v.ID >= n || sc.slot[v.ID] != nil {
			return false
		}
		sc.slot[v.ID], sc.ref[v.ID] = v, r
		return true
	}
	appendRef := func(t []uint64, v *Value) []uint64 {
		switch {
		case v == nil:
			return append(t, tokNil)
		case v.ID < 0 || v.ID >= n || sc.slot[v.ID] != v:
			return append(t, tokUndefRef)
		case v.Def == nil:
			return append(t, tokParamRef, sc.ref[v.ID])
		}
		return append(t, tokNodeRef, sc.ref[v.ID])
	}
	for i, p := range g.Params {
		if p == nil {
			t = append(t, tokNil)
			continue
		}
		if !define(p, uint64(i)) {
			sc.toks = t
			return false
		}
		t = appendMetaTokens(t, p.Meta.Shape, p.Meta.DType, p.Meta.Wrapped)
	}
	t = append(t, uint64(len(g.Nodes)))
	for j, nd := range g.Nodes {
		if nd == nil {
			t = append(t, tokNil)
			continue
		}
		if nd.IsConst() {
			t = append(t, tokConst, uint64(len(nd.Out)))
			for _, o := range nd.Out {
				t = appendOutTokens(t, o)
			}
			t = appendBytesTokens(t, nd.Data)
		} else {
			t = appendBytesTokens(append(t, tokOp), []byte(nd.Op.Name))
			keys := appendSortedKeys(sc.keys[:0], nd.Attrs)
			sc.keys = keys
			dyn := nd.Op.DynamicAttrs()
			t = append(t, uint64(len(keys)))
			for _, k := range keys {
				t = appendBytesTokens(t, []byte(k))
				if slices.Contains(dyn, k) {
					t = append(t, tokDynamic)
					continue
				}
				t = appendAttrTokens(t, nd.Attrs[k])
			}
			clear(keys)
			t = append(t, uint64(len(nd.In)))
			for _, v := range nd.In {
				t = appendRef(t, v)
			}
			t = append(t, uint64(len(nd.Out)))
			for _, o := range nd.Out {
				t = appendOutTokens(t, o)
			}
		}
		for k, o := range nd.Out {
			if o != nil && !define(o, uint64(j)<<32|uint64(k)) {
				sc.toks = t
				return false
			}
		}
	}
	t = append(t, tokOutputs, uint64(len(g.Outputs)))
	for _, v := range g.Outputs {
		t = appendRef(t, v)
	}
	sc.toks = t
	return true
}

func appendMetaTokens(t []uint64, shape []int, dt dtype.DType, wrapped bool) []uint64 {
	w := uint64(0)
	if wrapped {
		w = 1
	}
	t = append(t, tokMeta, uint64(dt), w, uint64(len(shape)))
	for _, d := range shape {
		t = append(t, uint64(d))
	}
	return t
}

func appendOutTokens(t []uint64, o *Value) []uint64 {
	if o == nil {
		return append(t, tokNil)
	}
	return appendMetaTokens(t, o.Meta.Shape, o.Meta.DType, o.Meta.Wrapped)
}

// appendBytesTokens appends b's length and its bytes, eight to a word.
func appendBytesTokens(t []uint64, b []byte) []uint64 {
	t = append(t, uint64(len(b)))
	for len(b) > 0 {
		var w uint64
		for i := 0; i < 8 && i < len(b); i++ {
			w |= uint64(b[i]) << (8 * i)
		}
		t = append(t, w)
		b = b[min(8, len(b)):]
	}
	return t
}

// appendAttrTokens encodes an attribute value as attrKey does: with its
// type, floats by their bits.
func appendAttrTokens(t []uint64, v any) []uint64 {
	switch x := v.(type) {
	case nil:
		return append(t, tokAttrNil)
	case int:
		return append(t, tokAttrInt, uint64(x))
	case int64:
		return append(t, tokAttrInt64, uint64(x))
	case float64:
		return append(t, tokAttrFloat, math.Float64bits(x))
	case bool:
		if x {
			return append(t, tokAttrBool, 1)
		}
		return append(t, tokAttrBool, 0)
	case string:
		return appendBytesTokens(append(t, tokAttrString), []byte(x))
	case dtype.DType:
		return append(t, tokAttrDType, uint64(x))
	case []int:
		t = append(t, tokAttrInts, uint64(len(x)))
		for _, d := range x {
			t = append(t, uint64(d))
		}
		return t
	case []float64:
		t = append(t, tokAttrFloats, uint64(len(x)))
		for _, f := range x {
			t = append(t, math.Float64bits(f))
		}
		return t
	}
	return appendBytesTokens(append(t, tokAttrOther), []byte(fmt.Sprintf("%T:%v", v, v)))
}

// fpMemo maps structure streams to their fingerprints. It holds at most
// fpMemoMaxWords words of streams; past that it starts again empty (a
// process that keeps making new structures pays the canonical form, as
// without a memo).
type fpMemo struct {
	mu    sync.Mutex
	m     map[uint64][]fpMemoEntry
	words int
	hits  int64
}

type fpMemoEntry struct {
	toks []uint64
	fp   string
}

const fpMemoMaxWords = 4 << 20 // 32 MiB of streams

var fingerprints = &fpMemo{}

func hashTokens(t []uint64) uint64 {
	h := uint64(14695981039346656037)
	for _, w := range t {
		h ^= w
		h *= 0x9e3779b97f4a7c15
		h ^= h >> 29
	}
	return h
}

func (m *fpMemo) get(t []uint64) (string, bool) {
	h := hashTokens(t)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.m[h] {
		if slices.Equal(e.toks, t) {
			m.hits++
			return e.fp, true
		}
	}
	return "", false
}

func (m *fpMemo) put(t []uint64, fp string) {
	h := hashTokens(t)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || m.words+len(t) > fpMemoMaxWords {
		m.m, m.words = map[uint64][]fpMemoEntry{}, 0
	}
	for _, e := range m.m[h] {
		if slices.Equal(e.toks, t) {
			return
		}
	}
	m.m[h] = append(m.m[h], fpMemoEntry{toks: slices.Clone(t), fp: fp})
	m.words += len(t)
}
