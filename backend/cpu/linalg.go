package cpu

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// The CPU GEMM, shared by dot_general and convolution. Operands are
// described by offset tables, so any strides (transposed, broadcast with
// stride 0, several free or contracting axes) are read directly while
// packing, without a copy.
//
// Accumulation (T) is float32 for f32/bf16/f16, float64 for f64 and int64
// (wrapping) for integers. Precision for f32 inputs (docs/architecture.md,
// "The op model"):
//   - highest: f32 accumulation with fused multiply-add;
//   - medium:  inputs rounded to bf16, products exact, sums in f32;
//   - high:    three bf16 passes hi*hi + hi*lo + lo*hi (K tripled), sums in f32.
// bf16 and f16 products are exact in f32, so their accumulation is plain
// f32 and the result is rounded once at the end. Below level avx512bf16
// the bf16 precisions are emulated exactly by rounding while packing
// (packRounded) and running the f32 FMA kernel: a product of two bf16
// values is exact in f32, so the FMA adds exactly the bf16 product.
//
// At level avx512bf16 (AVX512_BF16, VDPBF16PS), bf16 x bf16 products and
// f32 products at medium and high with m > 1 and n > 1 run the VDPBF16PS
// kernel (bf16_gemm.go) on bf16 pairs packed along k. Each element of C is
// then the same f32 FMA chain over k in order, with the instruction's
// denormal handling: a denormal bf16 input counts as zero (DAZ) and a
// partial sum whose magnitude, rounded to 24 bits, is below 2^-126 is
// flushed to zero of its sign (FTZ). Results with no denormal input or
// partial sum are bit-identical to level avx2's; matrix-vector products
// (m == 1 or n == 1) keep their FMA kernels and IEEE denormals. Results
// stay independent of the blocking and the thread count.
//
// At level amx (AMX-TILE and AMX-BF16) the same products run on the tile
// unit (amx.go), whose arithmetic is not that chain: k is cut into chunks
// of 32 steps from step 0, and per chunk two f32 chains (even and odd
// steps) are summed, rounded, and added to the accumulator, with the same
// DAZ/FTZ. Results are still deterministic and independent of the
// blocking and the thread count, but they differ from the lower levels'
// in the last bits (amx.go states the model; the tests compare against
// it exactly).
//
// Paths, by shape and CPU level (GOTPU_CPU_LEVEL):
//   - avx2 and up, f32/f64/bf16/f16: the BLIS-style blocked driver around
//     the assembly micro-kernels (gemm_blis.go; 6x16 f32 YMM tiles at avx2,
//     6x64 ZMM tiles at avx512 and above, gemm512_amd64.go, all with the
//     same bits; blocking from the CPU's caches, gemm_cache.go), with the
//     matrix-vector kernels for m == 1 or n == 1 (gemm_gemv.go; AVX-512
//     ones from level avx512) and the unpacked strided kernel for small or
//     skinny f32 shapes (gemm_small.go) in front. Every output of these
//     paths is one FMA chain over k in order, so a row of a batched product
//     is the same bits whatever the batch — except the matrix-vector dot
//     form (f32 and bf16 highest, the matrix contiguous along k, as W in
//     x·Wᵀ), which has its own fixed order (32 k-strided lanes, then a
//     halving tree; gemm_gemv.go): deterministic for any thread count and
//     row split, the same bits at avx2 and avx512, within tolerance of the
//     exact dot product, but not bitwise equal to the batched GEMM's row;
//   - generic (and integers everywhere): the pure-Go path below, units of
//     (batch, MC rows, NC columns), each packing its own panels and running
//     4x4 kernels, in parallel above ParallelThreshold multiply-adds.
//
// Either way a finished tile of C goes through a per-tile hook: store
// (contiguous tile, store mode) or, in direct mode where C is the output
// itself, fin (the epilogue hook; see gemmProblem and gemmF32).

type gemmNum interface {
	~float32 | ~float64 | ~int64
}

const (
	gemmMR = 4
	gemmNR = 4
	gemmKC = 256
	gemmMC = 64
	gemmNC = 256
)

// gemmSide is one operand: element (b, i, p) — batch, free index, contracting
// index — lives at src[base+batch[b]+row[i]+k[p%len(k)]], converted to T by
// conv[p/len(k)] (one converter per precision pass).
type gemmSide[S any, T gemmNum] struct {
	src   []S
	base  int
	batch []int // nil: every batch at offset 0
	row   []int
	k     []int
	conv  []func(S) T
	// plain marks a single pass whose converter is the plain numeric
	// conversion (for bfloat16, the exact widening to f32), which packing
	// then inlines.
	plain bool
	// round, when not nil (f32 values at the bf16 precisions), says per
	// pass which part of the bf16 split conv takes (roundHi or roundLo):
	// packing then converts plainly and rounds the packed panels in place,
	// without a call per element. conv stays the definition.
	round []int8
}

// Parts of the bf16 split of an f32 value (gemmSide.round).
const (
	roundHi int8 = 1 // RoundBF16(x)
	roundLo int8 = 2 // RoundBF16(x - RoundBF16(x))
)

