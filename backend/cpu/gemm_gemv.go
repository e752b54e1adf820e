package cpu

import (
	"os"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
	"github.com/gotpu/gotpu/dtype"
)

// The matrix-vector path (m == 1 or n == 1, the batch-1 decode shapes) on
// the AVX2 and AVX-512 kernels: memory-bound, so the matrix is read in
// place, once, without packing. Two forms, by which way the matrix is
// contiguous:
//
//   - dot form (the matrix side contiguous along k, as W in x·Wᵀ or a
//     row-major A in A·x): each output is a row's dot product with the
//     vector, the rows read contiguously (f32: four at a time on AVX-512,
//     bf16: eight; two on AVX2) into vector lanes;
//   - axpy form (contiguous along the output index, as W in x·W): the
//     outputs are a strip of columns accumulated over the rows,
//     y += x[p]·W[p, :], 64 columns held in registers (256 on AVX-512).
//
// Summation order. The axpy form runs each output as one FMA chain over k
// in order from zero, the GEMM micro-kernel's arithmetic, so it equals the
// corresponding row of a batched product bit for bit. The dot form does
// not: it has its own fixed order (gemvOrderF32 in the tests is its exact
// Go model), chosen so that a row streams through independent lanes:
//
//	lane j < 32 of a row is the FMA chain, from +0 and in k order, of
//	the products w[p]·x[p] with p%32 == j; then s[j] = lane[j] +
//	lane[j+16] (j < 16) and the halving tree s[j] + s[j+8], then +4,
//	+2, +1 gives the output.
//
// A bf16 matrix (bf16_gemv.go) takes its 32-value chunks whole and splits
// them without shuffles into even and odd values, so its lanes differ:
// lane j < 16 takes the products with p%32 == 2j, lane 16+j those with
// p%32 == 2j+1; the sums and the tree are the same (gemvOrderBF16 in the
// tests). Each product of a bf16 value (exact in f32) and the f32 vector
// is fused into its lane's chain, as in f32.
//
// The order depends on k alone — not on the thread count, the row split,
// the row's position or the CPU level (AVX-512 and AVX2 give the same
// bits) — so a dot-form product is bitwise reproducible from run to run
// and thread count to thread count, and within the usual k·ε·Σ|w·x| of
// the exact dot product; but a batch-1 product no longer equals a row of
// the batched GEMM bit for bit, nor does SDPA's row path (which
// runs the in-order chain) equal its decomposition at one query row. The
// bf16-vector case takes the same f32 path (the vector widened exactly);
// the dot form has no VDPBF16PS kernel (the axpy form has one at level
// avx512bf16, with the in-order chain's arithmetic: bf16_gemv.go).
// An f32 x·Wᵀ with up to gemvRowsMax activation rows takes the dot form
// too (gemvRunF32): each of its rows is the batch-1 product of that row,
// bit for bit, whatever the other rows — a decode step's sequences get
// the bits they would get alone, up to that batch size — and past it the
// in-order chain of the streaming or blocked paths.
// The generic level does not take this path (the GEMM's in-order chain).
// The rows (dot form) or column strips (axpy form) are shared between the
// pool's threads.

// gemvKernelsF32 are the f32 matrix-vector kernels of a CPU level.
type gemvKernelsF32 struct {
	dot8, dot16 func(k int, a *float32, lda int, x, y *float32)
	axpy        func(k int, x, b *float32, ldb int, y *float32, n int, mask *int32, load int)
}

// gemvAsmF32 is set by the amd64 kernels' init; nil elsewhere. Its dot8
// and dot16 (the in-order chain) serve sdpa.go; the matrix-vector path's
// dot form runs gemvDotF32Z or gemvDotF32Y.
var gemvAsmF32 *gemvKernelsF32

// The dot-form kernels in the order above, AVX-512 (Z) and AVX2 (Y), set
// by the amd64 init (nil elsewhere): y[r] for r < rows is row r of a (rows
// lda apart) dotted with x, both of length k; tail is gemvTailMask(k).
var (
	gemvDotF32Z, gemvDotF32Y func(k int, a *float32, lda int, x, y *float32, rows int, tail *int32)
	// gemvDotF32x4Z runs four vectors at once (x rows ldx apart, y rows
	// ldy apart), each with gemvDotF32Z's bits.
	gemvDotF32x4Z              func(k int, a *float32, lda int, x *float32, ldx int, y *float32, ldy int, rows int, tail *int32)
	gemvDotBF16Z, gemvDotBF16Y func(k int, a *uint16, lda int, x, y *float32, rows int, tail *int16)
	// gemvDotBF16x4Z runs four deinterleaved vectors at once, each with
	// gemvDotBF16Z's bits.
	gemvDotBF16x4Z func(k int, a *uint16, lda int, x *float32, ldx int, y *float32, ldy int, rows int, tail *int16)
)

