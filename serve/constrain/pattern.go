package constrain

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
)

// dfa is a deterministic automaton over the bytes of a decoded string
// (ASCII only: a byte >= 0x80 never matches). Transitions into states from
// which no accepting state is reachable are -1, so a live state can always
// be completed.
type dfa struct {
	start  int32
	trans  [][128]int32
	accept []bool
}

func (d *dfa) next(s int32, c byte) int32 {
	if c >= 0x80 {
		return -1
	}
	return d.trans[s][c]
}

// escapable reports whether some character that a JSON escape other than
// \u decodes to continues the pattern from s.
func (d *dfa) escapable(s int32) bool {
	for _, c := range []byte{'"', '\\', '/', '\b', '\f', '\n', '\r', '\t'} {
		if d.trans[s][c] >= 0 {
			return true
		}
	}
	return false
}

const (
	maxPatternStates = 4096
	maxRepeat        = 64
)

// nfa is a Thompson automaton: each state either matches a byte set and
// goes to out, or is a split (eps) to out and out1.
type nfa struct {
	states []nstate
}

type nstate struct {
	set       *[2]uint64 // nil: an epsilon state
	out, out1 int32      // -1 none
}

func (a *nfa) add(s nstate) int32 {
	a.states = append(a.states, s)
	return int32(len(a.states) - 1)
}

// frag is a fragment under construction: its start and the dangling exits
// to patch (state index, which out).
type frag struct {
	start int32
	exits []exit
}

type exit struct {
	st     int32
	second bool
}

func (a *nfa) patch(exits []exit, to int32) {
	for _, e := range exits {
		if e.second {
			a.states[e.st].out1 = to
		} else {
			a.states[e.st].out = to
		}
	}
}

// compilePattern compiles a JSON-schema pattern (a search, anchored only
// by ^ and $) to a DFA.
func compilePattern(p string) (*dfa, error) {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return nil, err
	}
	re = re.Simplify()
	var parts []*syntax.Regexp
	if re.Op == syntax.OpConcat {
		parts = slices.Clone(re.Sub)
	} else {
		parts = []*syntax.Regexp{re}
	}
	anchoredStart, anchoredEnd := false, false
	if len(parts) > 0 && (parts[0].Op == syntax.OpBeginText || parts[0].Op == syntax.OpBeginLine) {
		anchoredStart, parts = true, parts[1:]
	}
	if len(parts) > 0 && (parts[len(parts)-1].Op == syntax.OpEndText || parts[len(parts)-1].Op == syntax.OpEndLine) {
		anchoredEnd, parts = true, parts[:len(parts)-1]
	}
	a := &nfa{}
	anyByte := &[2]uint64{^uint64(0), ^uint64(0)}
	build := func() (frag, error) {
		var fs []frag
		if !anchoredStart {
			fs = append(fs, a.star(a.byteSet(anyByte)))
		}
		for _, r := range parts {
			f, err := a.build(r)
			if err != nil {
				return frag{}, err
			}
			fs = append(fs, f)
		}
		if !anchoredEnd {
			fs = append(fs, a.star(a.byteSet(anyByte)))
		}
		return a.concat(fs), nil
	}
	f, err := build()
	if err != nil {
		return nil, err
	}
	if len(a.states) > 50000 {
		return nil, errors.New("pattern too large")
	}
	match := a.add(nstate{out: -1, out1: -1})
	a.patch(f.exits, match)
	return a.determinize(f.start, match)
}

func (a *nfa) byteSet(set *[2]uint64) frag {
	s := a.add(nstate{set: set, out: -1, out1: -1})
	return frag{start: s, exits: []exit{{st: s}}}
}

func (a *nfa) empty() frag {
	s := a.add(nstate{out: -1, out1: -1})
	return frag{start: s, exits: []exit{{st: s}}}
}

