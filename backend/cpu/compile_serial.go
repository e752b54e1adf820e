package cpu

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// planFormat names the serialized plan format and its version.
const planFormat = "cpu-plan/3"

// Serialized plan: planFormat "\n", the SHA-256 of the body, the body:
//
//	options: precision(string) threads(varint)
//	graph: bytes (ir.Graph.MarshalBinary of the lowered graph)
//	dynamic: count, per source node: count, names(string...)
//	values: count, per value: dtype param buf layout imm(0|1) immBits(uvarint)
//	buffers: count, per buffer: size off out(0|1)
//	arena
//	steps: count, per step: kind node dyn nOut in(ints) inL(count, layout...)
//	       out(ints) group(0, or 1 and the group)
//	outputs(ints)
//	stats: nodes kernels fused peak
//
// All integers are varints; layout = rank dims... strides... offset.
// Version 2 allows a dot_general step's output value to be the transpose
// of its buffer (compile_transpose.go).

// Limits a plan must respect; larger numbers mean corrupt bytes.
const (
	maxPlanCount = 1 << 24
	maxPlanBlock = 1 << 20
	maxPlanRegs  = 1 << 12
	maxPlanRank  = 64
	maxPlanBytes = int64(1) << 42
)

type penc struct{ b []byte }

func (e *penc) i(x int)      { e.b = binary.AppendVarint(e.b, int64(x)) }
func (e *penc) i64(x int64)  { e.b = binary.AppendVarint(e.b, x) }
func (e *penc) u(x uint64)   { e.b = binary.AppendUvarint(e.b, x) }
func (e *penc) s(x string)   { e.i(len(x)); e.b = append(e.b, x...) }
func (e *penc) raw(x []byte) { e.i(len(x)); e.b = append(e.b, x...) }
func (e *penc) bl(x bool) {
	if x {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}
func (e *penc) ints(x []int) {
	e.i(len(x))
	for _, v := range x {
		e.i(v)
	}
}
func (e *penc) layout(l op.Layout) {
	e.ints(l.Shape)
	e.ints(l.Strides)
	e.i(l.Offset)
}

func marshalPlan(p *plan) ([]byte, error) {
	gb, err := p.g.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("cpu: marshal plan: %w", err)
	}
	e := &penc{}
	e.s(p.opts.Precision)
	e.i(p.opts.Threads)
	e.raw(gb)
	e.i(len(p.dyn))
	for _, names := range p.dyn {
		e.i(len(names))
		for _, n := range names {
			e.s(n)
		}
	}
	e.i(len(p.vals))
	for _, v := range p.vals {
		e.i(int(v.dt))
		e.i(v.param)
		e.i(v.buf)
		e.layout(v.layout)
		e.bl(v.imm)
		e.u(uint64(math.Float32bits(v.immVal)))
	}
	e.i(len(p.bufs))
	for _, b := range p.bufs {
		e.i64(b.size)
		e.i64(b.off)
		e.bl(b.out)
	}
	e.i64(p.arena)
	e.i(len(p.steps))
	for _, s := range p.steps {
		e.i(int(s.kind))
		e.i(s.node)
		e.i(s.dyn)
		e.i(s.nOut)
		e.ints(s.in)
		e.i(len(s.inL))
		for _, l := range s.inL {
			e.layout(l)
		}
		e.ints(s.out)
		e.bl(s.grp != nil)
		if g := s.grp; g != nil {
			e.ints(g.shape)
			e.i(g.numel)
			e.i(g.block)
			e.ints(g.inputs)
			e.i(len(g.code))
			for _, c := range g.code {
				e.i(int(c.op))
				e.i(c.dst)
				e.i(c.a)
				e.i(c.b)
				e.i(c.c)
				e.u(uint64(math.Float32bits(c.imm)))
			}
			e.i(g.nregs)
			e.i(len(g.outs))
			for _, o := range g.outs {
				e.i(o.reg)
				e.i(o.val)
			}
			e.i(int(g.red))
			e.i(g.redReg)
			e.i(g.redRow)
			e.i(g.redOut)
			e.i(g.gemm)
			e.i(g.gemmReg)
		}
	}
	e.ints(p.outputs)
	e.i(p.stats.Nodes)
	e.i(p.stats.Kernels)
	e.i(p.stats.Fused)
	e.i64(p.stats.PeakBytes)
	sum := sha256.Sum256(e.b)
	out := make([]byte, 0, len(planFormat)+1+len(sum)+len(e.b))
	out = append(out, planFormat+"\n"...)
	out = append(out, sum[:]...)
	return append(out, e.b...), nil
}