// The axpy-form kernels on AVX-512, set by the amd64 init (nil elsewhere):
// the AVX2 ones' arithmetic (in-order chains), 256-column strips.
var (
	gemvAxpyF32Z  func(k int, x, b *float32, ldb int, y *float32, n int, mask *int32, load int)
	gemvAxpyBF16Z func(k int, x *float32, b *uint16, ldb int, y *float32, n int, load int)
	// gemvAxpyBF16DPZ is the axpy form on VDPBF16PS (level avx512bf16;
	// bf16_gemv.go has its arithmetic).
	gemvAxpyBF16DPZ func(kp int, xp *uint32, b *uint16, ldb int, y *float32, n int, load int, odd int)
)

// gemvTailLanes backs gemvTailMask.
var gemvTailLanes = [64]int32{
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
}

// gemvTailMask returns 32 int32 lanes, -1 for the first k%32 and 0 for
// the rest: the live lanes of the dot kernels' last, partial 32-step.
func gemvTailMask(k int) *int32 { return &gemvTailLanes[32-k%32] }

// gemvTailLanes16 backs gemvTailMask16.
var gemvTailLanes16 = [64]int16{
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
}

// gemvTailMask16 is gemvTailMask in 16-bit lanes (the bf16 kernels).
func gemvTailMask16(k int) *int16 { return &gemvTailLanes16[32-k%32] }

// gemvDeinterleave writes x (length k) to dst (length k rounded up to
// 32) in the bf16 dot kernels' order: per 32-value chunk its 16
// even-indexed values, then its 16 odd-indexed ones, zero past k.
func gemvDeinterleave(dst, x []float32) {
	n := len(x) &^ 31
	for c := 0; c < n; c += 32 {
		s, d := (*[32]float32)(x[c:c+32]), (*[32]float32)(dst[c:c+32])
		for j := range 16 {
			d[j], d[16+j] = s[2*j], s[2*j+1]
		}
	}
	clear(dst[n:])
	for i, v := range x[n:] {
		dst[n+i/2+16*(i&1)] = v
	}
}

// gemvWidenDeinterleave is gemvDeinterleave of x widened to f32 (the
// bf16 dot kernels' activation), in one pass: a decode step prepares
// one such vector per product.
func gemvWidenDeinterleave(dst []float32, x []dtype.BFloat16) {
	n := len(x) &^ 31
	for c := 0; c < n; c += 32 {
		s, d := (*[32]dtype.BFloat16)(x[c:c+32]), (*[32]uint32)(unsafe.Pointer(&dst[c : c+32][0]))
		for j := range 16 {
			d[j], d[16+j] = uint32(s[2*j])<<16, uint32(s[2*j+1])<<16
		}
	}
	clear(dst[n:])
	for i, v := range x[n:] {
		dst[n+i/2+16*(i&1)] = v.F32()
	}
}

// gemvDotF32 returns the f32 dot-form kernel of ks's level (nil if
// none).
func gemvDotF32(ks *kset) func(k int, a *float32, lda int, x, y *float32, rows int, tail *int32) {
	switch {
	case gemvDotF32Z != nil && ks.atLeast(LevelAVX512):
		return gemvDotF32Z
	case gemvDotF32Y != nil && ks.atLeast(LevelAVX2):
		return gemvDotF32Y
	}
	return nil
}

// gemvDotBF16 is gemvDotF32 for a bf16 matrix; avx2 reports whether the
// kernel is the AVX2 one (which reads up to k rounded up to 16 values).
func gemvDotBF16(ks *kset) (kr func(k int, a *uint16, lda int, x, y *float32, rows int, tail *int16), avx2 bool) {
	switch {
	case gemvDotBF16Z != nil && ks.atLeast(LevelAVX512):
		return gemvDotBF16Z, false
	case gemvDotBF16Y != nil && ks.atLeast(LevelAVX2):
		return gemvDotBF16Y, true
	}
	return nil, false
}

// gemvKB is the number of matrix rows the axpy form walks at a time.
const gemvKB = 256

