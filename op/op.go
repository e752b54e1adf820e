// Package op is gotpu's op table: every operation is declared here exactly once,
// with its schema (inputs, attributes, outputs), its shape and dtype rule, its
// kind (primitive, view or composite), the decomposition of a composite into
// other ops, and the slots for its vector-Jacobian product and StableHLO emitter.
//
// Backends implement the primitives (and may register direct kernels for
// composites); the tensor package dispatches through this table; the meta
// backend runs only the shape rules. Nothing about an op is written twice.
package op

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/gotpu/gotpu/dtype"
)

// Kind says how an op is executed.
type Kind uint8

const (
	// Primitive ops are the backend contract: every backend implements them.
	Primitive Kind = iota
	// View ops only change a tensor's layout (shape, strides, offset) and share
	// its storage; no backend kernel runs.
	View
	// Composite ops are defined by a decomposition into other ops; a backend may
	// register a direct kernel, which is then tested against the decomposition.
	Composite
)

func (k Kind) String() string {
	switch k {
	case Primitive:
		return "primitive"
	case View:
		return "view"
	case Composite:
		return "composite"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Meta is what the shape rules see of a tensor: its shape and dtype, and
// whether it is a wrapped Go scalar (which affects type promotion only).
type Meta struct {
	Shape   []int
	DType   dtype.DType
	Wrapped bool
}

// Numel returns the number of elements of m.
func (m Meta) Numel() int { return Numel(m.Shape) }

func (m Meta) String() string { return fmt.Sprintf("%v%v", m.DType, m.Shape) }

// Promotion says how a promoting op chooses the dtype its inputs are converted
// to before the kernel runs; kernels of promoting ops see equal input dtypes.
type Promotion uint8

const (
	// NoPromotion leaves inputs as they are.
	NoPromotion Promotion = iota
	// PromoteCommon converts the promoted inputs to their torch.result_type.
	PromoteCommon
	// PromoteToFloat is PromoteCommon followed by int/bool -> default float
	// (as torch does for sin, exp, true division, ...).
	PromoteToFloat
)

// Value is an opaque handle to a tensor inside a Builder: an eager tensor, or
// a node of a graph being traced.
type Value any

// Builder is what decompositions and VJPs are written against. The eager
// runtime implements it by running ops immediately; tracers record them.
type Builder interface {
	// Call applies the named op to inputs (nil for an absent optional input)
	// and returns its outputs.
	Call(name string, in []Value, a Attrs) []Value
	// Meta returns the shape and dtype of v.
	Meta(v Value) Meta
	// Scalar returns a wrapped scalar (like a Python number: it promotes as a
	// scalar) holding v (float64, int64, int or bool) on like's device.
	Scalar(v any, like Value) Value
}

// InferFunc is an op's shape and dtype rule: from the inputs' metadata (after
// promotion) and the attributes, the outputs' metadata.
type InferFunc func(in []Meta, a Attrs) ([]Meta, error)

// DecomposeFunc expresses a composite op in other ops.
type DecomposeFunc func(b Builder, in []Value, a Attrs) []Value

// VJPFunc returns the gradients of an op's differentiable inputs given the
// gradients of its outputs (nil entries for inputs without a gradient).
type VJPFunc func(b Builder, in, out, gout []Value, a Attrs) []Value

// ViewFunc computes the layout of a view op's result from its input's layout,
// or reports ok=false when no view is possible (the tensor layer then copies
// the input to a contiguous layout and retries).
type ViewFunc func(in Layout, a Attrs) (out Layout, ok bool, err error)

// Def declares one op.
type Def struct {
	Name  string
	Kind  Kind
	Group string // "elementwise", "reduce", "linalg", "nn", "index", "shape", "creation", "random", "movement"
	Doc   string

	// Inputs names the tensor inputs. A name ending in "?" is optional (nil
	// allowed); a name ending in "*" is variadic and must be last, and one
	// ending in "?*" is a variadic list whose entries may be nil.
	Inputs []string
	// Attrs declares the attributes with their defaults.
	Attrs []AttrSpec

	// Promote and PromoteArgs set the promotion of tensor inputs (indices into
	// Inputs; nil means all). DTypes restricts the promoted dtype; nil allows all.
	Promote     Promotion
	PromoteArgs []int
	DTypes      Set
	// PromoteWith, when set, refines promotion from the attributes: it
	// returns the promotion to apply instead of Promote (div picks
	// PromoteToFloat or PromoteCommon from its rounding_mode) and scalar
	// attribute values (float64, int64, bool; nil entries are skipped) that
	// take part in choosing the common dtype as wrapped scalars, as clamp's
	// min and max do in PyTorch. Promote must not be NoPromotion when it is set.
	PromoteWith func(a Attrs) (Promotion, []any)

	// NeedsContiguous makes the runtime hand the kernel contiguous inputs.
	NeedsContiguous bool
	// Broadcast makes the runtime hand the kernel every input already
	// broadcast (stride 0) to the shape of output 0: elementwise ops.
	Broadcast bool
	// Inplace lists input indices that are also written (for in-place
	// primitives such as index_put_ or copy_). Empty for functional ops.
	Inplace []int
	// Random marks ops that draw from a Generator (their seed and offset are
	// attributes set by the runtime).
	Random bool
	// DrawsWhen, when not nil, says whether a Random op draws at all with
	// these attributes (attention with dropout_p 0 does not). An op that
	// does not draw may run whole in recorded graphs.
	DrawsWhen func(Attrs) bool
	// MatmulInside marks composites whose decomposition has matrix
	// products at the process-wide matmul precision, while a direct kernel
	// computes them in full f32: below precision highest the decomposition
	// runs, so that every mode and backend computes the same thing.
	MatmulInside bool
	// NonDeterministicOrder marks ops whose result order is unspecified (for
	// example nonzero on some backends); tests compare them as sets.
	NonDeterministicOrder bool
	// Dynamic lists attributes whose values are run-time data rather than
	// program structure (an optimizer step's lr and step count). A random
	// op's seed and offset are always dynamic. Compiled programs take them
	// per run (device.RunOptions.Dynamic) and the IR fingerprint leaves
	// their values out, so one program serves every training step.
	Dynamic []string

	Infer     InferFunc
	ViewFn    ViewFunc
	Decompose DecomposeFunc
	VJP       VJPFunc
	StableHLO StableHLOFunc
}

var (
	mu    sync.RWMutex
	table = map[string]*Def{}
	// handles holds the exported handles (handles_gen.go) by op name
	// until Register fills them in.
	handles = map[string]*Def{}
)

// handle returns the handle of op name: an empty Def that Register fills in
// with the op's declaration, so that the exported variables of
// handles_gen.go (Add, Matmul, ...) are the table's *Def from the first
// init function on.
func handle(name string) *Def {
	h := &Def{Name: name}
	handles[name] = h
	return h
}

// Register adds d to the table. It panics if the name is taken or the
// declaration is inconsistent: the table is built at init time and a bad
// declaration is a programming error.
func Register(d *Def) *Def {
	if d.Name == "" {
		panic("op: Register with empty name")
	}
	if d.Infer == nil && d.ViewFn == nil {
		panic("op: " + d.Name + " has no shape rule")
	}
	switch d.Kind {
	case View:
		if d.ViewFn == nil {
			panic("op: view " + d.Name + " has no ViewFn")
		}
	case Composite:
		if d.Decompose == nil {
			panic("op: composite " + d.Name + " has no decomposition")
		}
	}
	for i, in := range d.Inputs {
		if len(in) > 0 && in[len(in)-1] == '*' && i != len(d.Inputs)-1 {
			panic("op: " + d.Name + ": variadic input must be last")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := table[d.Name]; dup {
		panic("op: duplicate op " + d.Name)
	}
	if h, ok := handles[d.Name]; ok {
		// A VJP or emitter attached to the handle before Register (by
		// DefVJP or DefStableHLO from an init function that ran first)
		// joins the declaration.
		if h.VJP != nil {
			if d.VJP != nil {
				panic("op: " + d.Name + " has a VJP in its declaration and in DefVJP")
			}
			d.VJP = h.VJP
		}
		if h.StableHLO != nil {
			if d.StableHLO != nil {
				panic("op: " + d.Name + " has a StableHLO emitter in its declaration and in DefStableHLO")
			}
			d.StableHLO = h.StableHLO
		}
		// The declaration becomes the handle's value; the table holds the
		// handle, so op.Add and Lookup("add") are the same *Def.
		*h = *d
		d = h
		delete(handles, d.Name)
	}
	table[d.Name] = d
	return d
}

// CheckHandles reports handles (handles_gen.go) that no Register filled in:
// an op that was removed or renamed without running go generate ./tensor.
// Tests call it.
func CheckHandles() []string {
	mu.RLock()
	defer mu.RUnlock()
	var out []string
	for n := range handles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// DefVJP sets the VJP of the op whose handle is d (op.Add, from
// handles_gen.go, or the *Def that Register returned). It may run before or
// after the op's Register: VJPs live in their own files, and a handle exists
// before any init function runs, so naming an op that does not exist is a
// compile error. Setting a VJP twice panics.
func DefVJP(d *Def, f VJPFunc) {
	mu.Lock()
	defer mu.Unlock()
	if d.VJP != nil {
		panic("op: duplicate VJP for " + d.Name)
	}
	d.VJP = f
}

// Lookup returns the op named name.
func Lookup(name string) (*Def, bool) {
	mu.RLock()
	d, ok := table[name]
	mu.RUnlock()
	return d, ok
}

// MustLookup returns the op named name or panics.
func MustLookup(name string) *Def {
	d, ok := Lookup(name)
	if !ok {
		panic(fmt.Sprintf("op: unknown op %q", name))
	}
	return d
}

// All returns every registered op sorted by name.
func All() []*Def {
	mu.RLock()
	out := make([]*Def, 0, len(table))
	for _, d := range table {
		out = append(out, d)
	}
	mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// InputOptional reports whether input i may be nil.
func (d *Def) InputOptional(i int) bool {
	if d.Variadic() && i >= len(d.Inputs)-1 && strings.HasSuffix(d.Inputs[len(d.Inputs)-1], "?*") {
		return true // a variadic list of optional inputs ("indices?*")
	}
	if i >= len(d.Inputs) {
		return d.Variadic()
	}
	n := d.Inputs[i]
	return len(n) > 0 && n[len(n)-1] == '?'
}

// Variadic reports whether the last input takes any number of tensors.
func (d *Def) Variadic() bool {
	if len(d.Inputs) == 0 {
		return false
	}
	n := d.Inputs[len(d.Inputs)-1]
	return n[len(n)-1] == '*'
}

// CheckArity returns an error if n inputs do not fit d's schema.
func (d *Def) CheckArity(n int) error {
	if d.Variadic() {
		if n < len(d.Inputs)-1 {
			return fmt.Errorf("%s takes at least %d inputs, got %d", d.Name, len(d.Inputs)-1, n)
		}
		return nil
	}
	if n != len(d.Inputs) {
		return fmt.Errorf("%s takes %d inputs %v, got %d", d.Name, len(d.Inputs), d.Inputs, n)
	}
	return nil
}

// Promoted reports whether input i takes part in d's promotion.
func (d *Def) Promoted(i int) bool {
	if d.Promote == NoPromotion {
		return false
	}
	if d.PromoteArgs == nil {
		return true
	}
	for _, j := range d.PromoteArgs {
		if j == i || (j == len(d.Inputs)-1 && d.Variadic() && i >= j) {
			return true
		}
	}
	return false
}

// DynamicAttrs returns the attributes of d that are run-time data (Dynamic,
// plus "seed" and "offset" for random ops); nil when there are none.
func (d *Def) DynamicAttrs() []string {
	if !d.Random {
		return d.Dynamic
	}
	return append([]string{"seed", "offset"}, d.Dynamic...)
}
