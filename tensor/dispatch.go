package tensor

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

var defaultFloat atomic.Int32

// forceDecompose makes composites with a direct kernel run their
// decomposition instead (the conformance suite checks the two agree).
var forceDecompose atomic.Bool

func init() { defaultFloat.Store(int32(dtype.F32)) }

// SetDefaultDType sets the dtype Go float scalars and int-to-float promotion
// produce (torch.set_default_dtype); it must be f32 or f64 (or bf16/f16).
func SetDefaultDType(d dtype.DType) dtype.DType {
	if !d.IsFloat() {
		panic(&Error{Op: "set_default_dtype", Msg: "default dtype must be floating point, got " + d.String()})
	}
	return dtype.DType(defaultFloat.Swap(int32(d)))
}

// DefaultDType returns the default floating dtype.
func DefaultDType() dtype.DType { return dtype.DType(defaultFloat.Load()) }

// Apply runs the op named name (see package op) on in with attributes a and
// returns its outputs. It is the single entry point every typed function uses:
// it checks devices, applies type promotion, and dispatches to the device's
// kernel or to the op's decomposition. A nil element of in is an absent
// optional input.
func Apply(name string, in []*Tensor, a op.Attrs) []*Tensor {
	return apply("", name, in, a)
}

// Apply1 is Apply for single-output ops.
func Apply1(name string, in []*Tensor, a op.Attrs) *Tensor {
	return apply("", name, in, a)[0]
}

// ApplyOn is Apply for ops that may have no tensor inputs (creation and
// random ops such as full, iota, random_bits): when no input carries a
// device, the op runs on dev. Ops with tensor inputs run on their inputs'
// device as with Apply.
func ApplyOn(dev device.Device, name string, in []*Tensor, a op.Attrs) []*Tensor {
	return applyOn("", name, in, a, &dev)
}

func apply(parent, name string, in []*Tensor, a op.Attrs) []*Tensor {
	return applyOn(parent, name, in, a, nil)
}

// applyOn is apply with a preferred device for ops without device inputs.
func applyOn(parent, name string, in []*Tensor, a op.Attrs, pref *device.Device) []*Tensor {
	d, ok := op.Lookup(name)
	if !ok {
		errorf(opPath(parent, name), in, "unknown op")
	}
	return applyDefOn(parent, d, in, a, pref)
}

// opPath names an op call in errors: the op, after its parent's name when
// it runs inside another op's decomposition.
func opPath(parent, name string) string {
	if parent != "" {
		return parent + " > " + name
	}
	return name
}

// applyDef is Apply for an op given by its handle (op.Add), as the
// generated wrappers call it.
func applyDef(d *op.Def, in []*Tensor, a op.Attrs) []*Tensor {
	return applyDefOn("", d, in, a, nil)
}

// applyDef1 is applyDef for single-output ops.
func applyDef1(d *op.Def, in []*Tensor, a op.Attrs) *Tensor {
	return applyDefOn("", d, in, a, nil)[0]
}

// applyDefOn is applyOn for an op given by its handle. It runs one op call
// through the steps below in order; each step reads what the earlier ones
// filled into the opCall, and any of them may panic with the op's *Error.
func applyDefOn(parent string, d *op.Def, in []*Tensor, a op.Attrs, pref *device.Device) []*Tensor {
	c := opCall{d: d, path: opPath(parent, d.Name), in: in}
	c.checkInputs()
	c.normalizeAttrs(a)
	c.chooseDevice(pref)
	c.promoteInputs()
	c.checkDType()
	c.checkInplaceOverlap()
	c.resolveGrad()
	if d.Kind == op.View {
		return c.runView()
	}
	c.inferOutputs()
	c.seedRandom()
	c.lz = lazyContextFor(c.dev, c.be)
	if out, ok := c.runBoundedMean(); ok {
		return out
	}
	decompose := c.mustDecompose()
	if c.be.Supports(d, c.kdt) && !decompose {
		return c.runKernel()
	}
	if d.Decompose != nil {
		return c.runDecomposition()
	}
	panic(c.noKernelError())
}

