package tensor

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// Bounded dimensions (compile.Bound): a trace's input is padded along a
// dimension up to a declared bound, and the program is compiled once at the
// bound; the valid length is a run-time parameter. The trace tracks, for
// every value, which dimensions are padded, and keeps every result exact:
//
//   - elementwise ops (and views that keep the dimension whole) carry the
//     padding through; the padded positions hold values nobody reads;
//   - a reduction over a padded dimension masks its input with the
//     reduction's identity first (0 for sum, -inf for max, ...), so sums,
//     maxima, softmax and logsumexp ignore the padding; mean divides by the
//     valid count;
//   - a contraction (matmul, attention's weights times values) over a
//     padded dimension masks its operands with 0 there;
//   - composites whose input is padded run their decompositions, so the
//     rules above apply to their parts;
//   - any other op on a padded dimension (a gather, a convolution, a sort,
//     a reshape that merges it with another dimension) is an error naming
//     the op, never a silently wrong result.
//
// Outputs with padded dimensions are sliced back to the valid length.

// boundState is a trace's bounded-dimension bookkeeping.
type boundState struct {
	length *Tensor // 0-d i64 holding the valid length (a parameter)
	valid  int     // the valid length of this trace (for mean's divisor)
	pad    map[*ir.Value]uint64
}

// ErrBoundedDim is wrapped by errors for ops that cannot run on a bounded
// (padded) dimension.
var ErrBoundedDim = fmt.Errorf("op not supported on a bounded dimension")

// Bound declares that dimension dim of the trace's symbolic input i is
// padded: its first length elements are valid. Every bounded dimension of
// a trace has the same valid length.
func (tr *Trace) Bound(i, dim, length int) {
	c := tr.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	s := tr.syms[i]
	if s == nil || dim < 0 || dim >= s.Dim() || length < 0 || length > s.l.Shape[dim] {
		panic(&Error{Op: "bound", Msg: fmt.Sprintf("input %d: bad bounded dim %d (length %d)", i, dim, length)})
	}
	if c.bs == nil {
		c.bs = &boundState{pad: map[*ir.Value]uint64{}, valid: length}
		c.mu.Unlock()
		c.bs.length = FromSlice(c.dev, []int64{int64(length)})
		c.mu.Lock()
	} else if c.bs.valid != length {
		panic(&Error{Op: "bound", Msg: fmt.Sprintf("bounded dims have different lengths %d and %d", c.bs.valid, length)})
	}
	v := s.st.lazy.Load().v
	c.bs.pad[v] |= 1 << dim
}

// PaddedDims returns the padded dimensions of a tensor of the trace (nil
// when none).
func (tr *Trace) paddedDims(t *Tensor) []int {
	c := tr.ctx
	if c.bs == nil || t == nil || t.st == nil {
		return nil
	}
	lv := t.st.lazy.Load()
	if lv == nil || lv.ctx != c {
		return nil
	}
	return maskDims(c.bs.pad[c.valueOf(t)])
}

func maskDims(m uint64) []int {
	var ds []int
	for m != 0 {
		d := bits.TrailingZeros64(m)
		ds = append(ds, d)
		m &^= 1 << d
	}
	return ds
}

// boundedInputs reports whether any of in is padded (c.mu not held).
func (c *lazyCtx) boundedInputs(in []*Tensor) bool {
	if c.bs == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range in {
		if t != nil && t.st != nil {
			if lv := t.st.lazy.Load(); lv != nil && lv.ctx == c && c.bs.pad[c.valueOf(t)] != 0 {
				return true
			}
		}
	}
	return false
}

// boundedMean is mean over dims of x when x is padded along some of them:
// the masked sum divided by the valid count. ok is false when no reduced
// dimension is padded (mean runs as usual).
func (c *lazyCtx) boundedMean(path string, x *Tensor, a op.Attrs) (*Tensor, bool) {
	c.mu.Lock()
	var m uint64
	if lv := x.st.lazy.Load(); lv != nil && lv.ctx == c {
		m = c.bs.pad[c.valueOf(x)]
	}
	c.mu.Unlock()
	dims := a.Ints("dims")
	red := reducedMask(dims, x.Dim())
	if m&red == 0 {
		return nil, false
	}
	count := 1.0
	for d := range x.Dim() {
		if red&(1<<d) == 0 {
			continue
		}
		if m&(1<<d) != 0 {
			count *= float64(c.bs.valid)
		} else {
			count *= float64(x.l.Shape[d])
		}
	}
	sa := op.Attrs{"dims": dims, "keepdim": a.Bool("keepdim")}
	if dt := a.DType("dtype"); dt != dtype.Invalid {
		sa["dtype"] = dt
	}
	s := apply(path, "sum", []*Tensor{x}, sa)[0]
	raw := make([]byte, s.dt.Size())
	dtype.PutFloat64(s.dt, raw, 0, 1/count)
	inv := FromBytes(c.dev, s.dt, nil, raw)
	return apply(path, "mul", []*Tensor{s, inv}, nil)[0], true
}

