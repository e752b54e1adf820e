package tensor

import (
	"errors"
	"fmt"
	"slices"
	"weak"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// Replaying a trace runs its program again on new inputs without running
// the traced Go function: what compile.Fn does under compile.TraceOnce once
// a function's trace has stopped changing. The Go code inside the function
// does not run then, so whatever it did besides recording ops must be
// stood in for: a node whose dynamic attributes (an optimizer's learning
// rate and step count) come from Go state gets them from a ReplayStep
// registered with ApplyReplayable, which also applies the Go-side effect
// (advancing the step count). A random op's seed and offset come from its
// generator: a replay takes the same counts from the same generators in the
// same order as the trace did, so the generators advance as they would
// have. A trace with a dynamic attribute nothing stands in for, or marked
// with NoReplay, cannot be replayed: it is traced again on every call.

// ReplayStep stands in, when a trace is replayed, for the Go code that
// recorded one node with dynamic attributes (see ApplyReplayable).
type ReplayStep struct {
	// Valid reports whether the Go-side state the recorded code read, other
	// than what Dynamic recomputes, is unchanged since the trace (an
	// optimizer's betas, its state tensors); nil means always. A replay
	// calls every step's Valid before any Dynamic, and traces again if one
	// reports false.
	Valid func() bool
	// Dynamic applies the Go-side effects the recorded code had (an
	// optimizer's step count) and returns the node's dynamic attributes
	// for this run.
	Dynamic func() op.Attrs
}

// ApplyReplayable is Apply for an op whose dynamic attributes (those in
// its op.Def.DynamicAttrs) are computed from Go state: inside a trace,
// step stands in for the calling code when the trace is replayed (see
// ReplayStep). If the op does not record exactly one node with dynamic
// attributes (it was decomposed), the trace cannot be replayed. Outside a
// trace it is Apply.
func ApplyReplayable(name string, in []*Tensor, a op.Attrs, step ReplayStep) []*Tensor {
	tr := currentTrace()
	if tracesActive.Load() == 0 || tr == nil {
		return apply("", name, in, a)
	}
	c := tr.ctx
	c.mu.Lock()
	n0 := len(c.dyn)
	c.mu.Unlock()
	out := apply("", name, in, a)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.dyn) != n0+1 {
		c.markNoReplay(fmt.Sprintf("%s recorded %d nodes with dynamic attributes, not one", name, len(c.dyn)-n0))
		return out
	}
	c.dynSteps[n0] = &step
	return out
}

// NoReplay marks the calling goroutine's trace, if it is tracing, as one
// that cannot be replayed, for the reason given (Go code whose effects a
// replay would miss, such as a learning-rate scheduler stepping inside a
// compiled function). Outside a trace it does nothing.
func NoReplay(reason string) {
	if tracesActive.Load() == 0 {
		return
	}
	if tr := currentTrace(); tr != nil {
		tr.ctx.mu.Lock()
		tr.ctx.markNoReplay(reason)
		tr.ctx.mu.Unlock()
	}
}

func (c *lazyCtx) markNoReplay(reason string) {
	if c.noReplay == "" {
		c.noReplay = reason
	}
}

// ErrNoReplay is the error of a trace that cannot be replayed, or of a
// replay whose conditions no longer hold (the caller traces again).
var ErrNoReplay = errors.New("trace cannot be replayed")

// Replay is a traced program kept to run again on new inputs (see
// TracedGraph.Replay). It is not safe for concurrent use.
type Replay struct {
	dev device.Device
	be  device.Backend
	g   *ir.Graph
	// in holds, per call input, the dtype and layout it was traced with.
	in []binding
	// binds are the program's parameters: the inputs first (st nil here),
	// then the storages the trace read.
	binds []binding
	steps []*ReplayStep
	outs  []op.Meta // per returned tensor
	live  []replayLive
	// draws are the trace's takes from random generators, taken again
	// (same counts, same order) at each replay; drawn holds this replay's
	// seeds and offsets.
	draws []rngDraw
	drawn [][2]int64
}