// opCall is one call of an op on its way through applyDefOn's steps.
type opCall struct {
	d    *op.Def
	path string    // the op in errors (opPath)
	in   []*Tensor // the inputs; promoted by promoteInputs
	a    op.Attrs  // normalized attributes, with a random op's seed

	dev      device.Device
	be       device.Backend
	dt       dtype.DType // the first present promoted input's dtype (Invalid without inputs)
	needGrad bool        // an input requires grad and grad mode is on
	outMeta  []op.Meta   // the shape rule's outputs
	kdt      dtype.DType // the dtype a kernel is chosen by: dt, or output 0's without inputs
	lz       *lazyCtx    // the recording context (Fused mode), or nil to run now
}

// checkInputs checks the input count and that every required input is
// present and no input's storage was freed.
func (c *opCall) checkInputs() {
	d, in := c.d, c.in
	if err := d.CheckArity(len(in)); err != nil {
		errorf(c.path, in, "%v", err)
	}
	for i, t := range in {
		if t == nil && !d.InputOptional(i) {
			errorf(c.path, in, "input %d (%s) is required", i, inputName(d, i))
		}
		if t != nil && t.st != nil && t.st.freed.Load() {
			errorf(c.path, in, "input %d (%s) uses storage that was freed", i, inputName(d, i))
		}
	}
}

// normalizeAttrs checks a against the op's attributes and fills in the
// defaults.
func (c *opCall) normalizeAttrs(a op.Attrs) {
	na, err := c.d.Normalize(a)
	if err != nil {
		errorf(c.path, c.in, "%v", err)
	}
	c.a = na
}

// chooseDevice picks the device the op runs on: its inputs' common device,
// or pref (when not nil) for an op without device inputs.
func (c *opCall) chooseDevice(pref *device.Device) {
	c.dev, c.be = commonDevice(c.path, c.in)
	if pref != nil && !hasDeviceInput(c.in) {
		c.dev, c.be = *pref, backendOf(*pref)
	}
}

// promoteInputs converts the promoted inputs to their common dtype and
// materialises wrapped scalars on the device (promote), and notes the
// dtype of the first present input.
func (c *opCall) promoteInputs() {
	c.in = promote(c.path, c.d, c.a, c.in, c.dev, c.be)
	for _, t := range c.in {
		if t != nil {
			c.dt = t.dt
			break
		}
	}
}

// checkDType rejects a promoted dtype outside the op's DTypes.
func (c *opCall) checkDType() {
	if c.dt != dtype.Invalid && !c.d.DTypes.Has(c.dt) {
		errorf(c.path, c.in, "not implemented for dtype %s (supports %s)", c.dt, c.d.DTypes)
	}
}

// checkInplaceOverlap rejects writing to a tensor whose elements share
// memory locations.
func (c *opCall) checkInplaceOverlap() {
	for _, i := range c.d.Inplace {
		if t := c.in[i]; t != nil && hasInternalOverlap(t.l) {
			errorf(c.path, c.in, "unsupported operation: more than one element of the written-to tensor refers to a single memory location; clone it before writing")
		}
	}
}

// resolveGrad decides whether the call is recorded for autograd and then
// rejects writing in place to a leaf that requires grad.
func (c *opCall) resolveGrad() {
	c.needGrad = anyRequiresGrad(c.in) && GradEnabled()
	if !c.needGrad {
		return
	}
	for _, i := range c.d.Inplace {
		if t := c.in[i]; t != nil && t.RequiresGrad() && t.IsLeaf() {
			errorf(c.path, c.in, "a leaf Variable that requires grad is being used in an in-place operation")
		}
	}
}

