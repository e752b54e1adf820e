package cpu

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
)

// Fused elementwise groups: a DAG of f32 elementwise ops evaluated block by
// block over its output shape with the slice kernels of internal/vec. Registers
// are blocks of float32: an input register is a direct slice of its
// operand when the operand is contiguous over the group's shape, otherwise
// it is gathered (broadcast dimensions have stride 0); a computed register
// is scratch, or the output slice itself when it is a group output.

// fop is a fused instruction's operation.
type fop uint8

// Fused operations. Binary "S" forms take the scalar imm as their right
// operand; "R" forms as their left one.
const (
	fNeg fop = iota + 1
	fExp
	fLog
	fTanh
	fErf
	fSigmoid
	fRelu
	fGelu
	fGeluTanh
	fSilu
	fSqrt
	fRsqrt
	fAbs
	fAdd
	fSub
	fMul
	fDiv
	fMax
	fMin
	fAddS
	fSubS
	fSubR
	fMulS
	fDivS
	fDivR
	fMaxS
	fMinS
	fFill
	fWhere // dst = c != 0 ? a : b (c a 0/1 mask from a bool input)
	fCopy  // dst = a (a bool input converted to f32 0/1)
	fNumOps
)

// binary reports whether o reads registers a and b.
func (o fop) binary() bool { return (o >= fAdd && o <= fMin) || o == fWhere }

// finstr is one instruction: dst = op(a, b), op(a, imm) or, for fWhere,
// c ? a : b.
type finstr struct {
	op      fop
	dst     int
	a, b, c int
	imm     float32
}

// reduce kinds of a fused reduction.
const (
	redNone uint8 = iota
	redSum
	redMax
)

// fgroup is a fused elementwise group, with an optional trailing row
// reduction or leading GEMM.
type fgroup struct {
	shape []int // the shape iterated
	numel int
	block int // elements per block (whole rows when reducing)
	// inputs are value ids loaded into registers 0..len(inputs)-1.
	inputs []int
	code   []finstr
	nregs  int
	// outs are (register, value id) pairs written to memory.
	outs []fout
	// red reduces register redReg over rows of redRow elements into value
	// redOut (redNone: no reduction).
	red    uint8
	redReg int
	redRow int
	redOut int
	// gemm, when >= 0, is the graph node index of a dot_general whose
	// output is the register gemmReg (an input register): the group runs as
	// the GEMM's per-tile epilogue. The product is written into the buffer
	// of output 0 — the product's own when it is an output too (register
	// gemmReg), else the group's last value, which the group rewrites in
	// place — and the group's other outputs are stored beside it.
	gemm    int
	gemmReg int
}

type fout struct{ reg, val int }

// loadKind says how an input register is filled for a block.
const (
	ldDirect = iota // contiguous over the group shape: a slice
	ldScalar        // one element broadcast: a fill
	ldGather        // any other layout
)

// fin is a resolved group input for one run.
type fin struct {
	kind    int
	src     []float32 // the whole buffer (f32 inputs)
	src8    []uint8   // the whole buffer (bool inputs, loaded as 0/1)
	off     int
	shape   []int
	strides []int
}

// fexec is a group bound to one run's memory.
type fexec struct {
	g    *fgroup
	ks   *kset
	in   []fin
	outs [][]float32 // per g.outs: the whole output buffer (contiguous)
	red  []float32   // reduction output
}

// scratch holds one thread's registers.
type fscratch struct {
	regs []float32
	list [][]float32 // register slice headers (regList)
}

// regList returns a reusable list of n register slices.
func (s *fscratch) regList(n int) [][]float32 {
	if cap(s.list) < n {
		s.list = make([][]float32, n)
	}
	return s.list[:n]
}

var fscratchPool sync.Pool

func getFScratch(n int) *fscratch {
	if s, ok := fscratchPool.Get().(*fscratch); ok && cap(s.regs) >= n {
		s.regs = s.regs[:n]
		return s
	}
	return &fscratch{regs: make([]float32, n)}
}

