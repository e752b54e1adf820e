package tensor

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
	"weak"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// The Fused mode (DeferAndFuse) and compile.Fn share one mechanism: ops are
// recorded into a pending IR graph instead of running, and tensors are
// promises — a Storage whose contents are an ir.Value of that graph. At a
// flush the graph's live values become its outputs; the graph is compiled
// (or fetched from the program cache) and run as one program, and the
// storages receive their buffers.
//
// Values are functional. A storage's value is always a value whose
// row-major elements are the storage's elements, so a tensor viewing it
// (any layout) is recorded as an as_strided of that value. In-place ops are
// recorded functionally: the node's outputs are its normal outputs followed
// by the new values of its in-place inputs; a write into a partial view
// becomes an as_strided_scatter into the storage's value. A storage that
// had a buffer and was written gets a new buffer at the flush.
//
// Liveness: at a flush of a small graph every storage still pending here
// is an output, except the temporaries the library dropped
// (lazy_owned.go) — no garbage collection is forced to find the
// unreferenced ones, so the outputs, and the program's fingerprint,
// depend on the graph alone. Once the pending storages hold
// SetFuseGCBytes (32 MiB), the flush collects first and only those still
// referenced are outputs. The context holds its pending storages until
// the flush (weakly where the flush collects: traces, SetFuseGC(true), a
// graph past that size; there the value of a storage that died is freed
// right after the run). A value used by several later ops is computed
// once.

// lazyVal is the pending value of a storage.
type lazyVal struct {
	ctx *lazyCtx
	v   *ir.Value
}

// binding is a graph parameter bound to device memory: a materialised
// storage viewed with layout l.
type binding struct {
	st *Storage
	l  op.Layout
	dt dtype.DType
	// konst is the storage's Storage.konst when it was bound (a constant
	// the trace made from host data).
	konst string
}

type paramKey struct {
	st *Storage
	dt dtype.DType
	// small is the layout of rank at most 4 (rank, offset, dims, strides);
	// layout, the layout as text, of a larger rank.
	small  [10]int
	layout string
}

// paramKeyOf is the key of the parameter binding st as t sees it.
func paramKeyOf(st *Storage, t *Tensor) paramKey {
	k := paramKey{st: st, dt: t.dt}
	l := t.l
	if r := len(l.Shape); r <= 4 && len(l.Strides) == r {
		k.small[0], k.small[1] = r, l.Offset
		copy(k.small[2:], l.Shape)
		copy(k.small[6:], l.Strides)
		return k
	}
	k.small[0] = -1
	k.layout = layoutKey(l)
	return k
}

// lazyCtx is one pending graph on one device.
type lazyCtx struct {
	mu  sync.Mutex
	dev device.Device
	be  device.Backend
	// trace is set for a compile.Fn trace: reading a pending value is an
	// error there, and the graph is cut only by EndTrace.
	trace *Trace

	g       *ir.Graph
	binds   []binding
	paramOf map[paramKey]*ir.Value
	pend    []pendRef
	// pendSet maps a pending storage's address to its index in pend (the
	// entry there is checked to be that storage: a collected storage's
	// address may be reused).
	pendSet map[uintptr]int
	// last is the latest value given to each pend entry (the value of a
	// storage that died since).
	last []*ir.Value
	// pendBytes is the size of the storages in pend.
	pendBytes int64
	// dyn holds, per recorded node with dynamic attributes (in node order),
	// the values this graph's run uses; the graph itself records zeros.
	dyn []op.Attrs
	// dynSteps holds, per entry of dyn, what a replay of a trace calls to
	// get that node's values (nil: nothing, and the trace cannot be
	// replayed); noReplay says why a trace cannot be replayed otherwise.
	dynSteps []*ReplayStep
	noReplay string
	// draws are a trace's takes from random generators, in order.
	draws   []rngDraw
	seq     seqDetector
	flushes int64
	closed  bool
	// failed is the panic value of the flush that failed, for the
	// poisoned tensors it left behind.
	failed any
	// bs tracks a trace's bounded (padded) dimensions; nil without any.
	bs *boundState
	// expect is the backend's WorkExpecter, if it has one: told as ops
	// are recorded (the program that runs them is coming).
	expect device.WorkExpecter
	// expectAt is the node count at the last ExpectWork.
	expectAt int
	// weakPend is set once a Fused graph's pending tensors reach the size
	// at which its flush collects garbage (autoGC; never in a trace): pend
	// holds them weakly then.
	weakPend bool
	// hint sizes the next graph (reset).
	hint sizeHint
}