// bf16Rounds is bf16Passes as gemmSide.round values.
func bf16Rounds(prec string) [2][]int8 {
	if prec == op.PrecisionHigh {
		return [2][]int8{{roundHi, roundHi, roundLo}, {roundHi, roundLo, roundHi}}
	}
	return [2][]int8{{roundHi}, {roundHi}}
}

func (s *gemmSide[S, T]) batchOff(b int) int {
	if s.batch == nil {
		return s.base
	}
	return s.base + s.batch[b]
}

// gemmProblem is C[b] (MxN) = A[b] (MxK') . B[b] (K'xN) with K' = K*passes.
type gemmProblem[SA, SB any, T gemmNum] struct {
	nb, m, n, k int // k counts all passes
	a           gemmSide[SA, T]
	b           gemmSide[SB, T]
	kern        func(kc int, a, b []T, c *[gemmMR * gemmNR]T)
	// dot is the matrix-vector path (m == 1 or n == 1): the same
	// accumulation as kern, in the same order over k.
	dot func(x, y []T) T
	// store receives a finished tile of C: rows i0.., columns j0.., ld nc
	// (store mode, used when dst is nil).
	store func(b, i0, j0, mc, nc int, c []T)
	// dst, when not nil, is C itself (direct mode, tiled path only):
	// element (b, i, j) at dst[b*dstBatch+i*ldc+j], accumulated in place,
	// and fin, when not nil, is called on every final tile of it (c starts
	// at element (b, i0, j0), row stride ldc) while the tile is in cache:
	// the epilogue hook. The pure-Go path converts direct mode to store
	// mode (see run).
	dst      []T
	ldc      int
	dstBatch int
	fin      func(b, i0, j0, mc, nc int, c []T, ldc int)
	// tile, when set, is a register-tiled (assembly) micro-kernel that
	// replaces kern and dot (see gemm_tiled.go).
	tile *gemmTile[T]
	// ks is the kernel table the problem runs (nil: the process's).
	ks *kset
}

// pack writes rows [r0, r0+rows) x contracting [p0, p0+kc) of side s into
// dst as panels of w rows, each panel laid out p-major (w values per p),
// zero-padding the last panel.
func packSide[S any, T gemmNum](ks *kset, dst []T, s *gemmSide[S, T], b, r0, rows, p0, kc, w int) {
	if s.round != nil {
		src, ok1 := any(s.src).([]float32)
		d, ok2 := any(dst).([]float32)
		if ok1 && ok2 {
			packRounded(ks, d, src, s.batchOff(b), s.row[r0:r0+rows], s.k, s.round, p0, kc, w)
			return
		}
	}
	if s.plain {
		switch src := any(s.src).(type) {
		case []float32:
			switch d := any(dst).(type) {
			case []float64:
				packPlain(ks, d, src, s.batchOff(b), s.row[r0:r0+rows], s.k[p0:p0+kc], w)
				return
			case []float32:
				packPlain(ks, d, src, s.batchOff(b), s.row[r0:r0+rows], s.k[p0:p0+kc], w)
				return
			}
		case []float64:
			if d, ok := any(dst).([]float64); ok {
				packPlain(ks, d, src, s.batchOff(b), s.row[r0:r0+rows], s.k[p0:p0+kc], w)
				return
			}
		case []dtype.BFloat16:
			if d, ok := any(dst).([]float32); ok {
				packBF16(ks, d, src, s.batchOff(b), s.row[r0:r0+rows], s.k[p0:p0+kc], w)
				return
			}
		}
	}
	base := s.batchOff(b)
	nk := len(s.k)
	src := s.src
	for pr := 0; pr < rows; pr += w {
		panel := dst[(pr/w)*w*kc : (pr/w+1)*w*kc]
		nr := min(w, rows-pr)
		for p := 0; p < kc; p++ {
			gp := p0 + p
			conv := s.conv[gp/nk]
			ko := base + s.k[gp%nk]
			out := panel[p*w : p*w+w]
			for r := 0; r < nr; r++ {
				out[r] = conv(src[ko+s.row[r0+pr+r]])
			}
			for r := nr; r < w; r++ {
				out[r] = 0
			}
		}
	}
}

// packPlain is packSide for a single pass whose conversion is a plain
// numeric conversion, without a call per element. When the rows are
// adjacent in memory (the usual B operand, or a transposed A) the block is
// read k step by k step, each a contiguous run across all the panels,
// rather than panel by panel down strided columns: that would touch a new
// cache line and page per element and defeat the hardware prefetcher.
func packPlain[S float32 | float64, T float32 | float64](ks *kset, dst []T, src []S, base int, row, k []int, w int) {
	packPlainAt(ks, dst, src, base, row, k, w, len(k), 0)
}

