package cpu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// The direct f32 (and bf16) kernel of scaled_dot_product_attention: a blocked,
// flash-style loop that never materialises the L×S score matrix.
//
// Work is split into units of (output batch entry, block of sdpaBlockQ
// query rows), shared by the threads through an atomic counter. A unit
// streams over blocks of sdpaBlockK keys: the score block (Q·scale)·Kᵀ
// (the GEMM micro-kernel on Kᵀ packed in 16-key panels), masked (is_causal, bool or
// float attn_mask broadcast to [..., L, S]), then the online softmax — a
// running row max m, a running sum l of exp(s - m) (vec.Kernels.ExpSubSum,
// which at avx2 makes the weights below exp(-87.68) exact zeros) and an
// output accumulator O rescaled by exp(m_old - m_new) — and O += P·V (the
// micro-kernel again, accumulating into O; V is read in place when it is
// row-major and Ev a multiple of 16, else packed). At the end O is divided
// by l. Memory beyond the output is O((S + L)·E): K (and V) packed once per
// head, shared by all query blocks, and a few blocks per thread.
//
// With is_causal, key blocks entirely above the diagonal are skipped
// (unless that head's V holds a NaN or Inf: the decomposition multiplies
// those by the zero weights and gets NaN, and so does this kernel).
//
// Two cases run the "exact" path instead, which materialises one block of
// query rows against all keys (O(sdpaBlockQ·S) per thread, still not L×S)
// and repeats the decomposition's arithmetic step by step — the same
// micro-kernel FMA chains as dot_general, the same scale multiply, masks,
// softmax row kernel (vec.Kernels.SoftmaxRow) and P·V chain — so it equals the
// decomposition bit for bit:
//   - dropout_p > 0: the dropout mask is drawn from the same Philox
//     counters as the decomposition's random_bits (counter per (row of the
//     [..., L, S] weights, column mod period Ev), stream column / period),
//     so a seed gives the same dropped weights in every mode;
//   - S ≤ sdpaBlockK (one key block): the online softmax would be a plain
//     softmax anyway, and small problems keep their old results exactly.
//
// Calls with at most sdpaRowMaxL query rows (decode steps against a KV
// cache) take the row path: the exact path's arithmetic one query row at
// a time on the gemv kernels, reading K and V where they are (no packing,
// which would cost as much as the whole computation there).
//
// A fully masked row (every key masked out) is NaN, as the decomposition
// and PyTorch give. S == 0 gives zeros (an empty sum), as the
// decomposition does. Matmul precision is always full f32 (the op has no
// precision attribute; the decomposition's matmuls follow the process
// setting).
//
// bf16 query, key and value (all three; the op promotes them to one
// dtype) run the same f32 arithmetic on their values widened to f32 —
// exactly, as they are read: the query rows as they are copied, keys and
// values as they are packed, or on the row path each key and value
// entry's attended rows once per call (sdpaWide); grouped heads' scores
// (sdpaDot3BF16x16) and values with a width a multiple of 8
// (sdpaAxpyBF16) by bf16 kernels that widen in registers with the f32
// ones' chains — and the f32 output is rounded to bf16 once at the end,
// as PyTorch's CPU attention kernels accumulate bf16 in f32: the bits of
// the f32 kernel over the widened operands followed by a conversion
// (TestSDPABF16).

func init() {
	RegisterKernel(op.ScaledDotProductAttention, Kernel{DTypes: 1<<dtype.F32 | 1<<dtype.BF16, Run: sdpaKernel})
}

// sdpaBlockQ (query rows per unit, a multiple of 6, the micro-kernel's
// rows) and sdpaBlockK (keys per block, a multiple of 16, its columns).
// Variables so that tests can shrink them to exercise many blocks.
// Measured at L = S = 2048, E = 64, 8 heads, one thread (GFLOP/s, best of
// 5): 96×128 47.4, 192×128 50.3, 144×256 50.4, 192×192 52.2, 288×128
// 52.7, 192×256 53.5 (the micro-kernel alone runs at about 75). A call
// with fewer than two units per thread halves the query block (down to
// 24 rows) to keep the threads busy.
var (
	sdpaBlockQ = 192
	sdpaBlockK = 256
)

// sdpaFlashOff makes every call take the exact path (benchmarks and tests
// compare the two).
var sdpaFlashOff = false

// sdpaRuns counts the kernel's calls and sdpaRowRuns those on the row
// path (tests check which ran).
var sdpaRuns, sdpaRowRuns atomic.Int64

// sdpaCuts counts the row groups (exact path) and query blocks (flash
// path) that stopped before the last key (tests check the cut ran).
var sdpaCuts atomic.Int64

// errSDPAOperand reports operands the kernel cannot read (the runtime
// promotes query, key and value to f32 and allocates a dense output, so
// this is a runtime bug).
var errSDPAOperand = errors.New("cpu: scaled_dot_product_attention operands")

// Mask kinds.
const (
	sdpaMaskNone = iota
	sdpaMaskBool
	sdpaMaskF32
	sdpaMaskOther // another float dtype, converted element by element
)

// sdpaPlan is one call's geometry and operands, shared read-only by the
// workers.
type sdpaPlan struct {
	l, s, e, ev int
	evp         int // ev rounded up to 16 (the packed V's row length)
	bq, bk      int // block sizes
	ks          *kset
	nqb, nkb    int // query and key blocks
	nb          int // output batch entries
	scale       float32
	causal      bool
	exact       bool

	q        []float32
	qsL, qsE int
	qOff     []int // per output batch entry

	// bf16 operands (bf set): query, keys and values are read from q16,
	// kb16 and vb16 and widened to f32 (exactly) where the f32 kernel
	// reads q, kb and vb; the f32 output (out, in scratch) is rounded
	// into out16 once at the end (finish).
	bf              bool
	q16, kb16, vb16 []dtype.BFloat16
	out16           []dtype.BFloat16
	outScratch      *[]byte
	kw, vw          []sdpaWide // the row path's widened key and value entries (prepareWide)
	wideRows        int
	vDirect         bool // the row path reads bf16 values in place (sdpaAxpyBF16)

	// The row path (few query rows: no packing; gemv kernels on K and V
	// where they are).
	rows         bool
	kb, vb       []float32 // key and value buffers
	ksS, ksE     int
	vsS, vsE     int
	kOffs, vOffs []int // per key (value) batch entry

	// Paged keys and values (paged_attention): key j of key entry i sits
	// at kOffs[i] + kPages[i][j/page] + (j%page)*ksS, values likewise;
	// page 0 means dense (kOffs[i] + j*ksS).
	page           int
	kPages, vPages [][]int

	kPack, vPack [][]float32 // per key (value) batch entry of its own
	vld          int         // row stride of the value packs (or of V in place)
	vBad         []bool      // the value entry holds a NaN or Inf (noted under is_causal or a bool mask only)
	scratch      *[]byte     // the packs' memory, from getScratch
	kIdx, vIdx   []int       // per output batch entry

	maskKind int
	mb       []byte
	mf       []float32
	mdt      dtype.DType
	mOff     []int // per output batch entry
	msL, msS int

	dropP    float64
	keepMul  float32 // the kept weights' factor, 1/(1-p) as the decomposition rounds it
	rng      rng
	period   int
	pIdx     []int // per output batch entry: the weights' batch entry (dropout counters)
	out      []float32
	outBatch int // output elements per batch entry (l*ev)
}

// sdpaKernel is the f32 and bf16 kernel (see the comment at the top of
// the file).
func sdpaKernel(c *Call) error {
	sdpaRuns.Add(1)
	p, err := newSDPAPlan(c)
	if err != nil {
		return fmt.Errorf("scaled_dot_product_attention: %w", err)
	}
	if p == nil { // nothing to compute
		return nil
	}
	p.run()
	p.finish()
	return nil
}

// finish rounds a bf16 call's output and returns the scratch.
func (p *sdpaPlan) finish() {
	if p.out16 != nil {
		p.ks.vec.Narrow(p.out16, p.out)
	}
	if p.outScratch != nil {
		putScratch(p.outScratch)
		p.outScratch = nil
	}
	p.release()
}

