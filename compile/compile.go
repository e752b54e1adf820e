// Package compile turns a Go function over tensors into one compiled
// program per call signature (docs/architecture.md, "Compiled mode"):
// compile.Fn.
//
//	step := compile.Fn(func(in ...*tensor.Tensor) []*tensor.Tensor {
//		loss := model.Forward(in[0]).CrossEntropy(in[1])
//		opt.ZeroGrad()
//		loss.Backward()
//		opt.Step()
//		return []*tensor.Tensor{loss}
//	}, compile.Name("train-step"))
//	out, err := step.Call(x, y)
//
// Each call traces f on symbolic tensors (tensor.BeginTrace: nothing runs
// while f executes, and reading a value inside f is an error naming the
// line), fingerprints the recorded graph, and runs the program compiled for
// it, from the compile cache when it has one. Forward, Backward and
// optimizer steps inside f all become one program: weights and optimizer
// state are the program's parameters, and what f writes into them
// (gradients, updated weights, moments) is written back when it runs.
//
// By default f is traced again on every call, so that Go-side state (a
// learning-rate schedule, a step counter, optimizer state created on the
// first step, Go control flow) is always current; programs are cached by
// the graph's structure, and run-time values such as learning rates and
// seeds are program inputs (op.Def.DynamicAttrs), so a training loop
// compiles once or twice. Every new program is logged with its reason under
// GOTPU_LOG=recompile; past a limit (default 8) a call fails with an error
// that says to declare bounded dimensions (Bound).
//
// A trace costs about what running f op by op costs in dispatch. With
// TraceOnce, f is traced only until its trace stops changing for an input
// signature, and later calls replay the program without running f (as a
// jitted function or a captured graph does elsewhere): the per-call cost no
// longer grows with the number of ops.
package compile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/tensor"
)

// DefaultMaxPrograms is the default limit of distinct programs one Function
// may compile (RecompileLimit).
const DefaultMaxPrograms = 8

// ErrTooManyRecompiles is returned when a Function needs more distinct
// programs than its limit.
var ErrTooManyRecompiles = errors.New("compile: too many recompiles")

type options struct {
	name      string
	dev       *device.Device
	limit     int
	precision string
	bounds    []Bounded
	traceOnce bool
}

// Option configures Fn.
type Option func(*options)

// Name names the function in logs and errors (default "fn").
func Name(s string) Option { return func(o *options) { o.name = s } }

// OnDevice sets the device the function runs on (default: the device of its
// first tensor input, or cpu).
func OnDevice(d device.Device) Option { return func(o *options) { o.dev = &d } }

// RecompileLimit sets how many distinct programs the function may compile
// before a call fails (default DefaultMaxPrograms).
func RecompileLimit(n int) Option { return func(o *options) { o.limit = n } }

// Precision sets the default matmul precision of the compiled programs
// ("highest", "high", "medium"); it is part of the cache key.
func Precision(p string) Option { return func(o *options) { o.precision = p } }

// TraceOnce makes the function replay its program instead of tracing f
// again, once two traces in a row with the same input signature recorded
// the same program over the same tensors (the first call of a training
// step creates optimizer state, so a step replays from its third call).
// A replay does not run f: f must be a step over its inputs and the
// tensors it reads (weights, gradients, optimizer state — the same tensors
// every call, which f and the program update in place), with Go control
// flow that does not change from call to call. gotpu's optimizers stand in
// for their Go-side per-step work (the step count advances, the learning
// rate is read at each call, so schedulers outside f work), and random ops
// draw from their generators again (dropout masks differ per call, as when
// tracing); a trace with Go-side values nothing stands in for — a scheduler
// stepped inside f, an optimizer without a fused update, bounded
// dimensions — is traced on every call as without TraceOnce (logged once
// under GOTPU_LOG=recompile). A tensor the function reads that was freed
// since, an input with another layout, or an optimizer whose state was
// replaced makes that call trace again.
func TraceOnce() Option { return func(o *options) { o.traceOnce = true } }

// Function is a compiled function; see Fn. It is safe for concurrent use
// (calls are serialized).
type Function struct {
	f    func(in ...*tensor.Tensor) []*tensor.Tensor
	opts options

	mu       sync.Mutex
	live     tensor.LiveMemo
	programs map[string]string // fingerprint -> input signature it was first seen with
	sigs     map[string]bool
	replays  map[string]*replayEntry // input signature -> its latest trace (TraceOnce)
	stats    Stats
}

// replayEntry is the latest trace of one input signature, under TraceOnce.
type replayEntry struct {
	fp     string
	rep    *tensor.Replay // nil: that trace cannot be replayed
	stable bool           // the trace before it was the same program on the same tensors
	prog   device.Program
	info   tensor.ProgramInfo
}