type pdec struct {
	b   []byte
	off int
	err error
}

func (d *pdec) fail(msg string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s: at byte %d: %s", device.ErrProgramFormat, planFormat, d.off, msg)
	}
}

func (d *pdec) i64() int64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.off += n
	return x
}

func (d *pdec) i() int {
	x := d.i64()
	if x < math.MinInt32 || x > math.MaxInt32*4 {
		d.fail("integer out of range")
		return 0
	}
	return int(x)
}

func (d *pdec) u() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.off += n
	return x
}

func (d *pdec) count() int {
	n := d.i()
	if n < 0 || n > maxPlanCount || n > len(d.b)-d.off {
		d.fail("bad count")
		return 0
	}
	return n
}

func (d *pdec) raw() []byte {
	n := d.count()
	if d.err != nil {
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *pdec) bl() bool {
	if d.err != nil {
		return false
	}
	if d.off >= len(d.b) || d.b[d.off] > 1 {
		d.fail("bad bool")
		return false
	}
	d.off++
	return d.b[d.off-1] == 1
}

func (d *pdec) ints() []int {
	n := d.count()
	out := make([]int, 0, n)
	for k := 0; k < n && d.err == nil; k++ {
		out = append(out, d.i())
	}
	return out
}

func (d *pdec) layout() op.Layout {
	l := op.Layout{Shape: d.ints(), Strides: d.ints(), Offset: d.i()}
	if l.Shape == nil {
		l.Shape = []int{}
	}
	return l
}

// unmarshalPlan decodes and validates a plan; every error wraps
// device.ErrProgramFormat.
func unmarshalPlan(data []byte) (*plan, error) {
	hdr := planFormat + "\n"
	if !bytes.HasPrefix(data, []byte(hdr)) {
		return nil, fmt.Errorf("cpu: load program: %w: not %s", device.ErrProgramFormat, planFormat)
	}
	data = data[len(hdr):]
	if len(data) < sha256.Size {
		return nil, fmt.Errorf("cpu: load program: %w: truncated", device.ErrProgramFormat)
	}
	body := data[sha256.Size:]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], data[:sha256.Size]) {
		return nil, fmt.Errorf("cpu: load program: %w: checksum mismatch", device.ErrProgramFormat)
	}
	return decodePlanBody(body)
}