// runView computes a view op's layout (no kernel runs) and records it.
func (c *opCall) runView() []*Tensor {
	d, in := c.d, c.in
	out := []*Tensor{applyView(c.path, d, in[0], c.a)}
	if in[0].pending() && out[0].st == in[0].st && d != op.AsStrided {
		// Recorded graphs show the view op itself (a transpose stays a
		// transpose), not a strided gather of the storage.
		out[0].vsrc = &viewSrc{base: in[0], d: d, a: c.a, ver: in[0].st.version.Load()}
	}
	if c.needGrad {
		record(d, c.a, in, out)
	}
	return out
}

// inferOutputs runs the shape rule and sets the dtype a kernel is chosen by.
func (c *opCall) inferOutputs() {
	metas := make([]op.Meta, len(c.in))
	for i, t := range c.in {
		if t != nil {
			metas[i] = t.meta()
		}
	}
	outMeta, err := c.d.Infer(metas, c.a)
	if err != nil {
		errorf(c.path, c.in, "%v", err)
	}
	c.outMeta = outMeta
	c.kdt = c.dt
	if c.kdt == dtype.Invalid && len(outMeta) > 0 {
		c.kdt = outMeta[0].DType
	}
}

// seedRandom draws a random op's seed and offset unless the caller set
// them.
func (c *opCall) seedRandom() {
	if c.d.Random && !c.a.Has("seed") {
		c.a = drawSeed(c.a, c.outMeta)
	}
}

// runBoundedMean records mean over padded (bounded) dims as a masked sum
// and a scaling, which record their own gradients; ok is false when that
// does not apply.
func (c *opCall) runBoundedMean() (out []*Tensor, ok bool) {
	if c.lz == nil || c.lz.bs == nil || c.d != op.Mean {
		return nil, false
	}
	t, ok := c.lz.boundedMean(c.path, c.in[0], c.a)
	if !ok {
		return nil, false
	}
	return []*Tensor{t}, true
}

// mustDecompose reports whether a composite runs its decomposition even
// where the backend has a kernel for it.
func (c *opCall) mustDecompose() bool {
	d, lz := c.d, c.lz
	// A composite without its own VJP runs its decomposition when gradients
	// are needed, so that the primitives record the graph.
	// Recorded graphs hold random primitives only, whose seeds are the
	// programs' per-run data (op.Def.DynamicAttrs).
	return d.Kind == op.Composite && d.Decompose != nil && (forceDecompose.Load() || (c.needGrad && d.VJP == nil) ||
		(d.Random && lz != nil && (d.DrawsWhen == nil || d.DrawsWhen(c.a))) ||
		(d.MatmulInside && belowHighest(MatmulPrecision())) ||
		// Composites on padded (bounded) dims run their parts, which the
		// padding rules know (elementwise composites stay whole).
		(lz != nil && lz.bs != nil && d.Group != "elementwise" && lz.boundedInputs(c.in)))
}

// runKernel launches (or, in Fused mode, records) the backend's kernel and
// records the call for autograd.
func (c *opCall) runKernel() []*Tensor {
	if c.needGrad && len(c.d.Inplace) > 0 {
		preserveSaved(c.d, c.in)
	}
	out := launch(c.path, c.d, c.in, c.a, c.outMeta, c.dev, c.be, c.lz)
	if c.needGrad {
		record(c.d, c.a, c.in, out)
	}
	return out
}

// runDecomposition runs a composite as its decomposition, on the same
// device. With gradients needed and the composite's own VJP, the inner ops
// run without recording and the call records one node.
func (c *opCall) runDecomposition() []*Tensor {
	d, in := c.d, c.in
	b := &eagerBuilder{parent: c.path, dev: c.dev, be: c.be}
	vals := make([]op.Value, len(in))
	for i, t := range in {
		if t != nil {
			vals[i] = t
		}
	}
	// In Fused mode the decomposition's intermediates are no outputs of
	// the pending graph when nothing but the decomposition can reach them:
	// no autograd node saved one (the composite's own VJP is recorded
	// instead, or no gradient is needed), so only its results are kept
	// (lazy_owned.go).
	var sc *ownScope
	if !c.needGrad || d.VJP != nil {
		sc = beginOwnScope()
		defer sc.end()
	}
	var res []op.Value
	if c.needGrad && d.VJP != nil {
		// The composite records one node with its own VJP.
		NoGrad(func() { res = d.Decompose(b, vals, c.a) })
	} else {
		res = d.Decompose(b, vals, c.a)
	}
	out := make([]*Tensor, len(res))
	for i, r := range res {
		out[i] = r.(*Tensor)
	}
	checkDecomposition(c.path, in, d, out, c.outMeta)
	if sc != nil && len(sc.made) > 0 {
		keep := make(map[*Storage]bool, len(out))
		for _, t := range out {
			keep[t.st] = true
		}
		sc.dropUnkept(keep)
		sc.cutIfRepeated()
	}
	if c.needGrad && d.VJP != nil {
		out = detachAll(out)
		record(d, c.a, in, out)
	}
	return out
}

