package tensor

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"weak"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Reverse-mode autograd, define-by-run as PyTorch: an op whose inputs require
// grad records a node holding its VJP (from the op table), the inputs it
// saved (with their storage versions) and edges to the inputs' nodes.
// Backward walks the graph in reverse topological order.

// autogradMeta is the autograd state of a tensor.
type autogradMeta struct {
	requiresGrad bool
	grad         *Tensor
	node         *node // grad_fn; nil for leaves
	outIndex     int
	retainGrad   bool
	hooks        []func(*Tensor) *Tensor
	// readyHooks run during Backward as soon as this leaf's gradient for
	// the pass is complete (RegisterGradReadyHook).
	readyHooks []func(*Tensor)
	// consumed: the ready hooks take the pass's gradient; it is not
	// accumulated into grad (SetGradConsumedByHooks).
	consumed bool
	// leafLayout is the layout of the leaf tensor this meta belongs to
	// (set when an op records an edge to it): the layout its accumulated
	// gradient must have to be adopted without a copy (accumulateLeaf).
	leafLayout op.Layout
	hasLayout  bool
}

// edge points at where a gradient flows: an output of a node, or a leaf.
type edge struct {
	node     *node
	outIndex int
	leaf     *autogradMeta
}

type node struct {
	def      *op.Def
	attrs    op.Attrs
	saved    []*Tensor // inputs as seen by the op (detached views); nil for absent
	inMeta   []op.Meta // shapes and dtypes of the inputs (kept after release)
	versions []int64
	outs     []*Tensor // detached outputs, for VJPs that use them
	outVers  []int64   // storage versions of outs when recorded
	outMeta  []op.Meta
	next     []edge // one per input; zero edge for inputs without grad
	// tensorMeta[i] is the autograd meta of output i (for hooks and retain_grad).
	tensorMeta []*autogradMeta
	released   bool
	// custom marks a Function's node: its VJP is user code.
	custom bool
}

func (n *node) name() string { return n.def.Name }

func (t *Tensor) ag() *autogradMeta {
	if t.grad == nil {
		t.grad = &autogradMeta{}
	}
	return t.grad
}

// RequiresGrad reports whether gradients flow to t.
func (t *Tensor) RequiresGrad() bool { return t.grad != nil && t.grad.requiresGrad }

// SetRequiresGrad marks a leaf tensor as requiring grad (requires_grad_) and
// returns it. Only floating-point tensors can require gradients.
func (t *Tensor) SetRequiresGrad(on bool) *Tensor {
	if on && !t.dt.IsFloat() {
		errorf("requires_grad_", []*Tensor{t}, "only Tensors of floating point dtype can require gradients")
	}
	if t.grad != nil && t.grad.node != nil && !on {
		errorf("requires_grad_", []*Tensor{t}, "you can only change requires_grad flags of leaf variables")
	}
	t.ag().requiresGrad = on
	return t
}

// IsLeaf reports whether t was not produced by a recorded op.
func (t *Tensor) IsLeaf() bool { return t.grad == nil || t.grad.node == nil }

// Grad returns the accumulated gradient of a leaf (or of a non-leaf after
// RetainGrad), or nil.
func (t *Tensor) Grad() *Tensor {
	if t.grad == nil {
		return nil
	}
	return t.grad.grad
}

// SetGrad replaces the accumulated gradient (nil clears it, as zero_grad with
// set_to_none).
func (t *Tensor) SetGrad(g *Tensor) { t.ag().grad = g }

// RetainGrad makes Backward keep the gradient of a non-leaf tensor.
func (t *Tensor) RetainGrad() *Tensor {
	t.ag().retainGrad = true
	return t
}

// GradFn returns the name of the op that produced t, or "" for a leaf.
func (t *Tensor) GradFn() string {
	if t.grad == nil || t.grad.node == nil {
		return ""
	}
	return t.grad.node.name()
}

// RegisterHook adds a function called with t's gradient when it is computed;
// a non-nil result replaces the gradient (Tensor.register_hook).
func (t *Tensor) RegisterHook(h func(grad *Tensor) *Tensor) {
	if !t.RequiresGrad() {
		errorf("register_hook", []*Tensor{t}, "cannot register a hook on a tensor that doesn't require gradient")
	}
	t.grad.hooks = append(t.grad.hooks, h)
}