// sdpaOperandDType checks that query, key, value and output share one
// dtype the kernel reads, f32 or bf16, and returns it.
func sdpaOperandDType(ops ...device.Operand) (dtype.DType, error) {
	dt := ops[0].DType
	for i, x := range ops {
		if (x.DType != dtype.F32 && x.DType != dtype.BF16) || x.DType != dt {
			return 0, fmt.Errorf("%w: operand %d is %s, want f32 or bf16 like operand 0 (%s)", errSDPAOperand, i, x.DType, dt)
		}
	}
	return dt, nil
}

// output returns the f32 array the kernel writes c's n-element output
// to: the output itself (f32), or scratch that finish rounds into it
// (bf16). Either must be dense.
func (p *sdpaPlan) output(c *Call, n int) ([]float32, error) {
	if !p.bf {
		out, _, ok := vecOut(c)
		if !ok {
			return nil, fmt.Errorf("%w: the output is not a dense f32 array", errSDPAOperand)
		}
		return out, nil
	}
	o := c.Out[0]
	all := as[dtype.BFloat16](c.OutB[0])
	off, scalar, ok := vecDense(o, len(all), n)
	if !ok || (scalar && n > 1) {
		return nil, fmt.Errorf("%w: the output is not a dense bf16 array", errSDPAOperand)
	}
	p.out16 = all[off : off+n]
	p.outScratch = getScratch(4 * n)
	p.out = as[float32](*p.outScratch)[:n]
	return p.out, nil
}

// operands records the query and the key and value buffers (of c's
// inputs 0, 1 and 2) in the plan's dtype.
func (p *sdpaPlan) operands(c *Call) {
	if p.bf {
		p.q16 = as[dtype.BFloat16](c.InB[0])
		p.kb16, p.vb16 = as[dtype.BFloat16](c.InB[1]), as[dtype.BFloat16](c.InB[2])
		return
	}
	p.q = as[float32](c.InB[0])
	p.kb, p.vb = as[float32](c.InB[1]), as[float32](c.InB[2])
}

// qAt returns query element i of the operand's buffer as f32.
func (p *sdpaPlan) qAt(i int) float32 {
	if p.bf {
		return p.q16[i].F32()
	}
	return p.q[i]
}

// qRow sets dst to the query's len(dst) values from src at stride st.
func (p *sdpaPlan) qRow(dst []float32, src, st int) {
	switch {
	case st == 1 && p.bf:
		p.ks.vec.Widen(dst, p.q16[src:])
	case st == 1:
		copy(dst, p.q[src:src+len(dst)])
	default:
		for c := range dst {
			dst[c] = p.qAt(src + c*st)
		}
	}
}

// keySpan returns where the row path reads key rows j.. of key entry i
// (of n wanted): the buffer, the offset of row j in it, the row stride,
// and how many of the n rows follow at that stride (kSpan's count); bf16
// keys come widened, each entry's rows once per call (wide). valueSpan
// is the same for values.
func (p *sdpaPlan) keySpan(i, j, n int) (buf []float32, off, ld, m int) {
	if p.bf {
		return p.wide(&p.kw[i], p.kb16, i, p.e, p.ksS, p.kSpan), j * p.e, p.e, n
	}
	off, m = p.kSpan(i, j, n)
	return p.kb, off, p.ksS, m
}

func (p *sdpaPlan) valueSpan(i, j, n int) (buf []float32, off, ld, m int) {
	if p.bf {
		return p.wide(&p.vw[i], p.vb16, i, p.ev, p.vsS, p.vSpan), j * p.ev, p.ev, n
	}
	off, m = p.vSpan(i, j, n)
	return p.vb, off, p.vsS, m
}

// sdpaWide is one key or value entry's first wideRows rows widened from
// bf16 (row j at j*width), filled by the first worker that reads them.
type sdpaWide struct {
	once sync.Once
	rows []float32
}

// wide returns entry i's widened rows (x.rows), widening them on first
// use: rows of width values, ld apart within the runs span gives.
func (p *sdpaPlan) wide(x *sdpaWide, src []dtype.BFloat16, i, width, ld int, span func(i, j, n int) (int, int)) []float32 {
	x.once.Do(func() {
		for j, m := 0, 0; j < p.wideRows; j += m {
			var off int
			off, m = span(i, j, p.wideRows-j)
			dst := x.rows[j*width : (j+m)*width]
			if ld == width {
				p.ks.vec.Widen(dst, src[off:])
				continue
			}
			for r := range m {
				p.ks.vec.Widen(dst[r*width:(r+1)*width], src[off+r*ld:])
			}
		}
	})
	return x.rows
}

// prepareWide sizes the row path's widened bf16 rows: every key and
// value entry's rows up to the most any query row attends.
func (p *sdpaPlan) prepareWide() {
	for b := range p.nb {
		for i := range p.l {
			p.wideRows = max(p.wideRows, p.rowKeys(b, i))
		}
	}
	nk, nv := len(p.kOffs), len(p.vOffs)
	// The values' products have a bf16 kernel with the f32 one's chains.
	p.vDirect = gemvAsmBF16 != nil && p.vsE == 1 && p.ev%8 == 0
	if p.vDirect {
		nv = 0
	}
	p.kw, p.vw = make([]sdpaWide, nk), make([]sdpaWide, nv)
	p.scratch = getScratch(4 * p.wideRows * (nk*p.e + nv*p.ev))
	all := as[float32](*p.scratch)
	for i := range p.kw {
		p.kw[i].rows, all = all[:p.wideRows*p.e], all[p.wideRows*p.e:]
	}
	for i := range p.vw {
		p.vw[i].rows, all = all[:p.wideRows*p.ev], all[p.wideRows*p.ev:]
	}
}

// readRow sets dst to the len(dst) values of a key (value) buffer from
// src at stride st: kb or vb (f32), kb16 or vb16 (bf16).
func readRow(ks *kset, dst []float32, f []float32, h []dtype.BFloat16, src, st int) {
	switch {
	case h != nil && st == 1:
		ks.vec.Widen(dst, h[src:])
	case h != nil:
		for c := range dst {
			dst[c] = h[src+c*st].F32()
		}
	case st == 1:
		copy(dst, f[src:src+len(dst)])
	default:
		for c := range dst {
			dst[c] = f[src+c*st]
		}
	}
}

// sdpaBatchMap returns, for every entry of the output batch shape ob, the
// flat index of operand batch shape xb (aligned right, size-1 dims
// broadcast; with rep > 1 the dim gqaDim of xb holds heads that serve rep
// consecutive output heads each) or, when strides is not nil, the element
// offset of the entry (base plus coordinates times strides) instead.
func sdpaBatchMap(ob, xb, strides []int, base, rep, gqaDim int) (idx, off []int) {
	nb := op.Numel(ob)
	// Every caller wants one of the two: the offsets when it gives
	// strides, the flat indices when not (the other stays nil; a step of
	// a decode makes several of these maps per attention call).
	if strides == nil {
		idx = make([]int, nb)
	} else {
		off = make([]int, nb)
	}
	lead := len(ob) - len(xb)
	var cbuf [8]int
	coord := cbuf[:0]
	if len(ob) <= len(cbuf) {
		coord = cbuf[:len(ob)]
	} else {
		coord = make([]int, len(ob))
	}
	for b := 0; b < nb; b++ {
		fi, o := 0, base
		for d, n := range xb {
			c := 0
			if n != 1 {
				c = coord[d+lead]
				if d == gqaDim && rep > 1 {
					c /= rep
				}
			}
			fi = fi*n + c
			if strides != nil {
				o += c * strides[d]
			}
		}
		if idx != nil {
			idx[b] = fi
		} else {
			off[b] = o
		}
		for d := len(ob) - 1; d >= 0; d-- {
			if coord[d]++; coord[d] < ob[d] {
				break
			}
			coord[d] = 0
		}
	}
	return idx, off
}