// packPlainAt is packPlain into panels of kc k steps (kc >= p0+len(k)),
// filling their steps [p0, p0+len(k)).
func packPlainAt[S float32 | float64, T float32 | float64](ks *kset, dst []T, src []S, base int, row, k []int, w, kc, p0 int) {
	nk := len(k)
	if nk == 0 {
		return
	}
	if d, ok := any(dst).([]float32); ok {
		if s, ok := any(src).([]float32); ok && packF32Fast(ks, d, s, base, row, k, w, kc, p0) {
			return
		}
	}
	// pad zeroes the missing rows of a last partial panel (steps p0.. only).
	pad := func(panel []T, have int) {
		for p := p0; p < p0+nk; p++ {
			clear(panel[p*w+have : p*w+w])
		}
	}
	if adjacent(row) {
		nr := len(row)
		full := nr / w * w
		if full < nr {
			pad(dst[full*kc:(full+w)*kc], nr-full)
		}
		o := base + row[0]
		for p, ko := range k {
			in := src[o+ko : o+ko+nr]
			po := (p0 + p) * w
			for q := 0; q < full; q += w {
				out := dst[q*kc+po : q*kc+po+w]
				for r := range out {
					out[r] = T(in[q+r])
				}
			}
			if full < nr {
				out := dst[full*kc+po : full*kc+po+nr-full]
				for r := range out {
					out[r] = T(in[full+r])
				}
			}
		}
		return
	}
	if w <= 16 && adjacent(k) {
		// Rows contiguous along k (a row-major A, or the W of x·Wᵀ): a
		// small transpose, reading the panel's rows in step.
		var rows [16][]S
		for pr := 0; pr < len(row); pr += w {
			panel := dst[(pr/w)*w*kc : (pr/w+1)*w*kc]
			rs := row[pr:min(pr+w, len(row))]
			if len(rs) < w {
				pad(panel, len(rs))
			}
			for r, ro := range rs {
				rows[r] = src[base+ro+k[0] : base+ro+k[0]+nk]
			}
			// Sixteen k steps (a cache line of each row) at a time: rows a
			// power-of-two apart share cache sets, so reading one element
			// per row per k step would miss on nearly every load.
			for s0 := 0; s0 < nk; s0 += 16 {
				s1 := min(s0+16, nk)
				for r := range rs {
					in := rows[r][s0:s1]
					out := panel[(p0+s0)*w+r:]
					for q, v := range in {
						out[q*w] = T(v)
					}
				}
			}
		}
		return
	}
	for pr := 0; pr < len(row); pr += w {
		panel := dst[(pr/w)*w*kc : (pr/w+1)*w*kc]
		rs := row[pr:min(pr+w, len(row))]
		if len(rs) < w {
			pad(panel, len(rs))
		}
		for r, ro := range rs {
			o := base + ro
			for p, ko := range k {
				panel[(p0+p)*w+r] = T(src[o+ko])
			}
		}
	}
}

// packF32Fast is packPlainAt for f32 to f32 in its two common layouts,
// without per-element conversions or bounds checks: rows adjacent (B, or
// a transposed A: a copy per panel and k step) and 6-row panels of rows
// contiguous along k (a row-major A: a 6-way interleave). It reports
// whether it handled the layout.
func packF32Fast(ks *kset, dst, src []float32, base int, row, k []int, w, kc, p0 int) bool {
	nk := len(k)
	if adjacent(row) {
		nr := len(row)
		full := nr / w * w
		o := base + row[0]
		for p, ko := range k {
			in := src[o+ko : o+ko+nr]
			po := (p0 + p) * w
			for q := 0; q < full; q += w {
				copy(dst[q*kc+po:q*kc+po+w], in[q:q+w])
			}
			if full < nr {
				out := dst[full*kc+po : full*kc+po+w]
				copy(out, in[full:])
				clear(out[nr-full:])
			}
		}
		return true
	}
	if w != 6 || !adjacent(k) {
		return false
	}
	for pr := 0; pr+6 <= len(row); pr += 6 {
		panel := dst[(pr/6)*6*kc+p0*6 : (pr/6)*6*kc+(p0+nk)*6]
		o := base + k[0]
		if lda := row[pr+1] - row[pr]; lda > 0 && row[pr+2]-row[pr+1] == lda && row[pr+3]-row[pr+2] == lda &&
			row[pr+4]-row[pr+3] == lda && row[pr+5]-row[pr+4] == lda {
			// Rows evenly spaced (a matrix): the vector interleave.
			pack6F32(ks, panel, src[o+row[pr]:], lda, nk)
			continue
		}
		r0 := src[o+row[pr] : o+row[pr]+nk]
		r1 := src[o+row[pr+1] : o+row[pr+1]+nk]
		r2 := src[o+row[pr+2] : o+row[pr+2]+nk]
		r3 := src[o+row[pr+3] : o+row[pr+3]+nk]
		r4 := src[o+row[pr+4] : o+row[pr+4]+nk]
		r5 := src[o+row[pr+5] : o+row[pr+5]+nk]
		r1, r2, r3, r4, r5 = r1[:len(r0)], r2[:len(r0)], r3[:len(r0)], r4[:len(r0)], r5[:len(r0)]
		for p := range r0 {
			out := panel[p*6 : p*6+6 : p*6+6]
			out[0], out[1], out[2], out[3], out[4], out[5] = r0[p], r1[p], r2[p], r3[p], r4[p], r5[p]
		}
	}
	if rem := len(row) % 6; rem != 0 {
		// The last partial panel: the general loop, zero-padded.
		pr := len(row) - rem
		panel := dst[(pr/6)*6*kc : (pr/6+1)*6*kc]
		for p := p0; p < p0+nk; p++ {
			clear(panel[p*6+rem : p*6+6])
		}
		for r, ro := range row[pr:] {
			in := src[base+ro+k[0] : base+ro+k[0]+nk]
			for p, v := range in {
				panel[(p0+p)*6+r] = v
			}
		}
	}
	return true
}

