//go:build pjrt

package pjrt

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ShardingForm is how shardings are written into a program, which also
// picks XLA's partitioner.
type ShardingForm int

const (
	// GSPMD writes mhlo.sharding attributes (HLO sharding text) and
	// partitions with GSPMD.
	GSPMD ShardingForm = iota
	// Shardy declares an sdy.mesh and writes sdy.sharding attributes, and
	// partitions with Shardy (use_shardy_partitioner).
	Shardy
)

func (f ShardingForm) String() string {
	if f == Shardy {
		return "shardy"
	}
	return "gspmd"
}

// signature is @main's parsed argument and result list: spans of the
// text to rewrite and the types.
type signature struct {
	argsStart, argsEnd int // text[argsStart:argsEnd] is the argument list
	resStart, resEnd   int // the result list (without parentheses)
	args, results      []string
	argTypes, resTypes []string
}

// splitTop splits s at commas outside <>, (), [] and {} and quotes.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	quoted := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quoted:
			if ch == '\\' {
				i++
			} else if ch == '"' {
				quoted = false
			}
		case ch == '"':
			quoted = true
		case strings.IndexByte("<([{", ch) >= 0:
			depth++
		case strings.IndexByte(">)]}", ch) >= 0:
			depth--
		case ch == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if t := strings.TrimSpace(s[start:]); t != "" {
		out = append(out, t)
	}
	return out
}