// replayLive is a program output other than the returned tensors: the new
// value of a storage the trace made and the program still held (st), of a
// call input written in place (in), or of neither (computed and freed).
type replayLive struct {
	k  int
	st weak.Pointer[Storage]
	in int // index of the written input, or -1
	l  op.Layout
	dt dtype.DType
}

// Replay returns the trace as a Replay, once it has run, or an error
// wrapping ErrNoReplay saying why it cannot be replayed.
func (tg *TracedGraph) Replay() (*Replay, error) {
	c := tg.tr.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.noReplay != "":
		return nil, fmt.Errorf("%w: %s", ErrNoReplay, c.noReplay)
	case c.bs != nil:
		return nil, fmt.Errorf("%w: it has bounded dimensions", ErrNoReplay)
	}
	for _, b := range c.binds {
		if b.konst != "" && b.st.version.Load() != 0 {
			return nil, fmt.Errorf("%w: a tensor it made from host data was written in place", ErrNoReplay)
		}
	}
	n := len(tg.tr.inputs)
	r := &Replay{dev: c.dev, be: c.be, g: tg.Graph, binds: slices.Clone(c.binds), steps: slices.Clone(c.dynSteps),
		draws: slices.Clone(c.draws), drawn: make([][2]int64, len(c.draws))}
	for k, s := range r.steps {
		if s != nil {
			continue
		}
		// A random op's seed and offset: from the draw that gave them.
		if j, ok := r.drawOf(c.dyn[k]); ok {
			r.steps[k] = &ReplayStep{Dynamic: func() op.Attrs {
				return op.Attrs{"seed": r.drawn[j][0], "offset": r.drawn[j][1]}
			}}
			continue
		}
		return nil, fmt.Errorf("%w: the dynamic attributes of its node %d (%v) come from code a replay cannot stand in for (an op applied without tensor.ApplyReplayable)", ErrNoReplay, k, sortedAttrNames(c.dyn[k]))
	}
	for i := range n {
		r.in = append(r.in, binding{l: c.binds[i].l, dt: c.binds[i].dt})
		r.binds[i].st = nil // the next call's inputs go there
	}
	for _, o := range tg.outs {
		r.outs = append(r.outs, op.Meta{Shape: slices.Clone(o.l.Shape), DType: o.dt})
	}
	for _, l := range tg.live {
		rl := replayLive{k: l.k, in: l.in, l: l.l, dt: l.dt}
		if l.st != nil && l.in < 0 {
			rl.st = weak.Make(l.st)
		}
		r.live = append(r.live, rl)
	}
	return r, nil
}

// drawOf returns the index of the one draw whose seed and offset are the
// dynamic attributes a (a random op's, nothing else).
func (r *Replay) drawOf(a op.Attrs) (int, bool) {
	if len(a) != 2 || !a.Has("seed") || !a.Has("offset") {
		return 0, false
	}
	seed, offset := a.Int("seed"), a.Int("offset")
	found := -1
	for j, d := range r.draws {
		if int64(d.seed) == int64(seed) && int64(d.offset) == int64(offset) {
			if found >= 0 {
				return 0, false // two generators in the same state: ambiguous
			}
			found = j
		}
	}
	return found, found >= 0
}