// decodePlanBody decodes a plan body (without the header and checksum).
func decodePlanBody(body []byte) (*plan, error) {
	d := &pdec{b: body}
	p := &plan{}
	p.opts.Precision = string(d.raw())
	p.opts.Threads = d.i()
	gb := d.raw()
	if d.err != nil {
		return nil, d.err
	}
	g, err := ir.UnmarshalGraph(gb)
	if err != nil {
		return nil, fmt.Errorf("cpu: load program: %w: %w", device.ErrProgramFormat, err)
	}
	p.g = g
	nd := d.count()
	for k := 0; k < nd && d.err == nil; k++ {
		nn := d.count()
		var names []string
		for i := 0; i < nn && d.err == nil; i++ {
			names = append(names, string(d.raw()))
		}
		p.dyn = append(p.dyn, names)
	}
	nv := d.count()
	for k := 0; k < nv && d.err == nil; k++ {
		v := pvalue{dt: dtype.DType(d.i()), param: d.i(), buf: d.i(), layout: d.layout(), imm: d.bl()}
		bits := d.u()
		if bits > math.MaxUint32 {
			d.fail("bad immediate")
		}
		v.immVal = math.Float32frombits(uint32(bits))
		p.vals = append(p.vals, v)
	}
	nb := d.count()
	for k := 0; k < nb && d.err == nil; k++ {
		p.bufs = append(p.bufs, pbuf{size: d.i64(), off: d.i64(), out: d.bl()})
	}
	p.arena = d.i64()
	ns := d.count()
	for k := 0; k < ns && d.err == nil; k++ {
		s := pstep{kind: uint8(d.i()), node: d.i(), dyn: d.i(), nOut: d.i(), in: d.ints()}
		nl := d.count()
		for i := 0; i < nl && d.err == nil; i++ {
			s.inL = append(s.inL, d.layout())
		}
		s.out = d.ints()
		if d.bl() {
			g := &fgroup{shape: d.ints(), numel: d.i(), block: d.i(), inputs: d.ints()}
			nc := d.count()
			for i := 0; i < nc && d.err == nil; i++ {
				c := finstr{op: fop(d.i()), dst: d.i(), a: d.i(), b: d.i(), c: d.i()}
				bits := d.u()
				if bits > math.MaxUint32 {
					d.fail("bad immediate")
				}
				c.imm = math.Float32frombits(uint32(bits))
				g.code = append(g.code, c)
			}
			g.nregs = d.i()
			no := d.count()
			for i := 0; i < no && d.err == nil; i++ {
				g.outs = append(g.outs, fout{reg: d.i(), val: d.i()})
			}
			g.red = uint8(d.i())
			g.redReg, g.redRow, g.redOut, g.gemm, g.gemmReg = d.i(), d.i(), d.i(), d.i(), d.i()
			s.grp = g
		}
		p.steps = append(p.steps, s)
	}
	p.outputs = d.ints()
	p.stats.Nodes, p.stats.Kernels, p.stats.Fused, p.stats.PeakBytes = d.i(), d.i(), d.i(), d.i64()
	if d.err != nil {
		return nil, d.err
	}
	if d.off != len(d.b) {
		return nil, fmt.Errorf("cpu: load program: %w: %d trailing bytes", device.ErrProgramFormat, len(d.b)-d.off)
	}
	if p.opts.Threads < 0 {
		return nil, fmt.Errorf("cpu: load program: %w: negative threads", device.ErrProgramFormat)
	}
	p.planNodeAttrs = planNodeAttrs(p.g, p.opts)
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("cpu: load program: %w: %w", device.ErrProgramFormat, err)
	}
	return p, nil
}

var errPlan = errors.New("inconsistent plan")

// planCheckLayout checks that l is well formed and that every element it
// touches lies in [0, limit) elements.
func planCheckLayout(l op.Layout, limit int64) error {
	if len(l.Shape) > maxPlanRank || len(l.Strides) != len(l.Shape) {
		return fmt.Errorf("%w: layout rank", errPlan)
	}
	n := int64(1)
	for _, x := range l.Shape {
		if x < 0 || int64(x) > maxPlanBytes {
			return fmt.Errorf("%w: dimension %d", errPlan, x)
		}
		n *= int64(x)
		if n > maxPlanBytes {
			return fmt.Errorf("%w: layout too large", errPlan)
		}
	}
	if n == 0 {
		return nil
	}
	lo, hi := int64(l.Offset), int64(l.Offset)+1
	for i, x := range l.Shape {
		s := int64(l.Strides[i])
		if s > maxPlanBytes || s < -maxPlanBytes {
			return fmt.Errorf("%w: stride %d", errPlan, s)
		}
		if s < 0 {
			lo += s * int64(x-1)
		} else {
			hi += s * int64(x-1)
		}
	}
	if lo < 0 || hi > limit {
		return fmt.Errorf("%w: layout spans [%d, %d) of %d elements", errPlan, lo, hi, limit)
	}
	return nil
}

func planIsContig(l op.Layout) bool {
	return l.Offset == 0 && slices.Equal(l.Strides, op.ContiguousStrides(l.Shape))
}

