package ir

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Tracer records op calls into a Graph. It implements op.Builder, so the
// same Go code (decompositions, VJPs, model code written against op.Builder)
// runs eagerly or is traced. Its values are *Value, or wrapped Go scalars
// from Scalar that enter the graph as Constant nodes where an op uses them.
//
// A bad call (unknown op, wrong inputs, bad attributes, a shape rule that
// fails) panics with a *TraceError, as the eager runtime panics with its
// error; Trace turns that panic into an error. A Tracer is not safe for
// concurrent use.
//
// Graphs are functional: in-place ops (op.Def.Inplace, such as copy_) are
// rejected with ErrInplace, and as_strided sees its input as contiguous at
// offset 0 (the Tracer does not implement op.LayoutReader). Random ops keep
// the seed and offset attributes they are given; an unseeded random op stays
// unseeded in the graph (the runtime that executes it draws), so only seeded
// random ops reproduce eager results exactly.
type Tracer struct {
	g         *Graph
	decompose bool
	path      []string
}

// Option configures a Tracer.
type Option func(*Tracer)

// Decompose makes the tracer replace every composite op by its
// decomposition, recursively, so the graph holds only primitives, views and
// constants (as Lower does after the fact). By default composites are
// recorded as single nodes.
func Decompose(on bool) Option { return func(t *Tracer) { t.decompose = on } }

// DefaultFloat sets the default floating dtype used by promotion (the
// eager runtime's tensor.DefaultDType); f32 unless set. A dtype that is not
// floating point is ignored.
func DefaultFloat(dt dtype.DType) Option {
	return func(t *Tracer) {
		if dt.IsFloat() {
			t.g.DefaultFloat = dt
		}
	}
}

// NewTracer returns a tracer recording into a new graph.
func NewTracer(opts ...Option) *Tracer {
	t := &Tracer{g: New()}
	for _, o := range opts {
		o(t)
	}
	return t
}

// Trace runs fn on a new tracer with one parameter per entry of params and
// returns the graph of the calls it made, with fn's results as outputs. A
// bad op call inside fn is returned as a *TraceError (errors.Is matches the
// sentinels); other panics propagate.
func Trace(params []op.Meta, fn func(b op.Builder, params []op.Value) []op.Value, opts ...Option) (g *Graph, err error) {
	t := NewTracer(opts...)
	in := make([]op.Value, len(params))
	for i, m := range params {
		if !m.DType.Valid() {
			return nil, &TraceError{Path: "param", Err: fmt.Errorf("%w: parameter %d has dtype %v", ErrShape, i, m.DType)}
		}
		if err := op.CheckShape("param", m.Shape); err != nil {
			return nil, &TraceError{Path: "param", Err: fmt.Errorf("%w: parameter %d: %v", ErrShape, i, err)}
		}
		in[i] = t.Param(m)
	}
	defer func() {
		if r := recover(); r != nil {
			te, ok := r.(*TraceError)
			if !ok {
				panic(r)
			}
			g, err = nil, te
		}
	}()
	outs := fn(t, in)
	return t.Finish(outs...)
}

// Param adds a graph parameter of shape and dtype m and returns its value.
func (t *Tracer) Param(m op.Meta) *Value { return t.g.Param(m) }

// Graph returns the graph being recorded (without outputs until Finish).
func (t *Tracer) Graph() *Graph { return t.g }

// Finish sets the graph's outputs (wrapped scalars become constants of their
// own dtype) and returns the graph.
func (t *Tracer) Finish(outs ...op.Value) (g *Graph, err error) {
	defer func() {
		if r := recover(); r != nil {
			te, ok := r.(*TraceError)
			if !ok {
				panic(r)
			}
			g, err = nil, te
		}
	}()
	vs := make([]*Value, len(outs))
	for i, o := range outs {
		vs[i] = t.value("output", o)
	}
	t.g.SetOutputs(vs...)
	return t.g, nil
}

// scalar is a wrapped Go scalar not yet placed in the graph; like the eager
// runtime's unmaterialised scalar tensor, it becomes a Constant of the dtype
// promotion picks where an op uses it.
type scalar struct{ v any }

