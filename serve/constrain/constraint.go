package constrain

import (
	"fmt"
	"slices"
	"sync"
)

// Grammar is a compiled response format over one Vocab. It is safe for
// concurrent use; each sequence takes its own Constraint from New. The
// Grammar memoizes the allowed tokens of the automaton states it has seen.
type Grammar struct {
	v *Vocab
	g *grammar

	mu      sync.Mutex
	memo    map[string][]int32
	memoIDs int // ids held by memo
}

// memoLimit bounds the ids a Grammar's memo holds (4 bytes each); past it
// the memo starts over.
const memoLimit = 8 << 20

// Schema compiles a JSON schema (response_format json_schema's "schema")
// over v. Errors wrap ErrSchema; an unsupported keyword is an
// *UnsupportedError naming it.
func (v *Vocab) Schema(schema []byte) (*Grammar, error) {
	g, err := compileSchema(schema)
	if err != nil {
		return nil, err
	}
	return v.grammar(g), nil
}

// JSONObject is response_format json_object: any JSON object.
func (v *Vocab) JSONObject() *Grammar { return v.grammar(jsonObjectGrammar()) }

func (v *Vocab) grammar(g *grammar) *Grammar {
	return &Grammar{v: v, g: g, memo: map[string][]int32{}}
}

// New compiles schema over a vocabulary and returns a constraint for one
// sequence; schema nil or `{"type":"object"}`-like json_object use is
// JSONObject. Building the Vocab is the expensive part: servers keep one
// Vocab per model and one Grammar per schema instead.
func New(schema []byte, vocab [][]byte, eos []int) (*Constraint, error) {
	v, err := NewVocab(vocab, eos)
	if err != nil {
		return nil, err
	}
	if schema == nil {
		return v.JSONObject().New(), nil
	}
	g, err := v.Schema(schema)
	if err != nil {
		return nil, err
	}
	return g.New(), nil
}

// Constraint restricts one sequence to the Grammar's language; it has the
// methods of serve.Constraint. Not safe for concurrent use.
type Constraint struct {
	gr   *Grammar
	s    mstate
	done bool // an EOS was accepted
	key  []byte
	w    walker
}

// New starts a constraint at the beginning of the value.
func (gr *Grammar) New() *Constraint {
	return &Constraint{gr: gr, s: gr.g.startM()}
}

// Allowed sets allow[id] for each token that may come next: the tokens
// whose bytes continue the value, and the EOS ids once the value is
// complete. It returns false when the value is complete and nothing but
// EOS may follow (or, with a vocabulary that cannot spell the next byte,
// when nothing may).
func (c *Constraint) Allowed(allow []bool) bool {
	gr := c.gr
	end := !c.done && gr.g.canEndM(&c.s)
	if end || c.done {
		for _, e := range gr.v.eos {
			if e < len(allow) {
				allow[e] = true
			}
		}
	}
	if c.done {
		return false
	}
	ids := gr.allowed(c)
	for _, id := range ids {
		if int(id) < len(allow) {
			allow[id] = true
		}
	}
	return len(ids) > 0
}

// allowed returns the ids allowed in c's state, from the memo or a walk.
func (gr *Grammar) allowed(c *Constraint) []int32 {
	c.key = c.s.key(c.key[:0])
	gr.mu.Lock()
	ids, ok := gr.memo[string(c.key)]
	gr.mu.Unlock()
	if ok {
		return ids
	}
	ids = gr.walk(&c.s, &c.w)
	gr.mu.Lock()
	if gr.memoIDs+len(ids) > memoLimit {
		clear(gr.memo)
		gr.memoIDs = 0
	}
	gr.memo[string(c.key)] = ids
	gr.memoIDs += len(ids) + 1
	gr.mu.Unlock()
	return ids
}