// newSDPAPlan reads the call's operands and attributes, and packs K and V.
// It returns nil (and no error) when the output is empty or was filled
// directly.
func newSDPAPlan(c *Call) (*sdpaPlan, error) {
	if len(c.In) < 3 || len(c.Out) != 1 {
		return nil, fmt.Errorf("%w: want query, key, value and one output, got %d inputs and %d outputs", errSDPAOperand, len(c.In), len(c.Out))
	}
	q, k, v, o := c.In[0], c.In[1], c.In[2], c.Out[0]
	for i, x := range []device.Operand{q, k, v, o} {
		if len(x.Shape) < 2 {
			return nil, fmt.Errorf("%w: operand %d is %s %v, want at least 2 dims", errSDPAOperand, i, x.DType, x.Shape)
		}
	}
	dt, err := sdpaOperandDType(q, k, v, o)
	if err != nil {
		return nil, err
	}
	rq, rk, rv, ro := len(q.Shape), len(k.Shape), len(v.Shape), len(o.Shape)
	p := &sdpaPlan{l: q.Shape[rq-2], e: q.Shape[rq-1], s: k.Shape[rk-2], ev: v.Shape[rv-1], bf: dt == dtype.BF16, ks: c.kernels()}
	if k.Shape[rk-1] != p.e || v.Shape[rv-2] != p.s || o.Shape[ro-2] != p.l || o.Shape[ro-1] != p.ev {
		return nil, fmt.Errorf("%w: shapes q %v, k %v, v %v, out %v do not fit", errSDPAOperand, q.Shape, k.Shape, v.Shape, o.Shape)
	}
	n := op.Numel(o.Shape)
	if n == 0 {
		return nil, nil
	}
	out, err := p.output(c, n)
	if err != nil {
		return nil, err
	}
	if p.s == 0 { // softmax over no keys, times an empty V: zeros
		clear(out)
		p.finish()
		return nil, nil
	}
	a := c.Attrs
	scale := 1 / math.Sqrt(float64(p.e))
	if a.Has("scale") {
		scale = a.Float("scale")
	}
	p.scale = float32(scale)
	p.causal = a.Has("is_causal") && a.Bool("is_causal")
	if a.Has("dropout_p") {
		p.dropP = a.Float("dropout_p")
	}
	ob := o.Shape[:ro-2]
	p.geometry(out, ob)

	if len(q.Shape)-2 > len(ob) || rk-2 > len(ob) || rv-2 > len(ob) {
		return nil, fmt.Errorf("%w: batch dims of q %v, k %v, v %v exceed the output's %v", errSDPAOperand, q.Shape, k.Shape, v.Shape, o.Shape)
	}
	p.operands(c)
	p.qsL, p.qsE = q.Strides[rq-2], q.Strides[rq-1]
	_, p.qOff = sdpaBatchMap(ob, q.Shape[:rq-2], q.Strides, q.Offset, 1, -1)

	// enable_gqa: key and value head h serves query heads h*rep..(h+1)*rep-1
	// (repeat_interleave on dim -3).
	gqa := a.Has("enable_gqa") && a.Bool("enable_gqa") && rq >= 3
	repOf := func(x device.Operand) (rep, dim int) {
		r := len(x.Shape)
		if !gqa || r < 3 || x.Shape[r-3] == q.Shape[rq-3] || x.Shape[r-3] == 0 {
			return 1, -1
		}
		return q.Shape[rq-3] / x.Shape[r-3], r - 3
	}
	krep, kdim := repOf(k)
	vrep, vdim := repOf(v)
	var kOffs, vOffs []int
	p.kIdx, _ = sdpaBatchMap(ob, k.Shape[:rk-2], nil, 0, krep, kdim)
	_, kOffs = sdpaBatchMap(k.Shape[:rk-2], k.Shape[:rk-2], k.Strides, k.Offset, 1, -1)
	p.vIdx, _ = sdpaBatchMap(ob, v.Shape[:rv-2], nil, 0, vrep, vdim)
	_, vOffs = sdpaBatchMap(v.Shape[:rv-2], v.Shape[:rv-2], v.Strides, v.Offset, 1, -1)

	if len(c.In) > 3 && c.In[3].Buf != nil {
		if err := p.setMask(c.In[3], c.InB[3], ob); err != nil {
			return nil, err
		}
	}
	if p.dropP > 0 {
		// The weights' batch shape: q's broadcast with k's (heads repeated).
		kb := append([]int(nil), k.Shape[:rk-2]...)
		if kdim >= 0 {
			kb[kdim] *= krep
		}
		pb, err := op.BroadcastShapes("scaled_dot_product_attention", q.Shape[:rq-2], kb)
		if err != nil {
			return nil, err
		}
		p.pIdx, _ = sdpaBatchMap(ob, pb, nil, 0, 1, -1)
		p.rng = rngOf(c)
		p.period = max(p.ev, 1)
		// keep / (1-p) as the decomposition's f32 division computes it.
		p.keepMul = float32(1 / float64(float32(1-p.dropP)))
	}
	p.kOffs, p.vOffs = kOffs, vOffs
	p.ksS, p.ksE, p.vsS, p.vsE = k.Strides[rk-2], k.Strides[rk-1], v.Strides[rv-2], v.Strides[rv-1]
	p.prepare()
	return p, nil
}

// prepare chooses the row path or packs K and V, once the operands are
// recorded.
func (p *sdpaPlan) prepare() {
	if p.rowPath() {
		p.rows, p.exact = true, true
		sdpaRowRuns.Add(1)
		if p.bf {
			p.prepareWide()
		}
		return
	}
	p.pack()
}

// kRow and vRow return the offset of key (value) row j of key (value)
// entry i.
func (p *sdpaPlan) kRow(i, j int) int {
	if p.page == 0 {
		return p.kOffs[i] + j*p.ksS
	}
	return p.kOffs[i] + p.kPages[i][j/p.page] + j%p.page*p.ksS
}

func (p *sdpaPlan) vRow(i, j int) int {
	if p.page == 0 {
		return p.vOffs[i] + j*p.vsS
	}
	return p.vOffs[i] + p.vPages[i][j/p.page] + j%p.page*p.vsS
}

// kSpan returns the offset of key row j of key entry i and how many of
// the n rows from j follow it at stride ksS (all of them when dense, to
// the end of j's block when paged). vSpan is the same for values.
func (p *sdpaPlan) kSpan(i, j, n int) (off, m int) {
	if p.page == 0 {
		return p.kOffs[i] + j*p.ksS, n
	}
	return p.kRow(i, j), min(n, p.page-j%p.page)
}

func (p *sdpaPlan) vSpan(i, j, n int) (off, m int) {
	if p.page == 0 {
		return p.vOffs[i] + j*p.vsS, n
	}
	return p.vRow(i, j), min(n, p.page-j%p.page)
}

// geometry sets the block sizes and counts for output out of batch
// shape ob (l, s, e, ev and dropP already set).
func (p *sdpaPlan) geometry(out []float32, ob []int) {
	p.evp = roundUp(max(p.ev, 1), 16)
	p.nb = op.Numel(ob)
	p.bq, p.bk = min(sdpaBlockQ, roundUp(p.l, 6)), sdpaBlockK
	for p.bq > 24 && p.nb*ceilDiv(p.l, p.bq) < 2*runtime.GOMAXPROCS(0) {
		p.bq = roundUp(p.bq/2, 6)
	}
	p.nqb, p.nkb = ceilDiv(p.l, p.bq), ceilDiv(p.s, p.bk)
	p.exact = sdpaFlashOff || p.dropP > 0 || p.nkb == 1
	p.out, p.outBatch = out, p.l*p.ev
}

// sdpaRowMaxL is the largest L the row path takes. Measured at S = 2048,
// E = 64, 8 heads, 2 threads on a loaded machine (best of 9, ms; tiles
// with packing / row path / the decomposition): L=1 3.1 / 0.88 / 1.1,
// L=2 3.5 / 1.5 / 2.9, L=4 3.1 / 2.0 / 2.8, L=8 3.7 / 4.3 / 4.6, L=16
// 4.4 / 7.9 / 6.5, L=64 11 / 74 / 25. A variable for tests.
var sdpaRowMaxL = 6

// rowPath reports whether the call takes the row path: few query rows,
// the AVX2 gemv kernels, and K and V each contiguous along one axis.
func (p *sdpaPlan) rowPath() bool {
	if p.l > sdpaRowMaxL || sdpaFlashOff || p.e == 0 || gemvAsmF32 == nil || !p.ks.atLeast(LevelAVX2) {
		return false
	}
	if p.page > 0 || p.bf { // blocks are runs of rows, bf16 rows are widened: the row path reads rows
		return p.ksE == 1 && p.vsE == 1
	}
	return (p.ksE == 1 || p.ksS == 1) && (p.vsE == 1 || p.vsS == 1)
}