// gemvParallelMACs is the matrix size (elements) from which a
// matrix-vector product is shared between threads. With helpers that poll
// an atomic mailbox (internal/pool) a hand-off costs well under a
// microsecond, and a decode step's per-layer products (a few hundred KB of
// f32 each) stream faster on two cores than on one: on a SmolLM2-135M
// f32 decode step (2-core Zen 3, AVX2) the gate/up products and their
// fused GEMM groups ran 20-27% faster timed step by step, and decode
// 15-20% faster end to end, from 2^16 than from 2^22 (the threshold
// before, chosen when waking a parked helper cost tens of microseconds).
//
// GOTPU_GEMV_PARALLEL_MACS overrides it (and quantParallelMACs, the same
// threshold for products with GGUF-quantized weights), for measuring the
// trade-off on other machines.
var gemvParallelMACs = envOr("GOTPU_GEMV_PARALLEL_MACS", 1<<16)

// envOr returns the positive integer in environment variable name, or def.
func envOr(name string, def int) int {
	if v := envInt(os.LookupEnv, name); v > 0 {
		return v
	}
	return def
}

// gemvWalk returns gemm.GemvRowWalk's value for the GOTPU_GEMV_WALK setting env
// ("rows", "groups", or anything else for the CPU's default) on an AMD CPU
// or not.
func gemvWalk(env string, amd bool) uint8 {
	switch {
	case env == "rows", env != "groups" && amd:
		return 1
	}
	return 0
}

// gemvHits counts the products the gemv kernels ran (tests check the path
// is taken).
var gemvHits atomic.Int64

// gemvMask holds the lane masks of gemm.GemvAxpyF32: &gemvMask[8-r] has r
// leading -1 lanes.
var gemvMask = [16]int32{-1, -1, -1, -1, -1, -1, -1, -1}

// gemvTiled runs a matrix-vector problem on the gemv kernels when they
// cover it (f32 highest in direct mode, the matrix contiguous along one of
// its axes), reporting whether it did.
func (g *gemmProblem[SA, SB, T]) gemvTiled() bool {
	if g.m != 1 && g.n != 1 {
		return false
	}
	if p, ok := any(g).(*gemmProblem[dtype.BFloat16, dtype.BFloat16, float32]); ok {
		if gemvAsmBF16 == nil || !g.ks.atLeast(LevelAVX2) || p.dst != nil || p.store == nil {
			return false
		}
		if dk, _ := gemvDotBF16(g.ks); dk == nil {
			return false
		}
		return gemvBF16(p, gemvAsmBF16)
	}
	p, ok := any(g).(*gemmProblem[float32, float32, float32])
	if !ok || gemvAsmF32 == nil || gemvDotF32(g.ks) == nil || !g.ks.atLeast(LevelAVX2) || p.dst == nil {
		return false
	}
	return gemvF32(p, gemvAsmF32)
}

// uniformStride returns s if offs[i] == offs[0]+i*s for every i (any s
// for fewer than two offsets, reported as 0), and whether it is so.
func uniformStride(offs []int) (int, bool) {
	if len(offs) < 2 {
		return 0, true
	}
	s := offs[1] - offs[0]
	for i, o := range offs {
		if o != offs[0]+i*s {
			return 0, false
		}
	}
	return s, true
}

// gemvLayout is how the matrix-vector kernels read a problem with one
// output column (or row): the matrix and vector sides, the matrix's row
// count, whether its rows are C's rows (the matrix is A), their stride rs
// and k stride ks (normalised: rs 0 for one row, ks 1 for k = 1), and the
// form — dot (rows contiguous along k) or axpy (rows adjacent).
type gemvLayout[S any, T gemmNum] struct {
	mat, vec *gemmSide[S, T]
	rows     int
	rowsAreM bool
	rs, ks   int
	dot      bool
}

// gemvLayoutOf classifies g for the matrix-vector kernels, reporting false
// for layouts they do not read.
func gemvLayoutOf[S any, T gemmNum](g *gemmProblem[S, S, T]) (gemvLayout[S, T], bool) {
	l := gemvLayout[S, T]{mat: &g.a, vec: &g.b, rows: g.m, rowsAreM: true}
	if g.n != 1 {
		l.mat, l.vec, l.rows, l.rowsAreM = &g.b, &g.a, g.n, false
	}
	mat, vec := l.mat, l.vec
	if !mat.plain || !vec.plain || len(mat.conv) != 1 || len(vec.conv) != 1 {
		return l, false
	}
	var ok1, ok2 bool
	l.rs, ok1 = uniformStride(mat.row)
	l.ks, ok2 = uniformStride(mat.k)
	if !ok1 || !ok2 {
		return l, false
	}
	l.dot = l.ks == 1 || g.k == 1
	if !l.dot && !(l.rs == 1 || l.rows == 1) {
		return l, false
	}
	if l.rows == 1 {
		l.rs = 0
	}
	if g.k == 1 {
		l.ks = 1
	}
	return l, true
}

