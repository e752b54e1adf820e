package cpu

import (
	"fmt"
	"math"
	"sync"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Kernels of the index group: joins, gathers and scatters, advanced and
// masked indexing, padding, flips and repeats. Every index read is checked
// against its bound; a bad index is returned as an error naming the index,
// the dimension and its size, never a panic.

func init() {
	RegisterKernel(op.Cat, Kernel{Run: catKernel})
	RegisterKernel(op.Gather, Kernel{Run: bySize(gatherKernel[uint8], gatherKernel[uint16], gatherKernel[uint32], gatherKernel[uint64])})
	RegisterKernel(op.Scatter, Kernel{Run: bySize(scatterKernel[uint8], scatterKernel[uint16], scatterKernel[uint32], scatterKernel[uint64])})
	RegisterKernel(op.ScatterReduce, Kernel{DTypes: op.SetNumeric, Run: scatterReduceKernel})
	// A direct kernel for the index_select composite (embedding lookups).
	RegisterKernel(op.IndexSelect, Kernel{Run: bySize(indexSelectKernel[uint8], indexSelectKernel[uint16], indexSelectKernel[uint32], indexSelectKernel[uint64])})
	RegisterKernel(op.Index, Kernel{Run: bySize(indexKernel[uint8], indexKernel[uint16], indexKernel[uint32], indexKernel[uint64])})
	RegisterKernel(op.IndexPut, Kernel{Run: indexPutKernel})
	RegisterKernel(op.MaskedSelect, Kernel{Run: bySize(maskedSelectKernel[uint8], maskedSelectKernel[uint16], maskedSelectKernel[uint32], maskedSelectKernel[uint64])})
	RegisterKernel(op.MaskedScatter, Kernel{Run: bySize(maskedScatterKernel[uint8], maskedScatterKernel[uint16], maskedScatterKernel[uint32], maskedScatterKernel[uint64])})
	RegisterKernel(op.MaskedFill, Kernel{Run: bySize(maskedFillKernel[uint8], maskedFillKernel[uint16], maskedFillKernel[uint32], maskedFillKernel[uint64])})
	RegisterKernel(op.Nonzero, Kernel{Run: nonzeroKernel})
	RegisterKernel(op.PadNd, Kernel{Run: padNDKernel})
	RegisterKernel(op.Flip, Kernel{Run: flipKernel})
	RegisterKernel(op.RepeatInterleave, Kernel{Run: bySize(repeatInterleaveKernel[uint8], repeatInterleaveKernel[uint16], repeatInterleaveKernel[uint32], repeatInterleaveKernel[uint64])})
}

// bySize picks the instantiation of a move-only kernel by the element size
// of input 0 (moving bytes does not depend on the dtype's meaning).
func bySize(k1, k2, k4, k8 func(*Call) error) func(*Call) error {
	return func(c *Call) error {
		switch c.In[0].DType.Size() {
		case 1:
			return k1(c)
		case 2:
			return k2(c)
		case 4:
			return k4(c)
		case 8:
			return k8(c)
		}
		return fmt.Errorf("%s: unsupported element size %d", c.Op.Name, c.In[0].DType.Size())
	}
}

// ixOffsets returns the element offsets of l in row-major order.
func ixOffsets(l op.Layout) []int {
	n := op.Numel(l.Shape)
	out := make([]int, n)
	if n == 0 {
		return out
	}
	r := len(l.Shape)
	idx := make([]int, r)
	cur := l.Offset
	for i := 0; i < n; i++ {
		out[i] = cur
		for d := r - 1; d >= 0; d-- {
			idx[d]++
			cur += l.Strides[d]
			if idx[d] < l.Shape[d] {
				break
			}
			cur -= l.Strides[d] * l.Shape[d]
			idx[d] = 0
		}
	}
	return out
}

// ixReader returns a reader of integer index values of operand o.
func ixReader(o device.Operand, b []byte) func(off int) int64 {
	switch o.DType {
	case dtype.I64:
		s := as[int64](b)
		return func(off int) int64 { return s[off] }
	case dtype.I32:
		s := as[int32](b)
		return func(off int) int64 { return int64(s[off]) }
	}
	return func(off int) int64 { return dtype.Int64At(o.DType, b, off) }
}

func outOfBounds(idx int64, dim, size int) error {
	return fmt.Errorf("index %d is out of bounds for dimension %d with size %d", idx, dim, size)
}

// scalarBytes converts a scalar attribute (float64, int64 or bool) to one
// element of dt, as Tensor.fill_ does.
func scalarBytes(v any, dt dtype.DType) []byte {
	raw := make([]byte, 8)
	st := storer(dt)
	switch x := v.(type) {
	case float64:
		st(raw, 0, value{f: x})
	case int64:
		st(raw, 0, value{i: x, isInt: true})
	case int:
		st(raw, 0, value{i: int64(x), isInt: true})
	case bool:
		st(raw, 0, value{i: b2i(x), isInt: true})
	}
	return raw
}

// axisOf normalises attribute dim for a rank-r tensor (0 for 0-d).
func axisOf(c *Call, r int) (int, error) {
	return op.NormAxis(c.Op.Name, c.Attrs.Int("dim"), r)
}

func catKernel(c *Call) error {
	metas := make([]op.Meta, len(c.In))
	for i, o := range c.In {
		metas[i] = op.Meta{Shape: o.Shape, DType: o.DType}
	}
	_, ax, err := op.CatShape("cat", metas, c.Attrs.Int("dim"))
	if err != nil {
		return err
	}
	out := c.Out[0]
	off := 0
	for i, o := range c.In {
		if op.Numel(o.Shape) == 0 {
			continue
		}
		dst := device.Operand{DType: out.DType, Layout: op.Layout{Shape: o.Shape, Strides: out.Strides, Offset: out.Offset + off*out.Strides[ax]}}
		castLoop(c.kernels(), o, c.InB[i], dst, c.OutB[0])
		off += o.Shape[ax]
	}
	return nil
}

// gatherBase returns the offsets, in x, of the positions of index idx with
// the coordinate along ax set to 0, plus x's size and stride along ax.
func gatherBase(x op.Layout, idxShape []int, ax int) (base []int, n, stride int) {
	st := make([]int, len(idxShape))
	n, stride = 1, 0
	if len(x.Shape) > 0 {
		copy(st, x.Strides)
		if ax < len(st) { // a 0-d index into a 1-d input has no dim ax
			st[ax] = 0
		}
		n, stride = x.Shape[ax], x.Strides[ax]
	}
	return ixOffsets(op.Layout{Shape: idxShape, Strides: st, Offset: x.Offset}), n, stride
}

func gatherKernel[T any](c *Call) error {
	if c.In[1].DType == dtype.I32 {
		return gatherRun[T, int32](c)
	}
	return gatherRun[T, int64](c)
}

// gatherRun walks the output in runs along its innermost dimension (in
// parallel for large outputs); the first out-of-bounds index stops it.
func gatherRun[T any, I int32 | int64](c *Call) error {
	x, idx, out := c.In[0], c.In[1], c.Out[0]
	ax, err := axisOf(c, len(x.Shape))
	if err != nil {
		return err
	}
	n, st := 1, 0
	xst := make([]int, len(idx.Shape))
	if len(x.Shape) > 0 {
		n, st = x.Shape[ax], x.Strides[ax]
		copy(xst, x.Strides)
		if ax < len(xst) { // a 0-d index into a 1-d input has no dim ax
			xst[ax] = 0
		}
	}
	src, dst, ix := as[T](c.InB[0]), as[T](c.OutB[0]), as[I](c.InB[1])
	var mu sync.Mutex
	var first error
	forEachRun(idx.Shape, [][]int{out.Strides, idx.Strides, xst}, []int{out.Offset, idx.Offset, x.Offset}, func(offs []int, m int, inner []int) {
		o, a, b := offs[0], offs[1], offs[2]
		sa, sb := inner[1], inner[2]
		for i := 0; i < m; i++ {
			v := int64(ix[a+i*sa])
			if v < 0 || v >= int64(n) {
				mu.Lock()
				if first == nil {
					first = outOfBounds(v, ax, n)
				}
				mu.Unlock()
				return
			}
			dst[o+i] = src[b+i*sb+int(v)*st]
		}
	})
	return first
}

func indexSelectKernel[T any](c *Call) error {
	x, idx := c.In[0], c.In[1]
	ax, err := axisOf(c, len(x.Shape))
	if err != nil {
		return err
	}
	n, st := 1, 0
	var outerL, innerL op.Layout
	if len(x.Shape) > 0 {
		n, st = x.Shape[ax], x.Strides[ax]
		outerL = op.Layout{Shape: x.Shape[:ax], Strides: x.Strides[:ax], Offset: x.Offset}
		innerL = op.Layout{Shape: x.Shape[ax+1:], Strides: x.Strides[ax+1:]}
	} else {
		outerL = op.Layout{Shape: []int{}, Strides: []int{}, Offset: x.Offset}
		innerL = op.Layout{Shape: []int{}, Strides: []int{}}
	}
	ioffs := ixOffsets(idx.Layout)
	rd := ixReader(idx, c.InB[1])
	pos := make([]int, len(ioffs))
	for j, io := range ioffs {
		v := rd(io)
		if v < 0 || v >= int64(n) {
			return outOfBounds(v, ax, n)
		}
		pos[j] = int(v) * st
	}
	outer := ixOffsets(outerL)
	inner := op.Numel(innerL.Shape)
	contig := innerL.IsContiguous()
	var innerOffs []int
	if !contig {
		innerOffs = ixOffsets(innerL)
	}
	src, dst := as[T](c.InB[0]), as[T](c.OutB[0])
	rows := len(outer) * len(pos)
	parallelFor(rows, rows*inner, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			base := outer[r/len(pos)] + pos[r%len(pos)]
			d := dst[r*inner : (r+1)*inner]
			if contig {
				copy(d, src[base:base+inner])
				continue
			}
			for k, io := range innerOffs {
				d[k] = src[base+io]
			}
		}
	})
	return nil
}