// RegisterGradReadyHook adds a function that Backward calls with leaf t's
// gradient for this pass as soon as no node still to run can add to it,
// while the rest of the backward pass has not run yet (the signal DDP uses
// to all-reduce gradient buckets while backward still runs). The gradient
// is the pass's own contribution, before it is accumulated into Grad (which
// happens at the end of Backward, as before); f must treat it as read-only
// and must not keep it past its return (copy what it needs). Hooks do not run
// for autograd.grad (Grad).
func (t *Tensor) RegisterGradReadyHook(f func(grad *Tensor)) {
	if !t.RequiresGrad() || !t.IsLeaf() {
		errorf("register_grad_ready_hook", []*Tensor{t}, "grad-ready hooks go on leaf tensors that require grad")
	}
	t.grad.readyHooks = append(t.grad.readyHooks, f)
}

// SetGradConsumedByHooks marks leaf t (with grad-ready hooks) so that its
// gradient for a pass belongs to those hooks: once they have run, Backward
// neither keeps it nor accumulates it into Grad, and frees its memory at
// once when nothing else the pass still holds can see it. FSDP uses it: its
// hook copies each full parameter's gradient into the unit's
// reduce-scatter, and the full gradients no longer all live until the end
// of backward. Grad stays as it was (nil for FSDP's parameters).
func (t *Tensor) SetGradConsumedByHooks(on bool) {
	if !t.RequiresGrad() || !t.IsLeaf() {
		errorf("set_grad_consumed_by_hooks", []*Tensor{t}, "only leaf tensors that require grad")
	}
	t.grad.consumed = on
}

// Detach returns a view of t's storage that is not part of any graph.
func (t *Tensor) Detach() *Tensor {
	d := *t
	d.grad = nil
	return &d
}

func anyRequiresGrad(in []*Tensor) bool {
	for _, t := range in {
		if t != nil && t.RequiresGrad() {
			return true
		}
	}
	return false
}

// record attaches a node for op d to its outputs.
func record(d *op.Def, a op.Attrs, in, out []*Tensor) {
	n := &node{def: d, attrs: a, saved: make([]*Tensor, len(in)), inMeta: make([]op.Meta, len(in)), versions: make([]int64, len(in)), next: make([]edge, len(in))}
	for i, t := range in {
		if t == nil {
			continue
		}
		n.inMeta[i] = t.meta()
		// An in-place op overwrites its destination, so its VJP cannot use
		// the old value: it is not saved (and not version-checked).
		if !slices.Contains(d.Inplace, i) {
			n.saved[i] = t.Detach()
		}
		if t.st != nil {
			n.versions[i] = t.st.version.Load()
		}
		if t.RequiresGrad() {
			m := t.grad
			if m.node != nil {
				n.next[i] = edge{node: m.node, outIndex: m.outIndex}
			} else {
				n.next[i] = edge{leaf: m}
				m.leafLayout, m.hasLayout = t.l, true
			}
		}
	}
	for i, o := range out {
		n.outs = append(n.outs, o.Detach())
		var v int64
		if o.st != nil {
			v = o.st.version.Load()
		}
		n.outVers = append(n.outVers, v)
		n.outMeta = append(n.outMeta, o.meta())
		if !o.dt.IsFloat() {
			n.tensorMeta = append(n.tensorMeta, nil)
			continue
		}
		m := &autogradMeta{requiresGrad: true, node: n, outIndex: i}
		o.grad = m
		n.tensorMeta = append(n.tensorMeta, m)
	}
}

// BackwardOpts are the options of BackwardWith.
type BackwardOpts struct {
	// Gradient is the gradient of the tensor Backward starts from; nil means
	// ones for a one-element tensor.
	Gradient *Tensor
	// RetainGraph keeps the saved tensors so Backward can run again.
	RetainGraph bool
}

// Backward computes the gradient of t (a one-element tensor) with respect to
// every leaf that requires grad, accumulating into their Grad.
func (t *Tensor) Backward() { t.BackwardWith(BackwardOpts{}) }