// walk visits the vocabulary trie in preorder with the automaton, skipping
// every subtree whose prefix is rejected, and returns the ids of the tokens
// fully accepted. Inside a string without a pattern, plain bytes are
// handled inline, and a subtree of plain bytes that fits the string's
// remaining length is taken whole (its ids are contiguous in preorder).
func (gr *Grammar) walk(s0 *mstate, w *walker) []int32 {
	v, g := gr.v, gr.g
	if len(w.states) < v.maxDepth+1 {
		w.states = make([]mstate, v.maxDepth+1)
		w.ref = make([]int32, v.maxDepth+1)
	}
	states, ref := w.states, w.ref
	states[0], ref[0] = *s0, 0
	out := w.out[:0]
	n := int32(len(v.b))
	for i := int32(1); i < n; {
		d := v.depth[i]
		r := ref[d-1]
		s := &states[r]
		c := v.b[i]
		if f := &s.alt[0].top; s.n == 1 && f.ph == strBody && plainByte(c) {
			if nd := &g.nodes[f.node]; nd.kind == kString && nd.pat == nil {
				if nd.free {
					if v.plain[i] {
						out = append(out, v.ids[v.tok[i]:v.tok[v.end[i]]]...)
						i = v.end[i]
						continue
					}
					ref[d] = r // the same state
					out = append(out, v.ids[v.tok[i]:v.tok[i+1]]...)
					i++
					continue
				}
				// The room left for code points (plain bytes are one each).
				room := int32(1 << 30)
				if nd.maxLen >= 0 {
					room = nd.maxLen - f.n
				}
				if room < 1 {
					i = v.end[i]
					continue
				}
				if v.plain[i] {
					// Plain bytes all the way down: the tokens no deeper
					// than the room are allowed, the others are not.
					limit := int32(d) - 1 + room
					if int32(v.deepest[i]) <= limit {
						out = append(out, v.ids[v.tok[i]:v.tok[v.end[i]]]...)
						i = v.end[i]
						continue
					}
					for j := i; j < v.end[i]; {
						if int32(v.depth[j]) > limit {
							j = v.end[j]
							continue
						}
						out = append(out, v.ids[v.tok[j]:v.tok[j+1]]...)
						j++
					}
					i = v.end[i]
					continue
				}
				ns := &states[d]
				ns.n = 1
				ns.alt[0] = s.alt[0]
				nd.count(&ns.alt[0].top)
				ref[d] = int32(d)
				out = append(out, v.ids[v.tok[i]:v.tok[i+1]]...)
				i++
				continue
			}
		}
		if !g.stepM(s, c, &states[d]) {
			i = v.end[i]
			continue
		}
		ref[d] = int32(d)
		out = append(out, v.ids[v.tok[i]:v.tok[i+1]]...)
		i++
	}
	w.out = out
	return slices.Clone(out)
}

// walker is the scratch space of walks, kept by a Constraint.
type walker struct {
	states []mstate
	ref    []int32
	out    []int32
}

// Accept advances past token id. An EOS id is accepted once the value is
// complete; any other id must be one Allowed would allow.
func (c *Constraint) Accept(id int) error {
	gr := c.gr
	for _, e := range gr.v.eos {
		if id == e {
			if c.done || gr.g.canEndM(&c.s) {
				c.done = true
				return nil
			}
			return fmt.Errorf("constrain: EOS token %d before the JSON value is complete", id)
		}
	}
	if c.done {
		return fmt.Errorf("constrain: token %d after EOS", id)
	}
	tb, ok := gr.v.bytesOf(id)
	if !ok {
		return fmt.Errorf("constrain: token %d is never allowed (special or outside the vocabulary)", id)
	}
	cur, next := c.s, mstate{}
	for i, b := range tb {
		if !gr.g.stepM(&cur, b, &next) {
			return fmt.Errorf("constrain: token %d (%q) not allowed: byte %d does not continue the JSON value", id, tb, i)
		}
		cur, next = next, cur
	}
	c.s = cur
	return nil
}

// Done reports whether an EOS was accepted.
func (c *Constraint) Done() bool { return c.done }

// Complete reports whether the text accepted so far is a complete value.
func (c *Constraint) Complete() bool { return c.done || c.gr.g.canEndM(&c.s) }