func scatterKernel[T any](c *Call) error {
	x, idx, out := c.In[0], c.In[1], c.Out[0]
	ax, err := axisOf(c, len(x.Shape))
	if err != nil {
		return err
	}
	castLoop(c.kernels(), x, c.InB[0], out, c.OutB[0])
	dst := as[T](c.OutB[0])
	base, n, st := gatherBase(out.Layout, idx.Shape, ax)
	ioffs := ixOffsets(idx.Layout)
	rd := ixReader(idx, c.InB[1])
	var src []T
	var soffs []int
	var fill T
	if c.In[2].Buf != nil {
		src = as[T](c.InB[2])
		s := c.In[2]
		sst := make([]int, len(idx.Shape))
		if len(s.Shape) > 0 {
			copy(sst, s.Strides)
		}
		soffs = ixOffsets(op.Layout{Shape: idx.Shape, Strides: sst, Offset: s.Offset})
	} else {
		fill = as[T](scalarBytes(c.Attrs["value"], out.DType))[0]
	}
	for i, io := range ioffs {
		v := rd(io)
		if v < 0 || v >= int64(n) {
			return outOfBounds(v, ax, n)
		}
		if src != nil {
			dst[base[i]+int(v)*st] = src[soffs[i]]
		} else {
			dst[base[i]+int(v)*st] = fill
		}
	}
	return nil
}