// BackwardWith is Backward with an explicit output gradient and options.
func (t *Tensor) BackwardWith(o BackwardOpts) {
	if !t.RequiresGrad() {
		errorf("backward", []*Tensor{t}, "element 0 of tensors does not require grad and does not have a grad_fn")
	}
	g := o.Gradient
	if g == nil {
		if t.Numel() != 1 {
			errorf("backward", []*Tensor{t}, "grad can be implicitly created only for scalar outputs")
		}
		g = fullLike(t, 1)
	}
	if !slices.Equal(g.l.Shape, t.l.Shape) {
		errorf("backward", []*Tensor{t, g}, "gradient shape %v does not match tensor shape %v", g.l.Shape, t.l.Shape)
	}
	NoGrad(func() { runBackward([]*Tensor{t}, []*Tensor{g.Detach()}, o.RetainGraph, nil) })
	// The end of Backward is a Fused-mode flush point (not inside a trace,
	// where the whole training step is one program).
	if CurrentMode() == Fused && !Tracing() {
		flushAll("backward")
	}
}

// Grad computes the sum over outputs of the vector-Jacobian products with
// cotangents (torch.autograd.grad): the gradients of outputs with respect to
// inputs, returned instead of accumulated into Grad (nil for an input the
// outputs do not depend on). Inputs must be leaves that require grad. The
// graph is kept when retainGraph is true.
func Grad(outputs, cotangents, inputs []*Tensor, retainGraph bool) []*Tensor {
	if len(outputs) != len(cotangents) {
		panic(&Error{Op: "grad", Msg: fmt.Sprintf("%d outputs but %d cotangents", len(outputs), len(cotangents))})
	}
	capture := map[*autogradMeta]*Tensor{}
	for _, t := range inputs {
		if !t.RequiresGrad() || !t.IsLeaf() {
			errorf("grad", []*Tensor{t}, "inputs must be leaf tensors that require grad")
		}
		capture[t.grad] = nil
	}
	var roots, gs []*Tensor
	for i, o := range outputs {
		if o == nil || cotangents[i] == nil || !o.RequiresGrad() {
			continue
		}
		roots = append(roots, o)
		gs = append(gs, cotangents[i].Detach())
	}
	NoGrad(func() { runBackward(roots, gs, retainGraph, capture) })
	out := make([]*Tensor, len(inputs))
	for i, t := range inputs {
		out[i] = capture[t.grad]
	}
	return out
}

func fullLike(t *Tensor, v float64) *Tensor {
	raw := make([]byte, t.Numel()*t.dt.Size())
	for i := 0; i < t.Numel(); i++ {
		dtype.PutFloat64(t.dt, raw, i, v)
	}
	var dev = t.st.dev
	return FromBytes(dev, t.dt, t.l.Shape, raw)
}