// Scalar returns a wrapped Go scalar (float64, float32, int, int32, int64 or
// bool) that promotes like a Python number.
func (t *Tracer) Scalar(v any, like op.Value) op.Value {
	switch x := v.(type) {
	case float64, int64, bool:
	case float32:
		v = float64(x)
	case int:
		v = int64(x)
	case int32:
		v = int64(x)
	default:
		t.fail("scalar", fmt.Errorf("%w: unsupported scalar type %T", ErrAttr, v))
	}
	return &scalar{v: v}
}

// Meta returns the shape and dtype of v.
func (t *Tracer) Meta(v op.Value) op.Meta {
	switch x := v.(type) {
	case *scalar:
		return op.Meta{Shape: []int{}, DType: op.WrappedScalarDType(x.v), Wrapped: true}
	case *Value:
		if x.g == t.g {
			return cloneMeta(x.Meta)
		}
	}
	t.fail("meta", fmt.Errorf("%w: %T", ErrForeignValue, v))
	return op.Meta{}
}

func (t *Tracer) fail(name string, err error) {
	p := strings.Join(append(slices.Clone(t.path), name), " > ")
	panic(&TraceError{Path: p, Err: err})
}

// value returns v as a graph value, materialising a wrapped scalar at its
// own dtype.
func (t *Tracer) value(name string, v op.Value) *Value {
	switch x := v.(type) {
	case *scalar:
		return t.materialize(x, op.WrappedScalarDType(x.v))
	case *Value:
		if x.g == t.g {
			return x
		}
	}
	t.fail(name, fmt.Errorf("%w: %T", ErrForeignValue, v))
	return nil
}

// materialize adds a wrapped 0-d Constant of dtype dt holding s, encoded as
// the eager runtime materialises scalars.
func (t *Tracer) materialize(s *scalar, dt dtype.DType) *Value {
	raw := make([]byte, dt.Size())
	switch x := s.v.(type) {
	case float64:
		dtype.PutFloat64(dt, raw, 0, x)
	case int64:
		dtype.PutInt64(dt, raw, 0, x)
	case bool:
		v := int64(0)
		if x {
			v = 1
		}
		dtype.PutInt64(dt, raw, 0, v)
	}
	return t.g.AddConst(op.Meta{Shape: []int{}, DType: dt, Wrapped: true}, raw)
}

// Call records op name applied to in with attributes a (op.Builder). It
// normalizes attributes, checks inputs, applies type promotion (inserting
// convert nodes and materialising wrapped scalars), runs the shape rule, and
// appends a node, or, for a composite when decomposing, traces its
// decomposition.
func (t *Tracer) Call(name string, in []op.Value, a op.Attrs) []op.Value {
	d, ok := op.Lookup(name)
	if !ok {
		t.fail(name, ErrUnknownOp)
	}
	if err := d.CheckArity(len(in)); err != nil {
		t.fail(name, fmt.Errorf("%w: %v", ErrArity, err))
	}
	if len(d.Inplace) > 0 {
		t.fail(name, fmt.Errorf("%w: %s writes input %v", ErrInplace, name, d.Inplace))
	}
	metas := make([]op.Meta, len(in))
	for i, v := range in {
		if v == nil {
			if !d.InputOptional(i) {
				t.fail(name, fmt.Errorf("%w: input %d (%s) is required", ErrArity, i, inputName(d, i)))
			}
			continue
		}
		if vv, ok := v.(*Value); ok && vv.g != t.g {
			t.fail(name, fmt.Errorf("%w: input %d", ErrForeignValue, i))
		}
		metas[i] = t.Meta(v)
	}
	na, err := d.Normalize(a)
	if err != nil {
		t.fail(name, fmt.Errorf("%w: %v", ErrAttr, err))
	}

	// Promotion, exactly as the eager runtime: op.PromotedDTypes.
	targets, _ := op.PromotedDTypes(d, metas, na, t.g.DefaultFloat)
	vals := make([]*Value, len(in))
	for i, v := range in {
		switch x := v.(type) {
		case nil:
		case *scalar:
			vals[i] = t.materialize(x, targets[i])
		case *Value:
			vals[i] = x
			if x.Meta.DType != targets[i] {
				vals[i] = t.Call("convert", []op.Value{x}, op.Attrs{"dtype": targets[i]})[0].(*Value)
			}
		}
	}
	var dt dtype.DType
	for _, v := range vals {
		if v != nil {
			dt = v.Meta.DType
			break
		}
	}
	if dt != dtype.Invalid && !d.DTypes.Has(dt) {
		t.fail(name, fmt.Errorf("%w: %s not implemented for dtype %s (supports %s)", ErrDType, name, dt, d.DTypes))
	}

	outMeta, err := inferNode(d, vals, na)
	if err != nil {
		t.fail(name, err)
	}
	if d.Kind == op.Composite && t.decompose {
		return t.decomposeCall(d, vals, na, outMeta)
	}
	n := t.g.AddNode(d, na, vals, outMeta)
	return valuesOf(n.Out)
}