// Stats counts what a Function did.
type Stats struct {
	// Calls is the number of calls that ran; Traces of them traced f,
	// Replays ran the program without it (TraceOnce).
	Calls   int `json:"calls"`
	Traces  int `json:"traces"`
	Replays int `json:"replays"`
	// Programs is the number of distinct programs the function needed.
	Programs int `json:"programs"`
	// Tiers counts where each call's program came from: "memory" (already
	// loaded in this process), "disk" (tier 2), "remote" (tier 3),
	// "compiled" (compiled now).
	Tiers map[string]int `json:"tiers"`
	// TraceTime, CompileTime and RunTime are cumulative.
	TraceTime   time.Duration `json:"trace_ns"`
	CompileTime time.Duration `json:"compile_ns"`
	RunTime     time.Duration `json:"run_ns"`
}

// Fn returns f as a compiled function.
func Fn(f func(in ...*tensor.Tensor) []*tensor.Tensor, opts ...Option) *Function {
	o := options{name: "fn", limit: DefaultMaxPrograms}
	for _, op := range opts {
		op(&o)
	}
	return &Function{f: f, opts: o, programs: map[string]string{}, sigs: map[string]bool{},
		replays: map[string]*replayEntry{}, stats: Stats{Tiers: map[string]int{}}}
}

// Stats returns a copy of the function's counters.
func (c *Function) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Tiers = map[string]int{}
	for k, v := range c.stats.Tiers {
		s.Tiers[k] = v
	}
	return s
}

// signature formats the inputs' dtypes and shapes.
func signature(in []*tensor.Tensor) string {
	// One buffer, no fmt: a decode step calls this with every KV-cache
	// tensor (60 for a 30-layer model), and a Sprintf per input was the
	// step's largest source of garbage after the kernels' own.
	b := make([]byte, 0, 24*len(in))
	for i, t := range in {
		if i > 0 {
			b = append(b, ',')
		}
		if t == nil {
			b = append(b, "nil"...)
			continue
		}
		b = append(b, t.DType().String()...)
		b = append(b, '[')
		for j := range t.Dim() {
			if j > 0 {
				b = append(b, ' ')
			}
			b = strconv.AppendInt(b, int64(t.Size(j)), 10)
		}
		b = append(b, ']')
	}
	return string(b)
}

func (c *Function) device(in []*tensor.Tensor) device.Device {
	if c.opts.dev != nil {
		return *c.opts.dev
	}
	for _, t := range in {
		if t != nil && !t.IsWrappedScalar() {
			return t.Device()
		}
	}
	return device.Device{Type: "cpu"}
}

// trace runs f under a trace and returns the finished graph.
func (c *Function) trace(dev device.Device, in []*tensor.Tensor, length int) (tg *tensor.TracedGraph, err error) {
	tr, syms := tensor.BeginTrace(dev, in)
	tr.CollectGarbage(true)
	tr.UseLiveMemo(&c.live)
	if length >= 0 {
		c.declareBounds(tr, length)
	}
	defer func() {
		if r := recover(); r != nil {
			tr.Abort()
			if e, ok := r.(*tensor.Error); ok {
				err = fmt.Errorf("compile: tracing %s: %w", c.opts.name, e)
				return
			}
			panic(r)
		}
	}()
	outs := c.f(syms...)
	return tr.End(outs), nil
}

// Call runs the function on in and returns its results (materialised).
// Errors are: a programming error in f (an *tensor.Error, also for reading
// a value while tracing), too many recompiles, a compile or cache failure.
func (c *Function) Call(in ...*tensor.Tensor) (out []*tensor.Tensor, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	dev := c.device(in)
	in, length, err := c.pad(in)
	if err != nil {
		return nil, err
	}
	var sig string
	if c.opts.traceOnce {
		sig = signature(in)
		if out, ok, err := c.replay(sig, in); ok || err != nil {
			return out, err
		}
	}
	t0 := time.Now()
	tg, err := c.trace(dev, in, length)
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	c.stats.TraceTime += t1.Sub(t0)
	g := tg.Graph
	fp := g.Fingerprint()
	if sig == "" {
		sig = signature(in)
	}
	if _, seen := c.programs[fp]; !seen {
		if len(c.programs) >= c.opts.limit {
			return nil, fmt.Errorf("%w: %s needed a %d-th program (limit %d) for inputs %s; "+
				"each new input shape compiles a new program: declare the varying dimensions with compile.Bound "+
				"(compiled once at the bound, padded and masked), or raise compile.RecompileLimit",
				ErrTooManyRecompiles, c.opts.name, len(c.programs)+1, c.opts.limit, sig)
		}
		reason := "first call"
		switch {
		case len(c.programs) == 0:
		case !c.sigs[sig]:
			reason = "new input signature " + sig
		default:
			reason = "the traced graph changed for the same inputs (Go-side state or control flow, such as optimizer state created on the first step)"
		}
		tensor.Logf("recompile", "%s: program %d (fingerprint %.16s, %d nodes): %s", c.opts.name, len(c.programs)+1, fp, len(g.Nodes), reason)
		c.programs[fp] = sig
		c.stats.Programs = len(c.programs)
	}
	c.sigs[sig] = true
	prog, info, err := tensor.GetProgram(context.Background(), tensor.ProgramRequest{
		Device: dev, Backend: backendOf(dev), Graph: g, Fingerprint: fp,
		Options: device.CompileOptions{Precision: c.opts.precision}, Reason: "compile.Fn " + c.opts.name,
	})
	if err != nil {
		return nil, fmt.Errorf("compile: %s: %w", c.opts.name, err)
	}
	t2 := time.Now()
	c.stats.CompileTime += t2.Sub(t1)
	c.stats.Tiers[info.Tier]++
	err = tensor.Catch(func() { out = tg.Run(prog, info) })
	c.stats.RunTime += time.Since(t2)
	if err != nil {
		return nil, fmt.Errorf("compile: running %s: %w", c.opts.name, err)
	}
	c.stats.Calls++
	c.stats.Traces++
	if c.opts.traceOnce {
		c.keepForReplay(sig, fp, tg, prog, info)
	}
	return unpad(out, tg.Padded, length), nil
}

