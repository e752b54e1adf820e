package cpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/device/interp"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// The whole-program compiler of the CPU backend (device.Compiler).
//
// CompileProgram turns an IR graph into a plan: composites without a CPU
// kernel are lowered (ir.LowerIf), then
//   - chains and DAGs of f32 elementwise ops (with broadcast inputs and
//     scalar constants as immediates) become fused steps evaluated block by
//     block over their output (compile_fuse.go);
//   - a fused group feeding a sum or max over trailing dimensions reduces
//     each block's rows in the same pass;
//   - a dot_general whose only consumer is a fused group runs that group as
//     its per-tile epilogue (bias, activation, residual);
//   - every other node is a kernel step launched as eager mode launches it
//     (broadcast layouts, contiguous copies, views as layout arithmetic).
//
// Memory is planned at compile time: intermediates live in one arena per
// Run at offsets chosen by liveness (a dead buffer serves a later one of at
// most its size; a fused step may write over an input that dies with it),
// views alias their base, and outputs are fresh buffers from the
// allocator. The plan itself (steps, groups with their instruction lists,
// buffer offsets, block sizes) is what Marshal writes and LoadProgram
// reads back without planning again.

// ProgramFormat implements device.Compiler.
func (b *Backend) ProgramFormat() string { return planFormat }

// CompileProgram implements device.Compiler.
func (b *Backend) CompileProgram(ctx context.Context, index int, g *ir.Graph, opts device.CompileOptions) (device.Program, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cpu: compile: %w", err)
	}
	pl, err := buildPlan(b, g, opts, true)
	if err != nil {
		return nil, err
	}
	return &cprogram{be: b, pl: pl}, nil
}

// LoadProgram implements device.Compiler.
func (b *Backend) LoadProgram(index int, data []byte) (device.Program, error) {
	pl, err := unmarshalPlan(data)
	if err != nil {
		return nil, err
	}
	return &cprogram{be: b, pl: pl}, nil
}

var _ device.Compiler = (*Backend)(nil)

// Step kinds.
const (
	stConst    uint8 = iota + 1 // write a constant's bytes
	stKernel                    // launch a graph node's kernel
	stCopy                      // contiguous copy of a value
	stFused                     // fused elementwise group (maybe with reduction or GEMM)
	stRope                      // rotary position embedding (compile_rope.go)
	stNormBF16                  // a bf16 model's RMSNorm (compile_bf16chain.go)
	stGLUBF16                   // a bf16 model's act(gate)*up (compile_bf16chain.go)
)

// pvalue is a value of the plan: a graph value or a copy the plan made.
type pvalue struct {
	dt     dtype.DType
	param  int       // >= 0: a parameter (buf is -1)
	buf    int       // buffer id, or -1
	layout op.Layout // in elements, from the start of the buffer/parameter
	imm    bool      // an f32 scalar constant fused groups inline
	immVal float32
}

// pbuf is a buffer: an arena slice, or a fresh output buffer.
type pbuf struct {
	size int64 // bytes
	off  int64 // arena offset (64-byte aligned)
	out  bool  // a graph output's own buffer, not in the arena
}

// pstep is one step of a plan.
type pstep struct {
	kind uint8
	node int // graph node (stConst, stKernel); -1 otherwise
	dyn  int // dynamic-attribute source index (plan.dyn) for this step's node, or -1
	in   []int
	inL  []op.Layout // kernel: the launch layout of each input
	out  []int
	nOut int // kernel: outputs the kernel writes (the rest are in-place inputs)
	grp  *fgroup
}

// plan is a compiled program.
type plan struct {
	g             *ir.Graph // lowered
	opts          device.CompileOptions
	dyn           [][]string // per source node with dynamic attributes: their names
	vals          []pvalue
	bufs          []pbuf
	steps         []pstep
	arena         int64
	outputs       []int // value ids holding the graph outputs (own buffers)
	stats         device.ProgramStats
	planNodeAttrs []op.Attrs // per graph node: attrs with the precision filled
	// nextWeight and weightParams are the prefetch's view of the steps
	// (compile_prefetch.go), filled once by the first run.
	nextWeight   []int32
	weightParams [][]int
	pfOnce       sync.Once
}

func planKernelDType(n *ir.Node) dtype.DType {
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

// planner builds a plan.
type planner struct {
	be      *Backend
	p       *plan
	g       *ir.Graph
	vid     map[*ir.Value]int
	uses    map[*ir.Value]int
	fuse    bool
	outSet  map[*ir.Value]bool
	groupOf map[*ir.Node]*gbuild
	live    map[*ir.Node]bool // nodes some graph output depends on
	dynOf   []int             // per graph node: its dynamic-attribute source index, or -1
	ropes   map[*ir.Node]*ropeMatch
	chains  map[*ir.Node]*chainMatch
}

// gbuild is a fused group being formed.
type gbuild struct {
	nodes  []*ir.Node
	member map[*ir.Node]bool
	shape  []int
	open   bool
	red    *ir.Node // trailing reduction
	gemm   *ir.Node // leading dot_general
}

func buildPlan(be *Backend, g *ir.Graph, opts device.CompileOptions, fuse bool) (*plan, error) {
	if g == nil {
		return nil, errors.New("cpu: compile: nil graph")
	}
	for i, v := range g.Params {
		if v == nil {
			return nil, fmt.Errorf("cpu: compile: parameter %d is nil", i)
		}
	}
	for j, n := range g.Nodes {
		if n == nil || slices.Contains(n.Out, nil) || (n.IsConst() && len(n.Out) != 1) {
			return nil, fmt.Errorf("cpu: compile: node %d is malformed", j)
		}
	}
	if slices.Contains(g.Outputs, nil) {
		return nil, errors.New("cpu: compile: nil graph output")
	}
	p := &plan{opts: opts}
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
	lowered, origin, err := ir.LowerIfOrigin(g, func(n *ir.Node) bool { return !Has(n.Op, planKernelDType(n)) })
	if err != nil {
		return nil, fmt.Errorf("cpu: compile: lowering: %w", err)
	}
	p.g = lowered
	pl := &planner{be: be, p: p, g: lowered, vid: map[*ir.Value]int{}, live: liveNodes(lowered), fuse: fuse,
		outSet: map[*ir.Value]bool{}, groupOf: map[*ir.Node]*gbuild{}, dynOf: make([]int, len(lowered.Nodes))}
	for j, n := range lowered.Nodes {
		pl.dynOf[j] = -1
		if !n.IsConst() && len(n.Op.DynamicAttrs()) > 0 {
			pl.dynOf[j] = dynIndex[origin[j]]
		}
	}
	for _, v := range lowered.Outputs {
		pl.outSet[v] = true
	}
	p.planNodeAttrs = planNodeAttrs(lowered, opts)
	if err := pl.build(); err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("cpu: compile: internal: %w", err)
	}
	return p, nil
}

// liveNodes returns the nodes some graph output depends on.
func liveNodes(g *ir.Graph) map[*ir.Node]bool {
	need := map[*ir.Value]bool{}
	for _, v := range g.Outputs {
		need[v] = true
	}
	live := map[*ir.Node]bool{}
	for j := len(g.Nodes) - 1; j >= 0; j-- {
		n := g.Nodes[j]
		for _, o := range n.Out {
			if need[o] {
				live[n] = true
			}
		}
		if live[n] {
			for _, v := range n.In {
				if v != nil {
					need[v] = true
				}
			}
		}
	}
	return live
}

// planNodeAttrs returns every node's attributes with an empty precision set to
// opts.Precision.
func planNodeAttrs(g *ir.Graph, opts device.CompileOptions) []op.Attrs {
	out := make([]op.Attrs, len(g.Nodes))
	for j, n := range g.Nodes {
		a := n.Attrs
		if pr, ok := a["precision"]; ok && pr == op.PrecisionDefault && opts.Precision != "" {
			a = a.With("precision", opts.Precision)
		}
		out[j] = a
	}
	return out
}