func sortedAttrNames(a op.Attrs) []string {
	var ks []string
	for k := range a {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// SameBindings reports whether r and o read the same storages with the
// same layouts, and constants made from host data with the same values: two traces of a
// function with the same fingerprint and the same bindings are the same
// program on the same state.
func (r *Replay) SameBindings(o *Replay) bool {
	if len(r.binds) != len(o.binds) || len(r.in) != len(o.in) {
		return false
	}
	for i, b := range r.binds {
		ob := o.binds[i]
		if b.konst != "" || ob.konst != "" {
			// Constants each trace made from host data: the same values.
			if b.konst != ob.konst || b.dt != ob.dt || !slices.Equal(b.l.Shape, ob.l.Shape) {
				return false
			}
			continue
		}
		if b.st != ob.st || b.dt != ob.dt || b.l.Offset != ob.l.Offset || !slices.Equal(b.l.Shape, ob.l.Shape) || !slices.Equal(b.l.Strides, ob.l.Strides) {
			return false
		}
	}
	return true
}

// Run runs the replayed program prog (compiled from the traced graph) on
// inputs, which must match the traced ones in dtypes, shapes and layouts
// (contiguity, or the exact strides of a strided one), writes the values
// the trace wrote, and returns the returned tensors. An error wrapping
// ErrNoReplay, with nothing run or changed, means the conditions of the
// replay no longer hold: the caller traces again.
func (r *Replay) Run(prog device.Program, info ProgramInfo, inputs []*Tensor) (res []*Tensor, err error) {
	if len(inputs) != len(r.in) {
		return nil, fmt.Errorf("%w: %d inputs, traced with %d", ErrNoReplay, len(inputs), len(r.in))
	}
	for i, t := range inputs {
		w := r.in[i]
		if t == nil || t.st == nil || t.st.dev != r.dev || t.dt != w.dt || !slices.Equal(t.l.Shape, w.l.Shape) {
			return nil, fmt.Errorf("%w: input %d differs from the traced one", ErrNoReplay, i)
		}
		traced := w.l.Offset == 0 && w.l.IsContiguous()
		if now := t.l.Offset == 0 && t.l.IsContiguous(); now != traced || (!now && (t.l.Offset != w.l.Offset || !slices.Equal(t.l.Strides, w.l.Strides))) {
			return nil, fmt.Errorf("%w: input %d has another layout than the traced one", ErrNoReplay, i)
		}
	}
	for _, b := range r.binds[len(r.in):] {
		if b.st.freed.Load() || b.st.lazy.Load() != nil {
			return nil, fmt.Errorf("%w: a tensor the function reads was freed or is pending", ErrNoReplay)
		}
	}
	for _, s := range r.steps {
		if s.Valid != nil && !s.Valid() {
			return nil, fmt.Errorf("%w: Go-side state the function read has changed", ErrNoReplay)
		}
	}
	err = Catch(func() {
		for _, t := range inputs {
			t.ready("replay")
		}
		for j, d := range r.draws {
			s, o := d.g.take(d.n)
			r.drawn[j] = [2]int64{int64(s), int64(o)}
		}
		dyn := make([]op.Attrs, len(r.steps))
		for k, s := range r.steps {
			dyn[k] = s.Dynamic()
		}
		binds := slices.Clone(r.binds)
		for i, t := range inputs {
			binds[i] = binding{st: t.st, l: t.l, dt: t.dt}
		}
		c := &lazyCtx{dev: r.dev, be: r.be, g: r.g, binds: binds, dyn: dyn, closed: true}
		c.mu.Lock()
		defer c.mu.Unlock()
		targets := make([]*Storage, len(r.g.Outputs))
		dsts := make([]*Storage, len(r.live))
		for j, l := range r.live {
			switch {
			case l.in >= 0:
				if t := inputs[l.in]; coversStorage(t.l, t.dt, t.st) {
					targets[l.k] = t.st
				}
			default:
				dsts[j] = l.st.Value()
				targets[l.k] = dsts[j]
			}
		}
		res = make([]*Tensor, len(r.outs))
		c.runProgram("replay", prog, info, 0, targets, func(bufs []device.Buffer) {
			used := make([]bool, len(bufs))
			for i, m := range r.outs {
				s := &Storage{dev: c.dev, be: c.be, nbytes: m.Numel() * m.DType.Size()}
				s.attach(bufs[i])
				res[i] = &Tensor{st: s, dt: m.DType, l: op.Contiguous(slices.Clone(m.Shape))}
				used[i] = true
			}
			for j, l := range r.live {
				switch {
				case l.in >= 0:
					t := inputs[l.in]
					c.writeBack(t.st, t.l, t.dt, bufs[l.k])
				case dsts[j] != nil:
					dsts[j].attach(bufs[l.k])
					dsts[j].version.Add(1)
				default:
					continue
				}
				used[l.k] = true
			}
			for k, u := range used {
				if !u {
					c.be.Free(c.dev.Index, bufs[k])
				}
			}
		})
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
