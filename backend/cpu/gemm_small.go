package cpu

import (
	"sync/atomic"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
)

// The unpacked path for small and skinny f32 products. Packing costs about
// one pass over A and B; the blocked path earns it back only when each
// packed element is used many times, that is when both m and n are large.
// When one of them is small (a few rows of activations times a weight,
// the columns of a narrow projection) or the whole problem fits in cache,
// the strided micro-kernel reads A (any row and k strides) and B (rows of
// 16 contiguous columns, any k stride) where they are. Only the ragged
// edges are copied: the last partial panel of B columns and of A rows,
// zero-padded, into small per-thread buffers. The arithmetic is the
// blocked path's (one FMA chain per element in k order), so which path
// runs never changes a result.

// smallKernF32 is the strided micro-kernel (gemm.F32x6x16s), nil where
// there is none; smallKernF32Z is its AVX-512 form (gemm.F32x6x16sz, the
// same tile and bits), nil without AVX-512.
var smallKernF32, smallKernF32Z func(kc int, a *float32, rsa, csa int, b *float32, rsb int, c *float32, ldc int, load int)

// smallKern64F32Z is the 6x64 form of smallKernF32Z (gemm.F32x6x64sz: four
// 16-column vectors of B per row, vector v at b + p*rsb + v*bvs), nil
// without AVX-512. Same bits as four smallKernF32Z calls.
var smallKern64F32Z func(kc int, a *float32, rsa, csa int, b *float32, rsb, bvs int, c *float32, ldc int, load int)

// smallKern returns the strided micro-kernel of ks's level.
func smallKern(ks *kset) func(kc int, a *float32, rsa, csa int, b *float32, rsb int, c *float32, ldc int, load int) {
	if smallKernF32Z != nil && ks.atLeast(LevelAVX512) {
		return smallKernF32Z
	}
	return smallKernF32
}

// gemmSmallMax is the largest min(m, n) the unpacked path takes, and
// gemmSmallMACs the largest m*n*k it takes whatever the shape. Measured
// against the blocked path (GFLOP/s, 2 threads, loaded machine): 16x512x512
// 41 vs 19, 512x16x512 41 vs 19, 64^3 57 vs 34, 96^3 43 vs 45,
// 32x512x1024 26 vs 39, 48x1024x512 34 vs 44: packing pays from about 32
// rows or columns on. It walks
// all of A once per 16-column panel of B, and a panel (k x 16) once per
// 6-row panel of A, with no k blocking: gemmSmallMaxK keeps a B panel in
// L2 (256 KiB f32), gemmSmallMaxA keeps A in L3 (8 MiB f32) and
// gemmSmallMaxB bounds the extent of B a panel walk spans (2 MiB f32).
const (
	gemmSmallMax  = 16
	gemmSmallMACs = 80 * 80 * 80
	gemmSmallMaxK = 4096
	gemmSmallMaxA = 2 << 20
	gemmSmallMaxB = 1 << 19
)

// smallTiled runs g on the unpacked path when it applies (f32 highest in
// direct mode on a register-tiled level, whose tile it does not use: it
// runs the 6x16 strided kernel at every level; the operands' strides uniform, B's
// columns contiguous, a small or skinny shape), reporting whether it did.
func (g *gemmProblem[SA, SB, T]) smallTiled() bool {
	p, ok := any(g).(*gemmProblem[float32, float32, float32])
	if !ok || smallKernF32 == nil || p.dst == nil || p.tile == nil {
		return false
	}
	if min(g.m, g.n) > gemmSmallMax && g.m*g.n*g.k > gemmSmallMACs || g.k > gemmSmallMaxK || g.m*g.k > gemmSmallMaxA {
		return false
	}
	return smallF32(p)
}

