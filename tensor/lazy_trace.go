package tensor

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// Trace records every op the calling goroutine runs on one device into a
// graph instead of running it: the mechanism under compile.Fn. Tensors made
// inside are promises; reading one (Item, Bytes, String, ...) panics with
// an *Error wrapping ErrTraceRead that names the line. Tensors that existed
// before the trace (weights, optimizer state) are the graph's parameters,
// read when the program runs; writes into them (an optimizer step) become
// outputs written back when it runs. Tensors made inside the trace that are
// still referenced when it ends (returned, or stored, as a parameter's
// .Grad) receive their values when it runs.
//
// Other goroutines are not affected: their ops run as before.
type Trace struct {
	ctx    *lazyCtx
	gid    uint64
	inputs []*Tensor // the caller's inputs
	syms   []*Tensor // their symbolic stand-ins
	ended  bool
	// collect makes End always collect garbage to find the live tensors.
	collect bool
	memo    *LiveMemo
}

// UseLiveMemo makes End consult and fill m (see LiveMemo).
func (tr *Trace) UseLiveMemo(m *LiveMemo) { tr.memo = m }

// CollectGarbage makes End run a garbage collection, whatever the graph's
// size, so that only tensors still referenced become outputs (compile.Fn
// does: its programs then hold no dead intermediates). Without it, small
// graphs output every tensor they made, as Fused-mode flushes do.
func (tr *Trace) CollectGarbage(on bool) { tr.collect = on }

var (
	tracesActive atomic.Int64
	traces       sync.Map // goroutine id -> *Trace
)

func currentTrace() *Trace {
	v, ok := traces.Load(goid())
	if !ok {
		return nil
	}
	return v.(*Trace)
}

// Tracing reports whether the calling goroutine is inside a Trace.
func Tracing() bool { return tracesActive.Load() > 0 && currentTrace() != nil }

// BeginTrace starts recording the calling goroutine's ops on dev. It
// returns the trace and symbolic stand-ins for inputs (same shapes and
// dtypes): the function being traced must use those. Traces do not nest.
func BeginTrace(dev device.Device, inputs []*Tensor) (*Trace, []*Tensor) {
	if currentTrace() != nil {
		panic(&Error{Op: "trace", Msg: "traces do not nest: a compiled function called another while tracing"})
	}
	be := backendOf(dev)
	c := newLazyCtx(dev, be)
	tr := &Trace{ctx: c, gid: goid(), inputs: slices.Clone(inputs)}
	c.trace = tr
	// Inputs pending elsewhere are computed first.
	for _, t := range inputs {
		if t != nil && t.st != nil && t.st.dev != dev {
			panic(&Error{Op: "trace", Msg: fmt.Sprintf("input on %s, trace on %s", t.st.dev, dev)})
		}
		if t != nil {
			t.ready("trace")
		}
	}
	c.mu.Lock()
	for _, t := range inputs {
		if t == nil {
			tr.syms = append(tr.syms, nil)
			continue
		}
		if t.st == nil {
			panic(&Error{Op: "trace", Msg: "a wrapped Go scalar cannot be a traced input; pass a tensor"})
		}
		// Each input is its own parameter, even when two inputs view the
		// same storage, so that parameter i is input i.
		v := c.g.Param(op.Meta{Shape: slices.Clone(t.l.Shape), DType: t.dt})
		c.binds = append(c.binds, binding{st: t.st, l: t.l, dt: t.dt})
		if t.l.Offset != 0 || !t.l.IsContiguous() {
			// Storage values are contiguous from element 0 (views of them
			// are as_strided), so a strided input is copied once.
			n := c.g.AddNode(op.MustLookup("copy"), op.Attrs{}, []*ir.Value{v}, []op.Meta{v.Meta})
			c.seq.add(n)
			v = n.Out[0]
		}
		st := &Storage{dev: dev, be: be, nbytes: t.Numel() * t.dt.Size()}
		st.lazy.Store(&lazyVal{ctx: c, v: v})
		c.track(st)
		s := &Tensor{st: st, dt: t.dt, l: op.Contiguous(slices.Clone(t.l.Shape))}
		if t.RequiresGrad() {
			s.SetRequiresGrad(true)
		}
		tr.syms = append(tr.syms, s)
	}
	c.mu.Unlock()
	traces.Store(tr.gid, tr)
	tracesActive.Add(1)
	return tr, slices.Clone(tr.syms)
}