func scatterReduceKernel(c *Call) error {
	x, idx, s, out := c.In[0], c.In[1], c.In[2], c.Out[0]
	ax, err := axisOf(c, len(x.Shape))
	if err != nil {
		return err
	}
	reduce, self := c.Attrs.String("reduce"), c.Attrs.Bool("include_self")
	castLoop(c.kernels(), x, c.InB[0], out, c.OutB[0])
	if !slowPools {
		if ok, err := scatterSumFast(c, ax); ok {
			return err
		}
	}
	dt := out.DType
	ob := c.OutB[0]
	numel := op.Numel(out.Shape)
	base, n, st := gatherBase(out.Layout, idx.Shape, ax)
	ioffs := ixOffsets(idx.Layout)
	rd := ixReader(idx, c.InB[1])
	sst := make([]int, len(idx.Shape))
	if len(s.Shape) > 0 {
		copy(sst, s.Strides)
	}
	soffs := ixOffsets(op.Layout{Shape: idx.Shape, Strides: sst, Offset: s.Offset})
	// Validate every index first so that an error leaves no half-done work.
	pos := make([]int, len(ioffs))
	for i, io := range ioffs {
		v := rd(io)
		if v < 0 || v >= int64(n) {
			return outOfBounds(v, ax, n)
		}
		pos[i] = base[i] + int(v)*st
	}
	count := make([]int64, numel)
	touched := make([]bool, numel)
	if dt.IsFloat() {
		acc := make([]float64, numel)
		for i := range acc {
			acc[i] = dtype.Float64At(dt, ob, i)
		}
		for i, p := range pos {
			v := dtype.Float64At(dt, c.InB[2], soffs[i])
			if !self && !touched[p] {
				touched[p] = true
				acc[p], count[p] = v, 1
				continue
			}
			touched[p] = true
			count[p]++
			a := acc[p]
			switch reduce {
			case "sum", "mean":
				acc[p] = a + v
			case "prod":
				acc[p] = a * v
			case "amax":
				if math.IsNaN(v) || v > a {
					acc[p] = v
				}
			case "amin":
				if math.IsNaN(v) || v < a {
					acc[p] = v
				}
			}
		}
		for p, a := range acc {
			if !touched[p] {
				continue
			}
			if reduce == "mean" {
				cnt := count[p]
				if self {
					cnt++
				}
				a /= float64(cnt)
			}
			dtype.PutFloat64(dt, ob, p, a)
		}
		return nil
	}
	acc := make([]int64, numel)
	for i := range acc {
		acc[i] = dtype.Int64At(dt, ob, i)
	}
	for i, p := range pos {
		v := dtype.Int64At(dt, c.InB[2], soffs[i])
		if !self && !touched[p] {
			touched[p] = true
			acc[p], count[p] = v, 1
			continue
		}
		touched[p] = true
		count[p]++
		switch reduce {
		case "sum", "mean":
			acc[p] += v
		case "prod":
			acc[p] *= v
		case "amax":
			acc[p] = max(acc[p], v)
		case "amin":
			acc[p] = min(acc[p], v)
		}
	}
	for p, a := range acc {
		if !touched[p] {
			continue
		}
		if reduce == "mean" {
			cnt := count[p]
			if self {
				cnt++
			}
			// Integer mean rounds toward negative infinity, as PyTorch's
			// floor division does.
			q := a / cnt
			if (a%cnt != 0) && ((a < 0) != (cnt < 0)) {
				q--
			}
			a = q
		}
		dtype.PutInt64(dt, ob, p, a)
	}
	return nil
}