func runBackward(roots, rootGrads []*Tensor, retain bool, capture map[*autogradMeta]*Tensor) {
	backwardsRunning.Add(1)
	defer backwardsRunning.Add(-1)
	// own records which storages this pass allocated and which of them user
	// code saw, so that accumulateLeaf can adopt a gradient nothing else
	// can reach instead of copying it.
	own := newGradOwnership()
	// Freeing a pass's temporaries as it goes is for eager execution only:
	// in Fused mode (or a trace) a materialised storage may still be an
	// input of the pending graph.
	own.eager = CurrentMode() != Fused && !Tracing()
	// In Fused mode, what this pass makes and nobody else can reach is no
	// output of the pending graph (lazy_owned.go).
	own.scope = beginOwnScope()
	defer own.scope.end()
	// Leaf gradients are summed over all their contributions first, so that
	// hooks see the total once (as PyTorch runs AccumulateGrad once).
	var leaves []*autogradMeta
	leafGrads := map[*autogradMeta]*Tensor{}
	leaf := func(m *autogradMeta, g *Tensor) {
		if capture != nil {
			if _, ok := capture[m]; !ok {
				return
			}
		}
		if _, ok := leafGrads[m]; !ok {
			leaves = append(leaves, m)
		}
		leafGrads[m] = own.accumulate(leafGrads[m], g)
	}
	// Topological order by DFS from the roots' nodes.
	var order []*node
	seen := map[*node]bool{}
	var visit func(n *node)
	visit = func(n *node) {
		if seen[n] {
			return
		}
		seen[n] = true
		for _, e := range n.next {
			if e.node != nil {
				visit(e.node)
			}
		}
		order = append(order, n)
	}
	grads := map[*node][]*Tensor{}
	for i, r := range roots {
		m := r.grad
		if m.node == nil {
			if !m.hasLayout {
				m.leafLayout, m.hasLayout = r.l, true
			}
			leaf(m, rootGrads[i])
			continue
		}
		visit(m.node)
		if grads[m.node] == nil {
			grads[m.node] = make([]*Tensor, len(m.node.outMeta))
		}
		grads[m.node][m.outIndex] = own.accumulate(grads[m.node][m.outIndex], rootGrads[i])
	}
	// pending counts, for each leaf with grad-ready hooks, the edges to it
	// from nodes not run yet; readyAfter runs its hooks when that reaches 0.
	var pending map[*autogradMeta]int
	var fired map[*autogradMeta]bool // allocated on first use
	fire := func(m *autogradMeta) {
		if g := leafGrads[m]; g != nil && !fired[m] {
			if fired == nil {
				fired = map[*autogradMeta]bool{}
			}
			fired[m] = true
			if !m.consumed {
				own.escape(g)
			}
			for _, h := range m.readyHooks {
				own.scope.user(func() { h(g) })
			}
			if m.consumed && len(m.readyHooks) > 0 {
				// The hooks took it (and, by their contract, kept
				// nothing): drop it, and free it now if this pass made it
				// and nothing it still holds views it.
				delete(leafGrads, m)
				if own.freeable(g, leafGrads, grads) {
					g.st.free()
				}
			}
		}
	}
	if capture == nil {
		for _, n := range order {
			for _, e := range n.next {
				if e.leaf != nil && len(e.leaf.readyHooks) > 0 {
					if pending == nil {
						pending = map[*autogradMeta]int{}
					}
					pending[e.leaf]++
				}
			}
		}
	}
	readyAfter := func(n *node) {
		for _, e := range n.next {
			if e.leaf != nil && pending != nil {
				if c, ok := pending[e.leaf]; ok {
					pending[e.leaf] = c - 1
					if c == 1 {
						fire(e.leaf)
					}
				}
			}
		}
	}
	var prev *node
	for i := len(order) - 1; i >= 0; i-- {
		if prev != nil {
			readyAfter(prev)
		}
		n := order[i]
		prev = n
		gs := grads[n]
		delete(grads, n)
		if gs == nil {
			continue
		}
		if n.released {
			panic(&Error{Op: "backward", Msg: fmt.Sprintf("trying to backward through the graph a second time (through %s); use RetainGraph on the first Backward", n.name())})
		}
		// Hooks and retain_grad of the node's outputs.
		has := false
		for k, gk := range gs {
			if gk == nil {
				continue
			}
			has = true
			if tm := n.tensorMeta[k]; tm != nil {
				for _, h := range tm.hooks {
					own.escape(gk) // the hook may keep it
					var r *Tensor
					own.scope.user(func() { r = h(gk) })
					if r != nil {
						gk = r
					}
				}
				gs[k] = gk
				if tm.retainGrad {
					tm.grad = accumulate(tm.grad, gk)
					own.escape(tm.grad)
				}
			}
		}
		if !has {
			continue
		}
		if n.custom {
			for _, gk := range gs {
				own.escape(gk) // user code may keep it
			}
		}
		ing := callVJP(n, gs, own)
		if n.custom {
			for _, g := range ing {
				own.escape(g)
			}
		}
		if !retain {
			n.release()
		}
		for j, e := range n.next {
			if j >= len(ing) || ing[j] == nil || (e.node == nil && e.leaf == nil) {
				continue
			}
			gj := own.fitGrad(n, j, ing[j])
			if e.leaf != nil {
				leaf(e.leaf, gj)
				continue
			}
			if grads[e.node] == nil {
				grads[e.node] = make([]*Tensor, len(e.node.outMeta))
			}
			grads[e.node][e.outIndex] = own.accumulate(grads[e.node][e.outIndex], gj)
		}
		// The node's incoming gradients are consumed: free those this pass
		// made that nothing it still holds views (PyTorch frees them as
		// their reference counts drop), so a long backward's peak is its
		// widest point, not the sum of its steps.
		for _, gk := range gs {
			if own.freeable(gk, leafGrads, grads) {
				gk.st.free()
			}
		}
	}
	if prev != nil {
		readyAfter(prev)
	}
	if capture == nil {
		for _, m := range leaves {
			if len(m.readyHooks) > 0 {
				fire(m) // a root that is itself a leaf
			}
		}
	}
	if capture != nil {
		for _, m := range leaves {
			capture[m] = leafGrads[m]
		}
		own.release(leaves, leafGrads, true)
		return
	}
	// Every node's gradients are consumed by now: the leaves' sums are the
	// only places this pass still holds its tensors.
	for _, m := range leaves {
		own.hold(leafGrads[m])
	}
	for _, m := range leaves {
		if g := leafGrads[m]; g != nil {
			accumulateLeaf(m, g, own)
		}
	}
	own.release(leaves, leafGrads, false)
}