// stop ends recording on the calling goroutine.
func (tr *Trace) stop() {
	if tr.ended {
		return
	}
	tr.ended = true
	traces.Delete(tr.gid)
	tracesActive.Add(-1)
}

// Abort ends the trace without running anything; its tensors become
// unusable.
func (tr *Trace) Abort() {
	tr.stop()
	tr.ctx.mu.Lock()
	tr.ctx.closed = true
	tr.ctx.mu.Unlock()
}

// TracedGraph is a finished trace, ready to run.
type TracedGraph struct {
	tr   *Trace
	outs []*Tensor
	// Graph is the recorded program: parameters are the trace's inputs
	// (first, in order) and the tensors it read; outputs are the returned
	// tensors (first, in order) followed by the values of every other
	// tensor written or created by the trace that is still referenced.
	Graph *ir.Graph
	// NumReturned is the number of returned tensors among the outputs.
	NumReturned int
	live        []liveStorage
	retSt       []*Storage // per returned tensor: its storage, when it gets the buffer
	// Padded lists, per returned tensor, its padded (bounded) dimensions.
	Padded [][]int
}

type liveStorage struct {
	st  *Storage
	k   int
	dst *Storage // for a written input: the caller's storage
	l   op.Layout
	dt  dtype.DType
	in  int // for a written input: its index, else -1
}