// advPlan resolves advanced-indexing operands: for each position of the
// broadcast index block, the offset contribution of the indexed dims, and
// the offsets of the not-indexed dims before and after the block.
type advPlan struct {
	op.AdvIndex
	offB          []int
	before, after []int
}

// planIndex builds the plan of x[indices] for a tensor of shape/strides
// (offset 0). Each index is nil (whole dimension) or a list of int64 values
// with its shape.
type ixIndex struct {
	none  bool
	shape []int
	vals  func(i int) int64 // row-major over shape (after broadcasting)
	lay   op.Layout
}

func planIndex(shape, strides []int, idx []ixIndex) (*advPlan, error) {
	ents := make([]op.IndexEntry, len(idx))
	for i, e := range idx {
		ents[i] = op.IndexEntry{None: e.none, Shape: e.shape}
	}
	p, err := op.PlanAdvIndex("index", shape, ents)
	if err != nil {
		return nil, err
	}
	pl := &advPlan{AdvIndex: p}
	nb := op.Numel(p.BShape)
	pl.offB = make([]int, nb)
	for _, d := range p.Dims {
		e := idx[d]
		bl, ok := e.lay.BroadcastTo(p.BShape)
		if !ok {
			return nil, fmt.Errorf("index: shape mismatch: indexing tensor of shape %v does not broadcast to %v", e.shape, p.BShape)
		}
		offs := ixOffsets(bl)
		n := shape[d]
		for j, o := range offs {
			v := e.vals(o)
			if v < -int64(n) || v >= int64(n) {
				return nil, outOfBounds(v, d, n)
			}
			if v < 0 {
				v += int64(n)
			}
			pl.offB[j] += int(v) * strides[d]
		}
	}
	sub := func(dims []int) []int {
		l := op.Layout{Shape: make([]int, len(dims)), Strides: make([]int, len(dims))}
		for i, d := range dims {
			l.Shape[i], l.Strides[i] = shape[d], strides[d]
		}
		return ixOffsets(l)
	}
	pl.before, pl.after = sub(p.Before), sub(p.After)
	return pl, nil
}

// each calls f(k, off) for every result position k (row-major) with the
// offset it addresses in the indexed tensor.
func (p *advPlan) each(f func(k, off int)) {
	k := 0
	for _, b := range p.before {
		for _, m := range p.offB {
			for _, a := range p.after {
				f(k, b+m+a)
				k++
			}
		}
	}
}