// planFusable reports whether n can be a member of a fused f32 group, and its
// operation.
func planFusable(n *ir.Node) (fop, bool) {
	if n.IsConst() || n.Op.Kind == op.View || len(n.Out) != 1 || n.Out[0].Meta.DType != dtype.F32 {
		return 0, false
	}
	for i, v := range n.In {
		if v == nil {
			return 0, false
		}
		// Bools enter only as where's condition or convert's input, and
		// only from outside the group (members are f32).
		boolOK := i == 0 && (n.Op == op.Where || n.Op == op.Convert)
		if v.Meta.DType != dtype.F32 && !(boolOK && v.Meta.DType == dtype.Bool) {
			return 0, false
		}
	}
	a := n.Attrs
	switch n.Op {
	case op.Where:
		if n.In[0].Meta.DType == dtype.Bool {
			return fWhere, true
		}
	case op.Convert:
		if n.In[0].Meta.DType == dtype.Bool {
			return fCopy, true
		}
	case op.Neg:
		return fNeg, true
	case op.Exp:
		return fExp, true
	case op.Log:
		return fLog, true
	case op.Tanh:
		return fTanh, true
	case op.Erf:
		return fErf, true
	case op.Sigmoid:
		return fSigmoid, true
	case op.Relu:
		return fRelu, true
	case op.Silu:
		return fSilu, true
	case op.Sqrt:
		return fSqrt, true
	case op.Rsqrt:
		return fRsqrt, true
	case op.Abs:
		return fAbs, true
	case op.Gelu:
		switch a["approximate"] {
		case "none", "", nil:
			return fGelu, true
		case "tanh":
			return fGeluTanh, true
		}
	case op.Add, op.Sub:
		if planIsOne(a["alpha"]) {
			if n.Op == op.Add {
				return fAdd, true
			}
			return fSub, true
		}
	case op.Mul:
		return fMul, true
	case op.Div:
		if m, _ := a["rounding_mode"].(string); m == "" {
			return fDiv, true
		}
	case op.Maximum:
		return fMax, true
	case op.Minimum:
		return fMin, true
	}
	return 0, false
}

func planIsOne(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case float64:
		return x == 1
	case int64:
		return x == 1
	case int:
		return x == 1
	case bool:
		return x
	}
	return false
}

// planImmOf returns the value of an f32 constant with one element.
func planImmOf(v *ir.Value) (float32, bool) {
	if v == nil || v.Def == nil || !v.Def.IsConst() || v.Meta.DType != dtype.F32 || v.Meta.Numel() != 1 || len(v.Def.Data) != 4 {
		return 0, false
	}
	return math.Float32frombits(uint32(v.Def.Data[0]) | uint32(v.Def.Data[1])<<8 | uint32(v.Def.Data[2])<<16 | uint32(v.Def.Data[3])<<24), true
}

// formGroups partitions the planFusable nodes into groups (see gbuild).
func (pl *planner) formGroups() {
	closeUsers := func(n *ir.Node, self *gbuild) {
		for _, v := range n.In {
			if v != nil && v.Def != nil {
				if g := pl.groupOf[v.Def]; g != nil && g != self {
					g.open = false
				}
			}
		}
	}
	for _, n := range pl.g.Nodes {
		if !pl.live[n] {
			continue
		}
		if _, ok := planFusable(n); !ok || pl.ropes[n] != nil || pl.chains[n] != nil {
			closeUsers(n, nil)
			continue
		}
		shape := n.Out[0].Meta.Shape
		var grp *gbuild
		for _, v := range n.In {
			if v.Def == nil {
				continue
			}
			if g := pl.groupOf[v.Def]; g != nil && g.open && slices.Equal(g.shape, shape) {
				grp = g
				break
			}
		}
		if grp == nil {
			grp = &gbuild{member: map[*ir.Node]bool{}, shape: shape, open: true}
		}
		closeUsers(n, grp)
		grp.nodes = append(grp.nodes, n)
		grp.member[n] = true
		pl.groupOf[n] = grp
	}
}

// groupOutputs returns the member values used outside the group or as
// graph outputs.
func (pl *planner) groupOutputs(g *gbuild, users map[*ir.Value][]*ir.Node) []*ir.Value {
	var outs []*ir.Value
	for _, n := range g.nodes {
		v := n.Out[0]
		ext := pl.outSet[v]
		for _, u := range users[v] {
			if !g.member[u] && u != g.red {
				ext = true
			}
		}
		if ext {
			outs = append(outs, v)
		}
	}
	return outs
}

// attachReductionsAndGemms extends groups with a trailing reduction or a
// leading GEMM where that is possible.
func (pl *planner) attachReductionsAndGemms(users map[*ir.Value][]*ir.Node) {
	for _, n := range pl.g.Nodes {
		if n.IsConst() || !pl.live[n] {
			continue
		}
		switch n.Op {
		case op.Reduce:
			v := n.In[0]
			if v == nil || v.Def == nil || v.Meta.DType != dtype.F32 || pl.uses[v] != 1 || pl.outSet[v] || v.Meta.Numel() == 0 {
				continue
			}
			g := pl.groupOf[v.Def]
			kind := n.Attrs["kind"]
			if g == nil || g.red != nil || g.gemm != nil || (kind != "sum" && kind != "max") {
				continue
			}
			dims, ok := n.Attrs["dims"].([]int)
			rank := len(v.Meta.Shape)
			if !ok || len(dims) == 0 || rank == 0 {
				continue
			}
			nd := make([]int, len(dims))
			for i, d := range dims {
				if d < 0 {
					d += rank
				}
				nd[i] = d
			}
			slices.Sort(nd)
			trailing := true
			for i, d := range nd {
				if d != rank-len(nd)+i {
					trailing = false
				}
			}
			row := 1
			for _, d := range nd {
				row *= v.Meta.Shape[d]
			}
			if !trailing || row == 0 || row > maxRedRow {
				continue
			}
			// The group must be complete: its last member is v's node
			// and nothing after it joins.
			if g.nodes[len(g.nodes)-1] != v.Def {
				continue
			}
			g.red = n
			g.open = false
			pl.groupOf[n] = g
		case op.DotGeneral:
			// The product, read by one group, is written into a buffer
			// the group then reads it from: its own when it is a graph
			// output too (a Fused graph's conservative outputs), else the
			// buffer of the group's last value, which the group rewrites
			// in place (that value must then be an output). The group's
			// other outputs (a pre-activation the backward pass keeps) are
			// stored from the epilogue beside it.
			v := n.Out[0]
			own := pl.outSet[v]
			if v.Meta.DType != dtype.F32 || len(users[v]) != 1 || !own && pl.uses[v] != 1 {
				continue
			}
			u := users[v][0]
			g := pl.groupOf[u]
			if g == nil || g.red != nil || g.gemm != nil || !slices.Equal(g.shape, v.Meta.Shape) {
				continue
			}
			if outs := pl.groupOutputs(g, users); !own && !slices.Contains(outs, g.nodes[len(g.nodes)-1].Out[0]) ||
				!gemmEpiOutputs && (own || len(outs) != 1) {
				continue
			}
			if slices.ContainsFunc(n.In, func(x *ir.Value) bool { return x == nil || x.Meta.DType != dtype.F32 }) {
				continue
			}
			g.gemm = n
			pl.groupOf[n] = g
		}
	}
}

// gemmEpiOutputs lets a GEMM epilogue's group keep values besides its last
// one, and the product itself (benchmarks compare with it off).
var gemmEpiOutputs = true

// maxRedRow bounds the row length of a fused reduction (a block holds at
// least one row).
const maxRedRow = 1 << 16

// defaultBlock is the number of elements a fused block holds per register.
const defaultBlock = 4096