// packBF16 is packPlain for bfloat16 values widened to f32 (exact: the
// bits shifted up), inline rather than through a converter call.
func packBF16(ks *kset, dst []float32, src []dtype.BFloat16, base int, row, k []int, w int) {
	kc := len(k)
	if kc == 0 {
		return
	}
	contig := adjacent(k)
	for pr := 0; pr < len(row); pr += w {
		panel := dst[(pr/w)*w*kc : (pr/w+1)*w*kc]
		rs := row[pr:min(pr+w, len(row))]
		if lds, ok := uniformStride(rs); contig && ok && lds >= 1 && packBF16Panel(ks, panel, src[base+rs[0]+k[0]:], lds, len(rs), kc, w) {
			// Rows evenly spaced, each contiguous along k (x of x·Wᵀ as A,
			// W as B): the vector transposes.
			continue
		}
		if len(rs) < w {
			clear(panel)
		}
		if contig {
			for r, ro := range rs {
				in := src[base+ro+k[0] : base+ro+k[0]+kc]
				for p, v := range in {
					panel[p*w+r] = math.Float32frombits(uint32(v) << 16)
				}
			}
			continue
		}
		for p, ko := range k {
			out := panel[p*w : p*w+len(rs)]
			for r := range out {
				out[r] = math.Float32frombits(uint32(src[base+ko+rs[r]]) << 16)
			}
		}
	}
}

// packRounded packs f32 values at the bf16 precisions: rows x k steps
// [p0, p0+kc) of all passes (step gp reads k[gp%len(k)] and takes part
// round[gp/len(k)] of it), converted plainly and then rounded in place,
// segment by segment, in each panel.
func packRounded(ks *kset, dst, src []float32, base int, row, k []int, round []int8, p0, kc, w int) {
	nk := len(k)
	np := ceilDiv(len(row), w)
	for s := 0; s < kc; {
		gp := p0 + s
		pass, kk := gp/nk, gp%nk
		n := min(kc-s, nk-kk)
		packPlainAt(ks, dst, src, base, row, k[kk:kk+n], w, kc, s)
		for q := 0; q < np; q++ {
			seg := dst[q*w*kc+s*w : q*w*kc+(s+n)*w]
			if round[pass] == roundLo {
				ks.vec.RoundLo(seg)
			} else {
				ks.vec.RoundHi(seg)
			}
		}
		s += n
	}
}