// intIndexes converts index operands (from input first onward) to ixIndex
// values; nil operands are whole dimensions. Boolean masks are expanded to
// the coordinates of their true elements when expand is set.
func intIndexes(c *Call, first int, shape []int, expand bool) ([]ixIndex, error) {
	var out []ixIndex
	for i := first; i < len(c.In); i++ {
		o := c.In[i]
		switch {
		case o.Buf == nil:
			out = append(out, ixIndex{none: true})
		case o.DType == dtype.Bool || o.DType == dtype.U8:
			if !expand {
				return nil, fmt.Errorf("%s: boolean mask indices are not supported here", c.Op.Name)
			}
			d := len(out)
			for k, s := range o.Shape {
				if d+k >= len(shape) || shape[d+k] != s {
					return nil, fmt.Errorf("%s: The shape of the mask %v at index %d does not match the shape of the indexed tensor %v at index %d", c.Op.Name, o.Shape, k, shape, d+k)
				}
			}
			r := len(o.Shape)
			mb := c.InB[i]
			offs := ixOffsets(o.Layout)
			coords := make([][]int64, r)
			idx := make([]int64, r)
			for _, off := range offs {
				if mb[off] != 0 {
					for k := range coords {
						coords[k] = append(coords[k], idx[k])
					}
				}
				for k := r - 1; k >= 0; k-- {
					idx[k]++
					if idx[k] < int64(o.Shape[k]) {
						break
					}
					idx[k] = 0
				}
			}
			for k := range coords {
				v := coords[k]
				out = append(out, ixIndex{shape: []int{len(v)}, lay: op.Contiguous([]int{len(v)}), vals: func(j int) int64 { return v[j] }})
			}
		default:
			out = append(out, ixIndex{shape: o.Shape, lay: o.Layout, vals: ixReader(o, c.InB[i])})
		}
	}
	return out, nil
}

func indexKernel[T any](c *Call) error {
	x := c.In[0]
	idx, err := intIndexes(c, 1, x.Shape, false)
	if err != nil {
		return err
	}
	p, err := planIndex(x.Shape, x.Strides, idx)
	if err != nil {
		return err
	}
	src, dst := as[T](c.InB[0]), as[T](c.OutB[0])
	p.each(func(k, off int) { dst[k] = src[x.Offset+off] })
	return nil
}

func indexPutKernel(c *Call) error {
	x, v, out := c.In[0], c.In[1], c.Out[0]
	idx, err := intIndexes(c, 2, x.Shape, true)
	if err != nil {
		return err
	}
	p, err := planIndex(out.Shape, out.Strides, idx)
	if err != nil {
		return err
	}
	vl, ok := v.Layout.BroadcastTo(p.Result)
	if !ok {
		return fmt.Errorf("shape mismatch: value tensor of shape %v cannot be broadcast to indexing result of shape %v", v.Shape, p.Result)
	}
	castLoop(c.kernels(), x, c.InB[0], out, c.OutB[0])
	voffs := ixOffsets(vl)
	ob, vb := c.OutB[0], c.InB[1]
	ld, lv, st := loader(out.DType), loader(v.DType), storer(out.DType)
	if !c.Attrs.Bool("accumulate") {
		if v.DType == out.DType {
			sz := out.DType.Size()
			p.each(func(k, off int) {
				copy(ob[(out.Offset+off)*sz:(out.Offset+off+1)*sz], vb[voffs[k]*sz:(voffs[k]+1)*sz])
			})
			return nil
		}
		p.each(func(k, off int) { st(ob, out.Offset+off, lv(vb, voffs[k])) })
		return nil
	}
	isBool := out.DType == dtype.Bool
	p.each(func(k, off int) {
		a, b := ld(ob, out.Offset+off), lv(vb, voffs[k])
		var r value
		switch {
		case isBool:
			r = value{i: b2i(a.i != 0 || b.i != 0 || (!b.isInt && b.f != 0)), isInt: true}
		case a.isInt && b.isInt:
			r = value{i: a.i + b.i, isInt: true}
		default:
			af, bf := a.f, b.f
			if a.isInt {
				af = float64(a.i)
			}
			if b.isInt {
				bf = float64(b.i)
			}
			r = value{f: af + bf}
		}
		st(ob, out.Offset+off, r)
	})
	return nil
}