func (pl *planner) build() error {
	p, g := pl.p, pl.g
	users := pl.countUses()
	if pl.fuse {
		// Ropes first: their nodes leave the graph the groups are formed
		// over, and their add reads x, cos and sin.
		if pl.ropes = pl.findRopes(users); pl.ropes != nil {
			for _, m := range pl.ropes {
				for _, n := range m.nodes {
					pl.live[n] = false
				}
			}
			users = pl.countUses()
		}
		if pl.chains = pl.findChainsBF16(users); pl.chains != nil {
			for _, m := range pl.chains {
				for _, n := range m.nodes {
					pl.live[n] = false
				}
			}
			users = pl.countUses()
		}
	}
	if pl.fuse {
		pl.formGroups()
		pl.attachReductionsAndGemms(users)
		// Groups of one node without a reduction or GEMM run their kernel.
		for n, grp := range pl.groupOf {
			if len(grp.nodes) == 1 && grp.red == nil && grp.gemm == nil {
				delete(pl.groupOf, n)
			}
		}
	}
	for _, v := range g.Params {
		pl.vid[v] = len(p.vals)
		p.vals = append(p.vals, pvalue{dt: v.Meta.DType, param: v.Index, buf: -1, layout: op.Contiguous(slices.Clone(v.Meta.Shape))})
	}
	// Constants used only as immediates of fused groups need no buffer.
	immOnly := map[*ir.Value]bool{}
	for _, n := range g.Nodes {
		if !n.IsConst() {
			continue
		}
		v := n.Out[0]
		if _, ok := planImmOf(v); !ok || pl.outSet[v] || len(users[v]) == 0 {
			continue
		}
		all := true
		for _, u := range users[v] {
			grp := pl.groupOf[u]
			if grp == nil || u == grp.red || u == grp.gemm {
				all = false
			}
		}
		immOnly[v] = all
	}
	folds := pl.inPlaceUpdates(users)
	folded := map[*ir.Node]int{} // copy_ node -> the value its update wrote
	last := map[*gbuild]*ir.Node{}
	for _, n := range g.Nodes {
		if grp := pl.groupOf[n]; grp != nil && n != grp.gemm && n != grp.red {
			last[grp] = n
		}
	}
	for j, n := range g.Nodes {
		if !pl.live[n] {
			continue // dead: nothing depends on it
		}
		switch {
		case n.IsConst():
			v := n.Out[0]
			id := pl.newValue(v.Meta, -1)
			pl.vid[v] = id
			if f, ok := planImmOf(v); ok {
				p.vals[id].imm, p.vals[id].immVal = true, f
			}
			if immOnly[v] {
				continue
			}
			pl.allocBuf(id, pl.outSet[v])
			p.steps = append(p.steps, pstep{kind: stConst, node: j, dyn: -1, out: []int{id}})
		case pl.ropes[n] != nil:
			if err := pl.emitRope(j, n, pl.ropes[n]); err != nil {
				return err
			}
		case pl.chains[n] != nil:
			if err := pl.emitChain(j, n, pl.chains[n]); err != nil {
				return err
			}
		case pl.groupOf[n] != nil:
			grp := pl.groupOf[n]
			if last[grp] == n {
				if err := pl.emitGroup(grp, users); err != nil {
					return err
				}
			}
		case n.Op.Kind == op.View:
			if err := pl.emitView(j, n); err != nil {
				return err
			}
		case folds[n] != nil:
			folded[folds[n]] = pl.emitUpdateInPlace(j, n)
		case n.Op == opCopyInPlace && hasKey(folded, n):
			id := folded[n]
			if pl.outSet[n.Out[0]] {
				p.bufs[p.vals[id].buf].out = true
			}
			pl.vid[n.Out[0]] = id
		default:
			if err := pl.emitKernel(j, n); err != nil {
				return err
			}
		}
	}
	// Outputs: a value in its own output buffer is returned as is, once;
	// anything else (a parameter, a view, a repeated value) is copied.
	used := map[int]bool{}
	for _, v := range g.Outputs {
		id, ok := pl.vid[v]
		if !ok {
			return errors.New("cpu: compile: a graph output is not defined")
		}
		pv := p.vals[id]
		whole := pv.buf >= 0 && pv.layout.Offset == 0 && slices.Equal(pv.layout.Strides, op.ContiguousStrides(pv.layout.Shape)) &&
			int64(op.Numel(pv.layout.Shape)*pv.dt.Size()) == p.bufs[pv.buf].size
		if whole && !p.bufs[pv.buf].out && !used[pv.buf] && !usedByOtherOutput(p, g, pl.vid, v, pv.buf) {
			// A view covering its whole buffer in order (a reshape of an
			// intermediate): the buffer itself becomes the output.
			p.bufs[pv.buf].out = true
		}
		if whole && p.bufs[pv.buf].out && !used[pv.buf] {
			used[pv.buf] = true
			p.outputs = append(p.outputs, id)
			continue
		}
		c := pl.newValue(v.Meta, -1)
		pl.allocBuf(c, true)
		used[p.vals[c].buf] = true
		p.steps = append(p.steps, pstep{kind: stCopy, node: -1, dyn: -1, in: []int{id}, out: []int{c}})
		p.outputs = append(p.outputs, c)
	}
	pl.absorbTransposeCopies()
	pl.elideDeadCopies()
	pl.planMemory()
	p.stats.Nodes = len(g.Nodes)
	for _, s := range p.steps {
		if s.kind != stConst {
			p.stats.Kernels++
		}
	}
	return nil
}

// countUses sets pl.uses and returns the users of every value, over the
// live nodes (a rope's add reading its x, cos and sin).
func (pl *planner) countUses() map[*ir.Value][]*ir.Node {
	users := map[*ir.Value][]*ir.Node{}
	pl.uses = map[*ir.Value]int{}
	for _, n := range pl.g.Nodes {
		if !pl.live[n] {
			continue
		}
		in := n.In
		if m := pl.ropes[n]; m != nil {
			in = []*ir.Value{m.x, m.cos, m.sin}
		}
		if m := pl.chains[n]; m != nil {
			in = m.in
		}
		for _, v := range in {
			if v != nil {
				users[v] = append(users[v], n)
				pl.uses[v]++
			}
		}
	}
	for _, v := range pl.g.Outputs {
		pl.uses[v]++
	}
	return users
}

func (pl *planner) newValue(m op.Meta, buf int) int {
	pl.p.vals = append(pl.p.vals, pvalue{dt: m.DType, param: -1, buf: buf, layout: op.Contiguous(slices.Clone(m.Shape))})
	return len(pl.p.vals) - 1
}

// allocBuf gives value id a new contiguous buffer of its size.
func (pl *planner) allocBuf(id int, out bool) {
	v := &pl.p.vals[id]
	pl.p.bufs = append(pl.p.bufs, pbuf{size: int64(op.Numel(v.layout.Shape) * v.dt.Size()), out: out})
	v.buf = len(pl.p.bufs) - 1
}

// copyOf emits a contiguous copy of value id and returns the copy.
func (pl *planner) copyOf(id int) int {
	v := pl.p.vals[id]
	c := pl.newValue(op.Meta{Shape: v.layout.Shape, DType: v.dt}, -1)
	pl.allocBuf(c, false)
	pl.p.steps = append(pl.p.steps, pstep{kind: stCopy, node: -1, dyn: -1, in: []int{id}, out: []int{c}})
	return c
}