// release drops the pending storages the pass made that nothing outside it
// can reach (see lazy_owned.go): all but the leaves' gradients, their sums
// when they are handed to the caller (returned), and what user code saw.
// Called once the pass is done with its tensors. A sum that was
// accumulated into a leaf's gradient (copied into the leaf's layout, or
// added to its gradient) is a temporary too, unless a hook saw it.
//
// Eager storages among them are freed at once: their buffers go back to
// the allocator for the next step instead of waiting for the garbage
// collector to find them. (A training step's backward temporaries —
// masks, selects, pooling and convolution gradients — were otherwise
// mapped afresh every step: hundreds of first-touch page faults a step.)
func (o *gradOwnership) release(leaves []*autogradMeta, sums map[*autogradMeta]*Tensor, sumsOut bool) {
	if len(o.fresh) == 0 && (o.scope == nil || len(o.scope.made) == 0) {
		return
	}
	keep := map[*Storage]bool{}
	for _, m := range leaves {
		ts := []*Tensor{m.grad}
		if sumsOut {
			ts = append(ts, sums[m])
		}
		for _, t := range ts {
			if t != nil && t.st != nil {
				keep[t.st] = true
			}
		}
	}
	for w := range o.escaped {
		if st := w.Value(); st != nil {
			keep[st] = true
		}
	}
	for w := range o.fresh {
		st := w.Value()
		if !o.eager || st == nil || keep[st] || st.handle == nil || st.lazy.Load() != nil {
			continue
		}
		st.free()
	}
	if o.scope != nil && len(o.scope.made) > 0 {
		o.scope.dropUnkept(keep)
	}
}

// gradOwnership is what one Backward knows about the storages of the
// gradients it computes, for AccumulateGrad's decision to adopt ("steal") a
// gradient instead of copying it. Go has no reference counts, so ownership
// is proved rather than counted: a storage can be adopted only when this
// pass allocated it (so it is no saved tensor, forward value, user input or
// root gradient), no user code saw it (hooks, retain_grad), and exactly one
// leaf's gradient views it at the end, when every node's incoming
// gradients have been consumed.
//
// The sets hold weak pointers: an intermediate gradient's storage is freed
// (or, in Fused mode, not materialised) as soon as the pass drops it, as
// before.
type gradOwnership struct {
	fresh   map[weak.Pointer[Storage]]bool // allocated by this pass's own ops
	escaped map[weak.Pointer[Storage]]bool // seen by user code or kept elsewhere
	holders map[weak.Pointer[Storage]]int  // leaf gradients viewing the storage
	// eager: the pass runs op by op (Strict, Debug), so it may free its
	// storages as soon as nothing can reach them.
	eager bool
	// scope collects the pending storages the pass makes (Fused mode).
	scope *ownScope
}

func newGradOwnership() *gradOwnership {
	return &gradOwnership{fresh: map[weak.Pointer[Storage]]bool{}, escaped: map[weak.Pointer[Storage]]bool{}, holders: map[weak.Pointer[Storage]]int{}}
}

// made records the storages of an op's results that none of its inputs
// views: the op allocated them (no op returns storage it did not get or
// allocate — there are no tensor caches).
func (o *gradOwnership) made(in []*Tensor, out ...*Tensor) {
	for _, t := range out {
		if t == nil || t.st == nil {
			continue
		}
		mine := true
		for _, x := range in {
			if x != nil && x.st == t.st {
				mine = false
				break
			}
		}
		if mine {
			o.fresh[weak.Make(t.st)] = true
		}
	}
}