// sizeHint sizes a context's next graph like the one before the last: a
// training step is often two graphs in turn (forward and backward, then
// the optimizer), and a loop of one graph repeats either way.
type sizeHint struct {
	nodes, binds, pend int
	prev               [3]int // the last graph's sizes
}

func (h *sizeHint) grow(nodes, binds, pend int) {
	h.nodes, h.binds, h.pend = h.prev[0], h.prev[1], h.prev[2]
	h.prev = [3]int{nodes, binds, pend}
}

func newLazyCtx(dev device.Device, be device.Backend) *lazyCtx {
	c := &lazyCtx{dev: dev, be: be}
	c.expect, _ = be.(device.WorkExpecter)
	c.reset()
	return c
}

func (c *lazyCtx) reset() {
	// The next graph's slices and maps start at the size recent graphs
	// reached (a training loop's steps repeat), not grown op by op.
	if c.g != nil {
		c.hint.grow(len(c.g.Nodes), len(c.binds), len(c.pend))
	}
	c.g = ir.New()
	c.g.DefaultFloat = DefaultDType()
	c.g.Nodes = make([]*ir.Node, 0, c.hint.nodes)
	c.g.Params = make([]*ir.Value, 0, c.hint.binds)
	c.binds = make([]binding, 0, c.hint.binds)
	c.paramOf = map[paramKey]*ir.Value{}
	c.pend = make([]pendRef, 0, c.hint.pend)
	c.pendBytes = 0
	c.last = make([]*ir.Value, 0, c.hint.pend)
	c.pendSet = make(map[uintptr]int, c.hint.pend)
	c.expectAt = 0
	c.weakPend = false
	c.dyn = nil
	c.dynSteps = nil
	c.noReplay = ""
	c.draws = nil
	c.seq.reset()
}

var (
	fusedMu   sync.Mutex
	fusedCtxs = map[device.Device]*lazyCtx{}
)

// fusedCtx returns the process-wide Fused-mode context of dev.
func fusedCtx(dev device.Device, be device.Backend) *lazyCtx {
	fusedMu.Lock()
	defer fusedMu.Unlock()
	c := fusedCtxs[dev]
	if c == nil {
		c = newLazyCtx(dev, be)
		fusedCtxs[dev] = c
	}
	return c
}

// lazyContextFor returns the context ops on dev record into for the calling
// goroutine, or nil when they run eagerly.
func lazyContextFor(dev device.Device, be device.Backend) *lazyCtx {
	if tracesActive.Load() > 0 {
		if tr := currentTrace(); tr != nil {
			return tr.ctx
		}
	}
	if CurrentMode() != Fused || dev.Type == "meta" {
		return nil
	}
	return fusedCtx(dev, be)
}

// pending reports whether t's storage holds a value not yet computed.
func (t *Tensor) pending() bool { return t.st != nil && t.st.lazy.Load() != nil }

// ready makes t's storage hold its value (flushing its pending graph) and
// returns t. Reading a pending value inside a compile.Fn trace panics with
// an error naming the caller's line.
func (t *Tensor) ready(why string) *Tensor {
	if t.st == nil {
		return t
	}
	if lv := t.st.lazy.Load(); lv != nil {
		lv.ctx.flushFor(t.st, why)
	}
	return t
}