// closing returns the index of the bracket closing the one at s[open].
func closing(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(', '<', '[', '{':
			depth++
		case ')', '>', ']', '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func parseMain(text string) (signature, error) {
	var sig signature
	i := strings.Index(text, "func.func @main(")
	if i < 0 {
		return sig, fmt.Errorf("pjrt: annotate: no func.func @main in the module")
	}
	open := i + len("func.func @main")
	end := closing(text, open)
	if end < 0 {
		return sig, fmt.Errorf("pjrt: annotate: unbalanced @main argument list")
	}
	sig.argsStart, sig.argsEnd = open+1, end
	for _, a := range splitTop(text[open+1 : end]) {
		name, ty, ok := strings.Cut(a, ":")
		if !ok || strings.Contains(ty, "{") {
			return sig, fmt.Errorf("pjrt: annotate: argument %q is not \"%%name: type\" without attributes", a)
		}
		sig.args = append(sig.args, strings.TrimSpace(name))
		sig.argTypes = append(sig.argTypes, strings.TrimSpace(ty))
	}
	rest := text[end+1:]
	arrow := strings.Index(rest, "->")
	brace := strings.Index(rest, "{")
	if arrow < 0 || (brace >= 0 && brace < arrow) {
		return sig, nil // no results
	}
	k := end + 1 + arrow + 2
	for k < len(text) && text[k] == ' ' {
		k++
	}
	if k < len(text) && text[k] == '(' {
		e := closing(text, k)
		if e < 0 {
			return sig, fmt.Errorf("pjrt: annotate: unbalanced @main result list")
		}
		sig.resStart, sig.resEnd = k+1, e
	} else {
		e := closing(text, k+len("tensor"))
		if !strings.HasPrefix(text[k:], "tensor<") || e < 0 {
			return sig, fmt.Errorf("pjrt: annotate: cannot read @main's result type")
		}
		sig.resStart, sig.resEnd = k, e+1
	}
	for _, r := range splitTop(text[sig.resStart:sig.resEnd]) {
		if strings.Contains(r, "{") {
			return sig, fmt.Errorf("pjrt: annotate: result %q already has attributes", r)
		}
		sig.resTypes = append(sig.resTypes, r)
	}
	return sig, nil
}

// tensorShape reads the static shape of an MLIR tensor type.
func tensorShape(ty string) ([]int, error) {
	if !strings.HasPrefix(ty, "tensor<") || !strings.HasSuffix(ty, ">") {
		return nil, fmt.Errorf("pjrt: %q is not a tensor type", ty)
	}
	parts := strings.Split(ty[len("tensor<"):len(ty)-1], "x")
	shape := []int{}
	for _, p := range parts[:len(parts)-1] {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("pjrt: tensor type %q has a dimension that is not static", ty)
		}
		shape = append(shape, n)
	}
	return shape, nil
}

// Annotate returns the StableHLO module text with shardings over m on
// @main's arguments (in) and results (out), written in form; a nil entry
// (or a missing one at the end of a list) replicates. For Shardy the
// module gets an sdy.mesh named @mesh.
func Annotate(text string, m Mesh, in, out []Sharding, form ShardingForm) (string, error) {
	if err := m.check(); err != nil {
		return "", err
	}
	sig, err := parseMain(text)
	if err != nil {
		return "", err
	}
	if len(in) > len(sig.args) || len(out) > len(sig.resTypes) {
		return "", fmt.Errorf("pjrt: annotate: %d argument and %d result shardings for %d arguments and %d results", len(in), len(out), len(sig.args), len(sig.resTypes))
	}
	attr := func(s Sharding, ty string) (string, error) {
		shape, err := tensorShape(ty)
		if err != nil {
			return "", err
		}
		if err := s.check(m, shape); err != nil {
			return "", err
		}
		if form == Shardy {
			a, err := s.Shardy(m, len(shape))
			return "{sdy.sharding = " + a + "}", err
		}
		a, err := s.GSPMD(m, len(shape))
		return "{mhlo.sharding = " + strconv.Quote(a) + "}", err
	}
	args := make([]string, len(sig.args))
	for i := range sig.args {
		var s Sharding
		if i < len(in) {
			s = in[i]
		}
		a, err := attr(s, sig.argTypes[i])
		if err != nil {
			return "", fmt.Errorf("argument %d: %w", i, err)
		}
		args[i] = sig.args[i] + ": " + sig.argTypes[i] + " " + a
	}
	res := make([]string, len(sig.resTypes))
	for i, ty := range sig.resTypes {
		var s Sharding
		if i < len(out) {
			s = out[i]
		}
		a, err := attr(s, ty)
		if err != nil {
			return "", fmt.Errorf("result %d: %w", i, err)
		}
		res[i] = ty + " " + a
	}
	var b strings.Builder
	b.WriteString(text[:sig.argsStart])
	b.WriteString(strings.Join(args, ", "))
	if sig.resEnd > 0 {
		b.WriteString(text[sig.argsEnd:sig.resStart])
		if text[sig.resStart-1] != '(' {
			b.WriteString("(" + strings.Join(res, ", ") + ")")
		} else {
			b.WriteString(strings.Join(res, ", "))
		}
		b.WriteString(text[sig.resEnd:])
	} else {
		b.WriteString(text[sig.argsEnd:])
	}
	out2 := b.String()
	if form == Shardy {
		i := strings.Index(out2, "{\n")
		if !strings.HasPrefix(out2, "module") || i < 0 {
			return "", fmt.Errorf("pjrt: annotate: the text does not start with a module body")
		}
		out2 = out2[:i+2] + "  " + m.shardyMesh() + "\n" + out2[i+2:]
	}
	return out2, nil
}

// ShardedExecutable is a program written for global shapes, partitioned by
// XLA over a mesh (Client.CompileSharded). Run takes and returns global
// arrays and moves the shards.
type ShardedExecutable struct {
	x         *Executable
	mesh      Mesh
	in, out   []Sharding
	inShapes  [][]int
	outShapes [][]int
	part      []int // partition of executable device i
	form      ShardingForm
}

// CompileSharded annotates a StableHLO module written for global shapes
// with in and out (Annotate) and compiles it for m.Size() partitions with
// XLA's SPMD partitioner (GSPMD or Shardy, after form), partition k on
// m's device k.
func (c *Client) CompileSharded(text string, m Mesh, in, out []Sharding, form ShardingForm) (*ShardedExecutable, error) {
	ann, err := Annotate(text, m, in, out, form)
	if err != nil {
		return nil, err
	}
	sig, err := parseMain(text)
	if err != nil {
		return nil, err
	}
	s := &ShardedExecutable{mesh: m, form: form,
		in: make([]Sharding, len(sig.args)), out: make([]Sharding, len(sig.resTypes))}
	copy(s.in, in)
	copy(s.out, out)
	for _, ty := range sig.argTypes {
		sh, err := tensorShape(ty)
		if err != nil {
			return nil, err
		}
		s.inShapes = append(s.inShapes, sh)
	}
	for _, ty := range sig.resTypes {
		sh, err := tensorShape(ty)
		if err != nil {
			return nil, err
		}
		s.outShapes = append(s.outShapes, sh)
	}
	da := make([]int, m.Size())
	for k := range da {
		da[k] = m.device(k)
	}
	x, err := c.Compile(ann, BuildOptions{NumPartitions: m.Size(), DeviceAssignment: [][]int{da}, SPMD: true, Shardy: form == Shardy})
	if err != nil {
		return nil, fmt.Errorf("pjrt: compile sharded over mesh %v%v (%s): %w", m.Axes, m.Shape, form, err)
	}
	s.x = x
	for _, id := range x.Devices() {
		k := slices.Index(da, id)
		if k < 0 {
			_ = x.Close()
			return nil, fmt.Errorf("pjrt: compile sharded: the executable runs on device %d, not in mesh %v", id, da)
		}
		s.part = append(s.part, k)
	}
	return s, nil
}

// Executable returns the compiled executable (its per-device form).
func (s *ShardedExecutable) Executable() *Executable { return s.x }

// Close releases the executable.
func (s *ShardedExecutable) Close() error { return s.x.Close() }

// Run splits the global arrays args after the argument shardings, runs
// every partition, and joins each result's shards into its global array.
func (s *ShardedExecutable) Run(args ...Array) ([]Array, error) {
	if len(args) != len(s.inShapes) {
		return nil, fmt.Errorf("pjrt: run sharded: %d arguments, the program takes %d", len(args), len(s.inShapes))
	}
	per := make([][]Array, len(s.part))
	for i, a := range args {
		if !slices.Equal(a.Shape, s.inShapes[i]) {
			return nil, fmt.Errorf("pjrt: run sharded: argument %d has shape %v, the program takes %v", i, a.Shape, s.inShapes[i])
		}
		shards, err := s.in[i].Split(s.mesh, a)
		if err != nil {
			return nil, fmt.Errorf("pjrt: run sharded: argument %d: %w", i, err)
		}
		for d, k := range s.part {
			per[d] = append(per[d], shards[k])
		}
	}
	res, err := s.x.Execute(per)
	if err != nil {
		return nil, err
	}
	out := make([]Array, len(s.outShapes))
	for j, shape := range s.outShapes {
		shards := make([]Array, s.mesh.Size())
		for d, k := range s.part {
			if j >= len(res[d]) {
				return nil, fmt.Errorf("pjrt: run sharded: device %d returned %d results, want %d", s.x.ids[d], len(res[d]), len(s.outShapes))
			}
			shards[k] = res[d][j]
		}
		if out[j], err = s.out[j].Join(s.mesh, shape, shards); err != nil {
			return nil, fmt.Errorf("pjrt: run sharded: result %d: %w", j, err)
		}
	}
	return out, nil
}
