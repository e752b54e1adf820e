// Package interp is the reference executor of IR graphs on any backend: it
// runs a graph node by node through Backend.Launch exactly as the eager
// runtime (package tensor) dispatches each op, so its results are
// bit-identical to Strict eager mode. Backends without a whole-program
// compiler (device.Compiler) run graphs with it, and compilers test against
// it.
//
// Compile lowers the composites the backend has no kernel for
// (ir.LowerIf), then plans one step per node: constants are written to
// fresh buffers, views are layout arithmetic on their input (copied to a
// contiguous buffer first when the view is not possible), kernels get
// broadcast layouts for broadcasting ops and contiguous copies for ops that
// need them. Each intermediate buffer is freed after its last use.
//
// In-place ops (op.Def.Inplace) appear in graphs in functional form: the
// node's outputs are the op's own outputs followed by one output per
// present in-place input, holding that input's new value. The interpreter
// copies such inputs into fresh buffers, runs the kernel on the copies and
// returns them as those outputs, so graph values stay immutable.
package interp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// Format names the serialized form Marshal writes and Load reads.
const Format = "interp/1"

// program is a compiled graph.
type program struct {
	be    device.Backend
	src   *ir.Graph // the graph given to Compile (Marshal writes it)
	g     *ir.Graph // lowered
	opts  device.CompileOptions
	steps []step
	// dyn lists, per node of the source graph with dynamic attributes (in
	// node order), those attribute names.
	dyn     [][]string
	nValues int
	params  []int // value slot of each parameter
	outputs []int // value slot of each graph output
	stats   device.ProgramStats
}

// step is one node of the lowered graph, ready to execute.
type step struct {
	n     *ir.Node
	attrs op.Attrs // precision filled in; seed of random nodes per run
	in    []int    // value slots (-1: absent)
	out   []int
	// dyn is the index (into program.dyn) of the source node whose
	// dynamic attributes apply to this node, or -1.
	dyn int
	// nOut is the number of the op's own outputs (the rest are the new
	// values of in-place inputs).
	nOut int
	// free lists the value slots whose last use is this step.
	free []int
}

// kernelDType is the dtype a backend's Supports is asked about: the
// (promoted) dtype of the first input, or of the first output for ops
// without inputs, as the eager runtime asks.
func kernelDType(n *ir.Node) dtype.DType {
	for _, v := range n.In {
		if v != nil {
			return v.Meta.DType
		}
	}
	if len(n.Out) > 0 {
		return n.Out[0].Meta.DType
	}
	return dtype.Invalid
}