// flushFor flushes c so that st gets its value.
func (c *lazyCtx) flushFor(st *Storage, why string) {
	if c.failed != nil {
		panic(c.failed)
	}
	if c.trace != nil {
		if tr := currentTrace(); tr != nil && tr.ctx == c {
			panic(&Error{Op: why, Msg: "reading a tensor's value while tracing a compiled function (the value does not exist until the program runs): move the read out of the function or return the tensor", Site: callerSite(), Err: ErrTraceRead})
		}
		panic(&Error{Op: why, Msg: "tensor belongs to a compile.Fn trace that has not finished, or to one that failed", Err: ErrTraceRead})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.lazy.Load() == nil {
		return
	}
	c.flushLocked(why)
}

// ErrTraceRead is the error of reading a pending value inside a trace.
var ErrTraceRead = fmt.Errorf("tensor value read while tracing")

// Flush runs every op recorded in Fused mode on dev and waits for it
// (explicit flushes are also done by Sync, Item and every host read).
func Flush(dev device.Device) {
	fusedMu.Lock()
	c := fusedCtxs[dev]
	fusedMu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked("sync")
}

// flushAll flushes every Fused-mode context (end of Backward).
func flushAll(why string) {
	fusedMu.Lock()
	cs := make([]*lazyCtx, 0, len(fusedCtxs))
	for _, c := range fusedCtxs {
		cs = append(cs, c)
	}
	fusedMu.Unlock()
	for _, c := range cs {
		c.mu.Lock()
		c.flushLocked(why)
		c.mu.Unlock()
	}
}

// storageNumel is the number of dt elements of st.
func storageNumel(st *Storage, dt dtype.DType) int { return st.nbytes / dt.Size() }

// valueOf returns the graph value holding t's elements (c.mu held).
func (c *lazyCtx) valueOf(t *Tensor) *ir.Value {
	st := t.st
	if lv := st.lazy.Load(); lv != nil {
		if lv.ctx != c {
			panic(&Error{Op: "fuse", Msg: "internal: tensor pending in another graph"})
		}
		if vs := t.vsrc; vs != nil && vs.ver == st.version.Load() && vs.base.st == st {
			base := c.valueOf(vs.base)
			n := c.g.AddNode(vs.d, vs.a, []*ir.Value{base}, []op.Meta{{Shape: slices.Clone(t.l.Shape), DType: t.dt}})
			c.seq.add(n)
			if c.bs != nil {
				c.viewMask(base, vs.d, vs.a, n.Out[0])
			}
			return n.Out[0]
		}
		return c.viewOf(lv.v, t)
	}
	key := paramKeyOf(st, t)
	if v, ok := c.paramOf[key]; ok {
		return v
	}
	v := c.g.Param(op.Meta{Shape: slices.Clone(t.l.Shape), DType: t.dt})
	c.binds = append(c.binds, binding{st: st, l: t.l, dt: t.dt, konst: st.konst})
	c.paramOf[key] = v
	return v
}

// storageValue returns the value of the whole of st as a flat vector of
// dt (c.mu held): its pending value, or a parameter bound to all of it.
func (c *lazyCtx) storageValue(st *Storage, dt dtype.DType) *ir.Value {
	if lv := st.lazy.Load(); lv != nil {
		return lv.v
	}
	n := storageNumel(st, dt)
	flat := &Tensor{st: st, dt: dt, l: op.Contiguous([]int{n})}
	return c.valueOf(flat)
}

// viewOf returns the elements of storage value sv that t's layout selects.
func (c *lazyCtx) viewOf(sv *ir.Value, t *Tensor) *ir.Value {
	l := t.l
	if l.Offset == 0 && l.IsContiguous() && op.Numel(l.Shape) == op.Numel(sv.Meta.Shape) {
		if slices.Equal(l.Shape, sv.Meta.Shape) {
			return sv
		}
		return c.addView(sv, "reshape", op.Attrs{"shape": slices.Clone(l.Shape)})
	}
	return c.addView(sv, "as_strided", op.Attrs{"shape": slices.Clone(l.Shape), "strides": slices.Clone(l.Strides), "offset": l.Offset})
}

func (c *lazyCtx) addView(v *ir.Value, name string, a op.Attrs) *ir.Value {
	out := c.addOp(name, a, v)
	if c.bs != nil {
		c.viewMask(v, out.Def.Op, out.Def.Attrs, out)
	}
	return out
}

func layoutKey(l op.Layout) string {
	b := make([]byte, 0, 32)
	for _, d := range l.Shape {
		b = strconv.AppendInt(b, int64(d), 10)
		b = append(b, ',')
	}
	b = append(b, '/')
	for _, d := range l.Strides {
		b = strconv.AppendInt(b, int64(d), 10)
		b = append(b, ',')
	}
	b = append(b, '+')
	b = strconv.AppendInt(b, int64(l.Offset), 10)
	return string(b)
}

// fuseNodeLimit is the graph size at which a Fused-mode graph is cut.
var fuseNodeLimit atomic.Int64

func init() { fuseNodeLimit.Store(4096) }

// SetFuseNodeLimit sets the number of recorded nodes at which the Fused
// mode flushes its pending graph (default 4096) and returns the previous
// limit.
func SetFuseNodeLimit(n int) int { return int(fuseNodeLimit.Swap(int64(n))) }

// record appends op d on in to the pending graph and returns the outputs
// (pending tensors), followed by the in-place inputs as launch returns them.
func (c *lazyCtx) record(path string, d *op.Def, in []*Tensor, a op.Attrs, outMeta []op.Meta) []*Tensor {
	// A tensor pending in another context (another trace, or the Fused
	// graph seen from a trace) is computed first, outside our lock.
	for _, t := range in {
		if t != nil && t.st != nil {
			if lv := t.st.lazy.Load(); lv != nil && lv.ctx != c {
				lv.ctx.flushFor(t.st, path)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		panic(&Error{Op: path, Msg: "recording into a compile.Fn trace that has ended"})
	}
	if c.trace == nil && len(c.g.Nodes) >= int(fuseNodeLimit.Load()) {
		c.flushLocked("node-limit")
	}
	if n := len(c.g.Nodes); c.expect != nil && (n == 0 || n >= c.expectAt+8) {
		// At a graph's first op and then every eighth node: a few
		// microseconds apart, well inside the helpers' spin (the clock
		// read is most of the call's cost).
		c.expectAt = n
		c.expect.ExpectWork()
	}
	vals := make([]*ir.Value, len(in))
	for i, t := range in {
		if t != nil {
			vals[i] = c.valueOf(t)
		}
	}
	metas := outMeta // AddNode copies what it keeps
	// The node's outputs are the op's own, then the new value of each
	// present in-place input (an absent optional one has none).
	if len(d.Inplace) > 0 {
		metas = slices.Clone(outMeta)
	}
	for _, i := range d.Inplace {
		if t := in[i]; t != nil {
			metas = append(metas, op.Meta{Shape: slices.Clone(t.l.Shape), DType: t.dt})
		}
	}
	na := a
	if dyn := d.DynamicAttrs(); len(dyn) > 0 {
		dv, zeros := op.Attrs{}, op.Attrs{}
		for _, k := range dyn {
			if v, ok := a[k]; ok {
				dv[k] = v
				zeros[k] = zeroLike(v)
			}
		}
		c.dyn = append(c.dyn, dv)
		c.dynSteps = append(c.dynSteps, nil)
		// The placeholders keep the attributes normalized (an int attribute
		// drawn as int64 by the runtime is an int again).
		var err error
		if na, err = d.NormalizeWith(a, zeros); err != nil {
			na = maps.Clone(a)
			maps.Copy(na, zeros)
		}
	}
	var padOut []uint64
	if c.bs != nil {
		padOut = c.boundedRecord(path, d, vals, na, outMeta)
	}
	n := c.g.AddNode(d, na, vals, metas)
	c.seq.add(n)
	for i, m := range padOut {
		if m != 0 {
			c.bs.pad[n.Out[i]] = m
		}
	}
	out := make([]*Tensor, len(outMeta))
	for i, m := range outMeta {
		ps := &pendingStorage{st: Storage{dev: c.dev, be: c.be, nbytes: op.Numel(m.Shape) * m.DType.Size()}, lv: lazyVal{ctx: c, v: n.Out[i]}}
		st := &ps.st
		st.lazy.Store(&ps.lv)
		c.trackNew(st)
		noteMade(c, st)
		out[i] = &Tensor{st: st, dt: m.DType, l: contiguousLayout(m.Shape)}
	}
	k := len(outMeta)
	for _, i := range d.Inplace {
		t := in[i]
		if t == nil {
			continue
		}
		nv := n.Out[k]
		k++
		if c.bs != nil {
			if m := c.bs.pad[vals[i]]; m != 0 {
				c.bs.pad[nv] = m
			}
		}
		st := t.st
		full := t.l.Offset == 0 && t.l.IsContiguous() && op.Numel(t.l.Shape) == storageNumel(st, t.dt)
		if !full {
			if c.bs != nil && c.bs.pad[nv] != 0 {
				panic(&Error{Op: path, Msg: fmt.Sprintf("%v: an in-place write into part of a padded tensor", ErrBoundedDim), Err: ErrBoundedDim})
			}
			base := c.storageValue(st, t.dt)
			sd := op.MustLookup("as_strided_scatter")
			sa, err := sd.Normalize(op.Attrs{"shape": slices.Clone(t.l.Shape), "strides": slices.Clone(t.l.Strides), "offset": t.l.Offset})
			if err != nil {
				panic(&Error{Op: path, Msg: err.Error()})
			}
			sn := c.g.AddNode(sd, sa, []*ir.Value{base, nv}, []op.Meta{base.Meta})
			c.seq.add(sn)
			nv = sn.Out[0]
		}
		st.lazy.Store(&lazyVal{ctx: c, v: nv})
		c.track(st)
		st.version.Add(1)
		out = append(out, t)
	}
	if c.trace == nil && backwardsRunning.Load() == 0 && c.seq.shouldCut() {
		if sc := currentOwnScope(); sc != nil {
			// Inside a decomposition or an in-place op: cut at its end,
			// once its temporaries are dropped.
			sc.cut = c
		} else {
			c.flushLocked("repeat")
		}
	}
	return out
}

// pendingStorage is a recorded op's new output storage with its first
// pending value, in one allocation (recording allocates per op; the value
// is replaced by a separate one if the storage is written again).
type pendingStorage struct {
	st Storage
	lv lazyVal
}

// backwardsRunning counts the Backward (and Grad) calls running. The Fused
// mode does not cut a repeated sequence inside one: the cut would find the
// backward pass's own locals (the gradients it is summing) still
// referenced and materialise them; the end of Backward is a flush point
// anyway, where they are dead.
var backwardsRunning atomic.Int64

// zeroLike is the placeholder a dynamic attribute has in a recorded graph.
func zeroLike(v any) any {
	switch v.(type) {
	case int64:
		return int64(0)
	case int:
		return 0
	case float64:
		return 0.0
	}
	return v
}

// pendRef is an entry of a context's pending storages: a weak pointer when
// the flush may collect garbage to find the dead ones (a trace,
// SetFuseGC(true), or a graph whose pending tensors reached the
// SetFuseGCBytes size), otherwise a strong one — a small Fused graph's
// flush makes every pending value an output, live or not, so a weak
// pointer (a runtime special per storage, about half of recording an op)
// would only let a storage that died before its flush free its buffer a
// collection earlier.
type pendRef struct {
	w  weak.Pointer[Storage]
	st *Storage
}

// get returns the storage, nil if it was collected.
func (p pendRef) get() *Storage {
	if p.st != nil {
		return p.st
	}
	return p.w.Value()
}

// pendIndex returns st's index in c.pend, or -1 (c.mu held).
func (c *lazyCtx) pendIndex(st *Storage) int {
	if k, ok := c.pendSet[uintptr(unsafe.Pointer(st))]; ok && c.pend[k].get() == st {
		return k
	}
	return -1
}

func (c *lazyCtx) track(st *Storage) {
	if k := c.pendIndex(st); k >= 0 {
		c.last[k] = st.lazy.Load().v
		return
	}
	c.trackNew(st)
}

// trackNew is track for a storage not yet pending in c (an op's new
// output).
func (c *lazyCtx) trackNew(st *Storage) {
	v := st.lazy.Load().v
	var r pendRef
	if c.weakPend || c.trace != nil || fuseGC.Load() {
		r.w = weak.Make(st)
	} else {
		r.st = st
	}
	c.pendSet[uintptr(unsafe.Pointer(st))] = len(c.pend)
	c.pend = append(c.pend, r)
	c.pendBytes += int64(st.nbytes)
	c.last = append(c.last, v)
	if !c.weakPend && c.trace == nil && c.autoGC() {
		// The flush will collect: from now on the graph holds its
		// storages weakly, those it held strongly too.
		c.weakPend = true
		for i, p := range c.pend {
			if p.st != nil {
				c.pend[i] = pendRef{w: weak.Make(p.st)}
			}
		}
	}
}

// autoGC reports whether the pending tensors of a Fused graph reached the
// size at which its flush collects garbage first (SetFuseGCBytes).
func (c *lazyCtx) autoGC() bool {
	n := fuseGCBytes.Load()
	return n > 0 && c.pendBytes >= n
}

// With SetFuseGC(true), a flush collects garbage to find the pending
// tensors still referenced when its graph has at least fuseGCMinNodes
// nodes or its tensors hold at least fuseGCMinBytes; smaller graphs
// materialise every value they gave a tensor.
const (
	fuseGCMinNodes = 48
	fuseGCMinBytes = 1 << 20
)

// pendingOut is a value a flush materialises: for a live storage st, its
// current value; st is nil for a storage that died.
type pendingOut struct {
	st *Storage
	v  *ir.Value
}

// pendingOutputs lists, in the order the storages got their values, the
// values a flush must produce (c.mu held): those of every pending storage
// not dropped, or, with a garbage collection first (force, or SetFuseGC(true)
// for a large graph), only those of storages still referenced. Values still
// equal to a parameter are left out.
func (c *lazyCtx) pendingOutputs(force bool) []pendingOut {
	return c.pendingOutputsMemo(force, nil)
}

// LiveMemo remembers which tensors of a traced program were still
// referenced when it ended (found by a garbage collection), per program
// structure, so that later traces of the same structure skip the
// collection. compile.Fn keeps one per function.
type LiveMemo struct {
	mu   sync.Mutex
	live map[liveKey][]bool
}

type liveKey struct {
	seq          uint64
	nodes, pends int
}

// pendingOutputsMemo is pendingOutputs with a liveness memo (nil: none).
// With a memo entry for this structure, the storages it says were dead are
// poisoned instead of computed: reading one panics with an error saying
// the value was not kept.
func (c *lazyCtx) pendingOutputsMemo(force bool, memo *LiveMemo) []pendingOut {
	gc := force || (fuseGC.Load() && (len(c.g.Nodes) >= fuseGCMinNodes || c.pendBytes >= fuseGCMinBytes)) || c.weakPend
	var pattern []bool
	var key liveKey
	if gc && memo != nil {
		key = liveKey{seq: c.seq.h[len(c.seq.h)-1], nodes: len(c.g.Nodes), pends: len(c.pend)}
		memo.mu.Lock()
		pattern = memo.live[key]
		memo.mu.Unlock()
		if pattern != nil {
			gc = false
		}
	}
	if gc {
		runtime.GC()
		// Let the cleanups of what the collection found return their
		// buffers to the device's cache before the program allocates.
		runtime.Gosched()
	}
	var outs []pendingOut
	var seen []bool
	if memo != nil && pattern == nil {
		seen = make([]bool, len(c.pend))
	}
	var unkept *lazyCtx
	for k, r := range c.pend {
		st := r.get()
		v := c.last[k]
		if pattern != nil && !pattern[k] {
			if st != nil {
				if lv := st.lazy.Load(); lv != nil && lv.ctx == c {
					if unkept == nil {
						unkept = &lazyCtx{failed: &Error{Op: "compile", Msg: "this tensor, made inside a compiled function, was not kept: only returned tensors and those still referenced when the function was first traced receive values", Err: ErrTraceRead}}
					}
					st.lazy.Store(&lazyVal{ctx: unkept, v: lv.v})
				}
			}
			continue
		}
		if st != nil {
			lv := st.lazy.Load()
			if lv == nil || lv.ctx != c {
				continue
			}
			v = lv.v
		} else if gc || v == nil { // dead, or dropped (lazy_owned.go)
			continue
		}
		if v.IsParam() {
			continue
		}
		if seen != nil {
			seen[k] = true
		}
		outs = append(outs, pendingOut{st: st, v: v})
	}
	if seen != nil && gc {
		memo.mu.Lock()
		if memo.live == nil {
			memo.live = map[liveKey][]bool{}
		}
		memo.live[key] = seen
		memo.mu.Unlock()
	}
	return outs
}

// FlushStats describes one flush of a pending graph.
type FlushStats struct {
	// Reason is what cut the graph: "read", "sync", "backward",
	// "node-limit", "repeat", "trace-end", ...
	Reason string
	// Device is the device the program ran on.
	Device device.Device
	// Nodes is the number of recorded nodes; Outputs the number of values
	// materialised.
	Nodes, Outputs int
	// Fingerprint is the program's IR fingerprint.
	Fingerprint string
	// Tier is where the program came from: "memory", "disk", "remote" or
	// "compiled".
	Tier string
	// Compile is the time spent compiling or loading the program; Run the
	// time running it.
	Compile, Run time.Duration
}

// flushHooks are the functions AddFlushHook installed, called in order
// after every flush. Writers copy the slice under flushHooksMu; a flush
// reads it without locking.
var (
	flushHooksMu sync.Mutex
	flushHooks   atomic.Pointer[[]*func(FlushStats)]
)

// AddFlushHook installs f to be called after every flush, with the flush's
// statistics, and returns the function that removes it again. Any number
// of hooks may be installed (each owner adds and removes its own, so two
// owners cannot undo each other's hook); f runs on the flushing goroutine
// and must not record tensor ops.
func AddFlushHook(f func(FlushStats)) (remove func()) {
	p := &f
	flushHooksMu.Lock()
	defer flushHooksMu.Unlock()
	var hs []*func(FlushStats)
	if old := flushHooks.Load(); old != nil {
		hs = slices.Clone(*old)
	}
	hs = append(hs, p)
	flushHooks.Store(&hs)
	var once sync.Once
	return func() {
		once.Do(func() {
			flushHooksMu.Lock()
			defer flushHooksMu.Unlock()
			hs := slices.DeleteFunc(slices.Clone(*flushHooks.Load()), func(q *func(FlushStats)) bool { return q == p })
			flushHooks.Store(&hs)
		})
	}
}

// fuseGC makes a large flush collect garbage first (SetFuseGC).
var fuseGC atomic.Bool

// fuseGCBytes is the pending size at which a Fused flush collects garbage
// first (SetFuseGCBytes; 0: never).
var fuseGCBytes atomic.Int64

func init() { fuseGCBytes.Store(32 << 20) }

// SetFuseGCBytes sets the size, in bytes of pending tensors, from which a
// Fused-mode flush runs a garbage collection first, so that it
// materialises only the pending tensors still referenced, and returns the
// previous size; 0 turns it off. The default is 32 MiB: past that, writing
// the values nobody reads any more (the intermediates of x.Mul(a).Add(b)
// on large tensors) costs more time and memory than a collection, whose
// cost grows with the Go heap, not with the tensors (their memory is
// outside it). Below it a flush forces no collection, so a small step (a
// training step of a small model) runs no slower than in Strict mode; its
// outputs then depend on the graph alone.
func SetFuseGCBytes(n int64) int64 { return fuseGCBytes.Swap(max(n, 0)) }

// SetFuseGC sets whether a flush of a graph of at least 48 nodes or 1 MiB
// of pending tensors runs a garbage collection first, so that only pending
// tensors still referenced are materialised, and returns the previous
// setting. The default is false: such a flush forces no collection (its
// cost grows with the heap and exceeds a small step's run time) unless its
// pending tensors reach SetFuseGCBytes' size; it materialises every pending
// tensor except the temporaries the library made (a backward pass's, an
// in-place op's, a decomposition's), as Strict mode would have computed
// them. Turn it on to trade that time for the memory of the dead values.
func SetFuseGC(on bool) bool { return fuseGC.Swap(on) }

// flushLocked compiles and runs the pending graph (c.mu held). If that
// fails, the pending tensors are poisoned with the error (reading one
// panics with it) and the context starts a new graph.
func (c *lazyCtx) flushLocked(reason string) {
	if len(c.g.Nodes) == 0 {
		c.reset()
		return
	}
	defer func() {
		if r := recover(); r != nil {
			dead := &lazyCtx{failed: r}
			for _, r := range c.pend {
				if st := r.get(); st != nil {
					if lv := st.lazy.Load(); lv != nil && lv.ctx == c {
						st.lazy.Store(&lazyVal{ctx: dead, v: lv.v})
					}
				}
			}
			c.reset()
			panic(r)
		}
	}()
	type liveSt struct {
		st *Storage
		k  int
	}
	var live []liveSt
	var outs []*ir.Value
	for _, p := range c.pendingOutputs(false) {
		live = append(live, liveSt{p.st, len(outs)})
		outs = append(outs, p.v)
	}
	targets := make([]*Storage, len(outs))
	for _, l := range live {
		targets[l.k] = l.st
	}
	c.run(reason, outs, targets, func(bufs []device.Buffer) {
		used := make([]bool, len(bufs))
		for _, l := range live {
			if l.st != nil {
				l.st.attach(bufs[l.k])
				used[l.k] = true
			}
		}
		for k, u := range used {
			if !u { // only dead storages wanted it
				c.be.Free(c.dev.Index, bufs[k])
			}
		}
	})
	c.flushes++
	c.seq.remember()
	c.reset()
}

// run compiles the pending graph with outputs outs (through the program
// provider), runs it with the bound parameters and hands the output buffers
// to deliver. Errors panic with *Error, as a failing eager op does.
func (c *lazyCtx) run(reason string, outs []*ir.Value, targets []*Storage, deliver func([]device.Buffer)) FlushStats {
	g := c.g
	g.SetOutputs(outs...)
	if len(outs) == 0 {
		return FlushStats{Reason: reason, Device: c.dev, Nodes: len(g.Nodes)}
	}
	t0 := time.Now()
	prog, info, err := GetProgram(context.Background(), ProgramRequest{Device: c.dev, Backend: c.be, Graph: g, Reason: reason})
	if err != nil {
		panic(&Error{Op: "fuse", Msg: fmt.Sprintf("compiling the %s graph (%d nodes) for %s: %v", reason, len(g.Nodes), c.dev, err), Err: err})
	}
	return c.runProgram(reason, prog, info, time.Since(t0), targets, deliver)
}

// runProgram runs prog (compiled from c.g) with the bound parameters and
// hands its output buffers to deliver (c.mu held). targets[k], when not
// nil, is the storage output k will be attached to in full: a parameter
// bound to that whole storage is lent to output k (donate).
func (c *lazyCtx) runProgram(reason string, prog device.Program, info ProgramInfo, compile time.Duration, targets []*Storage, deliver func([]device.Buffer)) FlushStats {
	g := c.g
	stats := FlushStats{Reason: reason, Device: c.dev, Nodes: len(g.Nodes), Outputs: len(g.Outputs),
		Fingerprint: info.Fingerprint, Tier: info.Tier, Compile: compile}
	in := make([]device.Operand, len(c.binds))
	for i, b := range c.binds {
		if b.st.freed.Load() {
			panic(&Error{Op: "fuse", Msg: "an input of the pending graph uses storage that was freed"})
		}
		in[i] = device.Operand{Buf: b.st.buf, DType: b.dt, Layout: b.l}
	}
	t1 := time.Now()
	bufs, err := prog.Run(context.Background(), c.dev.Index, in, device.RunOptions{Dynamic: c.dyn, Donate: c.donate(targets)})
	if err != nil {
		panic(&Error{Op: "fuse", Msg: fmt.Sprintf("running the %s graph (%d nodes, fingerprint %.12s) on %s: %v", reason, len(g.Nodes), info.Fingerprint, c.dev, err), Err: err})
	}
	if len(bufs) != len(g.Outputs) {
		panic(&Error{Op: "fuse", Msg: fmt.Sprintf("internal: program returned %d buffers for %d outputs", len(bufs), len(g.Outputs))})
	}
	deliver(bufs)
	stats.Run = time.Since(t1)
	runtime.KeepAlive(c.binds)
	if hs := flushHooks.Load(); hs != nil {
		for _, h := range *hs {
			(*h)(stats)
		}
	}
	logFlush(stats)
	return stats
}

// donate returns device.RunOptions.Donate for the bound parameters: the
// buffer of a storage that a program output replaces whole is lent to
// that output, since the storage releases it after the run anyway. A
// storage bound more than once, or bound as a partial view, lends nothing.
func (c *lazyCtx) donate(targets []*Storage) []int {
	if !donateBuffers {
		return nil
	}
	outOf := map[*Storage]int{}
	for k, st := range targets {
		if st != nil {
			outOf[st] = k
		}
	}
	if len(outOf) == 0 {
		return nil
	}
	var d []int
	seen := map[*Storage]int{}
	for i, b := range c.binds {
		seen[b.st]++
		k, ok := outOf[b.st]
		if !ok || b.l.Offset != 0 || !b.l.IsContiguous() || op.Numel(b.l.Shape)*b.dt.Size() != b.st.nbytes {
			continue
		}
		if d == nil {
			d = make([]int, len(c.binds))
			for j := range d {
				d[j] = -1
			}
		}
		d[i] = k
	}
	for i, b := range c.binds {
		if d != nil && seen[b.st] > 1 {
			d[i] = -1
		}
	}
	return d
}

// donateBuffers switches buffer donation (tests compare with it off).
var donateBuffers = true

// attach gives a pending storage its computed buffer (a storage that had a
// buffer before, and was written, releases the old one). A program that
// computed the value in the storage's own buffer (a lent parameter)
// returns that buffer: the storage keeps it.
func (st *Storage) attach(buf device.Buffer) {
	if st.handle != nil && st.buf == buf {
		st.lazy.Store(nil)
		return
	}
	if st.handle != nil {
		st.handle.release()
	}
	st.buf = buf
	st.setHandle(&freeHandle{be: st.be, index: st.dev.Index, buf: buf})
	st.lazy.Store(nil)
}
