package constrain

import "encoding/binary"

// maxDepth bounds the nesting of the automaton's stack (free JSON can nest
// without end otherwise).
const maxDepth = 64

// frame is one level of the pushdown automaton: a node and where it is in
// it. Frames are small values so that a state copies cheaply.
type frame struct {
	node   int32
	ph     uint8 // phase within the node
	u8     uint8 // string: UTF-8 continuation bytes or \u hex digits still to come
	lo, hi uint8 // string: the range of the next UTF-8 continuation byte
	n      int32 // string: code points (capped); array: items; object: next eligible property; number: digits in this part
	k      int32 // lits, object: trie node; string: pattern DFA state
}

// stack is the persistent (immutable, shared) rest of a state's stack.
type stack struct {
	f    frame
	next *stack
}

// state is the automaton's state: the top frame by value over the shared
// rest of the stack. Copying a state forks it.
type state struct {
	top   frame
	rest  *stack
	depth int32
}

func (g *grammar) start() state {
	return state{top: frame{node: 0}}
}

func (s *state) push(node int32) bool {
	if s.depth >= maxDepth {
		return false
	}
	s.rest = &stack{f: s.top, next: s.rest}
	s.top = frame{node: node}
	s.depth++
	return true
}

func (s *state) pop() {
	s.top = s.rest.f
	s.rest = s.rest.next
	s.depth--
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// Number phases.
const (
	numStart = iota // before anything
	numMinus        // after '-'
	numZero         // after a leading 0 (accepting)
	numInt          // in the integer digits (accepting)
	numDot          // after '.'
	numFrac         // in the fraction digits (accepting)
	numE            // after 'e'/'E'
	numESign        // after the exponent's sign
	numExp          // in the exponent digits (accepting)
)

func numAccepting(ph uint8) bool {
	return ph == numZero || ph == numInt || ph == numFrac || ph == numExp
}

// stepNumber advances a number frame by c: 1 consumed, 0 the number ended
// before c (pop, then give c to the parent), -1 rejected.
func stepNumber(f *frame, c byte, integer bool) int {
	switch f.ph {
	case numStart, numMinus:
		switch {
		case c == '-' && f.ph == numStart:
			f.ph = numMinus
		case c == '0':
			f.ph = numZero
		case c >= '1' && c <= '9':
			f.ph, f.n = numInt, 1
		default:
			return -1
		}
		return 1
	case numZero, numInt:
		if isDigit(c) && f.ph == numInt {
			if f.n >= maxIntDigits {
				return -1
			}
			f.n++
			return 1
		}
		if !integer {
			if c == '.' {
				f.ph, f.n = numDot, 0
				return 1
			}
			if c == 'e' || c == 'E' {
				f.ph, f.n = numE, 0
				return 1
			}
		}
		if isDigit(c) { // a digit after a leading 0
			return -1
		}
		return 0
	case numDot, numFrac:
		if isDigit(c) {
			if f.n >= maxFracDigits {
				return -1
			}
			f.ph = numFrac
			f.n++
			return 1
		}
		if f.ph == numDot {
			return -1
		}
		if c == 'e' || c == 'E' {
			f.ph, f.n = numE, 0
			return 1
		}
		return 0
	case numE:
		if c == '+' || c == '-' {
			f.ph = numESign
			return 1
		}
		fallthrough
	case numESign, numExp:
		if isDigit(c) {
			if f.n >= maxExpDigits {
				return -1
			}
			f.ph = numExp
			f.n++
			return 1
		}
		if f.ph == numExp {
			return 0
		}
		return -1
	}
	return -1
}

// Phases of strings.
const (
	strOpen = iota // before '"'
	strBody
	strEscape
	strUTF8 // inside a multi-byte UTF-8 sequence
	strHex  // inside \uXXXX
)

// utf8Lead returns, for a UTF-8 lead byte, the number of continuation
// bytes and the range of the first one; ok false for a byte that cannot
// start a sequence.
func utf8Lead(c byte) (n uint8, lo, hi byte, ok bool) {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 1, 0x80, 0xBF, true
	case c == 0xE0:
		return 2, 0xA0, 0xBF, true
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		return 2, 0x80, 0xBF, true
	case c == 0xED:
		return 2, 0x80, 0x9F, true
	case c == 0xF0:
		return 3, 0x90, 0xBF, true
	case c >= 0xF1 && c <= 0xF3:
		return 3, 0x80, 0xBF, true
	case c == 0xF4:
		return 3, 0x80, 0x8F, true
	}
	return 0, 0, 0, false
}