func gemvF32(g *gemmProblem[float32, float32, float32], kr *gemvKernelsF32) bool {
	l, ok := gemvLayoutOf(g)
	if !ok {
		return false
	}
	// The matrix side, its row count, and where output r goes.
	mat, vec, rows, rs, ks, dot := l.mat, l.vec, l.rows, l.rs, l.ks, l.dot
	ostride := g.ldc
	if !l.rowsAreM {
		ostride = 1
	}
	if !dot && ostride != 1 && rows > 1 {
		return false
	}
	k := g.k
	vs, vok := uniformStride(vec.k)
	contig := vok && (vs == 1 || k <= 1)
	dk, tail := gemvDotF32(g.ks), gemvTailMask(k)
	axpy := kr.axpy
	if gemvAxpyF32Z != nil && g.ks.atLeast(LevelAVX512) {
		axpy = gemvAxpyF32Z
	}
	// Scratch: gathered vectors (when not contiguous).
	cost := g.nb * rows * max(k, 1)
	nw := 1
	if cost >= gemvParallelMACs {
		nw = runtime.GOMAXPROCS(0)
	}
	xsz := 0
	if !contig {
		xsz = g.nb * k
	}
	buf := getScratch(max(xsz, 1) * 4)
	defer putScratch(buf)
	all := as[float32](*buf)
	xs := all[:xsz]
	if !contig {
		for b := 0; b < g.nb; b++ {
			o := vec.batchOff(b) + vec.row[0]
			for p, ko := range vec.k {
				xs[b*k+p] = vec.src[o+ko]
			}
		}
	}
	xAt := func(b int) *float32 {
		if k == 0 {
			return nil
		}
		if !contig {
			return &xs[b*k]
		}
		return &vec.src[vec.batchOff(b)+vec.row[0]+vec.k[0]]
	}
	// Work units: 16-row blocks taken dynamically (dot), or one column
	// range per thread (axpy), walked gemvKB rows at a time so that its
	// pages stay in the TLB while every strip of the range passes them.
	step, chunk := 16, 0
	if !dot {
		step = max(64, roundUp(ceilDiv(rows, nw), 64))
	}
	per := ceilDiv(rows, step)
	total := g.nb * per
	chunk = max(1, total/(nw*4))
	if !dot {
		chunk = 1
	}
	var next atomic.Int64
	pool.RunShare(nw, func(tid, _ int) {
		var y [16]float32
		for {
			u0 := int(next.Add(int64(chunk))) - chunk
			if u0 >= total {
				return
			}
			for u := u0; u < min(u0+chunk, total); u++ {
				b, r0 := u/per, u%per*step
				n := min(step, rows-r0)
				x := xAt(b)
				base := mat.batchOff(b) + mat.row[0]
				if k > 0 {
					base += mat.k[0]
				}
				out := g.dst[b*g.dstBatch:]
				if !dot {
					if k == 0 {
						clear(out[r0 : r0+n])
						continue
					}
					for kb := 0; kb < k; kb += gemvKB {
						load := 0
						if kb > 0 {
							load = 1
						}
						axpy(min(gemvKB, k-kb), (*float32)(unsafe.Add(unsafe.Pointer(x), 4*kb)), &mat.src[base+kb*ks+r0], ks, &out[r0], n, &gemvMask[8-n%8], load)
					}
					continue
				}
				if k == 0 {
					clear(y[:n])
				} else {
					dk(k, &mat.src[base+r0*rs], rs, x, &y[0], n, tail)
				}
				for r := 0; r < n; r++ {
					out[(r0+r)*ostride] = y[r]
				}
			}
		}
	})
	gemvHits.Add(1)
	if g.fin != nil {
		for b := 0; b < g.nb; b++ {
			g.fin(b, 0, 0, g.m, g.n, g.dst[b*g.dstBatch:], g.ldc)
		}
	}
	return true
}