// broadcastPair returns the layouts of x and mask broadcast together.
func broadcastPair(name string, x, m op.Layout) (op.Layout, op.Layout, error) {
	s, err := op.BroadcastShapes(name, x.Shape, m.Shape)
	if err != nil {
		return op.Layout{}, op.Layout{}, err
	}
	xl, _ := x.BroadcastTo(s)
	ml, _ := m.BroadcastTo(s)
	return xl, ml, nil
}

func maskedSelectKernel[T any](c *Call) error {
	xl, ml, err := broadcastPair("masked_select", c.In[0].Layout, c.In[1].Layout)
	if err != nil {
		return err
	}
	xo, mo := ixOffsets(xl), ixOffsets(ml)
	src, mb, dst := as[T](c.InB[0]), c.InB[1], as[T](c.OutB[0])
	want := c.Attrs.Int("count")
	k := 0
	for i, m := range mo {
		if mb[m] == 0 {
			continue
		}
		if k < want {
			dst[k] = src[xo[i]]
		}
		k++
	}
	if k != want {
		return fmt.Errorf("masked_select: mask has %d true elements but the output was sized for %d", k, want)
	}
	return nil
}

func maskedScatterKernel[T any](c *Call) error {
	out, s := c.Out[0], c.In[2]
	xl, ml, err := broadcastPair("masked_scatter", c.In[0].Layout, c.In[1].Layout)
	if err != nil {
		return err
	}
	mo := ixOffsets(ml)
	mb := c.InB[1]
	cnt := 0
	for _, m := range mo {
		if mb[m] != 0 {
			cnt++
		}
	}
	if sn := op.Numel(s.Shape); cnt > sn {
		return fmt.Errorf("masked_scatter: Number of elements of source < number of ones in mask (%d < %d)", sn, cnt)
	}
	castLoop(c.kernels(), device.Operand{DType: c.In[0].DType, Layout: xl}, c.InB[0], out, c.OutB[0])
	so := ixOffsets(s.Layout)
	src, dst := as[T](c.InB[2]), as[T](c.OutB[0])
	k := 0
	for i, m := range mo {
		if mb[m] != 0 {
			dst[out.Offset+i] = src[so[k]]
			k++
		}
	}
	return nil
}

// maskedFillKernel is the direct kernel of the masked_fill composite.
func maskedFillKernel[T any](c *Call) error {
	out := c.Out[0]
	xl, ml, err := broadcastPair("masked_fill", c.In[0].Layout, c.In[1].Layout)
	if err != nil {
		return err
	}
	vo := c.In[2]
	fill := as[T](scalarFromOperand(vo, c.InB[2], out.DType))[0]
	src, mb, dst := as[T](c.InB[0]), c.InB[1], as[T](c.OutB[0])
	forEachRun(out.Shape, [][]int{out.Strides, xl.Strides, ml.Strides}, []int{out.Offset, xl.Offset, ml.Offset}, func(offs []int, n int, inner []int) {
		o, a, m := offs[0], offs[1], offs[2]
		sa, sm := inner[1], inner[2]
		for i := 0; i < n; i++ {
			if mb[m+i*sm] != 0 {
				dst[o+i] = fill
			} else {
				dst[o+i] = src[a+i*sa]
			}
		}
	})
	return nil
}

// scalarFromOperand reads the one element of o converted to dt.
func scalarFromOperand(o device.Operand, b []byte, dt dtype.DType) []byte {
	raw := make([]byte, 8)
	storer(dt)(raw, 0, loader(o.DType)(b, o.Offset))
	return raw
}