// emitView defines a view node's value as layout arithmetic on its input
// (on a contiguous copy when the view is not possible), as eager does.
func (pl *planner) emitView(j int, n *ir.Node) error {
	if len(n.In) == 0 || n.In[0] == nil || len(n.Out) != 1 {
		return fmt.Errorf("cpu: compile: node %d: malformed view %s", j, n.Op.Name)
	}
	in := pl.vid[n.In[0]]
	src := pl.p.vals[in]
	a := pl.p.planNodeAttrs[j]
	l, ok, err := n.Op.ViewFn(planCloneLayout(src.layout), a)
	if err != nil {
		return fmt.Errorf("cpu: compile: node %d (%s): %w", j, n.Op.Name, err)
	}
	if !ok {
		in = pl.copyOf(in)
		src = pl.p.vals[in]
		l, ok, err = n.Op.ViewFn(planCloneLayout(src.layout), a)
		if err != nil || !ok {
			return fmt.Errorf("cpu: compile: node %d (%s): view not possible on a contiguous copy: %v", j, n.Op.Name, err)
		}
	}
	pl.p.vals = append(pl.p.vals, pvalue{dt: src.dt, param: src.param, buf: src.buf, layout: l})
	pl.vid[n.Out[0]] = len(pl.p.vals) - 1
	return nil
}

func planCloneLayout(l op.Layout) op.Layout {
	return op.Layout{Shape: slices.Clone(l.Shape), Strides: slices.Clone(l.Strides), Offset: l.Offset}
}

// emitKernel plans a kernel launch of node j as eager launch does.
func (pl *planner) emitKernel(j int, n *ir.Node) error {
	p := pl.p
	d := n.Op
	if !Has(d, planKernelDType(n)) {
		return fmt.Errorf("cpu: compile: node %d: %w: %s (dtype %s) on cpu", j, device.ErrUnsupported, d.Name, planKernelDType(n))
	}
	nOut := len(n.Out)
	for _, i := range d.Inplace {
		if i < len(n.In) && n.In[i] != nil {
			nOut--
		}
	}
	if nOut < 0 {
		return fmt.Errorf("cpu: compile: node %d (%s): too few outputs for its in-place inputs", j, d.Name)
	}
	s := pstep{kind: stKernel, node: j, dyn: pl.dynOf[j], nOut: nOut}
	var outShape []int
	if nOut > 0 {
		outShape = n.Out[0].Meta.Shape
	}
	var inplace []int
	for i, v := range n.In {
		if v == nil {
			s.in = append(s.in, -1)
			s.inL = append(s.inL, op.Layout{})
			continue
		}
		id := pl.vid[v]
		switch {
		case slices.Contains(d.Inplace, i):
			id = pl.copyOf(id)
			inplace = append(inplace, id)
		case d.NeedsContiguous && !p.vals[id].layout.IsContiguous():
			id = pl.copyOf(id)
		}
		l := planCloneLayout(p.vals[id].layout)
		if d.Broadcast && nOut > 0 {
			bl, ok := l.BroadcastTo(outShape)
			if !ok {
				return fmt.Errorf("cpu: compile: node %d (%s): input %d of shape %v does not broadcast to %v", j, d.Name, i, l.Shape, outShape)
			}
			l = bl
		}
		s.in = append(s.in, id)
		s.inL = append(s.inL, l)
	}
	for k := 0; k < nOut; k++ {
		o := n.Out[k]
		id := pl.newValue(o.Meta, -1)
		pl.allocBuf(id, pl.outSet[o])
		pl.vid[o] = id
		s.out = append(s.out, id)
	}
	for k, id := range inplace {
		o := n.Out[nOut+k]
		if pl.outSet[o] {
			// The copy becomes an output: give it its own output buffer.
			p.bufs[p.vals[id].buf].out = true
		}
		pl.vid[o] = id
		s.out = append(s.out, id)
	}
	p.steps = append(p.steps, s)
	return nil
}

// emitGroup plans a fused group at the position of its last member.
func (pl *planner) emitGroup(gb *gbuild, users map[*ir.Value][]*ir.Node) error {
	p := pl.p
	grp := &fgroup{shape: slices.Clone(gb.shape), numel: op.Numel(gb.shape), block: defaultBlock, gemm: -1, gemmReg: -1, redOut: -1}
	reg := map[*ir.Value]int{}
	var code []finstr
	// Inputs: external values that are not immediates.
	addInput := func(v *ir.Value) (int, error) {
		if r, ok := reg[v]; ok {
			return r, nil
		}
		id := pl.vid[v]
		pv := p.vals[id]
		if _, ok := pv.layout.BroadcastTo(grp.shape); !ok {
			return 0, fmt.Errorf("cpu: compile: fused input of shape %v does not broadcast to %v", pv.layout.Shape, grp.shape)
		}
		r := len(grp.inputs)
		grp.inputs = append(grp.inputs, id)
		reg[v] = r
		return r, nil
	}
	if gb.gemm != nil {
		// The GEMM's output is register 0: the output buffer itself.
		grp.gemm = slices.Index(pl.g.Nodes, gb.gemm)
		grp.gemmReg = 0
		grp.inputs = append(grp.inputs, -1) // bound to the output at run time
		reg[gb.gemm.Out[0]] = 0
	}
	for _, n := range gb.nodes {
		for _, v := range n.In {
			if _, done := reg[v]; done || gb.member[v.Def] || v == gbGemmOut(gb) {
				continue
			}
			if pv, ok := pl.vid[v]; ok && p.vals[pv].imm {
				continue
			}
			if _, err := addInput(v); err != nil {
				return err
			}
		}
	}
	nregs := len(grp.inputs)
	for _, n := range gb.nodes {
		o, _ := planFusable(n)
		ins := finstr{op: o, dst: nregs, a: -1, b: -1, c: -1}
		nregs++
		operand := func(v *ir.Value) (int, float32, bool) {
			if r, ok := reg[v]; ok {
				return r, 0, false
			}
			pv := p.vals[pl.vid[v]]
			return -1, pv.immVal, true
		}
		if o == fWhere {
			var rs [3]int
			for k := 0; k < 3; k++ {
				r, iv, isImm := operand(n.In[k])
				if isImm {
					code = append(code, finstr{op: fFill, dst: nregs, imm: iv, a: -1, b: -1, c: -1})
					r = nregs
					nregs++
				}
				rs[k] = r
			}
			ins.c, ins.a, ins.b = rs[0], rs[1], rs[2]
		} else if o.binary() {
			ra, ia, aImm := operand(n.In[0])
			rb, ib, bImm := operand(n.In[1])
			switch {
			case aImm && bImm:
				// Both scalars: fill one, then the scalar form.
				code = append(code, finstr{op: fFill, dst: nregs, imm: ia, a: -1, b: -1, c: -1})
				ra = nregs
				nregs++
				fallthrough
			case bImm:
				ins.a, ins.imm = ra, ib
				ins.op = map[fop]fop{fAdd: fAddS, fSub: fSubS, fMul: fMulS, fDiv: fDivS, fMax: fMaxS, fMin: fMinS}[o]
			case aImm:
				ins.a, ins.imm = rb, ia
				switch o {
				case fAdd:
					ins.op = fAddS // a+b == b+a exactly
				case fMul:
					ins.op = fMulS
				case fSub:
					ins.op = fSubR
				case fDiv:
					ins.op = fDivR
				default:
					// maximum/minimum with a left scalar: fill it.
					code = append(code, finstr{op: fFill, dst: nregs, imm: ia, a: -1, b: -1, c: -1})
					ins.a, ins.b, ins.op, ins.imm = nregs, rb, o, 0
					nregs++
				}
			default:
				ins.a, ins.b = ra, rb
			}
		} else {
			ra, ia, aImm := operand(n.In[0])
			if aImm {
				code = append(code, finstr{op: fFill, dst: nregs, imm: ia, a: -1, b: -1, c: -1})
				ra = nregs
				nregs++
			}
			ins.a = ra
		}
		code = append(code, ins)
		reg[n.Out[0]] = ins.dst
	}
	grp.code = code
	grp.nregs = nregs
	outs := pl.groupOutputs(gb, users)
	if gb.gemm != nil {
		// The GEMM's destination is output 0: the product itself when it
		// is a graph output (register 0, which no instruction writes),
		// else the last member's value.
		if gv := gb.gemm.Out[0]; pl.outSet[gv] {
			outs = append([]*ir.Value{gv}, outs...)
		} else if last := gb.nodes[len(gb.nodes)-1].Out[0]; slices.Index(outs, last) > 0 {
			i := slices.Index(outs, last)
			outs = append([]*ir.Value{last}, slices.Delete(slices.Clone(outs), i, i+1)...)
		}
	}
	s := pstep{kind: stFused, node: -1, dyn: -1, grp: grp}
	for _, r := range grp.inputs {
		s.in = append(s.in, r)
	}
	if gb.gemm != nil {
		// The dot's operands are the step's extra inputs (after the group's).
		for _, v := range gb.gemm.In {
			s.in = append(s.in, pl.vid[v])
		}
	}
	for _, v := range outs {
		id := pl.newValue(v.Meta, -1)
		pl.allocBuf(id, pl.outSet[v])
		pl.vid[v] = id
		grp.outs = append(grp.outs, fout{reg: reg[v], val: id})
		s.out = append(s.out, id)
	}
	if gb.red != nil {
		r := gb.red
		o := r.Out[0]
		id := pl.newValue(o.Meta, -1)
		pl.allocBuf(id, pl.outSet[o])
		pl.vid[o] = id
		grp.red = redSum
		if r.Attrs["kind"] == "max" {
			grp.red = redMax
		}
		grp.redReg = reg[r.In[0]]
		grp.redRow = grp.numel / max(op.Numel(o.Meta.Shape), 1)
		if op.Numel(o.Meta.Shape) == 0 {
			grp.redRow = 0
		}
		grp.redOut = id
		grp.block = max(defaultBlock/max(grp.redRow, 1), 1) * max(grp.redRow, 1)
		s.out = append(s.out, id)
	}
	allocRegs(grp)
	p.steps = append(p.steps, s)
	p.stats.Fused += len(gb.nodes)
	if gb.red != nil {
		p.stats.Fused++
	}
	if gb.gemm != nil {
		p.stats.Fused++
	}
	return nil
}