// Compile plans g for be. Composites be has no kernel for are decomposed;
// a primitive be lacks is an error wrapping device.ErrUnsupported. opts.Precision
// fills the "precision" attribute of nodes that leave it empty; opts.Threads
// is not used (the backend's kernels choose their parallelism).
func Compile(be device.Backend, g *ir.Graph, opts device.CompileOptions) (device.Program, error) {
	if be == nil || g == nil {
		return nil, errors.New("interp: nil backend or graph")
	}
	if err := checkGraph(g); err != nil {
		return nil, err
	}
	p := &program{be: be, src: g, opts: opts}

	// Lower what the backend cannot run, remembering where nodes come from.
	dynIndex := make([]int, len(g.Nodes))
	for j, n := range g.Nodes {
		dynIndex[j] = -1
		if !n.IsConst() {
			if names := n.Op.DynamicAttrs(); len(names) > 0 {
				dynIndex[j] = len(p.dyn)
				p.dyn = append(p.dyn, names)
			}
		}
	}
	lowered, origin, err := ir.LowerIfOrigin(g, func(n *ir.Node) bool { return !be.Supports(n.Op, kernelDType(n)) })
	if err != nil {
		return nil, fmt.Errorf("interp: lowering for %s: %w", be.Name(), err)
	}
	p.g = lowered

	slot := make(map[*ir.Value]int, lowered.NumValues())
	for _, v := range lowered.Params {
		slot[v] = len(slot)
		p.params = append(p.params, slot[v])
	}
	last := make([]int, lowered.NumValues())
	for i := range last {
		last[i] = -1
	}
	for j, n := range lowered.Nodes {
		s := step{n: n, attrs: n.Attrs, dyn: -1, nOut: len(n.Out)}
		for _, v := range n.In {
			if v == nil {
				s.in = append(s.in, -1)
				continue
			}
			k, ok := slot[v]
			if !ok {
				return nil, fmt.Errorf("interp: node %d (%s): input is not defined before its use", j, n.Name())
			}
			s.in = append(s.in, k)
			last[k] = j
		}
		for _, o := range n.Out {
			slot[o] = len(slot)
			s.out = append(s.out, slot[o])
		}
		if !n.IsConst() {
			if n.Op.Kind != op.View && !be.Supports(n.Op, kernelDType(n)) {
				return nil, fmt.Errorf("interp: node %d: %w: %s (dtype %s) on %s", j, device.ErrUnsupported, n.Op.Name, kernelDType(n), be.Name())
			}
			if n.Op.Kind == op.View && (len(n.In) == 0 || n.In[0] == nil || len(n.Out) != 1) {
				return nil, fmt.Errorf("interp: node %d: view %s needs one input and one output", j, n.Op.Name)
			}
			for _, i := range n.Op.Inplace {
				if i < len(n.In) && n.In[i] != nil {
					s.nOut--
				}
			}
			if s.nOut < 0 {
				return nil, fmt.Errorf("interp: node %d (%s): %d outputs cannot hold the new values of its in-place inputs", j, n.Op.Name, len(n.Out))
			}
			if pr, ok := s.attrs["precision"]; ok && pr == op.PrecisionDefault && opts.Precision != "" {
				s.attrs = s.attrs.With("precision", opts.Precision)
			}
			if len(n.Op.DynamicAttrs()) > 0 {
				s.dyn = dynIndex[origin[j]]
			}
		}
		p.steps = append(p.steps, s)
	}
	for _, v := range lowered.Outputs {
		k, ok := slot[v]
		if !ok {
			return nil, errors.New("interp: a graph output is not defined")
		}
		p.outputs = append(p.outputs, k)
		last[k] = len(lowered.Nodes) // outputs live to the end
	}
	for k, j := range last {
		if j >= 0 && j < len(p.steps) {
			p.steps[j].free = append(p.steps[j].free, k)
		}
	}
	// Values never used are freed right after the node defining them.
	for j := range p.steps {
		for _, k := range p.steps[j].out {
			if last[k] < 0 {
				p.steps[j].free = append(p.steps[j].free, k)
			}
		}
	}
	p.nValues = len(slot)

	p.stats.Nodes = len(lowered.Nodes)
	for _, s := range p.steps {
		if !s.n.IsConst() && s.n.Op.Kind != op.View {
			p.stats.Kernels++
		}
	}
	peak, err := p.dryRun()
	if err != nil {
		return nil, err
	}
	p.stats.PeakBytes = peak
	return p, nil
}

// checkGraph rejects graphs the planner cannot walk (nil entries).
func checkGraph(g *ir.Graph) error {
	for i, v := range g.Params {
		if v == nil {
			return fmt.Errorf("interp: parameter %d is nil", i)
		}
	}
	for j, n := range g.Nodes {
		if n == nil {
			return fmt.Errorf("interp: node %d is nil", j)
		}
		if n.IsConst() && len(n.Out) != 1 {
			return fmt.Errorf("interp: node %d: constant with %d outputs", j, len(n.Out))
		}
		for k, o := range n.Out {
			if o == nil {
				return fmt.Errorf("interp: node %d (%s): output %d is nil", j, n.Name(), k)
			}
		}
	}
	for i, v := range g.Outputs {
		if v == nil {
			return fmt.Errorf("interp: graph output %d is nil", i)
		}
	}
	return nil
}