// freeable reports whether g's storage can be freed in the middle of the
// pass: an eager storage this pass made, seen by no user code, and viewed
// by no leaf gradient or pending node gradient the pass still holds.
func (o *gradOwnership) freeable(g *Tensor, leafGrads map[*autogradMeta]*Tensor, grads map[*node][]*Tensor) bool {
	if !o.eager || g == nil || g.st == nil || g.st.handle == nil || g.st.lazy.Load() != nil || g.st.freed.Load() {
		return false
	}
	st := g.st
	w := weak.Make(st)
	if !o.fresh[w] || o.escaped[w] {
		return false
	}
	for _, t := range leafGrads {
		if t != nil && t.st == st {
			return false
		}
	}
	for _, ts := range grads {
		for _, t := range ts {
			if t != nil && t.st == st {
				return false
			}
		}
	}
	return true
}

// escape marks t's storage as visible outside this pass.
func (o *gradOwnership) escape(t *Tensor) {
	if t != nil && t.st != nil {
		o.escaped[weak.Make(t.st)] = true
	}
}

// hold counts a leaf gradient as a holder of its storage.
func (o *gradOwnership) hold(t *Tensor) {
	if t != nil && t.st != nil {
		o.holders[weak.Make(t.st)]++
	}
}

// accumulate is accumulate recording the sum's storage as this pass's.
func (o *gradOwnership) accumulate(acc, g *Tensor) *Tensor {
	r := accumulate(acc, g)
	if r != g {
		o.made([]*Tensor{acc, g}, r)
	}
	return r
}

// fitGrad is fitGrad recording a converted gradient's storage as this
// pass's.
func (o *gradOwnership) fitGrad(n *node, j int, g *Tensor) *Tensor {
	r := fitGrad(n, j, g)
	if r != g {
		o.made([]*Tensor{g}, r)
	}
	return r
}

// adoptable reports whether leaf m may take g as its gradient without a
// copy: g's storage is this pass's alone (see gradOwnership), g views all
// of it, and g has the layout PyTorch's gradient layout contract asks for
// (the parameter's strides when the parameter is dense and
// non-overlapping — for a contiguous parameter, contiguous).
func (o *gradOwnership) adoptable(m *autogradMeta, g *Tensor) bool {
	if o == nil || g == nil || g.st == nil || g.wrapped || !m.hasLayout {
		return false
	}
	st := g.st
	w := weak.Make(st)
	if !o.fresh[w] || o.escaped[w] || o.holders[w] != 1 {
		return false
	}
	if g.l.Offset != 0 || op.Numel(g.l.Shape)*g.dt.Size() != st.nbytes {
		return false
	}
	if g.vsrc != nil {
		// A view of a pending value (Fused mode, a trace): adopting it
		// would make the program produce the base value and the view
		// both; the copy is the view's value itself, not a memory copy.
		return false
	}
	p := m.leafLayout
	if !slices.Equal(p.Shape, g.l.Shape) {
		return false
	}
	if p.IsContiguous() {
		return g.l.IsContiguous()
	}
	if !denseNonOverlapping(p) {
		return false
	}
	for i, d := range p.Shape {
		if d > 1 && p.Strides[i] != g.l.Strides[i] {
			return false
		}
	}
	return true
}

// denseNonOverlapping reports whether l's elements fill a block of
// Numel(shape) consecutive positions, each once (a permutation of a
// contiguous layout).
func denseNonOverlapping(l op.Layout) bool {
	type dim struct{ size, stride int }
	var ds []dim
	for i, d := range l.Shape {
		if d == 0 {
			return true
		}
		if d > 1 {
			ds = append(ds, dim{d, l.Strides[i]})
		}
	}
	slices.SortFunc(ds, func(a, b dim) int { return a.stride - b.stride })
	want := 1
	for _, d := range ds {
		if d.stride != want {
			return false
		}
		want *= d.size
	}
	return true
}

func (n *node) release() {
	n.released = true
	n.saved = nil
	n.outs = nil
}