// allocRegs maps a group's registers (one per instruction as generated)
// onto fewer scratch blocks by liveness, so that a block's registers stay in
// cache: a register is reused once its last reader ran (an instruction may
// write over its own operand, which the slice kernels allow). Input
// registers, output registers and the reduced register keep registers of
// their own.
func allocRegs(g *fgroup) {
	nin := len(g.inputs)
	last := make([]int, g.nregs)
	for i := range last {
		last[i] = -1
	}
	reads := func(c finstr) []int {
		var rs []int
		if c.op != fFill {
			rs = append(rs, c.a)
		}
		if c.op.binary() {
			rs = append(rs, c.b)
		}
		if c.op == fWhere {
			rs = append(rs, c.c)
		}
		return rs
	}
	for i, c := range g.code {
		for _, r := range reads(c) {
			last[r] = i
		}
	}
	pinned := map[int]bool{}
	for _, o := range g.outs {
		pinned[o.reg] = true
	}
	if g.red != redNone {
		pinned[g.redReg] = true
	}
	phys := make([]int, g.nregs)
	for r := 0; r < nin; r++ {
		phys[r] = r
	}
	next := nin
	var free []int
	for i := range g.code {
		c := &g.code[i]
		rs := reads(*c)
		for _, r := range rs {
			if last[r] == i && r >= nin && !pinned[r] && !slices.Contains(free, phys[r]) {
				free = append(free, phys[r])
			}
		}
		if c.op != fFill {
			c.a = phys[c.a]
		}
		if c.op.binary() {
			c.b = phys[c.b]
		}
		if c.op == fWhere {
			c.c = phys[c.c]
		}
		d := c.dst
		if pinned[d] || len(free) == 0 {
			phys[d] = next
			next++
		} else {
			phys[d] = free[len(free)-1]
			free = free[:len(free)-1]
		}
		c.dst = phys[d]
		if last[d] < 0 && !pinned[d] {
			free = append(free, phys[d])
		}
	}
	for k := range g.outs {
		g.outs[k].reg = phys[g.outs[k].reg]
	}
	if g.red != redNone {
		g.redReg = phys[g.redReg]
	}
	g.nregs = next
}

// lastDst reports whether value id is written by the group's last
// instruction (so every read of the group's inputs precedes the write).
func lastDst(g *fgroup, id int) bool {
	if len(g.code) == 0 {
		return false
	}
	for _, o := range g.outs {
		if o.val == id {
			return o.reg == g.code[len(g.code)-1].dst
		}
	}
	return false
}

func gbGemmOut(gb *gbuild) *ir.Value {
	if gb.gemm == nil {
		return nil
	}
	return gb.gemm.Out[0]
}

// planMemory assigns arena offsets to the non-output buffers by liveness:
// a buffer is allocated at the step that first writes it and freed after
// the last step that reads any value over it; a freed slot serves later
// buffers of at most its size (best fit), and a fused step's output may
// take the slot of a same-sized contiguous input that dies with it.
func (pl *planner) planMemory() {
	p := pl.p
	first := make([]int, len(p.bufs))
	lastUse := make([]int, len(p.bufs))
	for i := range first {
		first[i], lastUse[i] = -1, -1
	}
	for si, s := range p.steps {
		for _, id := range s.in {
			if id >= 0 && p.vals[id].buf >= 0 {
				lastUse[p.vals[id].buf] = si
			}
		}
		for _, id := range s.out {
			if b := p.vals[id].buf; b >= 0 && first[b] < 0 {
				first[b] = si
			}
		}
	}
	for _, id := range p.outputs {
		if b := p.vals[id].buf; b >= 0 {
			lastUse[b] = len(p.steps)
		}
	}
	type slot struct{ off, size int64 }
	var free []slot
	var top int64
	var live, peak int64
	owner := make([]int64, len(p.bufs)) // slot size held by each buffer
	for si, s := range p.steps {
		for _, id := range s.out {
			b := p.vals[id].buf
			if b < 0 || first[b] != si {
				continue
			}
			size := (p.bufs[b].size + 63) &^ 63
			if p.bufs[b].out {
				live += size
				peak = max(peak, live)
				owner[b] = size
				continue
			}
			// In place over a dying same-sized contiguous input.
			if s.kind == stFused && s.grp.gemm < 0 && s.grp.red == redNone && lastDst(s.grp, id) {
				done := false
				for _, in := range s.in {
					if in < 0 {
						continue
					}
					iv := p.vals[in]
					ib := iv.buf
					if ib < 0 || p.bufs[ib].out || lastUse[ib] != si || owner[ib] == 0 || p.bufs[ib].size != p.bufs[b].size ||
						iv.layout.Offset != 0 || !slices.Equal(iv.layout.Shape, s.grp.shape) || !slices.Equal(iv.layout.Strides, op.ContiguousStrides(iv.layout.Shape)) {
						continue
					}
					if sharesBuffer(p, s, in, ib) {
						continue
					}
					p.bufs[b].off = p.bufs[ib].off
					owner[b], owner[ib] = owner[ib], 0
					done = true
					break
				}
				if done {
					continue
				}
			}
			best := -1
			for i, f := range free {
				if f.size >= size && (best < 0 || f.size < free[best].size) {
					best = i
				}
			}
			if best >= 0 {
				p.bufs[b].off = free[best].off
				owner[b] = free[best].size
				free = slices.Delete(free, best, best+1)
			} else {
				p.bufs[b].off = top
				owner[b] = size
				top += size
			}
			live += owner[b]
			peak = max(peak, live)
		}
		// Free the buffers whose last use is this step (and buffers
		// written here that nothing reads).
		for b := range p.bufs {
			if owner[b] == 0 || (lastUse[b] != si && !(lastUse[b] < 0 && first[b] == si)) {
				continue
			}
			live -= owner[b]
			if !p.bufs[b].out {
				free = append(free, slot{p.bufs[b].off, owner[b]})
			}
			owner[b] = 0
		}
	}
	p.arena = top
	p.stats.PeakBytes = max(peak, 0)
}