// reducedMask is the set of dims reduced by a "dims" attribute (empty: all).
func reducedMask(dims []int, rank int) uint64 {
	if len(dims) == 0 {
		return 1<<rank - 1
	}
	var m uint64
	for _, d := range dims {
		if d < 0 {
			d += rank
		}
		m |= 1 << d
	}
	return m
}

// addOp appends op name on in with attributes a, inferring its output
// (c.mu held).
func (c *lazyCtx) addOp(name string, a op.Attrs, in ...*ir.Value) *ir.Value {
	d := op.MustLookup(name)
	na, err := d.Normalize(a)
	if err != nil {
		panic(&Error{Op: name, Msg: "internal: " + err.Error()})
	}
	metas := make([]op.Meta, len(in))
	for i, v := range in {
		metas[i] = v.Meta
	}
	var out []op.Meta
	if d.Kind == op.View {
		l, _, verr := d.ViewFn(op.Contiguous(slices.Clone(in[0].Meta.Shape)), na)
		err = verr
		out = []op.Meta{{Shape: l.Shape, DType: in[0].Meta.DType}}
	} else {
		out, err = d.Infer(metas, na)
	}
	if err != nil {
		panic(&Error{Op: name, Msg: "internal: " + err.Error()})
	}
	n := c.g.AddNode(d, na, in, out)
	c.seq.add(n)
	return n.Out[0]
}

func (c *lazyCtx) scalarConst(dt dtype.DType, v float64) *ir.Value {
	raw := make([]byte, dt.Size())
	dtype.PutFloat64(dt, raw, 0, v)
	return c.g.AddConst(op.Meta{DType: dt, Shape: []int{}}, raw)
}

// maskDim returns x with the positions past the valid length along dim
// replaced by fill (c.mu held).
func (c *lazyCtx) maskDim(x *ir.Value, dim int, fill float64) *ir.Value {
	n := x.Meta.Shape[dim]
	idx := c.addOp("iota", op.Attrs{"shape": []int{n}, "dim": 0, "dtype": dtype.I64})
	cond := c.addOp("lt", nil, idx, c.valueOf(c.bs.length))
	shape := make([]int, len(x.Meta.Shape)-dim)
	for i := range shape {
		shape[i] = 1
	}
	shape[0] = n
	cond = c.addOp("reshape", op.Attrs{"shape": shape}, cond)
	return c.addOp("where", nil, cond, x, c.scalarConst(x.Meta.DType, fill))
}

// identity is the value that does not change a reduction of kind.
func identity(kind string, dt dtype.DType) float64 {
	switch kind {
	case op.ReduceSum:
		return 0
	case op.ReduceProd:
		return 1
	case op.ReduceMax:
		if dt.IsFloat() {
			return math.Inf(-1)
		}
		lo, _ := intRange(dt)
		return lo
	case op.ReduceMin:
		if dt.IsFloat() {
			return math.Inf(1)
		}
		_, hi := intRange(dt)
		return hi
	}
	return 0
}

