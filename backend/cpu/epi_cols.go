package cpu

// Column epilogues: a GEMM's fused elementwise group evaluated on the
// streaming x·Wᵀ path (gemm_stream.go) one output column at a time,
// before the column is stored. That path finishes Cᵀ tiles whose rows
// are C's columns (all m rows, contiguous), so the group runs there on
// registers of m values, in cache and on the GEMM's own threads, instead
// of either a second pass over C after the product (measured 25-45 µs
// for the MNIST step's [64, 512] bias+ReLU, a separate parallel region)
// or the C-tile hook, whose tiles on this path are at most 48 columns
// wide: a register setup per 48-element row segment cost more than the
// group (per tile 167 µs against 60 after the product, [64, 256]).
//
// Inputs that are constant down a column — a bias broadcast over the
// rows, a scalar — become the scalar operand of their binary
// instructions (a+s, a·s, a−s, a/s, s−a, s/a, max/min(a, s) evaluate
// exactly as with a filled register), or a fill where no scalar form
// exists; other inputs are gathered down the column. Every element goes
// through the same operations in the same order as in evalRange, so the
// bits are those of the unfused group.

// epiCols is a GEMM-epilogue group bound to one run, evaluated column by
// column of its [m, n] output (the group's shape flattened to m rows).
type epiCols struct {
	e    *fexec
	m, n int
	ins  []epiColIn
	// code is the group's code with each binary instruction reading a
	// column-constant input marked (scalarA/scalarB), so that the column
	// evaluation can substitute the scalar form.
	code []epiColInstr
	// fills lists the column-constant inputs some instruction reads as a
	// register (they are filled per column).
	fills []int
	out   int // the output register
}

// epiColIn is one input register's source down a column.
type epiColIn struct {
	gemm bool // the product's column itself
	src  []float32
	src8 []uint8
	// rows, when not nil, holds each row's offset of column 0; nil means
	// the input is constant down a column, at row0.
	rows []int
	row0 int
	cs   int // column stride
}

// epiColInstr is an instruction with its scalar substitution: sop, when
// not 0, is the scalar form to run with the column-constant input reg
// as imm.
type epiColInstr struct {
	ins finstr
	sop fop
	reg int // the column-constant input sop takes as its scalar
}

// epiScalarB maps a binary op to its form with the scalar as the right
// operand, epiScalarA to its form with the scalar as the left operand
// (only where the result is exactly the same: maximum and minimum are not
// symmetric in signed zeros, so their left forms keep the fill).
var (
	epiScalarB = map[fop]fop{fAdd: fAddS, fSub: fSubS, fMul: fMulS, fDiv: fDivS, fMax: fMaxS, fMin: fMinS}
	epiScalarA = map[fop]fop{fAdd: fAddS, fMul: fMulS, fSub: fSubR, fDiv: fDivR}
)

// newEpiCols binds e (a GEMM-epilogue group whose product is an [m, n]
// matrix) for column evaluation, or returns nil when the group does not
// have that form: a reduction, several outputs, more rows than a
// register holds, a shape that is not [..., n]. (Other outputs stored
// from the columns, transposed six at a time as the product is, cost more
// than the group run after the product: the MNIST step's [64, 512]
// bias+ReLU with its two values kept, 388 µs against 316 + 20.)
func newEpiCols(e *fexec, m, n int) *epiCols {
	g := e.g
	if g.gemm < 0 || g.red != redNone || len(g.outs) != 1 || m < 1 || m > g.block || g.numel != m*n ||
		len(g.shape) < 2 || g.shape[len(g.shape)-1] != n {
		return nil
	}
	ec := &epiCols{e: e, m: m, n: n, ins: make([]epiColIn, len(e.in)), out: g.outs[0].reg}
	for i, in := range e.in {
		if g.inputs[i] < 0 {
			ec.ins[i] = epiColIn{gemm: true}
			continue
		}
		if len(in.shape) != len(g.shape) {
			return nil
		}
		c := epiColIn{src: in.src, src8: in.src8, cs: in.strides[len(in.strides)-1], row0: in.off}
		// Row offsets over the leading dimensions, row-major.
		rows := make([]int, m)
		lead, strides := in.shape[:len(in.shape)-1], in.strides[:len(in.strides)-1]
		same := true
		for r := range rows {
			off, rem := in.off, r
			for d := len(lead) - 1; d >= 0; d-- {
				off += (rem % lead[d]) * strides[d]
				rem /= lead[d]
			}
			rows[r] = off
			same = same && off == in.off
		}
		if !same {
			c.rows = rows
		}
		ec.ins[i] = c
	}
	constIn := func(r int) bool { return r >= 0 && r < len(ec.ins) && !ec.ins[r].gemm && ec.ins[r].rows == nil }
	filled := map[int]bool{}
	for _, ins := range g.code {
		ci := epiColInstr{ins: ins}
		switch {
		case ins.op.binary() && ins.op != fWhere && constIn(ins.b) && !constIn(ins.a) && epiScalarB[ins.op] != 0:
			ci.sop, ci.reg = epiScalarB[ins.op], ins.b
		case ins.op.binary() && ins.op != fWhere && constIn(ins.a) && !constIn(ins.b) && epiScalarA[ins.op] != 0:
			ci.sop, ci.reg = epiScalarA[ins.op], ins.a
		default:
			for _, r := range []int{ins.a, ins.b, ins.c} {
				if constIn(r) && (r == ins.a && ins.op != fFill || r == ins.b && ins.op.binary() || r == ins.c && ins.op == fWhere) {
					filled[r] = true
				}
			}
		}
		ec.code = append(ec.code, ci)
	}
	for r := range ec.ins {
		if filled[r] {
			ec.fills = append(ec.fills, r)
		}
	}
	return ec
}

// run evaluates the group on the h columns j0.. of the product, column
// j0+r's values at t[r*ldt:r*ldt+m], in place (gemmStreamXWt's column
// epilogue hook).
func (ec *epiCols) run(j0, h int, t []float32, ldt int) {
	g := ec.e.g
	m := ec.m
	sc := getFScratch(g.nregs * g.block)
	defer fscratchPool.Put(sc)
	regs := sc.regList(g.nregs)
	for r := 0; r < h; r++ {
		j := j0 + r
		col := t[r*ldt : r*ldt+m]
		for q := range regs {
			regs[q] = sc.regs[q*g.block : q*g.block+m]
		}
		for i := range ec.ins {
			in := &ec.ins[i]
			switch {
			case in.gemm:
				regs[i] = col
			case in.rows != nil:
				d, o := regs[i], j*in.cs
				if in.src8 != nil {
					for q, ro := range in.rows {
						d[q] = float32(in.src8[ro+o])
					}
				} else {
					for q, ro := range in.rows {
						d[q] = in.src[ro+o]
					}
				}
			}
		}
		for _, i := range ec.fills {
			epiFill(regs[i], ec.scalar(i, j))
		}
		regs[ec.out] = col
		for _, ci := range ec.code {
			ins := ci.ins
			if ci.sop != 0 {
				a := ins.a
				if ci.reg == ins.a {
					a = ins.b
				}
				ins = finstr{op: ci.sop, dst: ins.dst, a: a, b: -1, c: -1, imm: ec.scalar(ci.reg, j)}
			}
			runInstr(ec.e.ks, ins, regs)
		}
	}
}

// scalar returns column j's value of the column-constant input i.
func (ec *epiCols) scalar(i, j int) float32 {
	in := &ec.ins[i]
	if in.src8 != nil {
		return float32(in.src8[in.row0+j*in.cs])
	}
	return in.src[in.row0+j*in.cs]
}