// Stats implements device.Program. Kernels counts the kernel nodes (copies
// a run may add for views and contiguous inputs are not counted); PeakBytes
// is measured by a dry run of the plan on contiguous inputs.
func (p *program) Stats() device.ProgramStats { return p.stats }

// Marshal implements device.Program: the format name, the compile options
// and the source graph (Load lowers and plans it again, deterministically).
func (p *program) Marshal() ([]byte, error) {
	gb, err := p.src.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("interp: marshal: %w", err)
	}
	b := []byte(Format + "\n")
	b = binary.AppendUvarint(b, uint64(len(p.opts.Precision)))
	b = append(b, p.opts.Precision...)
	b = binary.AppendVarint(b, int64(p.opts.Threads))
	b = append(b, gb...)
	return b, nil
}

// Load rebuilds a program from what Marshal wrote. Other formats, versions
// or corrupt bytes are an error wrapping device.ErrProgramFormat.
func Load(be device.Backend, data []byte) (device.Program, error) {
	hdr := Format + "\n"
	if len(data) < len(hdr) || string(data[:len(hdr)]) != hdr {
		return nil, fmt.Errorf("interp: load: %w: not %s", device.ErrProgramFormat, Format)
	}
	rest := data[len(hdr):]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)-k) {
		return nil, fmt.Errorf("interp: load: %w: bad precision field", device.ErrProgramFormat)
	}
	var opts device.CompileOptions
	opts.Precision = string(rest[k : k+int(n)])
	rest = rest[k+int(n):]
	th, k := binary.Varint(rest)
	if k <= 0 || th < 0 || th > math.MaxInt32 {
		return nil, fmt.Errorf("interp: load: %w: bad threads field", device.ErrProgramFormat)
	}
	opts.Threads = int(th)
	g, err := ir.UnmarshalGraph(rest[k:])
	if err != nil {
		return nil, fmt.Errorf("interp: load: %w: %w", device.ErrProgramFormat, err)
	}
	p, err := Compile(be, g, opts)
	if err != nil {
		return nil, fmt.Errorf("interp: load: %w: %w", device.ErrProgramFormat, err)
	}
	return p, nil
}

// bufRef counts the live values that reference one buffer.
type bufRef struct {
	buf     device.Buffer
	refs    int
	param   bool // owned by the caller: never freed, never returned
	claimed bool // returned as an output: not freed
	freed   bool
}

// val is one live value: an operand over a referenced buffer.
type val struct {
	ref *bufRef
	op  device.Operand
}

// exec is the state of one run (real or dry).
type exec struct {
	p     *program
	ctx   context.Context
	index int
	vals  []*val
	refs  []*bufRef // every buffer the run allocated, for cleanup
	dry   bool
	live  int64
	peak  int64
	// dynamic are the run's dynamic attribute values; drawn caches the
	// seeds drawn for unseeded random nodes.
	dynamic []op.Attrs
	drawn   []any
}

// fakeBuf stands for a buffer in a dry run.
type fakeBuf int

func (b fakeBuf) Size() int { return int(b) }

func (e *exec) alloc(n int) (*bufRef, error) {
	var b device.Buffer
	if e.dry {
		b = fakeBuf(n)
	} else {
		var err error
		b, err = e.p.be.Alloc(e.index, n)
		if err != nil {
			return nil, err
		}
	}
	r := &bufRef{buf: b}
	e.refs = append(e.refs, r)
	e.live += int64(n)
	e.peak = max(e.peak, e.live)
	return r, nil
}

func (e *exec) release(r *bufRef) {
	if r.param || r.claimed || r.freed {
		return
	}
	r.freed = true
	e.live -= int64(r.buf.Size())
	if !e.dry {
		e.p.be.Free(e.index, r.buf)
	}
}