// evalRange evaluates the group's instructions on flat elements [lo, hi)
// (hi-lo <= block), leaving register slices in regs.
func (e *fexec) evalRange(lo, hi int, sc *fscratch, regs [][]float32) {
	g := e.g
	n := hi - lo
	for r := range regs {
		regs[r] = sc.regs[r*g.block : r*g.block+n]
	}
	for i, in := range e.in {
		if in.src8 != nil {
			switch in.kind {
			case ldDirect:
				epiU8ToF32(e.ks, regs[i], in.src8[in.off+lo:in.off+hi])
			case ldScalar:
				epiFill(regs[i], float32(in.src8[in.off]))
			default:
				fuseGather(regs[i], in.src8, in.off, in.shape, in.strides, lo)
			}
			continue
		}
		switch in.kind {
		case ldDirect:
			regs[i] = in.src[in.off+lo : in.off+hi]
		case ldGather:
			if r := len(in.shape); r > 0 && lo/in.shape[r-1] == (hi-1)/in.shape[r-1] && (in.strides[r-1] == 0 || in.strides[r-1] == 1) {
				// The range lies in one row: the input's row is a slice
				// (inner stride 1) or one element (stride 0).
				base := in.off
				row := lo / in.shape[r-1]
				for d := r - 2; d >= 0; d-- {
					if in.shape[d] > 0 {
						base += (row % in.shape[d]) * in.strides[d]
						row /= in.shape[d]
					}
				}
				j := lo % in.shape[r-1]
				if in.strides[r-1] == 1 {
					regs[i] = in.src[base+j : base+j+n]
				} else {
					epiFill(regs[i], in.src[base])
				}
				continue
			}
			fuseGather(regs[i], in.src, in.off, in.shape, in.strides, lo)
		case ldScalar:
			epiFill(regs[i], in.src[in.off])
		}
	}
	for k, o := range g.outs {
		if e.outs[k] != nil {
			regs[o.reg] = e.outs[k][lo:hi]
		}
	}
	for _, ins := range g.code {
		runInstr(e.ks, ins, regs)
	}
}

// runInstr executes one instruction on register slices.
func runInstr(ks *kset, ins finstr, regs [][]float32) {
	d := regs[ins.dst]
	var a, b []float32
	if ins.op != fFill {
		a = regs[ins.a]
	}
	if ins.op.binary() {
		b = regs[ins.b]
	}
	s := ins.imm
	switch ins.op {
	case fNeg:
		a = a[:len(d)]
		for i := range d {
			d[i] = -a[i]
		}
	case fExp:
		ks.vec.Exp(d, a)
	case fLog:
		ks.vec.Log(d, a)
	case fTanh:
		ks.vec.Tanh(d, a)
	case fErf:
		ks.vec.Erf(d, a)
	case fSigmoid:
		ks.vec.Sigmoid(d, a)
	case fRelu:
		ks.vec.Relu(d, a)
	case fGelu:
		ks.vec.Gelu(d, a)
	case fGeluTanh:
		ks.vec.GeluTanh(d, a)
	case fSilu:
		ks.vec.Silu(d, a)
	case fSqrt:
		a = a[:len(d)]
		for i := range d {
			d[i] = float32(math.Sqrt(float64(a[i])))
		}
	case fRsqrt:
		a = a[:len(d)]
		for i := range d {
			d[i] = float32(1 / math.Sqrt(float64(a[i])))
		}
	case fAbs:
		a = a[:len(d)]
		for i := range d {
			d[i] = float32(math.Abs(float64(a[i])))
		}
	case fAdd:
		ks.vec.Add(d, a, b)
	case fSub:
		ks.vec.Sub(d, a, b)
	case fMul:
		ks.vec.Mul(d, a, b)
	case fDiv:
		ks.vec.Div(d, a, b)
	case fMax:
		ks.vec.Maximum(d, a, b)
	case fMin:
		a, b = a[:len(d)], b[:len(d)]
		for i := range d {
			d[i] = fuseMinF32(a[i], b[i])
		}
	case fAddS:
		ks.vec.AddScalar(d, a, s)
	case fSubS:
		a = a[:len(d)]
		for i := range d {
			d[i] = a[i] - s
		}
	case fSubR:
		a = a[:len(d)]
		for i := range d {
			d[i] = s - a[i]
		}
	case fMulS:
		ks.vec.MulScalar(d, a, s)
	case fDivS:
		a = a[:len(d)]
		for i := range d {
			d[i] = a[i] / s
		}
	case fDivR:
		a = a[:len(d)]
		for i := range d {
			d[i] = s / a[i]
		}
	case fMaxS:
		a = a[:len(d)]
		for i := range d {
			d[i] = fuseMaxF32(a[i], s)
		}
	case fMinS:
		a = a[:len(d)]
		for i := range d {
			d[i] = fuseMinF32(a[i], s)
		}
	case fFill:
		epiFill(d, s)
	case fWhere:
		ks.vec.Where(d, regs[ins.c], a, b)
	case fCopy:
		copy(d, a)
	}
}

// fuseMaxF32 and fuseMinF32 are torch.maximum/minimum on f32 (as maxNaN/minNaN).
func fuseMaxF32(a, b float32) float32 {
	if a != a || b != b {
		return float32(math.NaN())
	}
	if a < b {
		return b
	}
	return a
}