// stepString advances a string frame by c: 1 consumed, 2 consumed and the
// string ended, -1 rejected.
func stepString(f *frame, n *node, c byte) int {
	switch f.ph {
	case strOpen:
		if c != '"' {
			return -1
		}
		f.ph = strBody
		if n.pat != nil {
			f.k = n.pat.start
		}
		return 1
	case strBody:
		switch {
		case c == '"':
			if f.n < n.minLen || (n.pat != nil && !n.pat.accept[f.k]) {
				return -1
			}
			return 2
		case c == '\\':
			if !n.room(f) || (n.pat != nil && !n.pat.escapable(f.k)) {
				return -1
			}
			f.ph = strEscape
			return 1
		case c < 0x20:
			return -1
		case c < 0x80:
			if !n.room(f) || !n.patStep(f, c) {
				return -1
			}
			n.count(f)
			return 1
		default:
			cont, lo, hi, ok := utf8Lead(c)
			if !ok || !n.room(f) || !n.patStep(f, c) {
				return -1
			}
			n.count(f)
			f.ph, f.u8, f.lo, f.hi = strUTF8, cont, lo, hi
			return 1
		}
	case strUTF8:
		if c < f.lo || c > f.hi || !n.patStep(f, c) {
			return -1
		}
		f.u8--
		f.lo, f.hi = 0x80, 0xBF
		if f.u8 == 0 {
			f.ph, f.lo, f.hi = strBody, 0, 0
		}
		return 1
	case strEscape:
		var d byte
		switch c {
		case '"', '\\', '/':
			d = c
		case 'b':
			d = '\b'
		case 'f':
			d = '\f'
		case 'n':
			d = '\n'
		case 'r':
			d = '\r'
		case 't':
			d = '\t'
		case 'u':
			if !n.free {
				return -1
			}
			f.ph, f.u8 = strHex, 4
			return 1
		default:
			return -1
		}
		if !n.patStep(f, d) {
			return -1
		}
		n.count(f)
		f.ph = strBody
		return 1
	case strHex:
		if !isHex(c) {
			return -1
		}
		f.u8--
		if f.u8 == 0 {
			f.ph = strBody
		}
		return 1
	}
	return -1
}

// room reports whether the string may take one more code point.
func (n *node) room(f *frame) bool { return n.maxLen < 0 || f.n < n.maxLen }

// count counts a code point, capped where the count stops mattering so
// that equal futures have equal states.
func (n *node) count(f *frame) {
	if n.free {
		return
	}
	limit := n.minLen
	if n.maxLen > limit {
		limit = n.maxLen
	}
	if f.n < limit {
		f.n++
	}
}

func (n *node) patStep(f *frame, c byte) bool {
	if n.pat == nil {
		return true
	}
	next := n.pat.next(f.k, c)
	if next < 0 {
		return false
	}
	f.k = next
	return true
}

// Phases of objects and arrays.
const (
	objOpen       = iota // before '{'
	objFirst             // after '{'
	objKey               // inside a key (k = key trie node)
	objColon             // after the key
	objValue             // after ':' (one space may come)
	objValueSpace        // after ": "
	objAfter             // after a value
	objComma             // after ',' (one space may come)
	objCommaSpace        // after ", "
)

const (
	arrOpen = iota
	arrFirst
	arrAfter
	arrComma
	arrCommaSpace
)