// drop ends one value's reference to its buffer.
func (e *exec) drop(k int) {
	v := e.vals[k]
	if v == nil {
		return
	}
	e.vals[k] = nil
	v.ref.refs--
	if v.ref.refs == 0 {
		e.release(v.ref)
	}
}

func (e *exec) launch(l *device.Launch) error {
	if e.dry {
		return nil
	}
	return e.p.be.Launch(e.index, l)
}

// newVal allocates a contiguous value of meta m.
func (e *exec) newVal(m op.Meta) (*val, error) {
	r, err := e.alloc(op.Numel(m.Shape) * m.DType.Size())
	if err != nil {
		return nil, err
	}
	r.refs = 1
	return &val{ref: r, op: device.Operand{Buf: r.buf, DType: m.DType, Layout: op.Contiguous(slices.Clone(m.Shape))}}, nil
}

// copyVal returns a contiguous copy of v (the copy op, as eager
// contiguous() and clone do).
func (e *exec) copyVal(v *val) (*val, error) {
	c, err := e.newVal(op.Meta{Shape: v.op.Shape, DType: v.op.DType})
	if err != nil {
		return nil, err
	}
	l := &device.Launch{Op: copyOp, Attrs: op.Attrs{}, In: []device.Operand{v.op}, Out: []device.Operand{c.op}}
	if err := e.launch(l); err != nil {
		e.ref1Release(c)
		return nil, err
	}
	return c, nil
}

// ref1Release frees a value nobody else references.
func (e *exec) ref1Release(v *val) {
	v.ref.refs = 0
	e.release(v.ref)
}

var copyOp = op.MustLookup("copy")

// tmp collects temporary values of one step, released when it ends.
type tmp []*val

func (e *exec) releaseTmp(t tmp) {
	for _, v := range t {
		v.ref.refs--
		if v.ref.refs == 0 {
			e.release(v.ref)
		}
	}
}

func (e *exec) cleanup() {
	for _, r := range e.refs {
		e.release(r)
	}
}

// Run implements device.Program.
func (p *program) Run(ctx context.Context, index int, in []device.Operand, opts device.RunOptions) (out []device.Buffer, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(in) != len(p.params) {
		return nil, fmt.Errorf("interp: run: %d inputs for %d parameters", len(in), len(p.params))
	}
	if err := CheckDynamic(p.dyn, opts.Dynamic); err != nil {
		return nil, fmt.Errorf("interp: run: %w", err)
	}
	e := &exec{p: p, ctx: ctx, index: index, vals: make([]*val, p.nValues)}
	for i, o := range in {
		m := p.g.Params[i].Meta
		if err := checkOperand(o, m); err != nil {
			return nil, fmt.Errorf("interp: run: input %d: %w", i, err)
		}
		e.vals[p.params[i]] = &val{ref: &bufRef{buf: o.Buf, param: true, refs: 1}, op: o}
	}
	e.dynamic = opts.Dynamic
	e.drawn = make([]any, len(p.dyn))
	return e.run()
}

// CheckDynamic checks run-time attribute values against the dynamic
// attribute names of a program's source nodes (names[k] for the k-th node
// with dynamic attributes): nil, or one entry per node naming only its
// dynamic attributes.
func CheckDynamic(names [][]string, dyn []op.Attrs) error {
	if dyn == nil {
		return nil
	}
	if len(dyn) != len(names) {
		return fmt.Errorf("%d dynamic attribute sets for %d nodes with dynamic attributes", len(dyn), len(names))
	}
	for k, a := range dyn {
		for name := range a {
			if !slices.Contains(names[k], name) {
				return fmt.Errorf("dynamic attribute set %d: %q is not one of %v", k, name, names[k])
			}
		}
	}
	return nil
}