// setMask records attn_mask m (bool or float, broadcast to the output
// batch shape ob plus [L, S]).
func (p *sdpaPlan) setMask(m device.Operand, b []byte, ob []int) error {
	r := len(m.Shape)
	full := append(append([]int(nil), ob...), p.l, p.s)
	if r > len(full) {
		for _, d := range m.Shape[:r-len(full)] {
			if d != 1 {
				return fmt.Errorf("%w: attn_mask %v has more batch entries than the output %v", errSDPAOperand, m.Shape, full)
			}
		}
		m.Shape, m.Strides = m.Shape[r-len(full):], m.Strides[r-len(full):]
		r = len(full)
	}
	dimStride := func(d int) int { // stride of mask dim d (from the right: 1 is S, 2 is L), 0 if broadcast
		if r < d || m.Shape[r-d] == 1 {
			return 0
		}
		return m.Strides[r-d]
	}
	p.msS, p.msL = dimStride(1), dimStride(2)
	mb := m.Shape[:max(r-2, 0)]
	ms := m.Strides[:max(r-2, 0)]
	_, p.mOff = sdpaBatchMap(ob, mb, ms, m.Offset, 1, -1)
	p.mdt = m.DType
	switch {
	case m.DType == dtype.Bool:
		p.maskKind, p.mb = sdpaMaskBool, b
	case m.DType == dtype.F32:
		p.maskKind, p.mf = sdpaMaskF32, as[float32](b)
	case m.DType.IsFloat():
		p.maskKind, p.mb = sdpaMaskOther, b
	default:
		return fmt.Errorf("%w: attn_mask must be bool or float, got %s", errSDPAOperand, m.DType)
	}
	return nil
}

// pack copies every key batch entry into Kᵀ panels (panel c holds keys
// 16c..16c+15 as an E×16 row-major array, zero beyond S) and every value entry
// that is not already row-major with Ev a multiple of 16 into an S×evp
// row-major array (zero padded); the others are read in place. Under
// is_causal it notes the value entries that hold a NaN or Inf. The packs
// come from the GEMM's scratch pool (release returns them). Paged values
// are always packed.
func (p *sdpaPlan) pack() {
	kb, kOffs, vb, vOffs := p.kb, p.kOffs, p.vb, p.vOffs
	ksE, vsS, vsE := p.ksE, p.vsS, p.vsE
	inPlace := p.page == 0 && !p.bf && vsE == 1 && p.ev%16 == 0 && vsS >= 0
	p.vld = p.evp
	if inPlace {
		p.vld = vsS
	}
	kSize, vSize := roundUp(p.s, 16)*p.e, p.s*p.evp
	if inPlace {
		vSize = 0
	}
	// Entries that read the same rows as the one before them (the query
	// heads of a key head, under grouped-query attention) share its pack.
	kOf, nk := sdpaPackSlots(len(kOffs), func(i int) bool { return p.sameRows(kOffs, p.kPages, i) })
	vOf, nv := sdpaPackSlots(len(vOffs), func(i int) bool { return p.sameRows(vOffs, p.vPages, i) })
	p.scratch = getScratch(4 * (nk*kSize + nv*vSize))
	all := as[float32](*p.scratch)
	p.kPack, p.vPack, p.vBad = make([][]float32, len(kOffs)), make([][]float32, len(vOffs)), make([]bool, len(vOffs))
	packK := func(i int) {
		kt := all[kOf[i]*kSize : (kOf[i]+1)*kSize]
		// 16 keys at a time: their rows are copied whole (a sequential read
		// the prefetcher follows), then transposed from L1 into the
		// chunk's E×16 panel (a sequential write; the GEMM's vector
		// transposes: the element loop was 7% of an L=512 call on Zen 3).
		rows := make([]float32, 16*p.e)
		for j0 := 0; j0 < p.s && p.e > 0; j0 += 16 {
			n := min(16, p.s-j0)
			for jj := 0; jj < n; jj++ {
				readRow(p.ks, rows[jj*p.e:(jj+1)*p.e], kb, p.kb16, p.kRow(i, j0+jj), ksE)
			}
			gemmPackT16(p.ks, kt[j0*p.e:(j0+16)*p.e], rows, p.e, n, p.e)
		}
		p.kPack[i] = kt
	}
	packV := func(i int) {
		if inPlace {
			p.vPack[i] = vb[vOffs[i]:]
		} else {
			vp := all[nk*kSize+vOf[i]*vSize : nk*kSize+(vOf[i]+1)*vSize]
			for j := 0; j < p.s && p.ev > 0; j++ {
				row := vp[j*p.evp : (j+1)*p.evp]
				readRow(p.ks, row[:p.ev], vb, p.vb16, p.vRow(i, j), vsE)
				clear(row[p.ev:])
			}
			p.vPack[i] = vp
		}
		if !(p.causal || p.maskKind == sdpaMaskBool) || p.ev == 0 {
			return
		}
		// A NaN or Inf makes the sum NaN or Inf (as does an overflow of
		// finite values, which only costs the block skipping).
		vp, ld := p.vPack[i], p.vld
		if ld == p.ev {
			sum := p.ks.vec.Sum(vp[:p.s*p.ev])
			p.vBad[i] = sum-sum != 0
			return
		}
		for j := 0; j < p.s; j++ {
			if sum := p.ks.vec.Sum(vp[j*ld : j*ld+p.ev]); sum-sum != 0 {
				p.vBad[i] = true
				return
			}
		}
	}
	// The first entry of each slot packs it; the others take its pack.
	var firsts []int
	for i := range kOffs {
		if i == 0 || kOf[i] != kOf[i-1] {
			firsts = append(firsts, i)
		}
	}
	nkf := len(firsts)
	for i := range vOffs {
		if i == 0 || vOf[i] != vOf[i-1] {
			firsts = append(firsts, i)
		}
	}
	n := len(firsts)
	parallelFor(n, n*p.s*max(p.e, p.ev), func(lo, hi int) {
		for f := lo; f < hi; f++ {
			if f < nkf {
				packK(firsts[f])
			} else {
				packV(firsts[f])
			}
		}
	})
	for i := 1; i < len(kOffs); i++ {
		if kOf[i] == kOf[i-1] {
			p.kPack[i] = p.kPack[i-1]
		}
	}
	for i := 1; i < len(vOffs); i++ {
		if vOf[i] == vOf[i-1] {
			p.vPack[i], p.vBad[i] = p.vPack[i-1], p.vBad[i-1]
		}
	}
}