// noKernelError is the error for a primitive the device cannot run.
func (c *opCall) noKernelError() *Error {
	return &Error{Op: c.path, Msg: fmt.Sprintf("%v: no kernel for %s on device %s (dtype %s)", device.ErrUnsupported, c.d.Name, c.dev, c.kdt), Err: device.ErrUnsupported}
}

// hasInternalOverlap reports whether several elements of l share a memory
// location through a zero stride (what PyTorch's has_internal_overlap
// detects for sure; other overlaps need as_strided and are not checked).
func hasInternalOverlap(l op.Layout) bool {
	for i, d := range l.Shape {
		if d > 1 && l.Strides[i] == 0 {
			return true
		}
	}
	return false
}

// detachAll returns the outputs without the autograd history that inner ops
// may have attached (the caller records its own node).
func detachAll(ts []*Tensor) []*Tensor {
	out := make([]*Tensor, len(ts))
	for i, t := range ts {
		out[i] = t.Detach()
	}
	return out
}

func inputName(d *op.Def, i int) string {
	if i < len(d.Inputs) {
		return strings.TrimRight(d.Inputs[i], "?*")
	}
	return strings.TrimRight(d.Inputs[len(d.Inputs)-1], "?*")
}

// commonDevice returns the device all non-scalar inputs share, or panics
// naming the devices that differ. Ops with no device inputs use cpu.
func commonDevice(path string, in []*Tensor) (device.Device, device.Backend) {
	var first *Tensor
	for _, t := range in {
		if t == nil || t.st == nil {
			continue
		}
		if first == nil {
			first = t
			continue
		}
		if t.st.dev != first.st.dev {
			errorf(path, in, "expected all tensors to be on the same device, but found at least two devices, %s and %s", first.st.dev, t.st.dev)
		}
	}
	if first == nil {
		return defaultDevice()
	}
	return first.st.dev, first.st.be
}

// hasDeviceInput reports whether any input lives on a device (wrapped
// scalars and absent inputs do not).
func hasDeviceInput(in []*Tensor) bool {
	for _, t := range in {
		if t != nil && t.st != nil {
			return true
		}
	}
	return false
}

func defaultDevice() (device.Device, device.Backend) {
	be, err := device.Lookup("cpu")
	if err != nil {
		panic(&Error{Op: "device", Msg: "no cpu backend registered (import github.com/gotpu/gotpu/backend/cpu)", Err: err})
	}
	return device.Device{Type: "cpu"}, be
}

// promote converts the promoted inputs of d to their common dtype and
// materialises wrapped scalars on dev. The promotion rule itself is
// op.PromotedDTypes, which the IR tracer shares.
func promote(path string, d *op.Def, a op.Attrs, in []*Tensor, dev device.Device, be device.Backend) []*Tensor {
	needs := false
	for _, t := range in {
		if t != nil && t.st == nil {
			needs = true
		}
	}
	if d.Promote == op.NoPromotion && d.PromoteWith == nil && !needs {
		return in
	}
	metas := make([]op.Meta, len(in))
	for i, t := range in {
		if t != nil {
			metas[i] = t.meta()
		}
	}
	targets, _ := op.PromotedDTypes(d, metas, a, DefaultDType())
	out := slices.Clone(in)
	for i, t := range in {
		if t == nil {
			continue
		}
		switch target := targets[i]; {
		case t.st == nil: // wrapped scalar: materialise on dev
			out[i] = materialize(t, target, dev, be)
		case t.dt != target:
			out[i] = apply(path, "convert", []*Tensor{t}, op.Attrs{"dtype": target})[0]
		}
	}
	return out
}