// usedByOtherOutput reports whether a graph output other than v lies in
// buffer b (then b stays an intermediate and v is copied).
func usedByOtherOutput(p *plan, g *ir.Graph, vid map[*ir.Value]int, v *ir.Value, b int) bool {
	for _, o := range g.Outputs {
		if o != v && p.vals[vid[o]].buf == b {
			return true
		}
	}
	return false
}

// sharesBuffer reports whether a step input other than value in reads
// buffer b (then b cannot be overwritten in place while the step runs).
func sharesBuffer(p *plan, s pstep, in, b int) bool {
	for _, other := range s.in {
		if other >= 0 && other != in && p.vals[other].buf == b {
			return true
		}
	}
	return false
}

// cprogram is a plan bound to the backend.
type cprogram struct {
	be *Backend
	pl *plan

	donateOnce sync.Once
	donate     []donation
}

// Stats implements device.Program.
func (c *cprogram) Stats() device.ProgramStats { return c.pl.stats }

// Marshal implements device.Program.
func (c *cprogram) Marshal() ([]byte, error) { return marshalPlan(c.pl) }

// Run implements device.Program.
func (c *cprogram) Run(ctx context.Context, index int, in []device.Operand, opts device.RunOptions) (out []device.Buffer, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	p := c.pl
	if len(in) != len(p.g.Params) {
		return nil, fmt.Errorf("cpu: run: %d inputs for %d parameters", len(in), len(p.g.Params))
	}
	if err := interp.CheckDynamic(p.dyn, opts.Dynamic); err != nil {
		return nil, fmt.Errorf("cpu: run: %w", err)
	}
	r := &crun{c: c, ks: c.be.ks, index: index, bufs: make([][]byte, len(p.bufs)), outBufs: make([]*Buf, len(p.bufs))}
	defer func() {
		if rec := recover(); rec != nil {
			err = fmt.Errorf("cpu: run: internal error: %v", rec)
		}
		if err != nil {
			r.cleanup(true)
			out = nil
			return
		}
		r.cleanup(false)
	}()
	// Parameters: contiguous at offset 0, copied when they are not.
	r.params = make([][]byte, len(in))
	for i, o := range in {
		m := p.g.Params[i].Meta
		if err := checkParam(o, m); err != nil {
			return nil, fmt.Errorf("cpu: run: input %d: %w", i, err)
		}
		b := o.Buf.(*Buf).b
		n := op.Numel(m.Shape) * m.DType.Size()
		if o.Offset == 0 && slices.Equal(o.Strides, op.ContiguousStrides(o.Shape)) {
			r.params[i] = b[:n]
			continue
		}
		tmp, err := c.be.Alloc(index, n)
		if err != nil {
			return nil, fmt.Errorf("cpu: run: %w", err)
		}
		r.temps = append(r.temps, tmp)
		tb := tmp.(*Buf).b[:n]
		castLoop(r.ks, o, b, device.Operand{DType: m.DType, Layout: op.Contiguous(slices.Clone(m.Shape))}, tb)
		r.params[i] = tb
	}
	if p.arena > 0 {
		a, err := c.be.Alloc(index, int(p.arena))
		if err != nil {
			return nil, fmt.Errorf("cpu: run: arena: %w", err)
		}
		r.arena = a.(*Buf)
	}
	for i, b := range p.bufs {
		switch {
		case b.out:
		case r.arena == nil:
			r.bufs[i] = []byte{} // an empty buffer in an empty arena
		default:
			r.bufs[i] = r.arena.b[b.off : b.off+b.size : b.off+b.size]
		}
	}
	r.applyDonations(in, opts)
	r.dynamic, r.drawn = opts.Dynamic, make([]any, len(p.dyn))
	r.threads = planThreads(p.opts.Threads)
	timed := stepProfOn.Load()
	var t0 time.Time
	prefetch := prefetchOn && r.threads > 1
	if prefetch {
		p.pfOnce.Do(p.prefetchPlan)
		defer pool.StopBackground()
	}
	r.pfPosted = -1
	for si := 0; si < len(p.steps); si++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("cpu: run: %w", err)
		}
		if r.skip != nil && r.skip[si] {
			continue
		}
		if prefetch {
			r.prefetchBefore(si)
		}
		if timed {
			t0 = time.Now()
		}
		if n := r.linearRun(si); n > 1 {
			if err := r.linearSteps(p.steps[si : si+n]); err != nil {
				return nil, fmt.Errorf("cpu: run: steps %d-%d: %w", si, si+n-1, err)
			}
			if timed {
				addStepTime(p, p.steps[si:si+n], t0)
			}
			si += n - 1
			continue
		}
		if err := r.step(&p.steps[si]); err != nil {
			return nil, fmt.Errorf("cpu: run: step %d: %w", si, err)
		}
		if timed && p.steps[si].kind != stConst {
			addStepTime(p, p.steps[si:si+1], t0)
		}
	}
	out = make([]device.Buffer, len(p.outputs))
	for i, id := range p.outputs {
		b := p.vals[id].buf
		if r.lent != nil && r.lent[b] != nil {
			out[i] = r.lent[b] // the caller's own buffer, lent back
			continue
		}
		out[i] = r.outBufs[b]
		r.outBufs[b] = nil // owned by the caller now
	}
	return out, nil
}

