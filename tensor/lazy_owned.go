package tensor

import (
	"sync"
	"sync/atomic"
)

// Liveness without a collection. A Fused-mode flush must produce the value
// of every pending tensor that might still be read. Go has no reference
// counts, and a forced garbage collection to find the unreferenced ones
// costs more than the small programs of a training step take to run (its
// cost grows with the heap, not with the graph), so a flush never forces
// one: it produces the value of every pending storage except those the
// library itself proved unreachable. Those are the temporaries of a
// backward pass: every tensor an op of the pass made on its own goroutine
// (the VJPs' results and intermediates, the partial sums of gradients) is
// reachable only through the pass, except the leaves' gradients, the
// tensors hooks and retain_grad saw, and anything a hook made (hooks are
// user code: the scope pauses while one runs). At the end of the pass the
// others are dropped from their pending graph: the graph still computes
// them where later values need them, but they are no outputs. The same
// holds for the functional result an in-place op copies into its
// destination, and for the intermediates of a composite's decomposition
// when no autograd node can hold them (the composite records its own VJP
// and decomposes without grad, or no gradient is needed): only the
// composite's results are kept. A repeated-sequence cut found inside such
// a scope waits for its end (cutIfRepeated), after the drop. Tensors
// user code made and dropped (a forward pass's activations) are
// materialised as Strict mode would have: that is the conservative part,
// for graphs below SetFuseGCBytes' size (32 MiB of pending tensors), whose
// flushes collect instead. SetFuseGC(true) restores the exact, collecting
// behaviour for every graph, for callers who prefer it.

// ownScope collects the pending storages one goroutine's ops make while it
// runs a backward pass in Fused mode.
type ownScope struct {
	made   []*Storage
	paused int
	// cut is the context whose repeated sequence was found while the
	// scope was active: the cut waits for the scope's end (cutIfRepeated),
	// so that the scope's temporaries are dropped first.
	cut *lazyCtx
}

// currentOwnScope returns the calling goroutine's scope, nil if none.
func currentOwnScope() *ownScope {
	if ownScopesActive.Load() == 0 {
		return nil
	}
	if v, ok := ownScopes.Load(goid()); ok {
		return v.(*ownScope)
	}
	return nil
}

// cutIfRepeated makes the cut a record inside the scope put off, if the
// pending sequence still repeats one flushed before. Called after
// dropUnkept on the scope's normal exit.
func (sc *ownScope) cutIfRepeated() {
	if sc == nil || sc.cut == nil {
		return
	}
	c := sc.cut
	sc.cut = nil
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed && c.trace == nil && backwardsRunning.Load() == 0 && len(c.g.Nodes) > 0 && c.seq.shouldCut() {
		c.flushLocked("repeat")
	}
}

var (
	ownScopesActive atomic.Int64
	ownScopes       sync.Map // goroutine id -> *ownScope
)

// beginOwnScope starts collecting the pending storages the calling
// goroutine's ops make (nil, and nothing collected, outside Fused mode or
// inside a trace, whose end finds its live tensors itself).
func beginOwnScope() *ownScope {
	if CurrentMode() != Fused || Tracing() {
		return nil
	}
	id := goid()
	if _, ok := ownScopes.Load(id); ok {
		return nil // a nested pass (Grad inside a hook): the outer one owns
	}
	sc := &ownScope{}
	ownScopes.Store(id, sc)
	ownScopesActive.Add(1)
	return sc
}

// end stops collecting. Called once per beginOwnScope, on every path.
func (sc *ownScope) end() {
	if sc == nil {
		return
	}
	ownScopes.Delete(goid())
	ownScopesActive.Add(-1)
	sc.made = nil
}

// user runs f, user code (a hook), with the scope paused: what f makes may
// be kept by it.
func (sc *ownScope) user(f func()) {
	if sc == nil {
		f()
		return
	}
	sc.paused++
	defer func() { sc.paused-- }()
	f()
}

// noteMade records st, a storage an op just made pending in c, in the
// calling goroutine's scope, if any.
func noteMade(c *lazyCtx, st *Storage) {
	if ownScopesActive.Load() == 0 || c.trace != nil {
		return
	}
	v, ok := ownScopes.Load(goid())
	if !ok {
		return
	}
	if sc := v.(*ownScope); sc.paused == 0 {
		sc.made = append(sc.made, st)
	}
}

// dropUnkept drops, from their pending graphs, the storages the scope
// collected that keep does not list and that are still pending: nothing
// outside the pass can reach them.
func (sc *ownScope) dropUnkept(keep map[*Storage]bool) {
	if sc == nil {
		return
	}
	for _, st := range sc.made {
		if keep[st] {
			continue
		}
		lv := st.lazy.Load()
		if lv == nil || lv.ctx.trace != nil || lv.ctx.failed != nil {
			continue
		}
		c := lv.ctx
		c.mu.Lock()
		c.drop(st)
		c.mu.Unlock()
	}
}

// droppedCtx is the context of dropped storages: reading one (which no
// code can reach) panics.
var droppedCtx = &lazyCtx{failed: &Error{Op: "fuse", Msg: "internal: a temporary of a backward pass, an in-place op or a decomposition was read after it ended"}}

// drop makes pending storage st no output of c's graph (c.mu held): its
// value stays in the graph for the nodes that use it.
func (c *lazyCtx) drop(st *Storage) {
	lv := st.lazy.Load()
	if lv == nil || lv.ctx != c {
		return
	}
	if k := c.pendIndex(st); k >= 0 {
		c.last[k] = nil
	}
	c.pendBytes -= int64(st.nbytes)
	st.lazy.Store(&lazyVal{ctx: droppedCtx, v: lv.v})
}