// step advances s by one byte: 1 done (s is the new state), 0 c is not
// allowed (s is garbage), 2 an anyOf forked and the surviving states were
// added to out instead.
func (g *grammar) step(s *state, c byte, out *mstate) int {
	for {
		f := &s.top
		n := &g.nodes[f.node]
		switch n.kind {
		case kRoot:
			if f.ph != 0 {
				return 0
			}
			f.ph = 1
			if !s.push(n.items) {
				return 0
			}
		case kUnion:
			a := n.first[c]
			if a == -2 {
				for _, alt := range n.multi[c] {
					s2 := *s
					s2.top = frame{node: alt}
					if g.step(&s2, c, out) == 1 {
						out.add(s2)
					}
				}
				return 2
			}
			if a < 0 {
				return 0
			}
			*f = frame{node: a}
		case kLits:
			if to, ok := n.trie.child(f.k, c); ok {
				f.k = to
				return 1
			}
			if n.trie.nodes[f.k].term < 0 {
				return 0
			}
			s.pop()
		case kNumber, kInteger:
			switch stepNumber(f, c, n.kind == kInteger) {
			case 1:
				return 1
			case -1:
				return 0
			}
			s.pop()
		case kString:
			switch stepString(f, n, c) {
			case 1:
				return 1
			case 2:
				s.pop()
				return 1
			}
			return 0
		case kObject:
			return g.stepObject(s, f, n, c, out)
		case kFreeObj:
			switch f.ph {
			case objOpen:
				if c != '{' {
					return 0
				}
				f.ph = objFirst
				return 1
			case objFirst, objComma, objCommaSpace:
				if c == '}' && f.ph == objFirst {
					s.pop()
					return 1
				}
				if c == ' ' && f.ph == objComma {
					f.ph = objCommaSpace
					return 1
				}
				if c != '"' {
					return 0
				}
				f.ph = objColon
				if !s.push(g.freeStr) {
					return 0
				}
			case objColon:
				if c != ':' {
					return 0
				}
				f.ph = objValue
				return 1
			case objValue, objValueSpace:
				if c == ' ' && f.ph == objValue {
					f.ph = objValueSpace
					return 1
				}
				f.ph = objAfter
				if !s.push(g.any) {
					return 0
				}
			case objAfter:
				switch c {
				case ',':
					f.ph = objComma
					return 1
				case '}':
					s.pop()
					return 1
				}
				return 0
			default:
				return 0
			}
		case kArray:
			switch f.ph {
			case arrOpen:
				if c != '[' {
					return 0
				}
				f.ph = arrFirst
				return 1
			case arrFirst, arrComma, arrCommaSpace:
				if f.ph == arrFirst && c == ']' {
					if n.minItems > 0 {
						return 0
					}
					s.pop()
					return 1
				}
				if f.ph == arrComma && c == ' ' {
					f.ph = arrCommaSpace
					return 1
				}
				if n.maxItems >= 0 && f.n >= n.maxItems {
					return 0
				}
				if limit := max(n.minItems, n.maxItems); f.n < limit {
					f.n++
				}
				f.ph = arrAfter
				if !s.push(n.items) {
					return 0
				}
			case arrAfter:
				switch c {
				case ',':
					if n.maxItems >= 0 && f.n >= n.maxItems {
						return 0
					}
					f.ph = arrComma
					return 1
				case ']':
					if f.n < n.minItems {
						return 0
					}
					s.pop()
					return 1
				}
				return 0
			default:
				return 0
			}
		default:
			return 0
		}
	}
}