// validate checks every index and layout of a plan against its graph and
// buffers, so that running a plan decoded from corrupt bytes cannot read
// or write out of bounds.
func (p *plan) validate() error {
	g := p.g
	if p.arena < 0 || p.arena > maxPlanBytes {
		return fmt.Errorf("%w: arena %d", errPlan, p.arena)
	}
	for i, b := range p.bufs {
		if b.size < 0 || b.size > maxPlanBytes || (!b.out && (b.off < 0 || b.off%64 != 0 || b.off+b.size > p.arena)) {
			return fmt.Errorf("%w: buffer %d", errPlan, i)
		}
	}
	for i, v := range p.vals {
		if !v.dt.Valid() {
			return fmt.Errorf("%w: value %d dtype", errPlan, i)
		}
		var limit int64
		switch {
		case v.param >= 0 && v.buf == -1:
			if v.param >= len(g.Params) || g.Params[v.param].Meta.DType != v.dt {
				return fmt.Errorf("%w: value %d parameter", errPlan, i)
			}
			limit = int64(g.Params[v.param].Meta.Numel())
		case v.param == -1 && v.buf >= 0 && v.buf < len(p.bufs):
			limit = p.bufs[v.buf].size / int64(v.dt.Size())
		case v.param == -1 && v.buf == -1 && v.imm:
			limit = 1
		default:
			return fmt.Errorf("%w: value %d storage", errPlan, i)
		}
		if err := planCheckLayout(v.layout, limit); err != nil {
			return fmt.Errorf("value %d: %w", i, err)
		}
	}
	stored := func(id int) bool {
		return id >= 0 && id < len(p.vals) && (p.vals[id].buf >= 0 || p.vals[id].param >= 0)
	}
	owned := func(id int) bool {
		return id >= 0 && id < len(p.vals) && p.vals[id].buf >= 0 && planIsContig(p.vals[id].layout)
	}
	for si, s := range p.steps {
		if err := p.validateStep(s, stored, owned); err != nil {
			return fmt.Errorf("step %d: %w", si, err)
		}
	}
	if len(p.outputs) != len(g.Outputs) {
		return fmt.Errorf("%w: %d outputs for %d graph outputs", errPlan, len(p.outputs), len(g.Outputs))
	}
	seen := map[int]bool{}
	for i, id := range p.outputs {
		if !owned(id) || !p.bufs[p.vals[id].buf].out || seen[p.vals[id].buf] {
			return fmt.Errorf("%w: output %d", errPlan, i)
		}
		seen[p.vals[id].buf] = true
		m := g.Outputs[i].Meta
		if v := p.vals[id]; v.dt != m.DType || !slices.Equal(v.layout.Shape, m.Shape) {
			return fmt.Errorf("%w: output %d meta", errPlan, i)
		}
		written := false
		for _, s := range p.steps {
			for _, o := range s.out {
				if o >= 0 && o < len(p.vals) && p.vals[o].buf == p.vals[id].buf {
					written = true
				}
			}
		}
		if !written {
			return fmt.Errorf("%w: output %d is never written", errPlan, i)
		}
	}
	return nil
}

func (p *plan) validateStep(s pstep, stored, owned func(int) bool) error {
	g := p.g
	if s.dyn < -1 || s.dyn >= len(p.dyn) {
		return fmt.Errorf("%w: dynamic index", errPlan)
	}
	switch s.kind {
	case stConst:
		if s.node < 0 || s.node >= len(g.Nodes) || !g.Nodes[s.node].IsConst() || len(s.out) != 1 || !owned(s.out[0]) ||
			int64(len(g.Nodes[s.node].Data)) != p.bufs[p.vals[s.out[0]].buf].size {
			return fmt.Errorf("%w: constant", errPlan)
		}
	case stCopy:
		if len(s.in) != 1 || len(s.out) != 1 || !stored(s.in[0]) || !owned(s.out[0]) ||
			!slices.Equal(p.vals[s.in[0]].layout.Shape, p.vals[s.out[0]].layout.Shape) {
			return fmt.Errorf("%w: copy", errPlan)
		}
	case stKernel:
		if s.node < 0 || s.node >= len(g.Nodes) {
			return fmt.Errorf("%w: kernel node", errPlan)
		}
		n := g.Nodes[s.node]
		if n.IsConst() || n.Op.Kind == op.View || len(s.in) != len(n.In) || len(s.inL) != len(s.in) ||
			len(s.out) != len(n.Out) || s.nOut < 0 || s.nOut > len(s.out) {
			return fmt.Errorf("%w: kernel arity", errPlan)
		}
		if !Has(n.Op, planKernelDType(n)) {
			return fmt.Errorf("%w: %s (dtype %s) has no kernel in this build", device.ErrUnsupported, n.Op.Name, planKernelDType(n))
		}
		for i, id := range s.in {
			if (id < 0) != (n.In[i] == nil) {
				return fmt.Errorf("%w: kernel input %d", errPlan, i)
			}
			if id < 0 {
				continue
			}
			if !stored(id) || p.vals[id].dt != n.In[i].Meta.DType {
				return fmt.Errorf("%w: kernel input %d", errPlan, i)
			}
			if err := planCheckLayout(s.inL[i], p.valueLimit(id)); err != nil {
				return fmt.Errorf("kernel input %d: %w", i, err)
			}
			want := n.In[i].Meta.Shape
			if n.Op.Broadcast && s.nOut > 0 {
				want = n.Out[0].Meta.Shape
			}
			if !slices.Equal(s.inL[i].Shape, want) {
				return fmt.Errorf("%w: kernel input %d shape", errPlan, i)
			}
		}
		for k, id := range s.out {
			if k == 0 && s.nOut == 1 && len(s.out) == 1 && n.Op == op.DotGeneral && stored(id) && p.vals[id].buf >= 0 &&
				planTransposed(p.vals[id].layout) && dotSwappable(len(s.inL[0].Shape), len(s.inL[1].Shape), p.planNodeAttrs[s.node]) {
				// The transposed product absorbing a copy (compile_transpose.go).
			} else if !owned(id) {
				return fmt.Errorf("%w: kernel output %d", errPlan, k)
			}
			if p.vals[id].dt != n.Out[k].Meta.DType || !slices.Equal(p.vals[id].layout.Shape, n.Out[k].Meta.Shape) {
				return fmt.Errorf("%w: kernel output %d", errPlan, k)
			}
		}
	case stFused:
		return p.validateGroup(s, stored, owned)
	case stRope:
		return p.validateRope(s, stored, owned)
	case stNormBF16:
		return p.validateNorm(s, stored, owned)
	case stGLUBF16:
		return p.validateGLU(s, stored, owned)
	default:
		return fmt.Errorf("%w: step kind %d", errPlan, s.kind)
	}
	return nil
}