// decomposeCall traces d's decomposition and checks it against the shape rule.
func (t *Tracer) decomposeCall(d *op.Def, vals []*Value, na op.Attrs, want []op.Meta) []op.Value {
	t.path = append(t.path, d.Name)
	defer func() { t.path = t.path[:len(t.path)-1] }()
	in := make([]op.Value, len(vals))
	for i, v := range vals {
		if v != nil {
			in[i] = v
		}
	}
	res := d.Decompose(t, in, na)
	if len(res) != len(want) {
		t.fail("decompose", fmt.Errorf("%w: decomposition of %s returned %d outputs, shape rule says %d", ErrShape, d.Name, len(res), len(want)))
	}
	out := make([]op.Value, len(res))
	for i, r := range res {
		v := t.value("decompose", r)
		if v.Meta.DType != want[i].DType || !slices.Equal(v.Meta.Shape, want[i].Shape) {
			t.fail("decompose", fmt.Errorf("%w: decomposition of %s output %d is %s, shape rule says %s", ErrShape, d.Name, i, metaString(v.Meta), metaString(want[i])))
		}
		out[i] = v
	}
	return out
}

// inferNode runs d's shape rule on the inputs' metas: Infer, or for a view
// ViewFn on a contiguous layout of the input (values are functional).
func inferNode(d *op.Def, vals []*Value, na op.Attrs) (out []op.Meta, err error) {
	defer func() {
		// Shape rules index their inputs; a malformed hand-built graph must
		// give an error, not a crash.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%w: %s: shape rule panicked: %v", ErrShape, d.Name, r)
		}
	}()
	if d.Kind == op.View {
		if len(vals) == 0 || vals[0] == nil {
			return nil, fmt.Errorf("%w: view %s has no input", ErrArity, d.Name)
		}
		m := vals[0].Meta
		l, ok, err := d.ViewFn(op.Contiguous(slices.Clone(m.Shape)), na)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrShape, err)
		}
		if !ok {
			return nil, fmt.Errorf("%w: %s: view not possible on a contiguous input %s", ErrShape, d.Name, metaString(m))
		}
		return []op.Meta{{Shape: slices.Clone(l.Shape), DType: m.DType}}, nil
	}
	metas := make([]op.Meta, len(vals))
	for i, v := range vals {
		if v != nil {
			metas[i] = cloneMeta(v.Meta)
		}
	}
	out, err = d.Infer(metas, na)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrShape, err)
	}
	for i := range out {
		out[i] = cloneMeta(out[i])
		out[i].Wrapped = false
	}
	return out, nil
}

func valuesOf(vs []*Value) []op.Value {
	out := make([]op.Value, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

func inputName(d *op.Def, i int) string {
	if i < len(d.Inputs) {
		return strings.TrimRight(d.Inputs[i], "?*")
	}
	if len(d.Inputs) == 0 {
		return fmt.Sprint(i)
	}
	return strings.TrimRight(d.Inputs[len(d.Inputs)-1], "?*")
}

var _ op.Builder = (*Tracer)(nil)
