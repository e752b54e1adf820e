package stablehlo

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrInvalid is wrapped by every Verify error.
var ErrInvalid = errors.New("invalid StableHLO")

// knownOps are the operations Verify accepts: StableHLO's, the CHLO ops
// Export uses, and func.return.
var knownOps = func() map[string]bool {
	m := map[string]bool{"func.return": true, "chlo.erf": true, "chlo.erfc": true, "chlo.erf_inv": true,
		"chlo.lgamma": true, "chlo.digamma": true, "chlo.tan": true}
	for _, n := range strings.Fields(`abs add after_all all_gather all_reduce all_to_all and atan2
		batch_norm_grad batch_norm_inference batch_norm_training bitcast_convert broadcast broadcast_in_dim
		case cbrt ceil cholesky clamp collective_broadcast collective_permute compare complex composite
		concatenate constant convert convolution cosine count_leading_zeros custom_call divide dot dot_general
		dynamic_broadcast_in_dim dynamic_conv dynamic_gather dynamic_iota dynamic_pad dynamic_reshape
		dynamic_slice dynamic_update_slice einsum exponential exponential_minus_one fft floor gather
		get_dimension_size get_tuple_element if imag infeed iota is_finite log log_plus_one logistic map
		maximum minimum multiply negate not optimization_barrier or outfeed pad partition_id popcnt power
		real real_dynamic_slice recv reduce reduce_precision reduce_scatter reduce_window remainder
		replica_id reshape return reverse rng rng_bit_generator round_nearest_afz round_nearest_even rsqrt
		scatter select select_and_scatter send shift_left shift_right_arithmetic shift_right_logical sign
		sine slice sort sqrt subtract tan tanh torch_index_select transpose triangular_solve tuple
		uniform_dequantize uniform_quantize while xor`) {
		m["stablehlo."+n] = true
	}
	return m
}()

// Verify checks MLIR text in the form Export writes: one module of
// func.func definitions whose bodies are generic-form operations. It checks
// that every %value is defined once before its uses and is visible where it
// is used (values defined in a region are local to it), that op names are
// known StableHLO/CHLO/func ops, that types parse and that every operand's
// type at its use is the type of its definition, that operand and result
// counts match the op's functional type, that regions end in
// stablehlo.return and functions in func.return with the signature's result
// types, and the shape rules of the common ops (elementwise, compare,
// select, convert, reshape, broadcast_in_dim, transpose, concatenate,
// slice, iota, constant, reduce, dot_general). The error names the line.
func Verify(text string) error {
	p := &parser{src: text}
	if err := p.module(); err != nil {
		return fmt.Errorf("%w: line %d: %v", ErrInvalid, p.line(), err)
	}
	return nil
}

// tensorType is a parsed ranked tensor type.
type tensorType struct {
	shape []int
	elem  string
}

func (t tensorType) String() string {
	var sb strings.Builder
	sb.WriteString("tensor<")
	for _, d := range t.shape {
		sb.WriteString(strconv.Itoa(d) + "x")
	}
	return sb.String() + t.elem + ">"
}

func (t tensorType) numel() int {
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	return n
}

var knownElems = map[string]bool{"i1": true, "i8": true, "i16": true, "i32": true, "i64": true,
	"ui8": true, "ui16": true, "ui32": true, "ui64": true, "f16": true, "bf16": true, "f32": true, "f64": true}

type parser struct {
	src    string
	pos    int
	scopes []map[string]tensorType
}

func (p *parser) line() int { return strings.Count(p.src[:min(p.pos, len(p.src))], "\n") + 1 }