func checkParam(o device.Operand, m op.Meta) error {
	if o.Buf == nil {
		return errors.New("nil buffer")
	}
	if _, ok := o.Buf.(*Buf); !ok {
		return fmt.Errorf("buffer of type %T is not a cpu buffer", o.Buf)
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

// crun is the state of one Run.
type crun struct {
	c       *cprogram
	ks      *kset // the backend's kernels, which the program runs
	index   int
	params  [][]byte
	arena   *Buf
	bufs    [][]byte // per plan buffer: its bytes
	outBufs []*Buf   // per plan buffer: the output buffer allocated for it
	temps   []device.Buffer
	skip    []bool // per step: replaced by a lent buffer (applyDonations)
	lent    []*Buf // per plan buffer: the caller's buffer lent to it
	dynamic []op.Attrs
	drawn   []any
	threads int
	// Reused by every plain kernel step (crun.kernel): a decode step runs
	// hundreds of small kernels, and their launches' allocations were a
	// good part of each one's cost.
	bufObj []Buf // per value id: the Buf its operands point at
	// one is the launch and call of single kernel steps, lin those of
	// linearSteps' products: reused from step to step.
	one callSlot
	lin []callSlot
	// pfPosted is the product step whose weights were last offered for
	// prefetching (compile_prefetch.go), -1 when none.
	pfPosted int
}

func (r *crun) cleanup(failed bool) {
	be := r.c.be
	for _, t := range r.temps {
		be.Free(r.index, t)
	}
	if r.arena != nil {
		be.Free(r.index, r.arena)
	}
	if failed {
		for _, b := range r.outBufs {
			if b != nil {
				be.Free(r.index, b)
			}
		}
	}
}

// mem returns the bytes under value id.
func (r *crun) mem(id int) []byte {
	v := r.c.pl.vals[id]
	if v.param >= 0 {
		return r.params[v.param]
	}
	return r.bufs[v.buf]
}

// operand returns value id as a kernel operand with layout l.
func (r *crun) operand(id int, l op.Layout) device.Operand {
	if r.bufObj == nil {
		r.bufObj = make([]Buf, len(r.c.pl.vals))
	}
	b := &r.bufObj[id]
	b.b = r.mem(id)
	return device.Operand{Buf: b, DType: r.c.pl.vals[id].dt, Layout: l}
}

// define makes sure the buffer of value id exists (output buffers are
// allocated when first written).
func (r *crun) define(id int) error {
	b := r.c.pl.vals[id].buf
	if b < 0 || r.bufs[b] != nil {
		return nil
	}
	size := int(r.c.pl.bufs[b].size)
	ob, err := r.c.be.Alloc(r.index, max(size, 1))
	if err != nil {
		return err
	}
	r.outBufs[b] = ob.(*Buf)
	r.bufs[b] = ob.(*Buf).b[:size:size]
	return nil
}

func (r *crun) step(s *pstep) error {
	p := r.c.pl
	for _, id := range s.out {
		if err := r.define(id); err != nil {
			return err
		}
	}
	switch s.kind {
	case stConst:
		copy(r.mem(s.out[0]), p.g.Nodes[s.node].Data)
		return nil
	case stCopy:
		in, out := s.in[0], s.out[0]
		iv, ov := p.vals[in], p.vals[out]
		castLoop(r.ks, r.operand(in, iv.layout), r.mem(in), r.operand(out, ov.layout), r.mem(out))
		return nil
	case stKernel:
		return r.kernel(s)
	case stFused:
		return r.fused(s)
	case stRope:
		return r.rope(s)
	case stNormBF16:
		return r.normBF16(s)
	case stGLUBF16:
		return r.gluBF16(s)
	}
	return fmt.Errorf("bad step kind %d", s.kind)
}

// kernel runs a stKernel step through the run's reused launch and call
// (the kernel keeps neither past its return).
func (r *crun) kernel(s *pstep) error {
	n := r.c.pl.g.Nodes[s.node]
	k, ok := kernelOf(n.Op)
	if !ok {
		return fmt.Errorf("%w: %s on cpu", device.ErrUnsupported, n.Op.Name)
	}
	c, err := r.callIn(s, &r.one)
	if err != nil {
		return err
	}
	return k.Run(c)
}

// callSlot is a stKernel step's launch and call with their slices, kept
// for the next step that uses the slot.
type callSlot struct {
	l         device.Launch
	c         Call
	ins, outs []device.Operand
	inB, outB [][]byte
}

// callIn returns the call of stKernel step s built in slot sl (valid until
// the slot's next use), or a fresh one for an operand-swapped product.
func (r *crun) callIn(s *pstep, sl *callSlot) (*Call, error) {
	l, err := r.launchInto(s, &sl.l, sl.ins[:0], sl.outs[:0])
	if err != nil {
		return nil, err
	}
	if l != &sl.l { // the operand-swapped product
		c := newCall(l, bufBytes)
		c.ks = r.ks
		return c, nil
	}
	sl.ins, sl.outs = l.In, l.Out
	sl.inB, sl.outB = sl.inB[:0], sl.outB[:0]
	for _, o := range l.In {
		var b []byte
		if o.Buf != nil {
			b = bufBytes(o.Buf)
		}
		sl.inB = append(sl.inB, b)
	}
	for _, o := range l.Out {
		sl.outB = append(sl.outB, bufBytes(o.Buf))
	}
	sl.c = Call{Launch: l, InB: sl.inB, OutB: sl.outB, ks: r.ks}
	return &sl.c, nil
}

// launch returns the kernel launch of a stKernel step.
func (r *crun) launch(s *pstep) (*device.Launch, error) {
	return r.launchInto(s, &device.Launch{}, make([]device.Operand, 0, len(s.in)), nil)
}

// launchInto fills l with the launch of stKernel step s, its operands
// appended to in and out, and returns it (or, for a product whose output
// is a transposed buffer, the operand-swapped launch swappedDot makes).
func (r *crun) launchInto(s *pstep, l *device.Launch, in, out []device.Operand) (*device.Launch, error) {
	p := r.c.pl
	n := p.g.Nodes[s.node]
	a, err := interp.DynamicAttrs(n, p.planNodeAttrs[s.node], s.dyn, r.dynamic, r.drawn)
	if err != nil {
		return nil, err
	}
	for i, id := range s.in {
		var o device.Operand
		if id >= 0 {
			o = r.operand(id, s.inL[i])
		}
		in = append(in, o)
	}
	for k := 0; k < s.nOut; k++ {
		id := s.out[k]
		out = append(out, r.operand(id, p.vals[id].layout))
	}
	*l = device.Launch{Op: n.Op, Attrs: a, In: in, Out: out}
	if s.nOut == 1 && n.Op == op.DotGeneral && planTransposed(l.Out[0].Layout) {
		return swappedDot(l), nil
	}
	return l, nil
}

func bufBytes(b device.Buffer) []byte { return b.(*Buf).b }

// fused runs a fused step.
func (r *crun) fused(s *pstep) error {
	p := r.c.pl
	g := s.grp
	e := &fexec{g: g, ks: r.ks, in: make([]fin, len(g.inputs)), outs: make([][]float32, len(g.outs))}
	for k, o := range g.outs {
		e.outs[k] = as[float32](r.mem(o.val))
	}
	if g.red != redNone {
		e.red = as[float32](r.mem(g.redOut))
	}
	for i, id := range g.inputs {
		if id < 0 {
			// The GEMM's output: the buffer of the group's output 0
			// (the product's own, or the group's last value's, which
			// the group rewrites in place).
			e.in[i] = fin{kind: ldDirect, src: e.outs[0]}
			continue
		}
		v := p.vals[id]
		bl, ok := v.layout.BroadcastTo(g.shape)
		if !ok {
			return fmt.Errorf("fused input %d does not broadcast", i)
		}
		f := fin{off: bl.Offset, shape: bl.Shape, strides: bl.Strides}
		if v.dt == dtype.Bool {
			f.src8 = r.mem(id)
		} else {
			f.src = as[float32](r.mem(id))
		}
		switch {
		case slices.Equal(bl.Strides, op.ContiguousStrides(bl.Shape)):
			f.kind = ldDirect
		case planAllZero(bl.Strides):
			f.kind = ldScalar
		default:
			f.kind = ldGather
		}
		e.in[i] = f
	}
	if g.gemm >= 0 {
		return r.gemmEpilogue(s, e)
	}
	e.runGroup(r.threads)
	return nil
}

func planAllZero(s []int) bool {
	for _, x := range s {
		if x != 0 {
			return false
		}
	}
	return true
}

// epilogueMinElems is the output size (f32 elements, 256 KiB: a quarter
// of this machine's L2) up to which a GEMM's fused group runs after the
// whole product rather than on each tile, unless the product streams
// (column epilogue) or its tiles are wide (dotTilesWide). Measured on the
// MNIST step's [64, 256] outputs of the streaming path before it had
// column epilogues: per tile 167 µs, after the product 60 µs.
const epilogueMinElems = 1 << 16

// epiColsRuns and epiTileRuns count the GEMM epilogues run as column and
// as tile epilogues (tests check which path a shape takes).
var epiColsRuns, epiTileRuns atomic.Uint64

// gemmEpilogue runs the dot_general of a fused step with the group as its
// epilogue: on each finished column of C on the streaming x·Wᵀ path, on
// each finished tile for large outputs or wide tiles, else after the
// product.
func (r *crun) gemmEpilogue(s *pstep, e *fexec) error {
	p := r.c.pl
	g := e.g
	n := p.g.Nodes[g.gemm]
	ops := s.in[len(g.inputs):]
	l := &device.Launch{Op: n.Op, Attrs: p.planNodeAttrs[g.gemm], In: make([]device.Operand, 2)}
	for i := 0; i < 2; i++ {
		l.In[i] = r.operand(ops[i], p.vals[ops[i]].layout)
	}
	outID := g.outs[0].val
	l.Out = []device.Operand{r.operand(outID, p.vals[outID].layout)}
	c := &Call{Launch: l, InB: [][]byte{r.mem(ops[0]), r.mem(ops[1])}, OutB: [][]byte{r.mem(outID)}, ks: r.ks}
	// The group runs inside the product (per finished column or tile,
	// gemmInline) except after a product of one or a few activation rows
	// (a decode step: memory-bound, the plain kernel reads the matrix once
	// on the gemv kernels, the group then runs over its few output rows)
	// and for a group with outputs besides output 0: storing them from the
	// streaming path's columns or from the blocked driver's tiles measured
	// slower than a pass over the cache-resident product
	// (BenchmarkGEMMEpilogueOutputs: 512x1024x1024 with GELU and its
	// pre-activation kept, 7.0 -> 7.2-7.5 ms per tile; the MNIST step's
	// [64, 512] by columns, 336 -> 388 µs).
	_, nb, m, _, _, err := dotSizes(c)
	gemv := err == nil && nb == 1 && gemvTakes(r.ks, m) && l.In[0].DType == dtype.F32
	if !gemv && len(g.outs) == 1 && gemmInline(c, e) {
		return nil
	}
	// The plain kernel (which takes the swapped product itself where it
	// pays), then the group.
	if err := dotGeneralKernel(c); err != nil {
		return err
	}
	e.runGroup(r.threads)
	return nil
}

// gemmInline runs c's product with e's group as its epilogue, on each
// finished column of the streaming x·Wᵀ path or on each finished tile, and
// reports whether it did; nothing ran when it reports false.
func gemmInline(c *Call, e *fexec) bool {
	g := e.g
	// fin runs the group on one finished tile, with one scratch for the
	// whole tile (tiles are small: a scratch per row cost more than the
	// group's arithmetic). A tile spanning whole rows is one contiguous
	// range of the output, evaluated block by block.
	fin := func(b, i0, j0, mc, nc int, m, nn int) {
		sc := getFScratch(g.nregs * g.block)
		regs := sc.regList(g.nregs)
		span := func(lo, hi int) {
			for ; lo < hi; lo += g.block {
				e.evalRange(lo, min(lo+g.block, hi), sc, regs)
			}
		}
		if nc == nn {
			lo := b*m*nn + i0*nn
			span(lo, lo+mc*nn)
		} else {
			for i := 0; i < mc; i++ {
				lo := b*m*nn + (i0+i)*nn + j0
				span(lo, lo+nc)
			}
		}
		fscratchPool.Put(sc)
	}
	// On the streaming x·Wᵀ path the group runs on each finished column
	// of C (epi_cols.go).
	shp := c.Out[0].Shape
	numel := op.Numel(shp)
	if len(shp) >= 2 && shp[len(shp)-1] > 0 && dotStreams(c) {
		n := shp[len(shp)-1]
		if ec := newEpiCols(e, numel/n, n); ec != nil && dotF32StreamCols(c, ec.run) {
			epiColsRuns.Add(1)
			return true
		}
	}
	// A small output stays in cache between the product and the group:
	// unless the tiles are wide, the per-tile hook would only add a call
	// per tile, so the product runs whole and the group after it (the
	// same arithmetic either way).
	if numel > epilogueMinElems && (dotF32Swapped(c, fin) || dotF32Epilogue(c, fin)) ||
		numel <= epilogueMinElems && dotTilesWide(c) && dotF32Epilogue(c, fin) {
		epiTileRuns.Add(1)
		return true
	}
	return false
}

// summary describes a plan's steps, one per line (for logs and tests).
func (p *plan) summary() string {
	var sb strings.Builder
	for i, s := range p.steps {
		switch s.kind {
		case stConst:
			fmt.Fprintf(&sb, "%d: const\n", i)
		case stCopy:
			fmt.Fprintf(&sb, "%d: copy\n", i)
		case stKernel:
			fmt.Fprintf(&sb, "%d: %s\n", i, p.g.Nodes[s.node].Op.Name)
		case stRope:
			fmt.Fprintf(&sb, "%d: rope %v\n", i, p.vals[s.out[0]].layout.Shape)
		case stNormBF16:
			fmt.Fprintf(&sb, "%d: rms_norm bf16 %v\n", i, p.vals[s.out[0]].layout.Shape)
		case stGLUBF16:
			fmt.Fprintf(&sb, "%d: glu bf16 %v\n", i, p.vals[s.out[0]].layout.Shape)
		case stFused:
			g := s.grp
			fmt.Fprintf(&sb, "%d: fused %v: %d instructions, %d inputs, %d outputs", i, g.shape, len(g.code), len(g.inputs), len(g.outs))
			if g.red != redNone {
				fmt.Fprintf(&sb, ", row reduction over %d", g.redRow)
			}
			if g.gemm >= 0 {
				sb.WriteString(", GEMM epilogue")
			}
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

// opCopyInPlace is copy_, the op an eager in-place update ends with.
var opCopyInPlace = op.CopyInPlace

// updateInPlaceOps are the ops whose CPU kernel, given an output that is
// its first input's own buffer (same layout), updates it in place instead
// of copying it first (index_copy.go's sameView check).
var updateInPlaceOps = map[*op.Def]bool{op.IndexCopy: true}

// inPlaceUpdates finds the functional updates that an in-place call
// recorded as update-then-copy_ — x.index_copy_(d, i, s) is
// copy_(x, index_copy(x, d, i, s)) — so that they run as one in-place
// kernel on x's copy (which buffer donation can remove too) rather than
// copying x into a fresh result and the result back into x: for a decoder
// step that is two whole-KV-cache copies per layer saved. It maps each such
// update node to its copy_ node. Conditions: the update's result is used by
// the copy_ alone and is no graph output, the copy_ writes into the very
// value the update read, with the same dtype and shape, and neither node is
// part of a fused group.
func (pl *planner) inPlaceUpdates(users map[*ir.Value][]*ir.Node) map[*ir.Node]*ir.Node {
	var m map[*ir.Node]*ir.Node
	for _, n := range pl.g.Nodes {
		if !updateInPlaceOps[n.Op] || !pl.live[n] || pl.groupOf[n] != nil || len(n.Out) != 1 || len(n.In) == 0 || n.In[0] == nil {
			continue
		}
		r := n.Out[0]
		us := users[r]
		if len(us) != 1 || pl.outSet[r] {
			continue
		}
		c := us[0]
		if c.Op != opCopyInPlace || pl.groupOf[c] != nil || len(c.In) != 2 || len(c.Out) != 1 || c.In[0] != n.In[0] || c.In[1] != r {
			continue
		}
		x := n.In[0]
		if x.Meta.DType != r.Meta.DType || !slices.Equal(x.Meta.Shape, r.Meta.Shape) || c.Out[0].Meta.DType != r.Meta.DType {
			continue
		}
		if m == nil {
			m = map[*ir.Node]*ir.Node{}
		}
		m[n] = c
	}
	return m
}

// emitUpdateInPlace plans update node n (see inPlaceUpdates) as its kernel
// writing into a copy of its first input, and returns that value.
func (pl *planner) emitUpdateInPlace(j int, n *ir.Node) int {
	p := pl.p
	id := pl.copyOf(pl.vid[n.In[0]])
	s := pstep{kind: stKernel, node: j, dyn: pl.dynOf[j], nOut: 1, in: []int{id}, inL: []op.Layout{planCloneLayout(p.vals[id].layout)}, out: []int{id}}
	for _, v := range n.In[1:] {
		if v == nil {
			s.in = append(s.in, -1)
			s.inL = append(s.inL, op.Layout{})
			continue
		}
		vid := pl.vid[v]
		if n.Op.NeedsContiguous && !p.vals[vid].layout.IsContiguous() {
			vid = pl.copyOf(vid)
		}
		s.in = append(s.in, vid)
		s.inL = append(s.inL, planCloneLayout(p.vals[vid].layout))
	}
	pl.vid[n.Out[0]] = id
	p.steps = append(p.steps, s)
	return id
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}