func (g *grammar) stepObject(s *state, f *frame, n *node, c byte, out *mstate) int {
	np := int32(len(n.props))
	for {
		switch f.ph {
		case objOpen:
			if c != '{' {
				return 0
			}
			f.ph = objFirst
			return 1
		case objFirst, objComma, objCommaSpace:
			if c == '}' && f.ph == objFirst {
				if n.nextReq[f.n] != np {
					return 0
				}
				s.pop()
				return 1
			}
			if c == ' ' && f.ph == objComma {
				f.ph = objCommaSpace
				return 1
			}
			if c != '"' {
				return 0
			}
			f.ph, f.k = objKey, 0
			continue
		case objKey:
			to, ok := n.trie.child(f.k, c)
			if !ok {
				return 0
			}
			hi := n.nextReq[f.n]
			if hi == np {
				hi = np - 1
			}
			if !n.trie.anyIn(to, f.n, hi) {
				return 0
			}
			f.k = to
			if t := n.trie.nodes[to].term; t >= 0 {
				f.ph, f.n = objColon, t+1
			}
			return 1
		case objColon:
			if c != ':' {
				return 0
			}
			f.ph = objValue
			return 1
		case objValue, objValueSpace:
			if c == ' ' && f.ph == objValue {
				f.ph = objValueSpace
				return 1
			}
			f.ph = objAfter
			if !s.push(n.props[f.n-1].node) {
				return 0
			}
			return g.step(s, c, out)
		case objAfter:
			switch c {
			case ',':
				if f.n >= np {
					return 0
				}
				f.ph = objComma
				return 1
			case '}':
				if n.nextReq[f.n] != np {
					return 0
				}
				s.pop()
				return 1
			}
			return 0
		default:
			return 0
		}
	}
}

// maxAlts bounds the parses an anyOf with overlapping alternatives keeps
// at once; further ones are dropped (every kept one is a valid parse, so
// the output stays valid; only some continuations are lost).
const maxAlts = 4

// mstate is the automaton's full state: the parses still alive (usually
// one; more only inside overlapping anyOf alternatives).
type mstate struct {
	n   int
	alt [maxAlts]state
}

func (m *mstate) add(s state) {
	for i := 0; i < m.n; i++ {
		if m.alt[i] == s {
			return
		}
	}
	if m.n < maxAlts {
		m.alt[m.n] = s
		m.n++
	}
}

// stepM advances every parse of in by c into out (out != in); false when
// none survives.
func (g *grammar) stepM(in *mstate, c byte, out *mstate) bool {
	out.n = 0
	for i := 0; i < in.n; i++ {
		s := in.alt[i]
		if g.step(&s, c, out) == 1 {
			out.add(s)
		}
	}
	return out.n > 0
}

func (g *grammar) startM() mstate {
	return mstate{n: 1, alt: [maxAlts]state{g.start()}}
}

// canEndM reports whether some parse is a complete value.
func (g *grammar) canEndM(m *mstate) bool {
	for i := 0; i < m.n; i++ {
		if g.canEnd(m.alt[i]) {
			return true
		}
	}
	return false
}

// keyM appends a byte string that identifies m.
func (m *mstate) key(dst []byte) []byte {
	for i := 0; i < m.n; i++ {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(m.alt[i].depth))
		dst = m.alt[i].key(dst)
	}
	return dst
}

// canEnd reports whether the text so far is one complete value (EOS may
// come now).
func (g *grammar) canEnd(s state) bool {
	for {
		f := &s.top
		n := &g.nodes[f.node]
		switch n.kind {
		case kRoot:
			return f.ph == 1
		case kLits:
			if n.trie.nodes[f.k].term < 0 {
				return false
			}
		case kNumber, kInteger:
			if !numAccepting(f.ph) {
				return false
			}
		default:
			return false
		}
		s.pop()
	}
}

// key appends a byte string that identifies s (equal keys, equal futures).
func (s *state) key(dst []byte) []byte {
	dst = appendFrame(dst, &s.top)
	for r := s.rest; r != nil; r = r.next {
		dst = appendFrame(dst, &r.f)
	}
	return dst
}

func appendFrame(dst []byte, f *frame) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(f.node))
	dst = append(dst, f.ph, f.u8, f.lo, f.hi)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(f.n))
	return binary.LittleEndian.AppendUint32(dst, uint32(f.k))
}