func (p *parser) skip() {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case strings.HasPrefix(p.src[p.pos:], "//"):
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

// peek reports whether the next token starts with s.
func (p *parser) peek(s string) bool {
	p.skip()
	return strings.HasPrefix(p.src[p.pos:], s)
}

func (p *parser) accept(s string) bool {
	if p.peek(s) {
		p.pos += len(s)
		return true
	}
	return false
}

func (p *parser) expect(s string) error {
	if !p.accept(s) {
		return fmt.Errorf("expected %q, found %q", s, p.snippet())
	}
	return nil
}

func (p *parser) snippet() string {
	end := min(p.pos+24, len(p.src))
	if i := strings.IndexByte(p.src[p.pos:end], '\n'); i >= 0 {
		end = p.pos + i
	}
	if p.pos >= len(p.src) {
		return "end of input"
	}
	return p.src[p.pos:end]
}

func isIdent(c byte) bool {
	return c == '_' || c == '.' || c == '$' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// word reads an identifier-like token after prefix (%, @, ^ or none).
func (p *parser) word(prefix string) (string, error) {
	p.skip()
	start := p.pos
	if prefix != "" {
		if !strings.HasPrefix(p.src[p.pos:], prefix) {
			return "", fmt.Errorf("expected %s..., found %q", prefix, p.snippet())
		}
		p.pos += len(prefix)
	}
	for p.pos < len(p.src) && isIdent(p.src[p.pos]) {
		if p.src[p.pos] == '-' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '>' {
			break
		}
		p.pos++
	}
	if p.pos == start+len(prefix) {
		return "", fmt.Errorf("expected a name after %q, found %q", prefix, p.snippet())
	}
	return p.src[start:p.pos], nil
}

// value reads a value use: %name or %name#i.
func (p *parser) value() (string, error) {
	v, err := p.word("%")
	if err != nil {
		return "", err
	}
	if p.pos < len(p.src) && p.src[p.pos] == '#' {
		p.pos++
		start := p.pos
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		if p.pos == start {
			return "", fmt.Errorf("bad result index in %q", v)
		}
		v += p.src[start-1 : p.pos]
	}
	return v, nil
}

func (p *parser) integer() (int, error) {
	p.skip()
	start := p.pos
	if p.pos < len(p.src) && p.src[p.pos] == '-' {
		p.pos++
	}
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
	}
	n, err := strconv.Atoi(p.src[start:p.pos])
	if err != nil {
		return 0, fmt.Errorf("expected an integer, found %q", p.snippet())
	}
	return n, nil
}

// typ parses tensor<DxDx...xELEM>.
func (p *parser) typ() (tensorType, error) {
	if err := p.expect("tensor<"); err != nil {
		return tensorType{}, err
	}
	end := strings.IndexByte(p.src[p.pos:], '>')
	if end < 0 {
		return tensorType{}, fmt.Errorf("unterminated tensor type")
	}
	body := p.src[p.pos : p.pos+end]
	p.pos += end + 1
	parts := strings.Split(body, "x")
	t := tensorType{elem: parts[len(parts)-1], shape: []int{}}
	if !knownElems[t.elem] {
		return t, fmt.Errorf("unknown element type %q in tensor<%s>", t.elem, body)
	}
	for _, d := range parts[:len(parts)-1] {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return t, fmt.Errorf("bad dimension %q in tensor<%s>", d, body)
		}
		t.shape = append(t.shape, n)
	}
	return t, nil
}

// typeList parses "(t, t, ...)".
func (p *parser) typeList() ([]tensorType, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}
	var ts []tensorType
	for !p.accept(")") {
		if len(ts) > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		t, err := p.typ()
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// results parses "-> t" or "-> (t, ...)".
func (p *parser) results() ([]tensorType, error) {
	if err := p.expect("->"); err != nil {
		return nil, err
	}
	if p.peek("(") {
		return p.typeList()
	}
	t, err := p.typ()
	return []tensorType{t}, err
}

func (p *parser) lookup(name string) (tensorType, bool) {
	for i := len(p.scopes) - 1; i >= 0; i-- {
		if t, ok := p.scopes[i][name]; ok {
			return t, true
		}
	}
	return tensorType{}, false
}

func (p *parser) define(name string, t tensorType) error {
	if _, dup := p.lookup(name); dup {
		return fmt.Errorf("value %s is defined twice", name)
	}
	p.scopes[len(p.scopes)-1][name] = t
	return nil
}

// skipBalanced skips a {...} attribute dictionary, returning its text.
func (p *parser) skipBalanced(open, close byte) (string, error) {
	p.skip()
	start := p.pos
	depth := 0
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			for p.pos < len(p.src) && p.src[p.pos] != '"' {
				if p.src[p.pos] == '\\' {
					p.pos++
				}
				p.pos++
			}
		case c == open:
			depth++
		case c == close:
			depth--
			if depth == 0 {
				p.pos++
				return p.src[start+1 : p.pos-1], nil
			}
		}
		p.pos++
	}
	return "", fmt.Errorf("unbalanced %c", open)
}