// replay runs the program of signature sig's latest trace without tracing,
// when that trace is stable (TraceOnce). ok false with a nil error: trace.
func (c *Function) replay(sig string, in []*tensor.Tensor) (out []*tensor.Tensor, ok bool, err error) {
	e := c.replays[sig]
	if e == nil || !e.stable {
		return nil, false, nil
	}
	t0 := time.Now()
	out, err = e.rep.Run(e.prog, e.info, in)
	if errors.Is(err, tensor.ErrNoReplay) {
		tensor.Logf("recompile", "%s: tracing again (inputs %s): %v", c.opts.name, sig, err)
		delete(c.replays, sig)
		return nil, false, nil
	}
	c.stats.RunTime += time.Since(t0)
	if err != nil {
		return nil, false, fmt.Errorf("compile: running %s: %w", c.opts.name, err)
	}
	c.stats.Calls++
	c.stats.Replays++
	c.stats.Tiers["memory"]++
	return out, true, nil
}

// keepForReplay records a finished trace of signature sig as the one later
// calls replay (TraceOnce), stable when the trace before it recorded the
// same program over the same tensors.
func (c *Function) keepForReplay(sig, fp string, tg *tensor.TracedGraph, prog device.Program, info tensor.ProgramInfo) {
	prev := c.replays[sig]
	rep, err := tg.Replay()
	if err != nil {
		if prev == nil || prev.rep != nil {
			tensor.Logf("recompile", "%s: traced on every call (inputs %s): %v", c.opts.name, sig, err)
		}
		c.replays[sig] = &replayEntry{fp: fp}
		return
	}
	stable := prev != nil && prev.rep != nil && prev.fp == fp && prev.rep.SameBindings(rep)
	c.replays[sig] = &replayEntry{fp: fp, rep: rep, stable: stable, prog: prog, info: info}
}

// MustCall is Call for code that treats a failure as a bug: it panics with
// the error.
func (c *Function) MustCall(in ...*tensor.Tensor) []*tensor.Tensor {
	out, err := c.Call(in...)
	if err != nil {
		panic(err)
	}
	return out
}

// Graph traces the function on in and returns the recorded graph without
// running it (for inspection and export). Tensors the trace created are
// unusable afterwards.
func (c *Function) Graph(in ...*tensor.Tensor) (*ir.Graph, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in, length, err := c.pad(in)
	if err != nil {
		return nil, err
	}
	tg, err := c.trace(c.device(in), in, length)
	if err != nil {
		return nil, err
	}
	return tg.Graph, nil
}

// tracedGraph is Graph with the dynamic attributes' traced values put back
// into the graph and the parameters bound to constants the trace made from
// host data (Go scalars) folded into constant nodes (for export, where the
// caller supplies only the inputs and the tensors read).
func (c *Function) tracedGraph(in []*tensor.Tensor) (*ir.Graph, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in, length, err := c.pad(in)
	if err != nil {
		return nil, err
	}
	tg, err := c.trace(c.device(in), in, length)
	if err != nil {
		return nil, err
	}
	dyn := tg.Dynamic()
	k := 0
	for _, n := range tg.Graph.Nodes {
		if n.IsConst() || len(n.Op.DynamicAttrs()) == 0 {
			continue
		}
		if k < len(dyn) {
			a := maps.Clone(n.Attrs)
			maps.Copy(a, dyn[k])
			n.Attrs = a
		}
		k++
	}
	return ir.FoldParams(tg.Graph, tg.Constants()), nil
}

func backendOf(dev device.Device) device.Backend {
	be, err := device.Lookup(dev.Type)
	if err != nil {
		panic(&tensor.Error{Op: "compile", Msg: err.Error(), Err: err})
	}
	return be
}