// DynamicAttrs returns the attributes a node n (lowered from the source
// node with dynamic index k, or k < 0) runs with: attrs with n's dynamic
// attributes replaced by dyn[k]'s values where given, and an unseeded
// random node's seed drawn once per run and source node (drawn[k] caches
// it), normalized by n's op.
func DynamicAttrs(n *ir.Node, attrs op.Attrs, k int, dyn []op.Attrs, drawn []any) (op.Attrs, error) {
	if k < 0 {
		return attrs, nil
	}
	var over op.Attrs // the values that replace attrs' own
	if dyn != nil {
		for _, name := range n.Op.DynamicAttrs() {
			if v, ok := dyn[k][name]; ok {
				if over == nil {
					over = op.Attrs{}
				}
				over[name] = v
			}
		}
	}
	seed, ok := over["seed"]
	if !ok {
		seed = attrs["seed"]
	}
	if n.Op.Random && seed == nil {
		if drawn[k] == nil {
			drawn[k] = int(rand.Int64())
		}
		if over == nil {
			over = op.Attrs{}
		}
		over["seed"] = drawn[k]
	}
	if over == nil {
		return attrs, nil
	}
	na, err := n.Op.NormalizeWith(attrs, over)
	if err != nil {
		return nil, fmt.Errorf("dynamic attributes: %w", err)
	}
	return na, nil
}

// checkOperand checks an input against its parameter's meta.
func checkOperand(o device.Operand, m op.Meta) error {
	if o.Buf == nil {
		return errors.New("nil buffer")
	}
	if o.DType != m.DType || !slices.Equal(o.Shape, m.Shape) {
		return fmt.Errorf("got %s%v, parameter is %s%v", o.DType, o.Shape, m.DType, m.Shape)
	}
	if len(o.Strides) != len(o.Shape) {
		return fmt.Errorf("layout has %d strides for rank %d", len(o.Strides), len(o.Shape))
	}
	lo, hi := o.Span()
	if lo < 0 || (hi > lo && hi*m.DType.Size() > o.Buf.Size()) {
		return fmt.Errorf("layout spans elements [%d, %d) of a %d-byte buffer", lo, hi, o.Buf.Size())
	}
	return nil
}

// dryRun walks the plan with fake buffers and returns the peak bytes.
func (p *program) dryRun() (int64, error) {
	e := &exec{p: p, ctx: context.Background(), vals: make([]*val, p.nValues), dry: true}
	for i, v := range p.g.Params {
		m := v.Meta
		e.vals[p.params[i]] = &val{ref: &bufRef{buf: fakeBuf(op.Numel(m.Shape) * m.DType.Size()), param: true, refs: 1},
			op: device.Operand{Buf: fakeBuf(op.Numel(m.Shape) * m.DType.Size()), DType: m.DType, Layout: op.Contiguous(slices.Clone(m.Shape))}}
	}
	e.drawn = make([]any, len(p.dyn))
	if _, err := e.run(); err != nil {
		return 0, fmt.Errorf("interp: planning: %w", err)
	}
	return e.peak, nil
}

func (e *exec) run() (out []device.Buffer, err error) {
	defer func() {
		if err != nil {
			e.cleanup()
			out = nil
		}
	}()
	p := e.p
	for j := range p.steps {
		if err := e.ctx.Err(); err != nil {
			return nil, fmt.Errorf("interp: run: %w", err)
		}
		s := &p.steps[j]
		if err := e.step(s); err != nil {
			return nil, fmt.Errorf("interp: run: node %d (%s): %w", j, s.n.Name(), err)
		}
		for _, k := range s.free {
			e.drop(k)
		}
	}
	// Outputs: a kernel's fresh contiguous result is returned as is (once);
	// parameters, views and repeated values are copied.
	out = make([]device.Buffer, len(p.outputs))
	for i, k := range p.outputs {
		v := e.vals[k]
		m := p.g.Outputs[i].Meta
		if !v.ref.param && !v.ref.claimed && v.op.Offset == 0 && v.op.Buf == v.ref.buf &&
			slices.Equal(v.op.Strides, op.ContiguousStrides(v.op.Shape)) && v.ref.buf.Size() >= op.Numel(m.Shape)*m.DType.Size() {
			v.ref.claimed = true
			out[i] = v.ref.buf
			continue
		}
		c, err := e.copyVal(v)
		if err != nil {
			return nil, fmt.Errorf("interp: run: copying output %d: %w", i, err)
		}
		c.ref.claimed = true
		out[i] = c.ref.buf
	}
	for _, k := range p.outputs {
		e.drop(k)
	}
	e.cleanup()
	return out, nil
}