func (p *parser) module() error {
	if err := p.expect("module"); err != nil {
		return err
	}
	if p.peek("@") {
		if _, err := p.word("@"); err != nil {
			return err
		}
	}
	if err := p.expect("{"); err != nil {
		return err
	}
	funcs := 0
	for !p.accept("}") {
		if err := p.function(); err != nil {
			return err
		}
		funcs++
	}
	if funcs == 0 {
		return fmt.Errorf("module has no function")
	}
	p.skip()
	if p.pos != len(p.src) {
		return fmt.Errorf("unexpected text after the module: %q", p.snippet())
	}
	return nil
}

func (p *parser) function() error {
	if err := p.expect("func.func"); err != nil {
		return err
	}
	p.accept("public")
	p.accept("private")
	if _, err := p.word("@"); err != nil {
		return err
	}
	p.scopes = []map[string]tensorType{{}}
	if err := p.expect("("); err != nil {
		return err
	}
	for n := 0; !p.accept(")"); n++ {
		if n > 0 {
			if err := p.expect(","); err != nil {
				return err
			}
		}
		name, err := p.word("%")
		if err != nil {
			return err
		}
		if err := p.expect(":"); err != nil {
			return err
		}
		t, err := p.typ()
		if err != nil {
			return err
		}
		if p.peek("{") {
			if _, err := p.skipBalanced('{', '}'); err != nil {
				return err
			}
		}
		if err := p.define(name, t); err != nil {
			return err
		}
	}
	var sig []tensorType
	if p.peek("->") {
		var err error
		if sig, err = p.results(); err != nil {
			return err
		}
	}
	if p.accept("attributes") {
		if _, err := p.skipBalanced('{', '}'); err != nil {
			return err
		}
	}
	if err := p.expect("{"); err != nil {
		return err
	}
	last, operands, err := p.ops("func.return")
	if err != nil {
		return err
	}
	if last != "func.return" {
		return fmt.Errorf("function body does not end with func.return")
	}
	if !typesEqual(operands, sig) {
		return fmt.Errorf("func.return yields %s, the signature says %s", typesString(operands), typesString(sig))
	}
	return nil
}

func typesEqual(a, b []tensorType) bool {
	return slices.EqualFunc(a, b, func(x, y tensorType) bool { return x.String() == y.String() })
}