func (a *nfa) concat(fs []frag) frag {
	if len(fs) == 0 {
		return a.empty()
	}
	for i := 0; i+1 < len(fs); i++ {
		a.patch(fs[i].exits, fs[i+1].start)
	}
	return frag{start: fs[0].start, exits: fs[len(fs)-1].exits}
}

func (a *nfa) alt(x, y frag) frag {
	s := a.add(nstate{out: x.start, out1: y.start})
	return frag{start: s, exits: append(slices.Clone(x.exits), y.exits...)}
}

func (a *nfa) star(x frag) frag {
	s := a.add(nstate{out: x.start, out1: -1})
	a.patch(x.exits, s)
	return frag{start: s, exits: []exit{{st: s, second: true}}}
}

func (a *nfa) quest(x frag) frag {
	s := a.add(nstate{out: x.start, out1: -1})
	return frag{start: s, exits: append(slices.Clone(x.exits), exit{st: s, second: true})}
}

func runeSet(lo, hi rune, set *[2]uint64) {
	if lo > 0x7F {
		return
	}
	hi = min(hi, 0x7F)
	for r := lo; r <= hi; r++ {
		set[r>>6] |= 1 << (r & 63)
	}
}

func (a *nfa) build(re *syntax.Regexp) (frag, error) {
	if len(a.states) > 50000 {
		return frag{}, errors.New("pattern too large")
	}
	switch re.Op {
	case syntax.OpEmptyMatch:
		return a.empty(), nil
	case syntax.OpLiteral:
		fs := make([]frag, 0, len(re.Rune))
		for _, r := range re.Rune {
			if r > 0x7F {
				return frag{}, fmt.Errorf("non-ASCII character %q", r)
			}
			set := new([2]uint64)
			runeSet(r, r, set)
			if re.Flags&syntax.FoldCase != 0 {
				for f := r; ; {
					f = unicodeSimpleFold(f)
					if f == r {
						break
					}
					runeSet(f, f, set)
				}
			}
			fs = append(fs, a.byteSet(set))
		}
		return a.concat(fs), nil
	case syntax.OpCharClass:
		set := new([2]uint64)
		for i := 0; i+1 < len(re.Rune); i += 2 {
			runeSet(re.Rune[i], re.Rune[i+1], set)
		}
		return a.byteSet(set), nil
	case syntax.OpAnyCharNotNL:
		set := &[2]uint64{^uint64(0), ^uint64(0)}
		set[0] &^= 1 << '\n'
		return a.byteSet(set), nil
	case syntax.OpAnyChar:
		return a.byteSet(&[2]uint64{^uint64(0), ^uint64(0)}), nil
	case syntax.OpCapture:
		return a.build(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		x, err := a.build(re.Sub[0])
		if err != nil {
			return frag{}, err
		}
		switch re.Op {
		case syntax.OpStar:
			return a.star(x), nil
		case syntax.OpQuest:
			return a.quest(x), nil
		}
		y, err := a.build(re.Sub[0])
		if err != nil {
			return frag{}, err
		}
		return a.concat([]frag{x, a.star(y)}), nil
	case syntax.OpRepeat:
		if re.Min > maxRepeat || re.Max > maxRepeat {
			return frag{}, fmt.Errorf("repetition {%d,%d} above %d", re.Min, re.Max, maxRepeat)
		}
		var fs []frag
		for i := 0; i < re.Min; i++ {
			x, err := a.build(re.Sub[0])
			if err != nil {
				return frag{}, err
			}
			fs = append(fs, x)
		}
		if re.Max < 0 {
			x, err := a.build(re.Sub[0])
			if err != nil {
				return frag{}, err
			}
			fs = append(fs, a.star(x))
		}
		for i := re.Min; i < re.Max; i++ {
			x, err := a.build(re.Sub[0])
			if err != nil {
				return frag{}, err
			}
			fs = append(fs, a.quest(x))
		}
		return a.concat(fs), nil
	case syntax.OpConcat:
		fs := make([]frag, 0, len(re.Sub))
		for _, s := range re.Sub {
			x, err := a.build(s)
			if err != nil {
				return frag{}, err
			}
			fs = append(fs, x)
		}
		return a.concat(fs), nil
	case syntax.OpAlternate:
		x, err := a.build(re.Sub[0])
		if err != nil {
			return frag{}, err
		}
		for _, s := range re.Sub[1:] {
			y, err := a.build(s)
			if err != nil {
				return frag{}, err
			}
			x = a.alt(x, y)
		}
		return x, nil
	}
	return frag{}, fmt.Errorf("%s is not supported (only literals, ., classes, groups, |, *, +, ?, {m,n}, and ^/$ at the ends)", opName(re.Op))
}

func opName(op syntax.Op) string {
	switch op {
	case syntax.OpBeginLine, syntax.OpBeginText:
		return "^ inside the pattern"
	case syntax.OpEndLine, syntax.OpEndText:
		return "$ inside the pattern"
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return `\b`
	}
	return "operator " + strconv.Itoa(int(op))
}

// unicodeSimpleFold is unicode.SimpleFold restricted to ASCII letters.
func unicodeSimpleFold(r rune) rune {
	switch {
	case r >= 'a' && r <= 'z':
		return r - 'a' + 'A'
	case r >= 'A' && r <= 'Z':
		return r - 'A' + 'a'
	}
	return r
}

// closure adds the epsilon closure of s to set (sorted unique).
func (a *nfa) closure(s int32, seen []bool, out []int32) []int32 {
	if s < 0 || seen[s] {
		return out
	}
	seen[s] = true
	st := &a.states[s]
	if st.set == nil && (st.out >= 0 || st.out1 >= 0) {
		out = a.closure(st.out, seen, out)
		return a.closure(st.out1, seen, out)
	}
	return append(out, s)
}

func (a *nfa) determinize(start, match int32) (*dfa, error) {
	seen := make([]bool, len(a.states))
	keyOf := func(set []int32) string {
		var b strings.Builder
		for _, s := range set {
			b.WriteString(strconv.Itoa(int(s)))
			b.WriteByte(',')
		}
		return b.String()
	}
	closureOf := func(roots []int32) []int32 {
		clear(seen)
		var out []int32
		for _, r := range roots {
			out = a.closure(r, seen, out)
		}
		slices.Sort(out)
		return out
	}
	d := &dfa{}
	index := map[string]int32{}
	var sets [][]int32
	addState := func(set []int32) int32 {
		k := keyOf(set)
		if id, ok := index[k]; ok {
			return id
		}
		id := int32(len(sets))
		index[k] = id
		sets = append(sets, set)
		d.trans = append(d.trans, [128]int32{})
		d.accept = append(d.accept, slices.Contains(set, match))
		return id
	}
	d.start = addState(closureOf([]int32{start}))
	for i := 0; i < len(sets); i++ {
		if len(sets) > maxPatternStates {
			return nil, fmt.Errorf("pattern needs more than %d automaton states", maxPatternStates)
		}
		for c := 0; c < 128; c++ {
			var roots []int32
			for _, s := range sets[i] {
				st := &a.states[s]
				if st.set != nil && st.set[c>>6]&(1<<(c&63)) != 0 {
					roots = append(roots, st.out)
				}
			}
			if len(roots) == 0 {
				d.trans[i][c] = -1
				continue
			}
			d.trans[i][c] = addState(closureOf(roots))
		}
	}
	// Prune the states that cannot reach a match.
	live := slices.Clone(d.accept)
	for changed := true; changed; {
		changed = false
		for i := range d.trans {
			if live[i] {
				continue
			}
			for _, t := range d.trans[i] {
				if t >= 0 && live[t] {
					live[i], changed = true, true
					break
				}
			}
		}
	}
	if !live[d.start] {
		return nil, errors.New("the pattern matches nothing")
	}
	for i := range d.trans {
		for c, t := range d.trans[i] {
			if t >= 0 && !live[t] {
				d.trans[i][c] = -1
			}
		}
	}
	return d, nil
}