func callVJP(n *node, gs []*Tensor, own *gradOwnership) []*Tensor {
	if n.def.VJP == nil {
		panic(&Error{Op: n.name(), Msg: "the derivative for '" + n.name() + "' is not implemented"})
	}
	// Saved tensors are version-checked when the VJP uses one (as PyTorch
	// checks the variables a node saved), so a VJP that reads only shapes
	// (add's) does not care whether its inputs changed since.
	saved := map[*Tensor]savedRef{}
	for i, t := range n.saved {
		if t != nil && t.st != nil {
			saved[t] = savedRef{"input", i, n.versions[i]}
		}
	}
	for i, t := range n.outs {
		if t != nil && t.st != nil {
			saved[t] = savedRef{"output", i, n.outVers[i]}
		}
	}
	in := make([]op.Value, len(n.saved))
	for i, t := range n.saved {
		if t != nil {
			in[i] = t
		}
	}
	out := make([]op.Value, len(n.outs))
	for i, t := range n.outs {
		out[i] = t
	}
	gout := make([]op.Value, len(gs))
	for i, g := range gs {
		if g == nil {
			// Materialise zeros for outputs without a gradient.
			m := n.outMeta[i]
			if m.DType.IsFloat() {
				gout[i] = zerosOn(n.outs[i], m)
			}
			continue
		}
		gout[i] = g
	}
	var dev = n.outs[0].st.dev
	b := &vjpBuilder{eagerBuilder: &eagerBuilder{parent: n.name() + " (backward)", dev: dev, be: backendOf(dev)}, needs: make([]bool, len(n.next)), node: n, saved: saved, own: own}
	for j, e := range n.next {
		b.needs[j] = e.node != nil || e.leaf != nil
	}
	res := n.def.VJP(b, in, out, gout, n.attrs)
	ts := make([]*Tensor, len(res))
	for i, r := range res {
		if r != nil {
			ts[i] = r.(*Tensor)
		}
	}
	return ts
}

func zerosOn(like *Tensor, m op.Meta) *Tensor {
	raw := make([]byte, op.Numel(m.Shape)*m.DType.Size())
	return FromBytes(like.st.dev, m.DType, m.Shape, raw)
}

// fitGrad casts a VJP result to the input's dtype and checks its shape.
func fitGrad(n *node, j int, g *Tensor) *Tensor {
	shape, dt := n.inMeta[j].Shape, n.inMeta[j].DType
	if !slices.Equal(g.l.Shape, shape) {
		panic(&Error{Op: n.name(), Msg: fmt.Sprintf("internal: VJP of %s returned gradient of shape %v for input %d of shape %v", n.name(), g.l.Shape, j, shape)})
	}
	if g.dt != dt {
		g = Apply1("convert", []*Tensor{g}, op.Attrs{"dtype": dt})
	}
	return g
}

func accumulate(acc, g *Tensor) *Tensor {
	if acc == nil {
		return g
	}
	return Apply1("add", []*Tensor{acc, g}, nil)
}

// accumulateLeaf is PyTorch's AccumulateGrad: it runs the leaf's hooks on
// g, then sets the leaf's gradient to g, or adds g to the one it has. A
// first gradient is adopted as is when own proves nothing else can see its
// storage and it has the leaf's layout; otherwise it is copied (a VJP result
// may alias a saved tensor, the user's output gradient, or another leaf's
// gradient, and the leaf's gradient must not change when they do).
func accumulateLeaf(m *autogradMeta, g *Tensor, own *gradOwnership) {
	for _, h := range m.hooks {
		own.escape(g) // the hook may keep it
		var r *Tensor
		own.scope.user(func() { r = h(g) })
		if r != nil {
			g = r
		}
	}
	if m.grad == nil {
		if own.adoptable(m, g) {
			if g.grad != nil {
				g = g.Detach()
			}
			m.grad = g
			return
		}
		leafGradCopies.Add(1)
		m.grad = copyInLayout(g, m)
		return
	}
	m.grad = Apply1("add", []*Tensor{m.grad, g}, nil)
}