func applyView(path string, d *op.Def, t *Tensor, a op.Attrs) *Tensor {
	l, ok, err := d.ViewFn(t.l, a)
	if err != nil {
		errorf(path, []*Tensor{t}, "%v", err)
	}
	if !ok {
		c := contiguous(path, t)
		l, ok, err = d.ViewFn(c.l, a)
		if err != nil || !ok {
			errorf(path, []*Tensor{t}, "view is not possible even on a contiguous copy: %v", err)
		}
		return c.view(l)
	}
	return t.view(l)
}

func contiguous(path string, t *Tensor) *Tensor {
	if t.l.IsContiguous() {
		return t
	}
	return apply(path, "copy", []*Tensor{t}, nil)[0]
}

// launch runs d now, or records it into lz (the caller's lazyContextFor)
// when that is not nil.
func launch(path string, d *op.Def, in []*Tensor, a op.Attrs, outMeta []op.Meta, dev device.Device, be device.Backend, lz *lazyCtx) []*Tensor {
	if lz != nil {
		return lz.record(path, d, in, a, outMeta)
	}
	debug := CurrentMode() == Debug
	var l *device.Launch
	if n := len(in) + len(outMeta); n <= len(launchBlock{}.ops) {
		lb := &launchBlock{}
		l = &lb.l
		*l = device.Launch{Op: d, Attrs: a, In: lb.ops[:len(in):len(in)], Out: lb.ops[len(in):len(in):n]}
	} else {
		l = &device.Launch{Op: d, Attrs: a, In: make([]device.Operand, len(in)), Out: make([]device.Operand, 0, len(outMeta))}
	}
	if d.NeedsContiguous {
		// Contiguous copies replace inputs below; the caller's slice (the
		// user's, through Apply) must keep the tensors it passed.
		in = slices.Clone(in)
	}
	// copies are the contiguous copies made for the kernel: nothing else
	// can reach them, so they go back to the allocator when it is done
	// (left to the garbage collector, a large one was mapped afresh on
	// every call: a conv weight gradient's permuted input and output
	// gradient, 13 MB of page faults a training step).
	var copies []*Tensor
	for i, t := range in {
		if t == nil {
			continue
		}
		if d.NeedsContiguous && !slices.Contains(d.Inplace, i) {
			if c := contiguous(path, t); c != t {
				copies = append(copies, c)
				t = c
			}
			in[i] = t
		}
		l.In[i] = t.operand()
		if d.Broadcast && len(outMeta) > 0 && !slices.Equal(t.l.Shape, outMeta[0].Shape) {
			bl, ok := t.l.BroadcastTo(outMeta[0].Shape)
			if !ok {
				errorf(path, in, "input %d of shape %v does not broadcast to %v", i, t.l.Shape, outMeta[0].Shape)
			}
			l.In[i].Layout = bl
		}
	}
	out := make([]*Tensor, len(outMeta))
	for i, m := range outMeta {
		st := newStorage(dev, be, op.Numel(m.Shape)*m.DType.Size())
		out[i] = &Tensor{st: st, dt: m.DType, l: contiguousLayout(m.Shape)}
		l.Out = append(l.Out, out[i].operand())
	}
	props := be.Properties(dev.Index)
	if debug || props.Async {
		l.Site = callerSite()
	}
	if err := be.Launch(dev.Index, l); err != nil {
		panic(kernelError(path, in, l.Site, err))
	}
	// In-place ops return the tensors they modified (as PyTorch's add_
	// returns self) and bump their storage versions for autograd; an absent
	// optional in-place input is skipped.
	for _, i := range d.Inplace {
		if in[i] == nil {
			continue
		}
		in[i].st.version.Add(1)
		out = append(out, in[i])
	}
	if debug {
		if err := be.Sync(dev.Index); err != nil {
			panic(kernelError(path, in, l.Site, err))
		}
		checkNonFinite(path, in, out, l.Site)
	}
	for _, c := range copies {
		if c.st.lazy.Load() == nil {
			c.st.free()
		}
	}
	return out
}