// sameRows reports whether key (or value) entry i reads the rows entry
// i-1 reads: the same offset and, when paged, the same block list.
func (p *sdpaPlan) sameRows(offs []int, pages [][]int, i int) bool {
	if offs[i] != offs[i-1] {
		return false
	}
	if p.page == 0 {
		return true
	}
	a, b := pages[i], pages[i-1]
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// sdpaPackSlots numbers n entries' packs: entry i shares entry i-1's
// slot when same(i), else takes the next; it returns each entry's slot
// and the slot count.
func sdpaPackSlots(n int, same func(i int) bool) ([]int, int) {
	of := make([]int, n)
	slots := 0
	for i := range of {
		if i > 0 && same(i) {
			of[i] = of[i-1]
			continue
		}
		of[i] = slots
		slots++
	}
	return of, slots
}

// release returns the packs to the scratch pool.
func (p *sdpaPlan) release() {
	if p.scratch != nil {
		putScratch(p.scratch)
		p.scratch, p.kPack, p.vPack = nil, nil, nil
	}
}

// sdpaScratch is one worker's buffers.
type sdpaScratch struct {
	q    []float32 // bq×E query block, zero rows past L
	s    []float32 // score block: bq×bk (flash) or bq×S' (exact)
	tmp  []float32 // one score row (exact: softmax input; flash: mask gather)
	o    []float32 // bq×evp output accumulator
	m, l []float32 // running max and sum per row (flash)
	q3   []float32 // the row path's grouped query rows (sdpaGroupMax×E)
	kt   []float32 // the last (< 16) bf16 key rows of a grouped run, widened
}

// sdpaScratchPool keeps workers' scratch between calls: a decode step runs
// attention once a layer, and fresh scratch each time was the largest
// garbage of a SmolLM2 step (~155 KB).
var sdpaScratchPool sync.Pool // *sdpaScratch

func getSDPAScratch() *sdpaScratch {
	if w, ok := sdpaScratchPool.Get().(*sdpaScratch); ok {
		return w
	}
	return &sdpaScratch{}
}

// size gives w's slices these lengths, zeroed (as new slices would be).
func (w *sdpaScratch) size(q, s, tmp, o, ml, q3 int) {
	w.q, w.s, w.tmp, w.o = zeroedF32(w.q, q), zeroedF32(w.s, s), zeroedF32(w.tmp, tmp), zeroedF32(w.o, o)
	w.m, w.l, w.q3 = zeroedF32(w.m, ml), zeroedF32(w.l, ml), zeroedF32(w.q3, q3)
}

// zeroedF32 returns n zeros in b's memory when it has the room.
func zeroedF32(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// sdpaParallelCost is the work (multiply-adds times two) from which an
// attention call splits over the pool. A decode step's attention (9 query
// heads over 3 key heads, one row each: 2^16 from 29 keys on) sits
// on the step's critical path while the pool's helper only prefetches the
// next product's weights: splitting it from 2^16 instead of 2^18 took the
// BF16 SmolLM2 decode's attention step from 20.1-23.5 to 16.9-21.1 µs a
// call (medians 21.6 and 17.5 over six step-timer rounds each,
// GOMAXPROCS=2; 2^14 was no better).
const sdpaParallelCost = 1 << 16

// run computes every unit over GOMAXPROCS workers.
func (p *sdpaPlan) run() {
	units := p.nb * p.nqb
	if p.rows {
		units = p.nb * p.l
	}
	cost := p.nb * p.l * p.s * (p.e + p.ev) * 2
	if p.causal {
		cost /= 2
	}
	workers := 1
	if cost >= sdpaParallelCost {
		workers = min(runtime.GOMAXPROCS(0), units)
	}
	width := p.bk
	if p.exact {
		width = roundUp(p.s, 16)
	}
	var next atomic.Int64
	// Row units are claimed from both ends: the caller walks the batch
	// entries (heads) upwards and the helpers downwards, so that heads
	// sharing a key/value head (grouped-query attention) mostly run on one
	// core and read those keys and values from its own cache.
	var ends atomic.Uint64 // claimed from the front << 32 | from the back
	// claimRows claims the next run of units from one end: up to
	// sdpaGroupMax consecutive units that share a key head (rowGroup
	// computes their scores together), or one; never more than a
	// worker's share of what is left, so that the last group splits
	// between the workers.
	claimRows := func(front bool) (u0, n int) {
		for {
			v := ends.Load()
			f, b := int(v>>32), int(v&0xffffffff)
			if f+b >= units {
				return -1, 0
			}
			share := ceilDiv(units-f-b, workers)
			if front {
				n = min(share, p.groupRun(f, units-b, 1))
				if ends.CompareAndSwap(v, v+uint64(n)<<32) {
					return f, n
				}
			} else {
				n = min(share, p.groupRun(units-1-b, f-1, -1))
				if ends.CompareAndSwap(v, v+uint64(n)) {
					return units - b - n, n
				}
			}
		}
	}
	work := func(tid int) {
		w := getSDPAScratch()
		defer sdpaScratchPool.Put(w)
		if p.rows {
			w.size(8*p.e+8+p.e, sdpaGroupMax*width, width, roundUp(p.ev, 16), 0, sdpaGroupMax*p.e)
		} else {
			w.size(p.bq*max(p.e, 1), p.bq*width, width, p.bq*p.evp, p.bq, 0)
		}
		if p.rows {
			for u, n := claimRows(tid == 0); u >= 0; u, n = claimRows(tid == 0) {
				p.rowGroup(w, u, n, width)
			}
			return
		}
		for {
			u := int(next.Add(1)) - 1
			if u >= units {
				return
			}
			// The heaviest (last, under is_causal) query blocks first.
			qb, b := p.nqb-1-u/p.nb, u%p.nb
			if p.exact {
				p.exactUnit(w, b, qb)
			} else {
				p.flashUnit(w, b, qb)
			}
		}
	}
	if workers <= 1 {
		work(0)
		return
	}
	pool.RunShare(workers, func(tid, _ int) { work(tid) })
}

// packQ copies query rows i0..i0+nr of batch entry b into w.q (row length
// E), times the scale when prescale is set, and zeroes the rows up to nrp.
func (p *sdpaPlan) packQ(w *sdpaScratch, b, i0, nr, nrp int, prescale bool) {
	e := p.e
	for r := 0; r < nr && e > 0; r++ {
		dst := w.q[r*e : (r+1)*e]
		p.qRow(dst, p.qOff[b]+(i0+r)*p.qsL, p.qsE)
		if prescale {
			p.ks.vec.MulScalar(dst, dst, p.scale)
		}
	}
	clear(w.q[nr*e : nrp*e])
}

// scores sets rows r0..r1 (multiples of 6) of the ncp-column block of w.s
// (row stride lds) to the query block times keys j0..j0+ncp of the packed
// Kᵀ kt.
func (p *sdpaPlan) scores(w *sdpaScratch, kt []float32, j0, r0, r1, ncp, lds int) {
	if p.e == 0 {
		for r := r0; r < r1; r++ {
			clear(w.s[r*lds : r*lds+ncp])
		}
		return
	}
	for jj := 0; jj < ncp; jj += 64 {
		nv := min(64, ncp-jj) / 16
		panel := kt[(j0+jj)*p.e:]
		for r := r0; r < r1; r += 6 {
			sdpaTiles(p.ks, p.e, w.q[r*p.e:], p.e, panel, 16, 16*p.e, nv, w.s[r*lds+jj:], lds, 0)
		}
	}
}

// causalCols returns how many of a key block's nc columns (keys j0..)
// query row i attends under is_causal: the keys j ≤ i.
func causalCols(nc, i, j0 int) int { return min(max(i-j0+1, 0), nc) }

// sdpaCut enables the row path's cut after a row's last allowed key
// (tests turn it off to compare).
var sdpaCut = true

// allowed returns how many keys from the start of query row i of batch
// entry b cover every key a boolean mask (or none) and is_causal allow:
// the row's last allowed key plus one, or S when none is (the row's
// softmax is then NaN over all S, as without the cut) or the mask is a
// float one.
func (p *sdpaPlan) allowed(b, i int) int {
	n := p.s
	switch p.maskKind {
	case sdpaMaskNone, sdpaMaskBool:
	default:
		return n // a float mask may hold +Inf, which makes a cut-off -Inf score NaN
	}
	if p.causal {
		n = min(n, i+1)
	}
	if p.maskKind == sdpaMaskNone {
		return n
	}
	base := p.mOff[b] + i*p.msL
	for n > 0 && p.mb[base+(n-1)*p.msS] == 0 {
		n--
	}
	if n == 0 {
		return p.s
	}
	return n
}

// maskRow scales score row x (keys j0..j0+len(x) of query row i of batch
// entry b) unless the queries were prescaled, and applies is_causal and
// attn_mask as the decomposition does: s*scale, then -Inf where masked
// (bool) or + mask (float).
func (p *sdpaPlan) maskRow(w *sdpaScratch, x []float32, b, i, j0 int, scaled bool) {
	if !scaled {
		p.ks.vec.MulScalar(x, x, p.scale)
	}
	ninf := float32(math.Inf(-1))
	if p.causal {
		for c := max(i-j0+1, 0); c < len(x); c++ {
			x[c] = ninf
		}
	}
	if p.maskKind == sdpaMaskNone {
		return
	}
	base := p.mOff[b] + i*p.msL + j0*p.msS
	switch p.maskKind {
	case sdpaMaskBool:
		if p.msS == 1 {
			// Masks are runs (a causal or padding mask is one): find
			// each masked run with IndexByte's vector scan.
			m := p.mb[base : base+len(x)]
			for c := 0; c < len(m); {
				z := bytes.IndexByte(m[c:], 0)
				if z < 0 {
					break
				}
				c += z
				for c+8 <= len(m) && binary.LittleEndian.Uint64(m[c:]) == 0 {
					xs := x[c : c+8]
					for j := range xs {
						xs[j] = ninf
					}
					c += 8
				}
				for ; c < len(m) && m[c] == 0; c++ {
					x[c] = ninf
				}
			}
			break
		}
		for c := range x {
			if p.mb[base+c*p.msS] == 0 {
				x[c] = ninf
			}
		}
	case sdpaMaskF32:
		switch p.msS {
		case 1:
			p.ks.vec.Add(x, x, p.mf[base:base+len(x)])
		case 0:
			p.ks.vec.AddScalar(x, x, p.mf[base])
		default:
			t := w.tmp[:len(x)]
			for c := range t {
				t[c] = p.mf[base+c*p.msS]
			}
			p.ks.vec.Add(x, x, t)
		}
	default:
		t := w.tmp[:len(x)]
		for c := range t {
			t[c] = float32(dtype.Float64At(p.mdt, p.mb, base+c*p.msS))
		}
		p.ks.vec.Add(x, x, t)
	}
}

// flashUnit computes query block qb of batch entry b with the online
// softmax over key blocks. The queries are prescaled (q·scale)·k instead
// of the decomposition's (q·k)·scale: the same for power-of-two scales
// such as E = 64's, else within a rounding of the scores.
func (p *sdpaPlan) flashUnit(w *sdpaScratch, b, qb int) {
	i0 := qb * p.bq
	nr := min(p.bq, p.l-i0)
	nrp := roundUp(nr, 6)
	scaled := p.e > 0 // E = 0: no products to prescale, the scale applies to the zero scores
	p.packQ(w, b, i0, nr, nrp, scaled)
	kt, vp := p.kPack[p.kIdx[b]], p.vPack[p.vIdx[b]]
	ninf := float32(math.Inf(-1))
	for r := 0; r < nrp; r++ {
		w.m[r], w.l[r] = ninf, 0
	}
	o := w.o[:nrp*p.evp]
	clear(o)
	nkb := p.nkb
	skip := p.causal && !p.vBad[p.vIdx[b]]
	if skip {
		// Blocks past the last row's diagonal are masked out entirely.
		nkb = min(nkb, (i0+nr-1)/p.bk+1)
	}
	// Under a boolean mask the keys after the last one any row attends
	// weigh exact zeros: stop there (cutKeys).
	lim := p.s
	if p.maskKind == sdpaMaskBool && p.cutKeys(b) {
		lim = p.keysOfRows(b, i0, i0+nr)
		nkb = min(nkb, ceilDiv(lim, p.bk))
	}
	for kb := 0; kb < nkb; kb++ {
		j0 := kb * p.bk
		nc := min(p.bk, lim-j0)
		if skip && j0+nc-1 > i0 {
			// The block crosses the diagonal: each 6-row group computes only
			// the keys its last row attends, and each row's softmax and P·V
			// only the keys it attends (the others are exact zeros).
			p.flashDiag(w, b, i0, nr, nrp, j0, nc, kt, vp, scaled)
			continue
		}
		p.scores(w, kt, j0, 0, nrp, roundUp(nc, 16), p.bk)
		for r := 0; r < nr; r++ {
			x := w.s[r*p.bk : r*p.bk+nc]
			p.maskRow(w, x, b, i0+r, j0, scaled)
			w.l[r] += p.ks.vec.ExpSubSum(x, p.rescale(w, o, r, p.ks.vec.Max(x)))
		}
		// Rows nr..nrp hold raw scores of the zero query rows; their
		// outputs are dropped.
		for r := 0; r < nrp; r += 6 {
			sdpaTiles(p.ks, nc, w.s[r*p.bk:], p.bk, vp[j0*p.vld:], p.vld, 16, p.evp/16, o[r*p.evp:], p.evp, 1)
		}
	}
	nan := float32(math.NaN())
	for r := 0; r < nr; r++ {
		dst := p.out[b*p.outBatch+(i0+r)*p.ev:][:p.ev]
		if w.m[r] == ninf { // every key masked: softmax of -Inf row is NaN
			for c := range dst {
				dst[c] = nan
			}
			continue
		}
		p.ks.vec.MulScalar(dst, o[r*p.evp:r*p.evp+p.ev], 1/w.l[r])
	}
}

// rescale folds a score row's block maximum bmax into row r's running
// max, rescales the row's output accumulator and running sum by
// exp(m_old - m_new), and returns what to subtract from the block's scores
// before their exp (m_new, or 0 while nothing is attended).
func (p *sdpaPlan) rescale(w *sdpaScratch, o []float32, r int, bmax float32) float32 {
	ninf := float32(math.Inf(-1))
	mOld := w.m[r]
	mNew := max(mOld, bmax) // NaN stays NaN
	sub := mNew
	if sub == ninf { // nothing attended yet: exp(-Inf - 0) = 0
		sub = 0
	}
	alpha := float32(1)
	if mOld != sub {
		alpha = float32(math.Exp(float64(mOld - sub)))
		orow := o[r*p.evp : (r+1)*p.evp]
		p.ks.vec.MulScalar(orow, orow, alpha)
	}
	w.l[r] *= alpha
	w.m[r] = mNew
	return sub
}

// flashDiag is flashUnit's step for a key block (keys j0..j0+nc) that
// crosses the causal diagonal of query rows i0..i0+nr (padded to nrp).
// Only used when the value entry is finite, so a masked key's weight is an
// exact zero whatever its value row holds.
func (p *sdpaPlan) flashDiag(w *sdpaScratch, b, i0, nr, nrp, j0, nc int, kt, vp []float32, scaled bool) {
	o := w.o[:nrp*p.evp]
	for r := 0; r < nrp; r += 6 {
		ng := causalCols(nc, i0+r+5, j0) // the group's last row attends the most
		p.scores(w, kt, j0, r, r+6, roundUp(ng, 16), p.bk)
		for rr := r; rr < min(r+6, nr); rr++ {
			row := w.s[rr*p.bk : rr*p.bk+ng]
			na := causalCols(nc, i0+rr, j0)
			x := row[:na]
			if na > 0 {
				p.maskRow(w, x, b, i0+rr, j0, scaled)
				w.l[rr] += p.ks.vec.ExpSubSum(x, p.rescale(w, o, rr, p.ks.vec.Max(x)))
			}
			clear(row[na:])
		}
		sdpaTiles(p.ks, ng, w.s[r*p.bk:], p.bk, vp[j0*p.vld:], p.vld, 16, p.evp/16, o[r*p.evp:], p.evp, 1)
	}
}

// exactUnit computes query block qb of batch entry b with the
// decomposition's arithmetic: all S scores of each row, vec.Kernels.SoftmaxRow,
// dropout, then one P·V chain over all keys. Each group of six rows
// stops after the last key any of its rows may attend (is_causal, a
// boolean mask: cutKeys): the keys after it weigh exact zeros, which
// leave the softmax's sum and the chain's bits as they are when V is
// finite there.
func (p *sdpaPlan) exactUnit(w *sdpaScratch, b, qb int) {
	i0 := qb * p.bq
	nr := min(p.bq, p.l-i0)
	nrp := roundUp(nr, 6)
	p.packQ(w, b, i0, nr, nrp, false)
	kt, vp := p.kPack[p.kIdx[b]], p.vPack[p.vIdx[b]]
	lds := roundUp(p.s, 16)
	cut := p.cutKeys(b)
	ninf := float32(math.Inf(-1))
	o := w.o[:nrp*p.evp]
	for r := 0; r < nrp; r += 6 {
		ng := p.s
		if cut {
			ng = p.keysOfRows(b, i0+r, i0+min(r+6, nr))
		}
		p.scores(w, kt, 0, r, r+6, roundUp(ng, 16), lds)
		for rr := r; rr < r+6; rr++ {
			x := w.s[rr*lds : rr*lds+p.s]
			if rr >= nr {
				clear(x)
				continue
			}
			for c := ng; c < len(x); c++ {
				x[c] = ninf // what the mask makes of the keys not scored
			}
			p.maskRow(w, x[:ng], b, i0+rr, 0, false)
			t := w.tmp[:p.s]
			copy(t, x)
			p.ks.vec.SoftmaxPrefix(x, t, ng)
			if p.dropP > 0 {
				p.dropout(x, p.pIdx[b], i0+rr)
			}
		}
		sdpaTiles(p.ks, ng, w.s[r*lds:], lds, vp, p.vld, 16, p.evp/16, o[r*p.evp:], p.evp, 0)
	}
	for r := 0; r < nr; r++ {
		copy(p.out[b*p.outBatch+(i0+r)*p.ev:][:p.ev], o[r*p.evp:])
	}
}

// keysOfRows returns how many keys from the start cover every key query
// rows i0..i1-1 of batch entry b attend (the largest allowed), counting
// the cuts it makes.
func (p *sdpaPlan) keysOfRows(b, i0, i1 int) int {
	n := 0
	for i := i0; i < i1; i++ {
		n = max(n, p.allowed(b, i))
	}
	if n < p.s {
		sdpaCuts.Add(1)
	}
	return n
}

// cutKeys reports whether exactUnit (each row group) and flashUnit (each
// query block) may stop after the last key their rows may attend, for
// batch entry b: is_causal or a boolean mask, no dropout, and V finite (a
// weight of zero times an Inf or NaN is NaN in the full chain).
func (p *sdpaPlan) cutKeys(b int) bool {
	return sdpaCut && p.dropP == 0 && (p.causal || p.maskKind == sdpaMaskBool) && !p.vBad[p.vIdx[b]]
}

// rowUnit computes query row i of batch entry b on the row path, with
// the exact path's (the decomposition's) arithmetic: the scores are the
// gemv kernels' FMA chains over E in order (dot form on K's rows, or axpy
// form when K is contiguous along S), the weights vec.Kernels.SoftmaxRow's, and
// the output the chain over S in order (axpy form on V's rows, or dot
// form when V is contiguous along S).
func (p *sdpaPlan) rowUnit(w *sdpaScratch, b, i int) {
	kr := gemvAsmF32
	e := p.e
	qr, pad := w.q[:e], w.q[e:]
	p.queryRow(qr, b, i)
	x := w.s[:p.s]
	n := p.rowKeys(b, i)
	ki := p.kIdx[b]
	if p.ksE == 1 {
		for j, m := 0, 0; j < n; j += m {
			var kb []float32
			var off, ld int
			kb, off, ld, m = p.keySpan(ki, j, n-j)
			sdpaDots(kr, kb, off, ld, m, e, qr, x[j:], pad)
		}
	} else { // dense (rowPath)
		sdpaAxpy(kr, p.kb, p.kOffs[ki], p.ksE, e, qr, x, n, 0)
	}
	p.rowFinish(w, b, i, x, n)
}

// queryRow copies query row i of batch entry b into qr.
func (p *sdpaPlan) queryRow(qr []float32, b, i int) {
	p.qRow(qr, p.qOff[b]+i*p.qsL, p.qsE)
}

// rowKeys returns how many keys row i of batch entry b scores.
//
// Keys past the row's last allowed one (a decode step's cache slots not
// yet written) get weight 0 whatever their scores: their scores are not
// computed (-Inf in the softmax, as the mask would make them) and their
// values are not read, which gives the same bits — each weight is its own
// product, softmax sees the same row, and a product of the values adds
// exact zeros past n — for finite values.
func (p *sdpaPlan) rowKeys(b, i int) int {
	if p.vsE == 1 && sdpaCut {
		return p.allowed(b, i)
	}
	return p.s
}

// rowFinish completes row i of batch entry b from its first n scores in
// x (len S): the rest set to -Inf, the mask, softmax, dropout and the
// product with V.
func (p *sdpaPlan) rowFinish(w *sdpaScratch, b, i int, x []float32, n int) {
	kr := gemvAsmF32
	ninf := float32(math.Inf(-1))
	for c := n; c < len(x); c++ {
		x[c] = ninf
	}
	p.maskRow(w, x[:n], b, i, 0, false)
	t := w.tmp[:p.s]
	copy(t, x)
	p.ks.vec.SoftmaxPrefix(x, t, n)
	if p.dropP > 0 {
		p.dropout(x, p.pIdx[b], i)
	}
	dst := p.out[b*p.outBatch+i*p.ev:][:p.ev]
	vi := p.vIdx[b]
	if p.vsE == 1 {
		// One chain over the keys in order, continued from block to block.
		for j, m := 0, 0; j < n; j += m {
			if p.vDirect {
				var off int
				off, m = p.vSpan(vi, j, n-j)
				sdpaAxpyBF16(p.ks, p.vb16, off, p.vsS, m, x[j:], dst, p.ev, min(j, 1))
				continue
			}
			var vb []float32
			var off, ld int
			vb, off, ld, m = p.valueSpan(vi, j, n-j)
			sdpaAxpy(kr, vb, off, ld, m, x[j:], dst, p.ev, min(j, 1))
		}
	} else { // dense (rowPath)
		vbase := p.vOffs[vi]
		sdpaDots(kr, p.vb, vbase, p.vsE, p.ev, p.s, x, w.o[:p.ev], w.tmp[:0])
		copy(dst, w.o[:p.ev])
	}
}

// sdpaGroupMax is the most row units rowGroup scores together (the
// grouped kernel's queries).
const sdpaGroupMax = 3

// sdpaGroup enables grouped scoring (a variable for tests).
var sdpaGroup = true

// sdpaGroupRuns counts rowGroup's grouped runs (tests check they ran).
var sdpaGroupRuns atomic.Uint64

// sdpaDot3 is sdpaDot3F32x16 where the CPU runs it (nil elsewhere).
var sdpaDot3 func(k int, a *float32, lda int, x *float32, ldx int, y *float32, ldy int)

// sdpaDot3BF16 is sdpaDot3BF16x16 where the CPU runs it (nil elsewhere).
var sdpaDot3BF16 func(k int, a *uint16, lda int, x *float32, ldx int, y *float32, ldy int)

// groupRun returns how many row units from u in direction step (+1 or
// -1), short of stop, rowGroup may score together: consecutive batch
// entries of one query row that read the same keys, up to sdpaGroupMax,
// when the keys are rows of E contiguous values and the grouped kernel
// runs; else 1.
func (p *sdpaPlan) groupRun(u, stop, step int) int {
	if !sdpaGroup || sdpaDot3 == nil || p.ksE != 1 || p.e%8 != 0 {
		return 1
	}
	b, i := u%p.nb, u/p.nb
	n := 1
	for n < sdpaGroupMax {
		v := u + n*step
		if v == stop || v/p.nb != i || p.kIdx[v%p.nb] != p.kIdx[b] {
			break
		}
		n++
	}
	return n
}

// rowGroup computes row units u0..u0+n-1 (n from groupRun). Two or three
// units share their keys: each 16-key block is read once for all of them
// (sdpaDot3F32x16), which gives every score the chain, and so the bits,
// of rowUnit's.
func (p *sdpaPlan) rowGroup(w *sdpaScratch, u0, n, width int) {
	// A lone bf16 row is scored as a group of one too (its query
	// repeated into the spare rows): the grouped kernel reads the bf16
	// keys in place, where rowUnit would widen the entry's rows first.
	if n == 1 && !(sdpaGroup && p.bf && sdpaDot3BF16 != nil && p.e%8 == 0 && p.ksE == 1) {
		p.rowUnit(w, u0%p.nb, u0/p.nb)
		return
	}
	sdpaGroupRuns.Add(1)
	e, i := p.e, u0/p.nb
	var keys [sdpaGroupMax]int
	most := 0
	for h := range sdpaGroupMax {
		b := (u0 + min(h, n-1)) % p.nb
		if h < n {
			keys[h] = p.rowKeys(b, i)
			most = max(most, keys[h])
		}
		// A missing third query repeats the last one into a spare row.
		p.queryRow(w.q3[h*e:(h+1)*e], b, i)
	}
	ki := p.kIdx[u0%p.nb]
	for j, m := 0, 0; j < most; j += m {
		if p.bf && sdpaDot3BF16 != nil {
			m = p.groupScoresBF16(w, ki, j, most-j, n, width)
			continue
		}
		var kb []float32
		var kbase, ld int
		kb, kbase, ld, m = p.keySpan(ki, j, most-j)
		r := 0
		for ; r+16 <= m; r += 16 {
			_ = kb[kbase+(r+15)*ld+e-1]
			sdpaDot3(e, &kb[kbase+r*ld], ld, &w.q3[0], e, &w.s[j+r], width)
		}
		if r < m {
			for h := range n {
				sdpaDots(gemvAsmF32, kb, kbase+r*ld, ld, m-r, e, w.q3[h*e:(h+1)*e], w.s[h*width+j+r:], w.q[e:])
			}
		}
	}
	for h := range n {
		u := u0 + h
		p.rowFinish(w, u%p.nb, i, w.s[h*width:h*width+p.s], keys[h])
	}
}

// groupScoresBF16 is rowGroup's scoring of one run of bf16 key rows
// (from key j of entry ki, up to left of them; it returns how many):
// sixteen rows at a time read in place by sdpaDot3BF16, the last rows
// widened into w.kt for sdpaDots — the chains, and bits, of the f32 run.
func (p *sdpaPlan) groupScoresBF16(w *sdpaScratch, ki, j, left, n, width int) int {
	e := p.e
	off, m := p.kSpan(ki, j, left)
	r := 0
	for ; r+16 <= m; r += 16 {
		_ = p.kb16[off+(r+15)*p.ksS+e-1]
		sdpaDot3BF16(e, (*uint16)(unsafe.Pointer(&p.kb16[off+r*p.ksS])), p.ksS, &w.q3[0], e, &w.s[j+r], width)
	}
	if t := m - r; t > 0 {
		if cap(w.kt) < t*e {
			w.kt = make([]float32, 16*e)
		}
		kt := w.kt[:t*e]
		for rr := range t {
			p.ks.vec.Widen(kt[rr*e:(rr+1)*e], p.kb16[off+(r+rr)*p.ksS:])
		}
		for h := range n {
			sdpaDots(gemvAsmF32, kt, 0, e, t, e, w.q3[h*e:(h+1)*e], w.s[h*width+j+r:], w.q[e:])
		}
	}
	return m
}

// sdpaDots sets y[r] (r < n) to the FMA chain over p < k of
// m[base+r*ld+p]*x[p] (the gemv dot form), sixteen rows at a time, the
// last rows through pad (8*k + 8 values of scratch, grown if short).
func sdpaDots(kr *gemvKernelsF32, m []float32, base, ld, n, k int, x, y, pad []float32) {
	r := 0
	for ; r+16 <= n; r += 16 {
		_ = m[base+(r+15)*ld+k-1]
		kr.dot16(k, &m[base+r*ld], ld, &x[0], &y[r])
	}
	if r+8 <= n {
		_ = m[base+(r+7)*ld+k-1]
		kr.dot8(k, &m[base+r*ld], ld, &x[0], &y[r])
		r += 8
	}
	if h := n - r; h > 0 {
		// The last rows and their 8 results go through pad (8k + 8
		// values): a local array handed to the kernel through the
		// function value would move to the heap on every call.
		if len(pad) < 8*k+8 {
			pad = make([]float32, 8*k+8)
		}
		tail := pad[8*k : 8*k+8]
		pad = pad[:8*k]
		clear(pad)
		for j := 0; j < h; j++ {
			o := base + (r+j)*ld
			copy(pad[j*k:(j+1)*k], m[o:o+k])
		}
		kr.dot8(k, &pad[0], k, &x[0], &tail[0])
		copy(y[r:n], tail[:h])
	}
}

// sdpaAxpy sets y[j] (j < n) to the FMA chain over p < k of
// x[p]*m[base+p*ld+j] (the gemv axpy form), gemvKB rows at a time; with
// load 1 the chain continues from y's values.
func sdpaAxpy(kr *gemvKernelsF32, m []float32, base, ld, k int, x, y []float32, n, load int) {
	_ = m[base+(k-1)*ld+n-1]
	for kb := 0; kb < k; kb += gemvKB {
		if kb > 0 {
			load = 1
		}
		kr.axpy(min(gemvKB, k-kb), &x[kb], &m[base+kb*ld], ld, &y[0], n, &gemvMask[8-n%8], load)
	}
}

// sdpaAxpyBF16 is sdpaAxpy over bf16 rows m (n a multiple of 8): the
// same FMA chains, in the same order, on the values widened in registers
// (gemvAxpyBF16, or its AVX-512 form at avx512: the same bits).
func sdpaAxpyBF16(ks *kset, m []dtype.BFloat16, base, ld, k int, x, y []float32, n, load int) {
	_ = m[base+(k-1)*ld+n-1]
	axpy := gemvAsmBF16.axpy
	if gemvAxpyBF16Z != nil && ks.atLeast(LevelAVX512) {
		axpy = gemvAxpyBF16Z
	}
	for kb := 0; kb < k; kb += gemvKB {
		if kb > 0 {
			load = 1
		}
		axpy(min(gemvKB, k-kb), &x[kb], (*uint16)(unsafe.Pointer(&m[base+kb*ld])), ld, &y[0], n, load)
	}
}

// dropout multiplies weight row x (row i of weights batch entry pb) by
// keep/(1-p), keep drawn as the decomposition's random_bits (i64, lane 0,
// period Ev) & (2^53-1) * 2^-53 < 1-p.
func (p *sdpaPlan) dropout(x []float32, pb, i int) {
	if p.dropP >= 1 {
		p.ks.vec.MulScalar(x, x, 0)
		return
	}
	row := uint64((pb*p.l + i) * p.period)
	per := p.period
	thr := 1 - p.dropP
	for j := range x {
		bits := bits64(block(p.rng.seed, p.rng.offset+row+uint64(j%per), uint64(j/per)), 0)
		var f float32
		if float64(bits&(1<<53-1))*0x1p-53 < thr {
			f = p.keepMul
		}
		x[j] *= f
	}
}

// sdpaTiles runs sdpaTile on nv consecutive 16-column tiles of c, B's
// tile v at b[v*bvs:], four at a time on the 6x64 AVX-512 kernel where
// the level has it (the same FMA chains, so the same bits).
func sdpaTiles(ks *kset, kc int, a []float32, rsa int, b []float32, rsb, bvs, nv int, c []float32, ldc int, load int) {
	v := 0
	if kc > 0 && smallKern64F32Z != nil && ks.atLeast(LevelAVX512) {
		for ; v+4 <= nv; v += 4 {
			bv, cv := b[v*bvs:], c[16*v:]
			_, _, _ = a[5*rsa+kc-1], bv[(kc-1)*rsb+3*bvs+15], cv[5*ldc+63]
			smallKern64F32Z(kc, &a[0], rsa, 1, &bv[0], rsb, bvs, &cv[0], ldc, load)
		}
	}
	for ; v < nv; v++ {
		sdpaTile(ks, kc, a, rsa, b[v*bvs:], rsb, c[16*v:], ldc, load)
	}
}

// sdpaTile sets (load 0) or accumulates into (load 1) the 6×16 tile at c
// (row stride ldc) the product of a's 6 rows (stride rsa, kc contiguous
// elements each) and b's kc rows (stride rsb) of 16 columns: one FMA chain
// per element over k in order, the GEMM micro-kernel's arithmetic (the
// pure-Go level rounds as the generic GEMM does).
func sdpaTile(ks *kset, kc int, a []float32, rsa int, b []float32, rsb int, c []float32, ldc int, load int) {
	if kc == 0 {
		if load == 0 {
			for r := 0; r < 6; r++ {
				clear(c[r*ldc : r*ldc+16])
			}
		}
		return
	}
	// Bounds checks for what the assembly reads and writes.
	_, _, _ = a[5*rsa+kc-1], b[(kc-1)*rsb+15], c[5*ldc+15]
	if ks.atLeast(LevelAVX2) && smallKernF32 != nil {
		smallKern(ks)(kc, &a[0], rsa, 1, &b[0], rsb, &c[0], ldc, load)
		return
	}
	for r := 0; r < 6; r++ {
		ar := a[r*rsa : r*rsa+kc]
		for j := 0; j < 16; j++ {
			var acc float64
			if load != 0 {
				acc = float64(c[r*ldc+j])
			}
			for k, x := range ar {
				acc = float64(float32(float64(x)*float64(b[k*rsb+j]) + acc))
			}
			c[r*ldc+j] = float32(acc)
		}
	}
}