func smallF32(g *gemmProblem[float32, float32, float32]) bool {
	a, b := &g.a, &g.b
	if !a.plain || !b.plain || len(a.conv) != 1 || len(b.conv) != 1 || g.k == 0 {
		return false
	}
	rsa, ok1 := uniformStride(a.row)
	csa, ok2 := uniformStride(a.k)
	rsb, ok3 := uniformStride(b.k)
	if !ok1 || !ok2 || !ok3 || !(g.n == 1 || adjacent(b.row)) {
		return false
	}
	// Each B panel is walked down k rows rsb apart: past gemmSmallMaxB
	// elements of extent those are too many pages for the TLB (measured:
	// 32x2048x2048 runs at a third of the blocked path's rate).
	if g.k*max(rsb, -rsb) > gemmSmallMaxB {
		return false
	}
	const mr, nr = 6, 16
	m, n, k := g.m, g.n, g.k
	npan := ceilDiv(n, nr)
	nw := pool.Workers(g.nb * m * n * k)
	rowPanels := ceilDiv(m, mr)
	chunks := min(rowPanels, max(1, ceilDiv(2*nw, g.nb*npan)))
	per := npan * chunks
	units := g.nb * per
	// Per thread: a zero-padded B panel (k x 16), A panel (6 x k) and C tile.
	tsz := roundUp(nr*k+mr*k+mr*nr, 16)
	buf := getScratch(nw * tsz * 4)
	defer putScratch(buf)
	all := as[float32](*buf)
	if nw == 1 {
		// No closure on the one-thread path: it would escape to the pool
		// and cost an allocation per (often microsecond-long) call.
		var next atomic.Int64
		smallWork(g, all, tsz, 0, units, per, chunks, rowPanels, rsa, csa, rsb, &next)
		return true
	}
	next := new(atomic.Int64)
	pool.RunShare(nw, func(tid, _ int) {
		smallWork(g, all, tsz, tid, units, per, chunks, rowPanels, rsa, csa, rsb, next)
	})
	return true
}

// smallWork is one thread's loop of smallF32 over the units it takes.
func smallWork(g *gemmProblem[float32, float32, float32], all []float32, tsz, tid, units, per, chunks, rowPanels, rsa, csa, rsb int, next *atomic.Int64) {
	const mr, nr = 6, 16
	a, b := &g.a, &g.b
	m, n, k := g.m, g.n, g.k
	mine := all[tid*tsz : (tid+1)*tsz]
	bpad, apad, edge := mine[:nr*k], mine[nr*k:nr*k+mr*k], mine[nr*k+mr*k:nr*k+mr*k+mr*nr]
	lastB, lastA := -1, -1
	kern := smallKern(g.ks)
	for {
		u := int(next.Add(1) - 1)
		if u >= units {
			return
		}
		bi, jp, rc := u/per, u%per/chunks, u%chunks
		j0 := jp * nr
		w := min(nr, n-j0)
		i0, i1 := rowPanels*rc/chunks*mr, min(rowPanels*(rc+1)/chunks*mr, m)
		abase := a.batchOff(bi) + a.row[0] + a.k[0]
		bbase := b.batchOff(bi) + b.row[0] + b.k[0]
		// B: in place, or the zero-padded copy of a partial panel.
		bp, ldb := &b.src[bbase+j0], rsb
		if w < nr {
			if lastB != bi {
				packPlainAt(g.ks, bpad, b.src, b.batchOff(bi), b.row[j0:], b.k, nr, k, 0)
				lastB = bi
			}
			bp, ldb = &bpad[0], nr
		}
		c := g.dst[bi*g.dstBatch:]
		for i := i0; i < i1; i += mr {
			h := min(mr, i1-i)
			ap, ra, ca := &a.src[abase+i*rsa], rsa, csa
			if h < mr {
				// Only the last row panel is partial: pack it once per batch.
				if lastA != bi {
					packPlainAt(g.ks, apad, a.src, a.batchOff(bi), a.row[i:i+h], a.k, mr, k, 0)
					lastA = bi
				}
				ap, ra, ca = &apad[0], 1, mr
			}
			if h == mr && w == nr {
				kern(k, ap, ra, ca, bp, ldb, &c[i*g.ldc+j0], g.ldc, 0)
				continue
			}
			kern(k, ap, ra, ca, bp, ldb, &edge[0], nr, 0)
			for r := 0; r < h; r++ {
				copy(c[(i+r)*g.ldc+j0:(i+r)*g.ldc+j0+w], edge[r*nr:r*nr+w])
			}
		}
		if g.fin != nil {
			g.fin(bi, i0, j0, i1-i0, w, c[i0*g.ldc+j0:], g.ldc)
		}
	}
}