func nonzeroKernel(c *Call) error {
	x := c.In[0]
	r := len(x.Shape)
	offs := ixOffsets(x.Layout)
	dst := as[int64](c.OutB[0])
	want := c.Attrs.Int("count")
	nz := func(off int) bool { return dtype.Int64At(x.DType, c.InB[0], off) != 0 }
	if x.DType.IsFloat() {
		nz = func(off int) bool { return dtype.Float64At(x.DType, c.InB[0], off) != 0 }
	}
	idx := make([]int, r)
	k := 0
	for _, off := range offs {
		if nz(off) {
			if k < want {
				for d := range idx {
					dst[k*r+d] = int64(idx[d])
				}
			}
			k++
		}
		for d := r - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < x.Shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	if k != want {
		return fmt.Errorf("nonzero: input has %d non-zero elements but the output was sized for %d", k, want)
	}
	return nil
}

func padNDKernel(c *Call) error {
	x, out := c.In[0], c.Out[0]
	low, interior := c.Attrs.Ints("low"), c.Attrs.Ints("interior")
	sz := out.DType.Size()
	fill := scalarBytes(c.Attrs["value"], out.DType)[:sz]
	ob := c.OutB[0]
	n := op.Numel(out.Shape)
	for i := 0; i < n; i++ {
		copy(ob[(out.Offset+i)*sz:], fill)
	}
	src := device.Operand{DType: x.DType, Layout: op.Layout{Shape: make([]int, len(x.Shape)), Strides: x.Strides, Offset: x.Offset}}
	dst := device.Operand{DType: out.DType, Layout: op.Layout{Shape: src.Shape, Strides: make([]int, len(x.Shape)), Offset: out.Offset}}
	for d, sn := range x.Shape {
		step := 1
		if len(interior) > 0 {
			step += interior[d]
		}
		on := out.Shape[d]
		// Input index i lands at low + i*step; keep those inside [0, on).
		lo := 0
		if low[d] < 0 {
			lo = (-low[d] + step - 1) / step
		}
		hi := sn
		if last := on - 1 - low[d]; last < 0 {
			hi = 0
		} else {
			hi = min(sn, last/step+1)
		}
		cnt := max(0, hi-lo)
		src.Shape[d] = cnt
		if cnt == 0 {
			return nil
		}
		src.Offset += lo * x.Strides[d]
		dst.Offset += (low[d] + lo*step) * out.Strides[d]
		dst.Strides[d] = out.Strides[d] * step
	}
	castLoop(c.kernels(), src, c.InB[0], dst, ob)
	return nil
}

func flipKernel(c *Call) error {
	x := c.In[0]
	red, err := op.ReduceAxes("flip", c.Attrs.Ints("dims"), len(x.Shape))
	if err != nil {
		return err
	}
	if len(c.Attrs.Ints("dims")) == 0 {
		red = make([]bool, len(x.Shape))
	}
	src := device.Operand{DType: x.DType, Layout: op.Layout{Shape: x.Shape, Strides: append([]int(nil), x.Strides...), Offset: x.Offset}}
	for d, f := range red {
		if f && x.Shape[d] > 0 {
			src.Offset += (x.Shape[d] - 1) * x.Strides[d]
			src.Strides[d] = -x.Strides[d]
		}
	}
	castLoop(c.kernels(), src, c.InB[0], c.Out[0], c.OutB[0])
	return nil
}

func repeatInterleaveKernel[T any](c *Call) error {
	x := c.In[0]
	outer, n, inner := 1, op.Numel(x.Shape), 1
	if c.Attrs.Has("dim") && len(x.Shape) > 0 {
		ax, err := axisOf(c, len(x.Shape))
		if err != nil {
			return err
		}
		outer, n, inner = op.Numel(x.Shape[:ax]), x.Shape[ax], op.Numel(x.Shape[ax+1:])
	}
	reps := make([]int, n)
	total := 0
	if c.In[1].Buf != nil {
		r := c.In[1]
		rd := ixReader(r, c.InB[1])
		ro := ixOffsets(r.Layout)
		for i := range reps {
			v := rd(ro[0])
			if len(ro) > 1 {
				v = rd(ro[i])
			}
			if v < 0 {
				return fmt.Errorf("repeat_interleave: repeats can not be negative (got %d at position %d)", v, i)
			}
			reps[i] = int(v)
			total += int(v)
		}
		if len(ro) == 0 && n > 0 {
			return fmt.Errorf("repeat_interleave: empty repeats for %d slices", n)
		}
		if want := c.Attrs.Int("output_size"); total != want {
			return fmt.Errorf("repeat_interleave: output_size %d does not match the sum of repeats %d", want, total)
		}
	} else {
		for i := range reps {
			reps[i] = c.Attrs.Int("repeats")
		}
	}
	offs := ixOffsets(x.Layout)
	src, dst := as[T](c.InB[0]), as[T](c.OutB[0])
	w := 0
	for o := 0; o < outer; o++ {
		for i := 0; i < n; i++ {
			row := offs[(o*n+i)*inner : (o*n+i+1)*inner]
			for r := 0; r < reps[i]; r++ {
				for _, off := range row {
					dst[w] = src[off]
					w++
				}
			}
		}
	}
	return nil
}