// valueLimit is the number of elements value id's storage holds (its
// parameter's, or its buffer's), the bound of its layouts.
func (p *plan) valueLimit(id int) int64 {
	v := p.vals[id]
	if v.param >= 0 {
		return int64(p.g.Params[v.param].Meta.Numel())
	}
	return p.bufs[v.buf].size / int64(v.dt.Size())
}

// validateRope checks an stRope step: x, cos and sin, of the output's
// dtype (f32 or bf16) and laid out over its shape with unit stride along
// its even last dimension, and the output's own contiguous buffer.
func (p *plan) validateRope(s pstep, stored, owned func(int) bool) error {
	if len(s.in) != 3 || len(s.inL) != 3 || len(s.out) != 1 || s.nOut != 1 || !owned(s.out[0]) {
		return fmt.Errorf("%w: rope arity", errPlan)
	}
	ov := p.vals[s.out[0]]
	shape := ov.layout.Shape
	if (ov.dt != dtype.F32 && ov.dt != dtype.BF16) || len(shape) == 0 || shape[len(shape)-1]%2 != 0 || !planIsContig(ov.layout) {
		return fmt.Errorf("%w: rope output", errPlan)
	}
	for i, id := range s.in {
		if id < 0 || !stored(id) || p.vals[id].dt != ov.dt {
			return fmt.Errorf("%w: rope input %d", errPlan, i)
		}
		l := s.inL[i]
		if err := planCheckLayout(l, p.valueLimit(id)); err != nil {
			return fmt.Errorf("rope input %d: %w", i, err)
		}
		if !slices.Equal(l.Shape, shape) || l.Strides[len(l.Strides)-1] != 1 {
			return fmt.Errorf("%w: rope input %d layout", errPlan, i)
		}
	}
	return nil
}

