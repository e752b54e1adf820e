package constrain

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gotpu/gotpu/hf/tokenizer"
)

// Vocab is a model's vocabulary as a byte trie, built once per model and
// shared (read-only, safe for concurrent use) by every Grammar over it.
type Vocab struct {
	size   int
	eos    []int
	tokens [][]byte
	// The trie in preorder: node i (i >= 1; 0 is the root) has byte b[i], is
	// at depth[i] (1 for the root's children) and its subtree ends before
	// end[i]; the tokens spelled by the path to it are ids[tok[i]:tok[i+1]].
	b     []byte
	depth []uint16
	end   []int32
	tok   []int32
	ids   []int32
	// plain[i]: every byte in node i's subtree (i included) is a plain
	// string byte (printable ASCII but '"' and '\\'); deepest[i]: the
	// depth of the deepest node in the subtree.
	plain   []bool
	deepest []uint16
	// maxDepth is the longest token.
	maxDepth int
}

// plainByte reports whether c stands for itself inside a JSON string.
func plainByte(c byte) bool { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' }

// NewVocab builds the trie of a vocabulary: tokens[id] is the bytes token
// id decodes to (see TokenBytes); an empty entry is a token the constraint
// never allows (special tokens). eos are the ids that end a sequence; the
// constraint allows them once the value is complete.
func NewVocab(tokens [][]byte, eos []int) (*Vocab, error) {
	for _, e := range eos {
		if e < 0 || e >= len(tokens) {
			return nil, fmt.Errorf("constrain: EOS id %d outside the vocabulary of %d tokens", e, len(tokens))
		}
	}
	order := make([]int32, 0, len(tokens))
	for id, t := range tokens {
		if len(t) > 0 && !slices.Contains(eos, id) {
			order = append(order, int32(id))
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := strings.Compare(string(tokens[a]), string(tokens[b])); c != 0 {
			return c
		}
		return int(a - b)
	})
	v := &Vocab{size: len(tokens), eos: slices.Clone(eos), tokens: make([][]byte, len(tokens))}
	for id, t := range tokens {
		if len(t) > 0 && !slices.Contains(eos, id) {
			v.tokens[id] = slices.Clone(t)
		}
	}
	v.b = []byte{0}
	v.depth = []uint16{0}
	v.tok = []int32{0}
	// Sorted tokens give the preorder directly: each token shares its
	// longest common prefix with the previous one.
	var prev []byte
	for _, id := range order {
		t := tokens[id]
		if len(t) > 65535 {
			return nil, fmt.Errorf("constrain: token %d is %d bytes long", id, len(t))
		}
		common := 0
		for common < len(prev) && common < len(t) && prev[common] == t[common] {
			common++
		}
		for d := common; d < len(t); d++ {
			v.b = append(v.b, t[d])
			v.depth = append(v.depth, uint16(d+1))
			v.tok = append(v.tok, int32(len(v.ids)))
		}
		// The token ends at the last node on its path; nodes are appended
		// in preorder, so its ids go at the end of ids as long as the node
		// is the newest one, which holds because equal tokens are adjacent.
		v.ids = append(v.ids, id)
		prev = t
		v.maxDepth = max(v.maxDepth, len(t))
	}
	v.tok = append(v.tok, int32(len(v.ids)))
	n := len(v.b)
	v.end = make([]int32, n)
	var st []int32
	for i := n - 1; i >= 1; i-- {
		// end[i] is the first node after i with depth <= depth[i].
		for len(st) > 0 && v.depth[st[len(st)-1]] > v.depth[i] {
			st = st[:len(st)-1]
		}
		if len(st) == 0 {
			v.end[i] = int32(n)
		} else {
			v.end[i] = st[len(st)-1]
		}
		st = append(st, int32(i))
	}
	v.plain = make([]bool, n)
	v.deepest = make([]uint16, n)
	parent := make([]int32, n)
	var path []int32 // the node at each depth along the current path
	for i := 1; i < n; i++ {
		d := int(v.depth[i])
		path = append(path[:d-1], int32(i))
		if d > 1 {
			parent[i] = path[d-2]
		}
		v.plain[i] = plainByte(v.b[i])
		v.deepest[i] = v.depth[i]
	}
	for i := n - 1; i >= 1; i-- {
		if p := parent[i]; p > 0 {
			v.plain[p] = v.plain[p] && v.plain[i]
			v.deepest[p] = max(v.deepest[p], v.deepest[i])
		}
	}
	return v, nil
}

// bytesOf returns a token's bytes; false for ids that are never allowed.
func (v *Vocab) bytesOf(id int) ([]byte, bool) {
	if id < 0 || id >= len(v.tokens) || len(v.tokens[id]) == 0 {
		return nil, false
	}
	return v.tokens[id], true
}

// Size is the vocabulary's length.
func (v *Vocab) Size() int { return v.size }

// Nodes is the number of trie nodes (without the root).
func (v *Vocab) Nodes() int { return len(v.b) - 1 }

// TokenBytes returns the bytes each token of t decodes to, by id, for
// NewVocab: byte-level BPE tokens (GPT-2 style, e.g. SmolLM2, Llama 3,
// Qwen) are mapped back through the byte-to-character table,
// SentencePiece tokens (Llama 2, Gemma) get their '▁' as spaces and
// byte-fallback tokens <0xXX> their byte, and anything else is the
// token's own decoding. Special tokens are nil (never allowed).
func TokenBytes(t *tokenizer.Tokenizer) [][]byte {
	n := t.VocabSize()
	out := make([][]byte, n)
	toks := make([]string, n)
	for id := range n {
		toks[id], _ = t.IDToToken(id)
	}
	byteLevel := isByteLevel(t)
	for id, s := range toks {
		if s == "" || t.IsSpecial(id) {
			continue
		}
		if byteLevel {
			if b, ok := unByteLevel(s); ok {
				out[id] = b
				continue
			}
		} else if len(s) == 6 && strings.HasPrefix(s, "<0x") && s[5] == '>' {
			if x, err := strconv.ParseUint(s[3:5], 16, 8); err == nil {
				out[id] = []byte{byte(x)}
				continue
			}
		} else if strings.Contains(s, "▁") {
			out[id] = []byte(strings.ReplaceAll(s, "▁", " "))
			continue
		}
		d, err := t.Decode([]int{id}, false)
		if err == nil && !strings.ContainsRune(d, '\uFFFD') {
			out[id] = []byte(d)
		}
	}
	return out
}

// isByteLevel reports whether t's vocabulary is GPT-2 byte-level: "Ġ"
// (U+0120) is a token decoding to a space.
func isByteLevel(t *tokenizer.Tokenizer) bool {
	id, ok := t.TokenToID("Ġ")
	if !ok {
		return false
	}
	d, err := t.Decode([]int{id}, false)
	return err == nil && d == " "
}

var byteOfRune = func() map[rune]byte {
	// GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves,
	// the other bytes to U+0100 upward in byte order.
	m := map[rune]byte{}
	next := rune(256)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[rune(b)] = byte(b)
		} else {
			m[next] = byte(b)
			next++
		}
	}
	return m
}()

func unByteLevel(s string) ([]byte, bool) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		b, ok := byteOfRune[r]
		if !ok {
			return nil, false
		}
		out = append(out, b)
	}
	return out, true
}