// launchBlock is a kernel launch with its operands, in one allocation for
// an op of at most six (an eager op's launch allocated three times).
type launchBlock struct {
	l   device.Launch
	ops [6]device.Operand
}

func kernelError(path string, in []*Tensor, site string, err error) *Error {
	e := newError(path, in, err.Error())
	e.Err = err
	if site == "" {
		site = callerSite()
	}
	e.Site = site
	return e
}

func checkDecomposition(path string, in []*Tensor, d *op.Def, out []*Tensor, want []op.Meta) {
	if len(out) != len(want) {
		errorf(path, in, "internal: decomposition of %s returned %d outputs, shape rule says %d", d.Name, len(out), len(want))
	}
	for i, t := range out {
		if t.dt != want[i].DType || !slices.Equal(t.l.Shape, want[i].Shape) {
			errorf(path, in, "internal: decomposition of %s output %d is %s%v, shape rule says %s%v", d.Name, i, t.dt, t.l.Shape, want[i].DType, want[i].Shape)
		}
	}
}

// eagerBuilder runs decompositions eagerly.
type eagerBuilder struct {
	parent string
	dev    device.Device
	be     device.Backend
}

func (b *eagerBuilder) Call(name string, in []op.Value, a op.Attrs) []op.Value {
	ts := make([]*Tensor, len(in))
	for i, v := range in {
		if v != nil {
			ts[i] = v.(*Tensor)
		}
	}
	res := applyOn(b.parent, name, ts, a, &b.dev) // inputless ops stay on the decomposed op's device
	out := make([]op.Value, len(res))
	for i, r := range res {
		out[i] = r
	}
	return out
}

func (b *eagerBuilder) Meta(v op.Value) op.Meta { return v.(*Tensor).meta() }

func (b *eagerBuilder) Scalar(v any, like op.Value) op.Value { return Scalar(v) }

// Non-finite tracking for Debug mode.
var firstNonFinite atomic.Pointer[Error]

// FirstNonFinite returns the first op (since the last ResetNonFinite) that
// produced NaN or Inf from finite inputs while in Debug mode, with the op and
// caller; nil if none.
func FirstNonFinite() *Error { return firstNonFinite.Load() }

// ResetNonFinite forgets the recorded first NaN/Inf producer.
func ResetNonFinite() { firstNonFinite.Store(nil) }

func checkNonFinite(path string, in, out []*Tensor, site string) {
	if firstNonFinite.Load() != nil && !nanPanic.Load() {
		return
	}
	bad := false
	for _, t := range out {
		if t.dt.IsFloat() && t.Numel() > 0 && hasNonFinite(t) {
			bad = true
			break
		}
	}
	if !bad {
		return
	}
	for _, t := range in {
		if t != nil && t.dt.IsFloat() && t.Numel() > 0 && hasNonFinite(t) {
			return // propagated, not produced
		}
	}
	e := newError(path, in, "produced NaN or Inf from finite inputs")
	e.Site = site
	firstNonFinite.CompareAndSwap(nil, e)
	if nanPanic.Load() {
		panic(e)
	}
}

func hasNonFinite(t *Tensor) bool {
	if t.st.dev.Type == "meta" {
		return false
	}
	for _, v := range t.Float64s() {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return true
		}
	}
	return false
}

// belowHighest reports whether matmul precision p is one of the bf16 ones
// ("" is the device default: full f32 wherever a direct kernel exists).
func belowHighest(p string) bool { return p == op.PrecisionMedium || p == op.PrecisionHigh }