// adjacent reports whether offsets are consecutive (rs[i] == rs[0]+i).
func adjacent(rs []int) bool {
	if len(rs) < 2 {
		return false
	}
	for i, o := range rs {
		if o != rs[0]+i {
			return false
		}
	}
	return true
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// scratch recycles the GEMM's packing buffers across calls (every element
// is written before it is read, so reused memory needs no clearing). It is
// a bounded free list rather than a sync.Pool: a pool is emptied by every
// other GC, and the multi-megabyte buffers it then reallocates trigger the
// next GC, so steady-state training kept allocating. At most GOMAXPROCS+1
// buffers are kept, the largest ones.
var scratch struct {
	sync.Mutex
	free []*[]byte
}

func getScratch(n int) *[]byte {
	scratch.Lock()
	best := -1
	for i, p := range scratch.free {
		if cap(*p) >= n && (best < 0 || cap(*p) < cap(*scratch.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		p := scratch.free[best]
		last := len(scratch.free) - 1
		scratch.free[best] = scratch.free[last]
		scratch.free[last] = nil
		scratch.free = scratch.free[:last]
		scratch.Unlock()
		*p = (*p)[:n]
		return p
	}
	scratch.Unlock()
	b := make([]byte, n, n+n/4)
	return &b
}

func putScratch(p *[]byte) {
	scratch.Lock()
	defer scratch.Unlock()
	if len(scratch.free) <= runtime.GOMAXPROCS(0) {
		scratch.free = append(scratch.free, p)
		return
	}
	small := 0
	for i, q := range scratch.free {
		if cap(*q) < cap(*scratch.free[small]) {
			small = i
		}
	}
	if cap(*scratch.free[small]) < cap(*p) {
		scratch.free[small] = p
	}
}

func (g *gemmProblem[SA, SB, T]) run() {
	if g.nb == 0 || g.m == 0 || g.n == 0 {
		return
	}
	if g.ks == nil {
		g.ks = procKS
	}
	if g.tile != nil {
		g.runTiled()
		return
	}
	if g.dst != nil {
		g.store = func(b, i0, j0, mc, nc int, c []T) {
			d := g.dst[b*g.dstBatch+i0*g.ldc+j0:]
			for i := 0; i < mc; i++ {
				copy(d[i*g.ldc:i*g.ldc+nc], c[i*nc:i*nc+nc])
			}
			if g.fin != nil {
				g.fin(b, i0, j0, mc, nc, d, g.ldc)
			}
		}
	}
	if g.m == 1 {
		gemv(g.ks, g.nb, g.n, g.k, &g.a, &g.b, g.dot, func(b, j int, c []T) { g.store(b, 0, j, 1, 1, c) })
		return
	}
	if g.n == 1 {
		gemv(g.ks, g.nb, g.m, g.k, &g.b, &g.a, g.dot, func(b, i int, c []T) { g.store(b, i, 0, 1, 1, c) })
		return
	}
	nmb, nnb := ceilDiv(g.m, gemmMC), ceilDiv(g.n, gemmNC)
	units := g.nb * nmb * nnb
	mcap, ncap, kcap := min(g.m, gemmMC), min(g.n, gemmNC), min(max(g.k, 1), gemmKC)
	cost := g.nb * g.m * g.n * max(g.k, 1)
	parallelFor(units, cost, func(lo, hi int) {
		var z T
		sz := int(unsafe.Sizeof(z))
		na, nbp, nc := ceilDiv(mcap, gemmMR)*gemmMR*kcap, ceilDiv(ncap, gemmNR)*gemmNR*kcap, mcap*ncap
		buf := getScratch((na + nbp + nc) * sz)
		defer putScratch(buf)
		all := as[T](*buf)
		apack, bpack, ctile := all[:na:na], all[na:na+nbp:na+nbp], all[na+nbp:na+nbp+nc]
		var acc [gemmMR * gemmNR]T
		for u := lo; u < hi; u++ {
			b := u / (nmb * nnb)
			i0 := (u / nnb % nmb) * gemmMC
			j0 := (u % nnb) * gemmNC
			mc, nc := min(gemmMC, g.m-i0), min(gemmNC, g.n-j0)
			c := ctile[:mc*nc]
			clear(c)
			for p0 := 0; p0 < g.k; p0 += gemmKC {
				kc := min(gemmKC, g.k-p0)
				packSide(g.ks, apack, &g.a, b, i0, mc, p0, kc, gemmMR)
				packSide(g.ks, bpack, &g.b, b, j0, nc, p0, kc, gemmNR)
				for jr := 0; jr < nc; jr += gemmNR {
					nr := min(gemmNR, nc-jr)
					bp := bpack[(jr/gemmNR)*gemmNR*kc : (jr/gemmNR+1)*gemmNR*kc]
					for ir := 0; ir < mc; ir += gemmMR {
						mr := min(gemmMR, mc-ir)
						ap := apack[(ir/gemmMR)*gemmMR*kc : (ir/gemmMR+1)*gemmMR*kc]
						for r := 0; r < mr; r++ {
							copy(acc[r*gemmNR:r*gemmNR+nr], c[(ir+r)*nc+jr:])
						}
						g.kern(kc, ap, bp, &acc)
						for r := 0; r < mr; r++ {
							copy(c[(ir+r)*nc+jr:(ir+r)*nc+jr+nr], acc[r*gemmNR:r*gemmNR+nr])
						}
					}
				}
			}
			g.store(b, i0, j0, mc, nc, c)
		}
	})
}

// gemv computes out(b, j) = dot(vec(b), other(b, j)) for the n rows of
// other, converting the shared vector once per batch.
func gemv[SV, SO any, T gemmNum](ks *kset, nb, n, k int, vec *gemmSide[SV, T], other *gemmSide[SO, T], dot func(x, y []T) T, store func(b, j int, c []T)) {
	parallelFor(nb*n, nb*n*max(k, 1), func(lo, hi int) {
		v, o := make([]T, k), make([]T, k)
		var c [1]T
		last := -1
		for u := lo; u < hi; u++ {
			b, j := u/n, u%n
			if b != last {
				packSide(ks, v, vec, b, 0, 1, 0, k, 1)
				last = b
			}
			packSide(ks, o, other, b, j, 1, 0, k, 1)
			c[0] = dot(v, o)
			store(b, j, c[:])
		}
	})
}

// dotPlain is the dot product matching kern4x4 (separate multiply and add).
func dotPlain[T gemmNum](x, y []T) T {
	var acc T
	y = y[:len(x)]
	for i, a := range x {
		acc += a * y[i]
	}
	return acc
}

// dotF64 is the dot product matching kern4x4F64 (fused multiply-add).
func dotF64(x, y []float64) float64 {
	var acc float64
	y = y[:len(x)]
	for i, a := range x {
		acc = math.FMA(a, y[i], acc)
	}
	return acc
}

// dotF32 is the dot product matching kern4x4F32 (f32 FMA chain).
func dotF32(x, y []float64) float64 {
	var acc float64
	y = y[:len(x)]
	for i, a := range x {
		acc = r32(a*y[i] + acc)
	}
	return acc
}

// kern4x4 accumulates a 4xkc by kcx4 panel product into c with separate
// multiply and add (exact for products that fit T, and for integers).
func kern4x4[T gemmNum](kc int, a, b []T, c *[16]T) {
	c00, c01, c02, c03 := c[0], c[1], c[2], c[3]
	c10, c11, c12, c13 := c[4], c[5], c[6], c[7]
	c20, c21, c22, c23 := c[8], c[9], c[10], c[11]
	c30, c31, c32, c33 := c[12], c[13], c[14], c[15]
	a = a[:4*kc]
	b = b[:4*kc]
	for p := 0; p < kc; p++ {
		aa := a[4*p : 4*p+4 : 4*p+4]
		bb := b[4*p : 4*p+4 : 4*p+4]
		b0, b1, b2, b3 := bb[0], bb[1], bb[2], bb[3]
		a0 := aa[0]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		a1 := aa[1]
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		a2 := aa[2]
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		a3 := aa[3]
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	*c = [16]T{c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33}
}

// kern4x4F64 is kern4x4 for float64 with fused multiply-add.
func kern4x4F64(kc int, a, b []float64, c *[16]float64) {
	c00, c01, c02, c03 := c[0], c[1], c[2], c[3]
	c10, c11, c12, c13 := c[4], c[5], c[6], c[7]
	c20, c21, c22, c23 := c[8], c[9], c[10], c[11]
	c30, c31, c32, c33 := c[12], c[13], c[14], c[15]
	a = a[:4*kc]
	b = b[:4*kc]
	for p := 0; p < kc; p++ {
		aa := a[4*p : 4*p+4 : 4*p+4]
		bb := b[4*p : 4*p+4 : 4*p+4]
		b0, b1, b2, b3 := bb[0], bb[1], bb[2], bb[3]
		a0 := aa[0]
		c00 = math.FMA(a0, b0, c00)
		c01 = math.FMA(a0, b1, c01)
		c02 = math.FMA(a0, b2, c02)
		c03 = math.FMA(a0, b3, c03)
		a1 := aa[1]
		c10 = math.FMA(a1, b0, c10)
		c11 = math.FMA(a1, b1, c11)
		c12 = math.FMA(a1, b2, c12)
		c13 = math.FMA(a1, b3, c13)
		a2 := aa[2]
		c20 = math.FMA(a2, b0, c20)
		c21 = math.FMA(a2, b1, c21)
		c22 = math.FMA(a2, b2, c22)
		c23 = math.FMA(a2, b3, c23)
		a3 := aa[3]
		c30 = math.FMA(a3, b0, c30)
		c31 = math.FMA(a3, b1, c31)
		c32 = math.FMA(a3, b2, c32)
		c33 = math.FMA(a3, b3, c33)
	}
	*c = [16]float64{c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33}
}

// kern4x4F32 is the "highest" f32 micro-kernel: panels hold f32 values
// widened to float64 and every step computes round32(a*b + c). The product
// of two f32 values is exact in float64, so each step is an f32 fused
// multiply-add (up to double rounding of the f64 sum, which only differs in
// rare ties) and the accumulator stays an f32 value throughout.
func kern4x4F32(kc int, a, b []float64, c *[16]float64) {
	c00, c01, c02, c03 := c[0], c[1], c[2], c[3]
	c10, c11, c12, c13 := c[4], c[5], c[6], c[7]
	c20, c21, c22, c23 := c[8], c[9], c[10], c[11]
	c30, c31, c32, c33 := c[12], c[13], c[14], c[15]
	a = a[:4*kc]
	b = b[:4*kc]
	for p := 0; p < kc; p++ {
		aa := a[4*p : 4*p+4 : 4*p+4]
		bb := b[4*p : 4*p+4 : 4*p+4]
		b0, b1, b2, b3 := bb[0], bb[1], bb[2], bb[3]
		a0 := aa[0]
		c00 = r32(a0*b0 + c00)
		c01 = r32(a0*b1 + c01)
		c02 = r32(a0*b2 + c02)
		c03 = r32(a0*b3 + c03)
		a1 := aa[1]
		c10 = r32(a1*b0 + c10)
		c11 = r32(a1*b1 + c11)
		c12 = r32(a1*b2 + c12)
		c13 = r32(a1*b3 + c13)
		a2 := aa[2]
		c20 = r32(a2*b0 + c20)
		c21 = r32(a2*b1 + c21)
		c22 = r32(a2*b2 + c22)
		c23 = r32(a2*b3 + c23)
		a3 := aa[3]
		c30 = r32(a3*b0 + c30)
		c31 = r32(a3*b1 + c31)
		c32 = r32(a3*b2 + c32)
		c33 = r32(a3*b3 + c33)
	}
	*c = [16]float64{c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33}
}

// r32 rounds x to float32 precision.
func r32(x float64) float64 { return float64(float32(x)) }

func widen32(x float32) float64  { return float64(x) }
func narrow32(x float64) float32 { return float32(x) }

// isHighest reports whether prec selects full f32 accumulation (the CPU's
// default).
func isHighest(prec string) bool { return prec != op.PrecisionMedium && prec != op.PrecisionHigh }

// Precision-pass converters for f32 values.
func bf16Hi(x float32) float32 { return dtype.RoundBF16(x) }
func bf16Lo(x float32) float32 { return dtype.RoundBF16(x - dtype.RoundBF16(x)) }
func idF32(x float32) float32  { return x }

// bf16Passes returns the per-pass converters of the A and B sides for f32
// inputs at the bf16 precisions: one pass (medium) or three (high). Products
// of bf16 values are exact in f32, so the plain f32 kernel sums them exactly
// as the contract says.
func bf16Passes(prec string) (ca, cb []func(float32) float32) {
	if prec == op.PrecisionHigh {
		return []func(float32) float32{bf16Hi, bf16Hi, bf16Lo}, []func(float32) float32{bf16Hi, bf16Lo, bf16Hi}
	}
	return []func(float32) float32{bf16Hi}, []func(float32) float32{bf16Hi}
}

// offsets returns, for every multi-index over the given axes (row-major),
// the element offset sum(idx[i]*strides[axes[i]]).
func offsets(shape, strides, axes []int) []int {
	n := 1
	for _, ax := range axes {
		n *= shape[ax]
	}
	out := make([]int, n)
	if n == 0 {
		return out
	}
	switch len(axes) {
	case 1: // a matrix's rows or columns: one multiply per offset
		st := strides[axes[0]]
		for i := range out {
			out[i] = i * st
		}
		return out
	case 2:
		n1, s0, s1 := shape[axes[1]], strides[axes[0]], strides[axes[1]]
		for i := range shape[axes[0]] {
			row := out[i*n1 : (i+1)*n1]
			for j := range row {
				row[j] = i*s0 + j*s1
			}
		}
		return out
	}
	idx := make([]int, len(axes))
	off := 0
	for i := 0; i < n; i++ {
		out[i] = off
		for d := len(axes) - 1; d >= 0; d-- {
			ax := axes[d]
			idx[d]++
			off += strides[ax]
			if idx[d] < shape[ax] {
				break
			}
			off -= strides[ax] * shape[ax]
			idx[d] = 0
		}
	}
	return out
}

// storeTile returns a gemm store that writes finished tiles into a
// contiguous [nb, m, n] output of element type O.
func storeTile[T gemmNum, O any](dst []O, m, n int, conv func(T) O) func(b, i0, j0, mc, nc int, c []T) {
	return func(b, i0, j0, mc, nc int, c []T) {
		for i := 0; i < mc; i++ {
			row := dst[(b*m+i0+i)*n+j0 : (b*m+i0+i)*n+j0+nc]
			src := c[i*nc : i*nc+nc]
			for j := range row {
				row[j] = conv(src[j])
			}
		}
	}
}

// storeBF16 is storeTile to bfloat16 (dtype.BF16FromF32) with the vector
// narrowing, which rounds the finished tile in place (it is scratch).
func storeBF16(ks *kset, dst []dtype.BFloat16, m, n int) func(b, i0, j0, mc, nc int, c []float32) {
	return func(b, i0, j0, mc, nc int, c []float32) {
		for i := 0; i < mc; i++ {
			o := (b*m+i0+i)*n + j0
			ks.vec.Narrow(dst[o:o+nc], c[i*nc:i*nc+nc])
		}
	}
}

// storeCopy is storeTile without a conversion.
func storeCopy[T gemmNum](dst []T, m, n int) func(b, i0, j0, mc, nc int, c []T) {
	return func(b, i0, j0, mc, nc int, c []T) {
		for i := 0; i < mc; i++ {
			copy(dst[(b*m+i0+i)*n+j0:(b*m+i0+i)*n+j0+nc], c[i*nc:i*nc+nc])
		}
	}
}

func ident[T any](x T) T { return x }

// dotSizes resolves the dot_general of launch c and returns its dims with
// the batch count and the product's m, n and k (each a product of the
// sizes of its axes).
func dotSizes(c *Call) (d op.DotDims, nb, m, n, k int, err error) {
	l, r := c.In[0], c.In[1]
	d, err = op.ResolveDotGeneral(l.Shape, r.Shape, c.Attrs.Ints("lhs_batch"), c.Attrs.Ints("rhs_batch"), c.Attrs.Ints("lhs_contract"), c.Attrs.Ints("rhs_contract"))
	if err != nil {
		return d, 0, 0, 0, 0, err
	}
	nb, m, n, k = 1, 1, 1, 1
	for _, ax := range d.LhsBatch {
		nb *= l.Shape[ax]
	}
	for _, ax := range d.LhsFree {
		m *= l.Shape[ax]
	}
	for _, ax := range d.RhsFree {
		n *= r.Shape[ax]
	}
	for _, ax := range d.LhsContract {
		k *= l.Shape[ax]
	}
	return d, nb, m, n, k, nil
}

// dotGeneralKernel runs dot_general on the CPU.
func dotGeneralKernel(c *Call) error {
	ks := c.kernels()
	if dotF32GEMV(c) || dotBF16GEMV(c) || dotF32Swapped(c, nil) {
		// x·Wᵀ with few activation rows: the weight packs faster as A.
		return nil
	}
	l, r, o := c.In[0], c.In[1], c.Out[0]
	d, nb, m, n, k, err := dotSizes(c)
	if err != nil {
		return err
	}
	lb, lr, lk := offsets(l.Shape, l.Strides, d.LhsBatch), offsets(l.Shape, l.Strides, d.LhsFree), offsets(l.Shape, l.Strides, d.LhsContract)
	rb, rr, rk := offsets(r.Shape, r.Strides, d.RhsBatch), offsets(r.Shape, r.Strides, d.RhsFree), offsets(r.Shape, r.Strides, d.RhsContract)
	prec := c.Attrs.String("precision")
	out := c.OutB[0][o.Offset*o.DType.Size():]
	switch l.DType {
	case dtype.F32:
		t := tileF32(ks)
		if isHighest(prec) && t == nil {
			cv := []func(float32) float64{widen32}
			runDot(c, nb, m, n, k, lb, lr, lk, rb, rr, rk, kern4x4F32, dotF32, cv, cv, storeTile(as[float32](out), m, n, narrow32), true, nil, nil, [2][]int8{})
			break
		}
		// With the FMA kernel, highest is hardware f32 FMA itself; at the
		// bf16 precisions every product is exact in f32, so an FMA gives
		// exactly the separate multiply and add of kern4x4.
		ca, cb, plain := []func(float32) float32{idF32}, []func(float32) float32{idF32}, true
		var rounds [2][]int8
		if !isHighest(prec) {
			ca, cb = bf16Passes(prec)
			rounds = bf16Rounds(prec)
			plain = false
			if tp := pairTile(ks, m, n, k); tp != nil {
				// VDPBF16PS on the bf16 rounding of the inputs (bf16_gemm.go).
				t = tp
			}
		}
		runDot(c, nb, m, n, k, lb, lr, lk, rb, rr, rk, kern4x4[float32], dotPlain[float32], ca, cb, nil, plain, t, as[float32](out), rounds)
	case dtype.BF16:
		to := func(x dtype.BFloat16) float32 { return x.F32() }
		// plain: the packing widens bf16 inline (packBF16), as to does.
		t := tileF32(ks)
		if tp := pairTile(ks, m, n, k); tp != nil {
			t = tp // VDPBF16PS on the bf16 values as they are (bf16_gemm.go)
		}
		runDot(c, nb, m, n, k, lb, lr, lk, rb, rr, rk, kern4x4[float32], dotPlain[float32], []func(dtype.BFloat16) float32{to}, []func(dtype.BFloat16) float32{to},
			storeBF16(ks, as[dtype.BFloat16](out), m, n), true, t, nil, [2][]int8{})
	case dtype.F16:
		to := func(x dtype.Float16) float32 { return x.F32() }
		runDot(c, nb, m, n, k, lb, lr, lk, rb, rr, rk, kern4x4[float32], dotPlain[float32], []func(dtype.Float16) float32{to}, []func(dtype.Float16) float32{to},
			storeTile(as[dtype.Float16](out), m, n, dtype.F16FromF32), false, tileF32(ks), nil, [2][]int8{})
	case dtype.F64:
		cv := []func(float64) float64{ident[float64]}
		runDot(c, nb, m, n, k, lb, lr, lk, rb, rr, rk, kern4x4F64, dotF64, cv, cv, nil, true, tileF64(ks), as[float64](out), [2][]int8{})
	case dtype.I64:
		cv := []func(int64) int64{ident[int64]}
		runDot(c, nb, m, n, k, lb, lr, lk, rb, rr, rk, kern4x4[int64], dotPlain[int64], cv, cv, storeTile(as[int64](out), m, n, ident[int64]), false, nil, nil, [2][]int8{})
	case dtype.I32:
		intDot[int32](c, nb, m, n, k, lb, lr, lk, rb, rr, rk, out)
	case dtype.I16:
		intDot[int16](c, nb, m, n, k, lb, lr, lk, rb, rr, rk, out)
	case dtype.I8:
		intDot[int8](c, nb, m, n, k, lb, lr, lk, rb, rr, rk, out)
	case dtype.U8:
		intDot[uint8](c, nb, m, n, k, lb, lr, lk, rb, rr, rk, out)
	default:
		return fmt.Errorf("dot_general: unsupported dtype %s", l.DType)
	}
	return nil
}

func intDot[S int8 | uint8 | int16 | int32](c *Call, nb, m, n, k int, lb, lr, lk, rb, rr, rk []int, out []byte) {
	cv := []func(S) int64{func(x S) int64 { return int64(x) }}
	runDot(c, nb, m, n, k, lb, lr, lk, rb, rr, rk, kern4x4[int64], dotPlain[int64], cv, cv, storeTile(as[S](out), m, n, func(x int64) S { return S(x) }), false, nil, nil, [2][]int8{})
}

func runDot[S any, T gemmNum](c *Call, nb, m, n, k int, lb, lr, lk, rb, rr, rk []int,
	kern func(int, []T, []T, *[16]T), dot func(x, y []T) T, ca, cb []func(S) T, store func(b, i0, j0, mc, nc int, c []T), plain bool, tile *gemmTile[T], dst []T, rounds [2][]int8) {
	l, r := c.In[0], c.In[1]
	g := gemmProblem[S, S, T]{
		nb: nb, m: m, n: n, k: k * len(ca),
		a:     gemmSide[S, T]{src: as[S](c.InB[0]), base: l.Offset, batch: lb, row: lr, k: lk, conv: ca, plain: plain, round: rounds[0]},
		b:     gemmSide[S, T]{src: as[S](c.InB[1]), base: r.Offset, batch: rb, row: rr, k: rk, conv: cb, plain: plain, round: rounds[1]},
		kern:  kern,
		dot:   dot,
		store: store,
		tile:  tile,
		ks:    c.kernels(),
	}
	if k == 0 {
		g.k = 0
	}
	if store == nil {
		// Direct mode: C is the contiguous [nb, m, n] output itself.
		g.dst, g.ldc, g.dstBatch = dst, n, m*n
	}
	g.run()
}

func init() {
	RegisterKernel(op.DotGeneral, Kernel{DTypes: op.SetNumeric, Run: dotGeneralKernel})
}