func fuseMinF32(a, b float32) float32 {
	if a != a || b != b {
		return float32(math.NaN())
	}
	if b < a {
		return b
	}
	return a
}

// fuseGather fills dst with the elements lo, lo+1, ... (row-major over
// shape) of the strided view (src, off, strides), converted to float32
// (bools as 0/1).
func fuseGather[T float32 | uint8](dst []float32, src []T, off int, shape, strides []int, lo int) {
	r := len(shape)
	if r == 0 {
		v := float32(src[off])
		for i := range dst {
			dst[i] = v
		}
		return
	}
	var idxBuf [16]int
	idx := idxBuf[:0]
	if r > len(idxBuf) {
		idx = make([]int, r)
	} else {
		idx = idxBuf[:r]
	}
	rem := lo
	p := off
	for d := r - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = rem % shape[d]
			rem /= shape[d]
		}
		p += idx[d] * strides[d]
	}
	inner, st := shape[r-1], strides[r-1]
	for k := 0; k < len(dst); {
		run := min(inner-idx[r-1], len(dst)-k)
		seg := dst[k : k+run]
		switch st {
		case 1:
			if f, ok := any(src).([]float32); ok {
				copy(seg, f[p:p+run])
				break
			}
			for i, v := range src[p : p+run] {
				seg[i] = float32(v)
			}
		case 0:
			v := float32(src[p])
			for i := range seg {
				seg[i] = v
			}
		default:
			q := p
			for i := range seg {
				seg[i] = float32(src[q])
				q += st
			}
		}
		k += run
		// Advance the multi-index by run elements (the inner run ends at
		// the row's end unless the block ends first).
		p += (run) * st
		idx[r-1] += run
		for d := r - 1; d > 0 && idx[d] == shape[d]; d-- {
			p -= shape[d] * strides[d]
			idx[d] = 0
			idx[d-1]++
			p += strides[d-1]
		}
	}
}

// runGroup evaluates a group (without GEMM) over its whole shape on up to
// threads goroutines.
func (e *fexec) runGroup(threads int) {
	g := e.g
	if g.numel == 0 {
		return
	}
	nblocks := (g.numel + g.block - 1) / g.block
	// Blocks are row segments when rows are at least a block long (not
	// for reductions, whose blocks are whole rows): an input broadcast
	// along the rows (a bias vector) or along the columns is then a slice
	// or a fill, not a gather.
	cols := 1
	if len(g.shape) > 0 {
		cols = g.shape[len(g.shape)-1]
	}
	perRow := 0
	if g.red == redNone && cols >= g.block {
		perRow = (cols + g.block - 1) / g.block
		nblocks = g.numel / cols * perRow
	}
	span := func(bi int) (int, int) {
		if perRow == 0 {
			lo := bi * g.block
			return lo, min(lo+g.block, g.numel)
		}
		row, seg := bi/perRow, bi%perRow
		lo := row*cols + seg*g.block
		return lo, min(lo+g.block, (row+1)*cols)
	}
	work := func(next *atomic.Int64) {
		sc := getFScratch(g.nregs * g.block)
		defer fscratchPool.Put(sc)
		regs := sc.regList(g.nregs)
		for {
			bi := int(next.Add(1) - 1)
			if bi >= nblocks {
				return
			}
			lo, hi := span(bi)
			e.evalRange(lo, hi, sc, regs)
			if g.red != redNone {
				e.reduceRows(lo, hi, regs[g.redReg])
			}
		}
	}
	var next atomic.Int64
	nw := min(threads, nblocks)
	if g.numel*max(len(g.code), 1) < ParallelThreshold {
		nw = 1
	}
	if nw <= 1 {
		work(&next)
		return
	}
	// On the GEMM's worker pool: the caller works too, and a helper the
	// OS has not started by the time the blocks are all taken is not
	// waited for (the blocks are taken from next).
	pool.RunShare(nw, func(int, int) { work(&next) })
}

// reduceRows reduces the whole rows in [lo, hi) of register r.
func (e *fexec) reduceRows(lo, hi int, r []float32) {
	g := e.g
	for row := lo / g.redRow; row*g.redRow < hi; row++ {
		s := r[row*g.redRow-lo : (row+1)*g.redRow-lo]
		if g.red == redSum {
			// As the eager reduce kernel: in order, in float64, rounded
			// once (so fused and unfused sums agree bit for bit).
			var acc float64
			for _, v := range s {
				acc += float64(v)
			}
			e.red[row] = float32(acc)
		} else {
			e.red[row] = e.ks.vec.Max(s)
		}
	}
}

// planThreads returns the parallelism of a program (0: GOMAXPROCS).
func planThreads(n int) int {
	if n <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return n
}