// boundedRecord applies the padding rules to a node about to be recorded:
// it may replace inputs by masked values, and returns the padded-dims mask
// of each output (c.mu held).
func (c *lazyCtx) boundedRecord(path string, d *op.Def, vals []*ir.Value, a op.Attrs, outs []op.Meta) []uint64 {
	masks := make([]uint64, len(vals))
	any := false
	for i, v := range vals {
		if v != nil {
			masks[i] = c.bs.pad[v]
			any = any || masks[i] != 0
		}
	}
	res := make([]uint64, len(outs))
	if !any {
		return res
	}
	unsupported := func(why string) {
		panic(&Error{Op: path, Msg: fmt.Sprintf("%v: %s (%s); the padded positions would change the result", ErrBoundedDim, d.Name, why), Err: ErrBoundedDim})
	}
	switch {
	case d == op.Reduce:
		x := vals[0]
		rank := len(x.Meta.Shape)
		red := reducedMask(a.Ints("dims"), rank)
		for _, k := range maskDims(masks[0] & red) {
			x = c.maskDim(x, k, identity(a.String("kind"), x.Meta.DType))
		}
		vals[0] = x
		res[0] = keepMask(masks[0], red, rank, a.Bool("keepdim"))
	case d == op.DotGeneral:
		lb, rb, lc, rc := a.Ints("lhs_batch"), a.Ints("rhs_batch"), a.Ints("lhs_contract"), a.Ints("rhs_contract")
		for k := range lc {
			if masks[0]&(1<<lc[k]) != 0 || masks[1]&(1<<rc[k]) != 0 {
				vals[0] = c.maskDim(vals[0], lc[k], 0)
				vals[1] = c.maskDim(vals[1], rc[k], 0)
			}
		}
		var m uint64
		pos := 0
		for k := range lb {
			if masks[0]&(1<<lb[k]) != 0 || masks[1]&(1<<rb[k]) != 0 {
				m |= 1 << pos
			}
			pos++
		}
		for side, v := range vals[:2] {
			skip := append(slices.Clone([][]int{lb, rb}[side]), [][]int{lc, rc}[side]...)
			for dd := range len(v.Meta.Shape) {
				if slices.Contains(skip, dd) {
					continue
				}
				if masks[side]&(1<<dd) != 0 {
					m |= 1 << pos
				}
				pos++
			}
		}
		res[0] = m
	case d.Broadcast || (d.Group == "elementwise" && len(outs) >= 1):
		// Inputs align with the output from the right.
		for i, o := range outs {
			r := len(o.Shape)
			var m uint64
			for j, v := range vals {
				if v == nil {
					continue
				}
				off := r - len(v.Meta.Shape)
				for _, dd := range maskDims(masks[j]) {
					if v.Meta.Shape[dd] == o.Shape[dd+off] {
						m |= 1 << (dd + off)
					}
				}
			}
			res[i] = m
		}
	case d == op.Copy || d == op.Convert || d == op.CopyInPlace:
		for i := range outs {
			res[i] = masks[0] | masks[len(masks)-1]
		}
	default:
		unsupported("no padding rule for this op")
	}
	return res
}

// keepMask maps the padded dims of a reduction's input to its output.
func keepMask(m, red uint64, rank int, keepdim bool) uint64 {
	if keepdim {
		return m &^ red
	}
	var out uint64
	pos := 0
	for d := range rank {
		if red&(1<<d) != 0 {
			continue
		}
		if m&(1<<d) != 0 {
			out |= 1 << pos
		}
		pos++
	}
	return out
}

// viewMask maps the padded dims of a view's input to its output: a dim
// stays padded where the view keeps it whole (same size and stride in a
// contiguous layout of the input); a view that splits or merges a padded
// dim is an error (c.mu held).
func (c *lazyCtx) viewMask(in *ir.Value, d *op.Def, a op.Attrs, out *ir.Value) {
	m := c.bs.pad[in]
	if m == 0 {
		return
	}
	l := op.Contiguous(slices.Clone(in.Meta.Shape))
	vl, ok, err := d.ViewFn(l, a)
	if err != nil || !ok {
		panic(&Error{Op: d.Name, Msg: fmt.Sprintf("%v: %s of a padded value", ErrBoundedDim, d.Name), Err: ErrBoundedDim})
	}
	var om uint64
	for _, dd := range maskDims(m) {
		found := false
		for k := range vl.Shape {
			if vl.Shape[k] == in.Meta.Shape[dd] && vl.Strides[k] == l.Strides[dd] && vl.Shape[k] > 1 {
				om |= 1 << k
				found = true
			}
		}
		if !found && in.Meta.Shape[dd] > 1 {
			panic(&Error{Op: d.Name, Msg: fmt.Sprintf("%v: %s merges or splits padded dim %d of %v", ErrBoundedDim, d.Name, dd, in.Meta.Shape), Err: ErrBoundedDim})
		}
	}
	c.bs.pad[out] = om
}

// intRange is the range of an integer dtype (bool: 0..1).
func intRange(dt dtype.DType) (float64, float64) {
	switch dt {
	case dtype.Bool:
		return 0, 1
	case dtype.U8:
		return 0, math.MaxUint8
	case dtype.I8:
		return math.MinInt8, math.MaxInt8
	case dtype.I16:
		return math.MinInt16, math.MaxInt16
	case dtype.I32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}