// copyInLayout copies g into a new tensor with the layout PyTorch's
// gradient layout contract gives leaf m's gradient: the leaf's strides
// when it is dense and non-overlapping (a permuted contiguous tensor:
// copied as the permutation into memory order, made contiguous, and
// permuted back), contiguous otherwise.
func copyInLayout(g *Tensor, m *autogradMeta) *Tensor {
	p := m.leafLayout
	if !m.hasLayout || p.IsContiguous() || !denseNonOverlapping(p) || !slices.Equal(p.Shape, g.l.Shape) {
		return Apply1("copy", []*Tensor{g}, nil)
	}
	// perm lists the axes from the largest stride to the smallest; size-1
	// axes, whose strides do not matter, go first.
	key := func(ax int) int {
		if p.Shape[ax] == 1 {
			return math.MaxInt
		}
		return p.Strides[ax]
	}
	perm := make([]int, len(p.Shape))
	for i := range perm {
		perm[i] = i
	}
	slices.SortStableFunc(perm, func(a, b int) int { return cmp.Compare(key(b), key(a)) })
	inv := make([]int, len(perm))
	for i, ax := range perm {
		inv[ax] = i
	}
	c := Apply1("copy", []*Tensor{Apply1("permute", []*Tensor{g}, op.Attrs{"dims": perm})}, nil)
	return Apply1("permute", []*Tensor{c}, op.Attrs{"dims": inv})
}

// leafGradCopies counts the first leaf gradients accumulateLeaf copied
// rather than adopted (read by tests).
var leafGradCopies atomic.Int64

// preserveSaved handles the in-place pattern t.op_(...) == copy_(t, op(t,
// ...)): the node that computed the new value may have saved t itself, which
// the in-place write is about to overwrite. Those saved inputs are replaced
// by copies first (as PyTorch saves the original self of in-place ops), so
// Backward sees the values the op used. Older saves of the same storage
// further up the graph still fail the version check, as in PyTorch.
func preserveSaved(d *op.Def, in []*Tensor) {
	for _, i := range d.Inplace {
		dst := in[i]
		if dst == nil || dst.st == nil {
			continue
		}
		for j, src := range in {
			if src == nil || slices.Contains(d.Inplace, j) || src.grad == nil || src.grad.node == nil {
				continue
			}
			n := src.grad.node
			for k, sv := range n.saved {
				if sv == nil || sv.st != dst.st || n.released {
					continue
				}
				var c *Tensor
				NoGrad(func() { c = Apply1("copy", []*Tensor{sv}, nil) })
				n.saved[k] = c
				n.versions[k] = c.st.version.Load()
			}
		}
	}
}

// vjpBuilder runs a VJP eagerly and tells it which inputs need a gradient
// (op.GradMask), so that it can skip the others' work.
type vjpBuilder struct {
	*eagerBuilder
	needs []bool
	node  *node
	saved map[*Tensor]savedRef
	own   *gradOwnership // records the storages the VJP's ops allocate
}

// savedRef is what a node saved a tensor as: input or output i, at version.
type savedRef struct {
	kind    string
	i       int
	version int64
}

// Call checks that the saved tensors among in were not modified in place
// since they were saved, then runs the op.
func (b *vjpBuilder) Call(name string, in []op.Value, a op.Attrs) []op.Value {
	for _, v := range in {
		t, ok := v.(*Tensor)
		if !ok {
			continue
		}
		if r, ok := b.saved[t]; ok {
			if cur := t.st.version.Load(); cur != r.version {
				n := b.node.name()
				panic(&Error{Op: n, Msg: fmt.Sprintf("one of the variables needed for gradient computation has been modified by an inplace operation: %s %d of %s is at version %d; expected version %d instead", r.kind, r.i, n, cur, r.version)})
			}
		}
	}
	res := b.eagerBuilder.Call(name, in, a)
	if b.own != nil {
		ins := make([]*Tensor, 0, len(in))
		for _, v := range in {
			if t, ok := v.(*Tensor); ok {
				ins = append(ins, t)
			}
		}
		for _, r := range res {
			if t, ok := r.(*Tensor); ok {
				b.own.made(ins, t)
			}
		}
	}
	return res
}

// NeedsGrad reports whether input i of the node being differentiated has a
// gradient edge.
func (b *vjpBuilder) NeedsGrad(i int) bool { return i >= len(b.needs) || b.needs[i] }