// End stops recording and builds the graph whose outputs are outs (which
// must be tensors of the trace or its inputs) and every other live tensor
// the trace wrote. It runs a garbage collection to find the live ones.
func (tr *Trace) End(outs []*Tensor) *TracedGraph {
	tr.stop()
	c := tr.ctx
	// The caller gets the returned tensors detached: their autograd
	// history (and the intermediates it saved) is not part of the result,
	// so it must not keep those intermediates alive as outputs.
	for _, t := range outs {
		if t != nil && t.st != nil {
			if lv := t.st.lazy.Load(); lv != nil && lv.ctx == c && t.grad != nil && !t.IsLeaf() {
				t.grad = nil
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	// Every storage gets its own output (the program copies a value
	// output twice), so no two storages share a buffer.
	var vals []*ir.Value
	add := func(v *ir.Value) int {
		vals = append(vals, v)
		return len(vals) - 1
	}
	tg := &TracedGraph{tr: tr, outs: slices.Clone(outs), NumReturned: len(outs)}
	// Returned tensors come first, one output each. One that is the whole
	// of a storage of the trace gets its buffer; others (views, tensors
	// from outside) are returned as copies.
	tg.retSt = make([]*Storage, len(outs))
	for i, t := range outs {
		if t == nil || t.st == nil {
			panic(&Error{Op: "trace", Msg: fmt.Sprintf("output %d is nil or a Go scalar", i)})
		}
		var v *ir.Value
		if lv := t.st.lazy.Load(); lv != nil && lv.ctx == c {
			v = c.valueOf(t)
			if v == lv.v && !slices.Contains(tg.retSt, t.st) {
				tg.retSt[i] = t.st
			}
		} else {
			v = c.valueOf(t)
		}
		vals = append(vals, v)
		var pd []int
		if c.bs != nil {
			pd = maskDims(c.bs.pad[v])
		}
		tg.Padded = append(tg.Padded, pd)
	}
	symOf := map[*Storage]int{}
	for i, s := range tr.syms {
		if s != nil {
			symOf[s.st] = i
		}
	}
	for _, p := range c.pendingOutputsMemo(tr.collect, tr.memo) {
		if p.st != nil && slices.Contains(tg.retSt, p.st) {
			continue
		}
		ls := liveStorage{st: p.st, k: add(p.v), in: -1}
		if p.st == nil {
			tg.live = append(tg.live, ls) // computed, then freed
			continue
		}
		if i, ok := symOf[p.st]; ok {
			// A written input: the caller's tensor gets the new value.
			ls.dst, ls.l, ls.dt, ls.in = tr.inputs[i].st, tr.inputs[i].l, tr.inputs[i].dt, i
		}
		tg.live = append(tg.live, ls)
	}
	c.g.SetOutputs(vals...)
	tg.Graph = c.g
	return tg
}

// Dynamic returns the per-run values of the graph's dynamic attributes
// (device.RunOptions.Dynamic).
func (tg *TracedGraph) Dynamic() []op.Attrs { return tg.tr.ctx.dyn }

// Device returns the device the trace recorded for.
func (tg *TracedGraph) Device() device.Device { return tg.tr.ctx.dev }

// Constants returns, per parameter of Graph, the bytes of the constant the
// trace made from host data (a Go scalar, a small upload) when the
// parameter is the whole of it, contiguous; nil for the trace's inputs and
// the tensors it read. An export folds these into the program: its caller
// could not otherwise supply them.
func (tg *TracedGraph) Constants() [][]byte {
	c := tg.tr.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([][]byte, len(tg.Graph.Params))
	for i, b := range c.binds {
		if i >= len(out) || b.konst == "" || !b.l.IsContiguous() || b.l.Offset != 0 || op.Numel(b.l.Shape)*b.dt.Size() != len(b.konst) {
			continue
		}
		out[i] = []byte(b.konst)
	}
	return out
}

// Run runs the traced graph once with prog (compiled from Graph), writes
// the live tensors' values, and returns the returned tensors, materialised.
func (tg *TracedGraph) Run(prog device.Program, info ProgramInfo) []*Tensor {
	c := tg.tr.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	res := make([]*Tensor, tg.NumReturned)
	// Outputs replacing whole storages that may be bound as parameters:
	// those storages' buffers are lent to them (runProgram).
	targets := make([]*Storage, len(tg.Graph.Outputs))
	for _, l := range tg.live {
		switch {
		case l.st == nil:
		case l.dst == nil:
			targets[l.k] = l.st
		case coversStorage(l.l, l.dt, l.dst):
			targets[l.k] = l.dst
		}
	}
	c.runProgram("trace-end", prog, info, 0, targets, func(bufs []device.Buffer) {
		for i := range res {
			o := tg.outs[i]
			if st := tg.retSt[i]; st != nil {
				st.attach(bufs[i])
				res[i] = o.Detach()
				continue
			}
			s := &Storage{dev: c.dev, be: c.be, nbytes: o.Numel() * o.dt.Size()}
			s.attach(bufs[i])
			res[i] = &Tensor{st: s, dt: o.dt, l: op.Contiguous(slices.Clone(o.l.Shape))}
		}
		used := make([]bool, len(bufs))
		for i := range res {
			used[i] = true
		}
		for _, l := range tg.live {
			if l.st == nil {
				continue
			}
			used[l.k] = true
			if l.dst == nil {
				l.st.attach(bufs[l.k])
				continue
			}
			c.writeBack(l.dst, l.l, l.dt, bufs[l.k])
			l.st.lazy.Store(nil)
		}
		for k, u := range used {
			if !u { // only storages that died wanted it
				c.be.Free(c.dev.Index, bufs[k])
			}
		}
	})
	// Storages of the trace nobody received stay pending forever: using
	// one panics (the context is closed).
	return res
}

// coversStorage reports whether a view of st with layout l and dtype dt is
// the whole storage, row-major from element 0.
func coversStorage(l op.Layout, dt dtype.DType, st *Storage) bool {
	return l.Offset == 0 && l.IsContiguous() && op.Numel(l.Shape) == st.nbytes/dt.Size()
}

// writeBack gives the caller's storage dst, viewed with layout l and dtype
// dt, the value a program computed into buf (contiguous, l's shape): the
// buffer itself when the view is the whole storage, else a copy into the
// view.
func (c *lazyCtx) writeBack(dst *Storage, l op.Layout, dt dtype.DType, buf device.Buffer) {
	if coversStorage(l, dt, dst) {
		dst.attach(buf)
		dst.version.Add(1)
		return
	}
	v := &Tensor{st: &Storage{dev: c.dev, be: c.be, nbytes: op.Numel(l.Shape) * dt.Size()}, dt: dt, l: op.Contiguous(slices.Clone(l.Shape))}
	v.st.attach(buf)
	d := &Tensor{st: dst, dt: dt, l: l}
	NoGrad(func() { apply("trace", "copy_", []*Tensor{d, v}, nil) })
}