func (p *plan) validateGroup(s pstep, stored, owned func(int) bool) error {
	g := s.grp
	if g == nil {
		return fmt.Errorf("%w: fused step without a group", errPlan)
	}
	if len(g.shape) > maxPlanRank {
		return fmt.Errorf("%w: group rank", errPlan)
	}
	n := int64(1)
	for _, x := range g.shape {
		if x < 0 {
			return fmt.Errorf("%w: group shape", errPlan)
		}
		n *= int64(x)
		if n > maxPlanBytes {
			return fmt.Errorf("%w: group shape", errPlan)
		}
	}
	if int64(g.numel) != n || g.block < 1 || g.block > maxPlanBlock || g.nregs < len(g.inputs) || g.nregs > maxPlanRegs {
		return fmt.Errorf("%w: group sizes", errPlan)
	}
	f32 := func(id int) bool { return p.vals[id].dt == dtype.F32 }
	f32OrBool := func(id int) bool { return f32(id) || p.vals[id].dt == dtype.Bool }
	extra := 0
	if g.gemm >= 0 {
		extra = 2
		if g.gemm >= len(p.g.Nodes) || p.g.Nodes[g.gemm].IsConst() || p.g.Nodes[g.gemm].Op != op.DotGeneral ||
			g.gemmReg != 0 || len(g.inputs) == 0 || g.inputs[0] != -1 || len(g.outs) == 0 || len(g.code) == 0 ||
			g.outs[0].reg != g.gemmReg && g.outs[0].reg != g.code[len(g.code)-1].dst || g.red != redNone {
			return fmt.Errorf("%w: group gemm", errPlan)
		}
		dn := p.g.Nodes[g.gemm]
		if len(dn.In) != 2 || dn.In[0] == nil || dn.In[1] == nil || !slices.Equal(dn.Out[0].Meta.Shape, g.shape) {
			return fmt.Errorf("%w: group gemm node", errPlan)
		}
	} else if g.gemm != -1 {
		return fmt.Errorf("%w: group gemm", errPlan)
	}
	if len(s.in) != len(g.inputs)+extra {
		return fmt.Errorf("%w: group inputs", errPlan)
	}
	for i, id := range g.inputs {
		if s.in[i] != id {
			return fmt.Errorf("%w: group input %d", errPlan, i)
		}
		if id == -1 && i == 0 && g.gemm >= 0 {
			continue
		}
		if !stored(id) || !f32OrBool(id) {
			return fmt.Errorf("%w: group input %d", errPlan, i)
		}
		if _, ok := p.vals[id].layout.BroadcastTo(g.shape); !ok {
			return fmt.Errorf("%w: group input %d shape", errPlan, i)
		}
	}
	if g.gemm >= 0 {
		dn := p.g.Nodes[g.gemm]
		for k, id := range s.in[len(g.inputs):] {
			if !stored(id) || !f32(id) || !slices.Equal(p.vals[id].layout.Shape, dn.In[k].Meta.Shape) {
				return fmt.Errorf("%w: gemm operand %d", errPlan, k)
			}
		}
	}
	for _, c := range g.code {
		okA := c.op == fFill || (c.a >= 0 && c.a < g.nregs)
		okB := !c.op.binary() || (c.b >= 0 && c.b < g.nregs)
		okB = okB && (c.op != fWhere || (c.c >= 0 && c.c < g.nregs))
		if c.op < fNeg || c.op >= fNumOps || c.dst < len(g.inputs) || c.dst >= g.nregs || !okA || !okB {
			return fmt.Errorf("%w: group instruction", errPlan)
		}
	}
	wantOut := len(g.outs)
	if g.red != redNone {
		wantOut++
	}
	if wantOut == 0 {
		return fmt.Errorf("%w: group without outputs", errPlan)
	}
	if len(s.out) != wantOut {
		return fmt.Errorf("%w: group outputs", errPlan)
	}
	for k, o := range g.outs {
		// Output 0 of a GEMM epilogue may be the product itself, input
		// register gemmReg.
		ownProduct := k == 0 && g.gemm >= 0 && o.reg == g.gemmReg
		if o.reg < len(g.inputs) && !ownProduct || o.reg >= g.nregs || s.out[k] != o.val || !owned(o.val) || !f32(o.val) ||
			!slices.Equal(p.vals[o.val].layout.Shape, g.shape) {
			return fmt.Errorf("%w: group output %d", errPlan, k)
		}
	}
	switch g.red {
	case redNone:
	case redSum, redMax:
		if g.redReg < 0 || g.redReg >= g.nregs || g.redRow < 1 || g.redRow > maxRedRow || g.numel%g.redRow != 0 || g.block%g.redRow != 0 ||
			s.out[len(s.out)-1] != g.redOut || !owned(g.redOut) || !f32(g.redOut) ||
			op.Numel(p.vals[g.redOut].layout.Shape) != g.numel/g.redRow {
			return fmt.Errorf("%w: group reduction", errPlan)
		}
	default:
		return fmt.Errorf("%w: group reduction kind", errPlan)
	}
	return nil
}