func typesString(ts []tensorType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.String()
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// ops parses operations up to the closing brace of the current block; the
// last op must be the terminator term. It returns the terminator's name and
// operand types.
func (p *parser) ops(term string) (string, []tensorType, error) {
	var lastName string
	var lastOps []tensorType
	for !p.accept("}") {
		if p.pos >= len(p.src) {
			return "", nil, fmt.Errorf("unterminated block")
		}
		if lastName == term {
			return "", nil, fmt.Errorf("operations after the terminator %s", term)
		}
		name, ins, err := p.op()
		if err != nil {
			return "", nil, err
		}
		if (name == "func.return" || name == "stablehlo.return") && name != term {
			return "", nil, fmt.Errorf("%s outside its parent (expected %s here)", name, term)
		}
		lastName, lastOps = name, ins
	}
	return lastName, lastOps, nil
}

// op parses and checks one generic-form operation.
func (p *parser) op() (string, []tensorType, error) {
	var resName string
	nres := 0
	if p.peek("%") {
		var err error
		if resName, err = p.word("%"); err != nil {
			return "", nil, err
		}
		nres = 1
		if p.accept(":") {
			if nres, err = p.integer(); err != nil {
				return "", nil, err
			}
			if nres < 1 {
				return "", nil, fmt.Errorf("bad result count %d", nres)
			}
		}
		if err := p.expect("="); err != nil {
			return "", nil, err
		}
	}
	if !p.peek("\"") {
		return "", nil, fmt.Errorf("expected a quoted op name (generic form), found %q", p.snippet())
	}
	p.pos++
	end := strings.IndexByte(p.src[p.pos:], '"')
	if end < 0 {
		return "", nil, fmt.Errorf("unterminated op name")
	}
	name := p.src[p.pos : p.pos+end]
	p.pos += end + 1
	if !knownOps[name] {
		return "", nil, fmt.Errorf("unknown op %q", name)
	}
	if err := p.expect("("); err != nil {
		return "", nil, err
	}
	var uses []string
	var useTypes []tensorType
	for !p.accept(")") {
		if len(uses) > 0 {
			if err := p.expect(","); err != nil {
				return "", nil, err
			}
		}
		v, err := p.value()
		if err != nil {
			return "", nil, err
		}
		t, ok := p.lookup(v)
		if !ok {
			return "", nil, fmt.Errorf("%s: use of undefined value %s", name, v)
		}
		uses = append(uses, v)
		useTypes = append(useTypes, t)
	}
	var regions [][]tensorType // each region's block argument types
	var regionRets [][]tensorType
	if p.peek("(") && p.peekRegion() {
		p.accept("(")
		for {
			args, rets, err := p.region()
			if err != nil {
				return "", nil, fmt.Errorf("%s region: %w", name, err)
			}
			regions = append(regions, args)
			regionRets = append(regionRets, rets)
			if !p.accept(",") {
				break
			}
		}
		if err := p.expect(")"); err != nil {
			return "", nil, err
		}
	}
	attrs := map[string]string{}
	if p.peek("{") {
		body, err := p.skipBalanced('{', '}')
		if err != nil {
			return "", nil, err
		}
		attrs = splitAttrs(body)
	}
	if err := p.expect(":"); err != nil {
		return "", nil, err
	}
	ins, err := p.typeList()
	if err != nil {
		return "", nil, err
	}
	outs, err := p.results()
	if err != nil {
		return "", nil, err
	}
	if len(ins) != len(uses) {
		return "", nil, fmt.Errorf("%s has %d operands but its type lists %d", name, len(uses), len(ins))
	}
	for i := range ins {
		if ins[i].String() != useTypes[i].String() {
			return "", nil, fmt.Errorf("%s: operand %d (%s) is %s where defined, used as %s", name, i, uses[i], useTypes[i], ins[i])
		}
	}
	if len(outs) != nres {
		return "", nil, fmt.Errorf("%s defines %d results but its type lists %d", name, nres, len(outs))
	}
	if err := checkOp(name, ins, outs, attrs, regions, regionRets); err != nil {
		return "", nil, fmt.Errorf("%s: %w", name, err)
	}
	switch {
	case nres == 1:
		if err := p.define(resName, outs[0]); err != nil {
			return "", nil, err
		}
	case nres > 1:
		for i, t := range outs {
			if err := p.define(fmt.Sprintf("%s#%d", resName, i), t); err != nil {
				return "", nil, err
			}
		}
	}
	return name, ins, nil
}

// peekRegion reports whether "(" opens a region list ("({").
func (p *parser) peekRegion() bool {
	save := p.pos
	defer func() { p.pos = save }()
	p.accept("(")
	return p.peek("{")
}

// region parses "{ ^bb0(args): ops }" in a new scope.
func (p *parser) region() ([]tensorType, []tensorType, error) {
	if err := p.expect("{"); err != nil {
		return nil, nil, err
	}
	p.scopes = append(p.scopes, map[string]tensorType{})
	defer func() { p.scopes = p.scopes[:len(p.scopes)-1] }()
	var args []tensorType
	if p.peek("^") {
		if _, err := p.word("^"); err != nil {
			return nil, nil, err
		}
		if p.accept("(") {
			for !p.accept(")") {
				if len(args) > 0 {
					if err := p.expect(","); err != nil {
						return nil, nil, err
					}
				}
				n, err := p.word("%")
				if err != nil {
					return nil, nil, err
				}
				if err := p.expect(":"); err != nil {
					return nil, nil, err
				}
				t, err := p.typ()
				if err != nil {
					return nil, nil, err
				}
				if err := p.define(n, t); err != nil {
					return nil, nil, err
				}
				args = append(args, t)
			}
		}
		if err := p.expect(":"); err != nil {
			return nil, nil, err
		}
	}
	last, rets, err := p.ops("stablehlo.return")
	if err != nil {
		return nil, nil, err
	}
	if last != "stablehlo.return" {
		return nil, nil, fmt.Errorf("region does not end with stablehlo.return")
	}
	return args, rets, nil
}

// splitAttrs splits an attribute dictionary body at top-level commas into
// name -> value text.
func splitAttrs(body string) map[string]string {
	out := map[string]string{}
	depth := 0
	start := 0
	inStr := false
	add := func(s string) {
		s = strings.TrimSpace(s)
		if s == "" {
			return
		}
		k, v, _ := strings.Cut(s, "=")
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '(' || c == '[' || c == '{' || c == '<':
			depth++
		case c == '>' && i > 0 && body[i-1] == '-':
			// "->" inside #stablehlo.conv<...> is not a bracket
		case c == ')' || c == ']' || c == '}' || c == '>':
			depth--
		case c == ',' && depth == 0:
			add(body[start:i])
			start = i + 1
		}
	}
	add(body[start:])
	return out
}