func (e *exec) step(s *step) error {
	n := s.n
	if n.IsConst() {
		v, err := e.newVal(n.Out[0].Meta)
		if err != nil {
			return err
		}
		if !e.dry && len(n.Data) > 0 {
			if err := e.p.be.Write(e.index, v.op.Buf, 0, n.Data); err != nil {
				e.ref1Release(v)
				return err
			}
		}
		e.vals[s.out[0]] = v
		return nil
	}
	d := n.Op
	attrs, err := DynamicAttrs(n, s.attrs, s.dyn, e.dynamic, e.drawn)
	if err != nil {
		return err
	}
	if d.Kind == op.View {
		return e.view(s, attrs)
	}
	var temps tmp
	defer func() { e.releaseTmp(temps) }()

	outMeta := make([]op.Meta, s.nOut)
	for i := range outMeta {
		outMeta[i] = n.Out[i].Meta
	}
	l := &device.Launch{Op: d, Attrs: attrs, In: make([]device.Operand, len(s.in))}
	inplace := make([]*val, 0, len(n.Out)-s.nOut)
	for i, k := range s.in {
		if k < 0 {
			continue
		}
		v := e.vals[k]
		isInplace := slices.Contains(d.Inplace, i)
		switch {
		case isInplace:
			c, err := e.copyVal(v)
			if err != nil {
				return err
			}
			inplace = append(inplace, c)
			v = c
		case d.NeedsContiguous && !v.op.IsContiguous():
			c, err := e.copyVal(v)
			if err != nil {
				return err
			}
			temps = append(temps, c)
			v = c
		}
		l.In[i] = v.op
		if d.Broadcast && len(outMeta) > 0 {
			bl, ok := v.op.Layout.BroadcastTo(outMeta[0].Shape)
			if !ok {
				return fmt.Errorf("input %d of shape %v does not broadcast to %v", i, v.op.Shape, outMeta[0].Shape)
			}
			l.In[i].Layout = bl
		}
	}
	outs := make([]*val, 0, len(n.Out))
	for _, m := range outMeta {
		v, err := e.newVal(m)
		if err != nil {
			for _, o := range outs {
				e.ref1Release(o)
			}
			return err
		}
		outs = append(outs, v)
		l.Out = append(l.Out, v.op)
	}
	outs = append(outs, inplace...)
	if err := e.launch(l); err != nil {
		for _, o := range outs {
			e.ref1Release(o)
		}
		return err
	}
	for i, v := range outs {
		e.vals[s.out[i]] = v
	}
	return nil
}

// view applies a view node: layout arithmetic on the input, or on a
// contiguous copy of it when the view is not possible (as eager applyView).
func (e *exec) view(s *step, attrs op.Attrs) error {
	d := s.n.Op
	v := e.vals[s.in[0]]
	l, ok, err := d.ViewFn(v.op.Layout, attrs)
	if err != nil {
		return err
	}
	if !ok {
		c, err := e.copyVal(v)
		if err != nil {
			return err
		}
		l, ok, err = d.ViewFn(c.op.Layout, attrs)
		if err != nil || !ok {
			e.ref1Release(c)
			return fmt.Errorf("view is not possible even on a contiguous copy: %v", err)
		}
		c.op.Layout = l
		e.vals[s.out[0]] = c
		return nil
	}
	v.ref.refs++
	e.vals[s.out[0]] = &val{ref: v.ref, op: device.Operand{Buf: v.op.Buf, DType: v.op.DType, Layout: l}}
	return nil
}
