package cpu

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
)

// The BLIS-style blocked GEMM driver around the register-tiled assembly
// micro-kernels (internal/gemm: tile_amd64.s, tile512_amd64.s). For one batch element:
//
//	for jc in steps of NC over n:                 (B block in L3)
//	  for pc in steps of KC over k, in order:
//	    pack B[pc:pc+kc, jc:jc+nc] into NR-wide panels, once, shared by
//	      all threads (each takes chunks of panels while some are left),
//	      then wait until every chunk is packed
//	    each thread repeatedly takes a unit (an MC-row block of C, or a
//	      part of its columns when there are too few row blocks) and
//	      packs that A block (MC x KC, in its own L2) into MR-high panels,
//	      then for each NR panel of B (KC x NR, in L1) and each MR panel
//	      of A: the micro-kernel updates one MR x NR tile of C
//
// The packed B is double-buffered. Every (kc, nc) block t has its own
// counters of packing chunks taken and packed and of units taken and
// finished (gemmBlock), and the threads never wait for one another to
// arrive: a thread computes with block t once all of t's chunks are
// packed, starts unit u of block t past the first k block once unit u of
// block t-1 (whose tiles of C it accumulates onto) is finished, and packs
// a chunk of block t into the buffer of block t-2 only once all of t-2's
// units are finished. Units are taken in order, so unit u of t-1 is
// almost always finished by then: the threads do not meet at the end of
// every k block (which cost 10-15% of a 2048³ product on two threads
// whose speeds the OS varies).
// Work is taken dynamically, so a thread the OS runs late (or a pool
// helper woken late) simply takes less of it: with a barrier per block,
// the MNIST step's weight-gradient product (512x784x64) had its caller
// wait 340-420 µs a call for the helper on a loaded machine, the whole of
// its own share of the work.
//
// The micro-kernel accumulates straight into C (the output itself when
// it has the accumulator's type, else a scratch block), zeroing the tile
// on the first k block instead of loading it, so every element of C is a
// single fused multiply-add chain in k order: results are bit-identical
// whatever the blocking, the edge handling or the number of threads.
// Edge tiles run the full-size kernel on a small copy (the packed panels
// are zero-padded). When a tile of C is final (after the last k block)
// the per-tile hook is called on it while it is still in cache: that is
// where a fused epilogue (bias, activation, residual) or a conversion to
// the output dtype runs.
//
// Batched problems with at least as many batch elements as threads run
// the batch elements in parallel instead, each thread on its own B block.

// gemmAlign is the alignment, in bytes, of every packed buffer: a cache
// line, so that no 32-byte load of a packed panel splits one.
const gemmAlign = 64

// gemmShared is the state the threads of one blocked GEMM share.
type gemmShared[T gemmNum] struct {
	bbuf [2][]T
	// blocks holds each (kc, nc) block's progress, in the order the
	// threads walk them.
	blocks []gemmBlock
	// done flags each unit of each block when it is finished: block it's
	// unit u is done[it*unitStride+u]. Unit u of a block past the first k
	// block accumulates onto the tiles of unit u of the block before, and
	// waits for that unit alone.
	done       []atomic.Int64
	unitStride int
}

// gemmBlock is the progress of one (kc, nc) block of a blocked GEMM.
type gemmBlock struct {
	packTaken, packDone atomic.Int64 // B packing chunks taken, packed
	unitTaken, unitDone atomic.Int64 // units of C taken, finished (count)
	// units is the block's unit count (stored by every thread that
	// reaches the block; they all compute the same).
	units atomic.Int64
}

// gemmAwait returns once v holds at least want: it spins briefly (the
// work waited for is in progress on another thread), then yields, then
// sleeps, so that a loaded machine does not lose a core to the wait.
func gemmAwait(v *atomic.Int64, want int64) {
	for i := 0; v.Load() < want; i++ {
		switch {
		case i < 256:
		case i < 1024:
			runtime.Gosched()
		default:
			time.Sleep(5 * time.Microsecond)
		}
	}
}

// gemmPackChunk is the number of B panels packed per unit of work.
const gemmPackChunk = 8

// gemmCursor is a thread's position in the sequence of (kc, nc) blocks.
type gemmCursor struct{ it int }

// gemmThread is one thread's private buffers.
type gemmThread[T gemmNum] struct {
	apack []T
	edge  []T
	cbuf  []T // store mode: the m x nc scratch block of C (shared or private)
}

// carve returns n elements of T from buf at *off, aligned to gemmAlign,
// and advances *off.
func carve[T gemmNum](buf []T, off *int, n int) []T {
	var z T
	sz := int(unsafe.Sizeof(z))
	base := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	addr := base + uintptr(*off*sz)
	if r := addr % gemmAlign; r != 0 {
		*off += int(gemmAlign-r) / sz
	}
	s := buf[*off : *off+n : *off+n]
	*off += n
	return s
}

// runTiled is run for a problem with a register-tiled kernel.
func (g *gemmProblem[SA, SB, T]) runTiled() {
	if g.gemvTiled() || g.smallTiled() {
		return
	}
	if g.n == 1 && g.m > 1 {
		// A matrix-vector product the gemv kernels do not cover: swap the
		// operands so the vector is the (padded) MR side; C^T = B^T A^T is
		// the same FMA chains.
		s := gemmProblem[SB, SA, T]{nb: g.nb, m: g.n, n: g.m, k: g.k, a: g.b, b: g.a, tile: g.tile, ks: g.ks}
		if g.dst != nil {
			s.store = func(b, i0, j0, mc, nc int, c []T) {
				for j := 0; j < nc; j++ {
					g.dst[b*g.dstBatch+(j0+j)*g.ldc] = c[j]
				}
				if g.fin != nil {
					g.fin(b, j0, 0, nc, 1, g.dst[b*g.dstBatch+j0*g.ldc:], g.ldc)
				}
			}
		} else {
			s.store = func(b, i0, j0, mc, nc int, c []T) { g.store(b, j0, i0, nc, mc, c) }
		}
		s.runTiled()
		return
	}
	t := g.tile
	cost := g.nb * g.m * g.n * max(g.k, 1)
	nw := pool.Workers(cost)
	batchPar := nw > 1 && g.nb >= nw && (g.nb%nw == 0 || g.nb >= 4*nw || g.m*g.n*max(g.k, 1) < 1<<22)
	// kcap is the packed steps a panel holds: k steps, or pairs of them.
	kcap := min(max(g.k, 1), t.kc)
	if t.amx {
		kcap = roundUp(kcap, 2*amxChunk)
	}
	if t.pairs {
		kcap = (kcap + 1) / 2
	}
	ncap := min(g.n, t.nc)
	mcap := min(roundUp(g.m, t.mr), t.mc)
	nbufB := 2
	if batchPar {
		nbufB = 1
	}
	var z T
	sz := int(unsafe.Sizeof(z))
	bsz := roundUp(ncap, t.nr) * kcap
	csz := 0
	if g.dst == nil {
		csz = g.m * ncap
	}
	nsets := 1 // sets of shared buffers
	if batchPar {
		nsets = nw
	}
	total := nsets*(nbufB*bsz+csz) + nw*(mcap*kcap+t.mr*t.nr) + (2*nsets+2*nw+2)*gemmAlign/sz
	buf := getScratch(total * sz)
	defer putScratch(buf)
	all := as[T](*buf)
	off := 0
	shared := make([]gemmShared[T], nsets)
	// Blocks walked per set: every batch element's (nc, kc) blocks (a set
	// of the batch-parallel mode walks only some batch elements).
	nblk := g.nb * ceilDiv(g.n, t.nc) * ceilDiv(max(g.k, 1), t.kc)
	states := make([]gemmBlock, nsets*nblk)
	bw := nw // the thread count blocked sees
	if batchPar {
		bw = 1
	}
	_, nIc := g.rowBlocks(bw)
	stride := nIc * unitCols(bw, nIc, ceilDiv(ncap, t.nr))
	flags := make([]atomic.Int64, nsets*nblk*stride)
	threads := make([]gemmThread[T], nw)
	for s := range shared {
		for i := 0; i < nbufB; i++ {
			shared[s].bbuf[i] = carve(all, &off, bsz)
		}
		if nbufB == 1 {
			// One thread per B block: it never packs the next block while
			// another thread still reads the last, so one buffer serves both
			// slots.
			shared[s].bbuf[1] = shared[s].bbuf[0]
		}
		shared[s].blocks = states[s*nblk : (s+1)*nblk]
		shared[s].done = flags[s*nblk*stride : (s+1)*nblk*stride]
		shared[s].unitStride = stride
	}
	for i := range threads {
		threads[i].apack = carve(all, &off, mcap*kcap)
		threads[i].edge = carve(all, &off, t.mr*t.nr)
	}
	if csz > 0 {
		for s := 0; s < nsets; s++ {
			c := carve(all, &off, csz)
			for i := range threads {
				if batchPar && i != s {
					continue
				}
				threads[i].cbuf = c
			}
		}
	}
	if batchPar {
		var next atomic.Int64
		pool.RunShare(nw, func(tid, nw int) {
			sh := &shared[tid]
			var cur gemmCursor
			for {
				b := int(next.Add(1) - 1)
				if b >= g.nb {
					return
				}
				g.blocked(0, 1, b, sh, &threads[tid], &cur)
			}
		})
		return
	}
	sh := &shared[0]
	pool.RunShare(nw, func(tid, nw int) {
		var cur gemmCursor
		for b := 0; b < g.nb; b++ {
			g.blocked(tid, nw, b, sh, &threads[tid], &cur)
		}
	})
}

// blocked runs the blocked GEMM of batch element b on thread tid of nw,
// which share sh. cur follows the (kc, nc) blocks across calls, selecting
// the B buffer and the work counters.
func (g *gemmProblem[SA, SB, T]) blocked(tid, nw, b int, sh *gemmShared[T], th *gemmThread[T], cur *gemmCursor) {
	t := g.tile
	mr, nr := t.mr, t.nr
	kern := t.kern
	mcb, nIc := g.rowBlocks(nw)
	for jc := 0; jc < g.n; jc += t.nc {
		nc := min(t.nc, g.n-jc)
		npan := ceilDiv(nc, nr)
		nJr := unitCols(nw, nIc, npan)
		units := nIc * nJr
		var c []T
		ldc := 0
		if g.dst != nil {
			c, ldc = g.dst[b*g.dstBatch+jc:], g.ldc
		} else {
			c, ldc = th.cbuf[:g.m*nc], nc
		}
		k := max(g.k, 1)
		for pc := 0; pc < k; pc += t.kc {
			kc := min(t.kc, g.k-pc)
			if kc < 0 {
				kc = 0
			}
			// ps is the packed steps per panel: k steps, or pairs of them.
			ps := kc
			if t.pairs {
				ps = (kc + 1) / 2
				if t.amx {
					ps = roundUp(ps, amxChunk)
				}
			}
			load := 0
			if pc > 0 {
				load = 1
			}
			last := pc+t.kc >= g.k
			slot := cur.it & 1
			bp := sh.bbuf[slot]
			st := &sh.blocks[cur.it]
			st.units.Store(int64(units))
			// Pack B in chunks of panels taken dynamically, so a thread the
			// OS has descheduled does not hold the others up.
			nchunk := ceilDiv(npan, gemmPackChunk)
			for {
				v := int(st.packTaken.Add(1) - 1)
				if v >= nchunk {
					break
				}
				if cur.it >= 2 {
					// The buffer is block it-2's: wait until it is used.
					prev := &sh.blocks[cur.it-2]
					gemmAwait(&prev.unitDone, prev.units.Load())
				}
				plo := v * gemmPackChunk
				phi := min(plo+gemmPackChunk, npan)
				if t.amx {
					packPairsPadded(g.ks, bp[plo*nr*ps:], &g.b, b, jc+plo*nr, min(phi*nr, nc)-plo*nr, pc, kc, nr, ps, pairPadB)
				} else if t.pairs {
					packPairs(g.ks, bp[plo*nr*ps:], &g.b, b, jc+plo*nr, min(phi*nr, nc)-plo*nr, pc, kc, nr, pairPadB)
				} else if !packSideFast(g.ks, bp[plo*nr*kc:], &g.b, b, jc+plo*nr, min(phi*nr, nc)-plo*nr, pc, kc, nr) {
					packSide(g.ks, bp[plo*nr*kc:], &g.b, b, jc+plo*nr, min(phi*nr, nc)-plo*nr, pc, kc, nr)
				}
				st.packDone.Add(1)
			}
			gemmAwait(&st.packDone, int64(nchunk))
			done := sh.done[cur.it*sh.unitStride:][:units]
			var prevDone []atomic.Int64
			if pc > 0 {
				prevDone = sh.done[(cur.it-1)*sh.unitStride:][:units]
			} else if g.dst == nil && cur.it > 0 {
				// A new column block (or batch element) reuses the scratch
				// block of C, possibly with another row length: every unit
				// of the block before must have stored its tiles.
				prev := &sh.blocks[cur.it-1]
				gemmAwait(&prev.unitDone, prev.units.Load())
			}
			packed := -1
			for {
				u := int(st.unitTaken.Add(1) - 1)
				if u >= units {
					break
				}
				if prevDone != nil {
					// The unit accumulates onto the tiles of C that unit u of
					// block it-1 wrote.
					gemmAwait(&prevDone[u], 1)
				}
				ib, jb := u/nJr, u%nJr
				ic := ib * mcb
				mc := min(mcb, g.m-ic)
				if ib != packed {
					if t.amx {
						packPairRows(g.ks, th.apack, &g.a, b, ic, mc, pc, kc, mr, ps, pairPadA)
					} else if t.pairs {
						packPairs(g.ks, th.apack, &g.a, b, ic, mc, pc, kc, mr, pairPadA)
					} else if !packSideFast(g.ks, th.apack, &g.a, b, ic, mc, pc, kc, mr) {
						packSide(g.ks, th.apack, &g.a, b, ic, mc, pc, kc, mr)
					}
					packed = ib
				}
				jlo, jhi := npan*jb/nJr*nr, min(npan*(jb+1)/nJr*nr, nc)
				for jr := jlo; jr < jhi; jr += nr {
					w := min(nr, nc-jr)
					bpp := &bp[jr*ps]
					for ir := 0; ir < mc; ir += mr {
						h := min(mr, mc-ir)
						ap := &th.apack[ir*ps]
						co := (ic+ir)*ldc + jr
						pf := &c[co]
						if ir+mr < mc {
							pf = &c[co+mr*ldc]
						} else if jr+nr < jhi {
							pf = &c[ic*ldc+jr+nr]
						}
						if h == mr && w == nr {
							kern(kc, ap, bpp, &c[co], ldc, pf, load)
							continue
						}
						e := th.edge
						if load != 0 {
							for r := 0; r < h; r++ {
								copy(e[r*nr:r*nr+w], c[co+r*ldc:co+r*ldc+w])
							}
						}
						kern(kc, ap, bpp, &e[0], nr, pf, load)
						for r := 0; r < h; r++ {
							copy(c[co+r*ldc:co+r*ldc+w], e[r*nr:r*nr+w])
						}
					}
				}
				if last {
					g.finish(b, ic, jc, jlo, mc, jhi-jlo, c[ic*ldc+jlo:], ldc, nJr == 1)
				}
				done[u].Store(1)
				st.unitDone.Add(1)
			}
			cur.it++
		}
	}
}

// rowBlocks returns the height of the row blocks of C that blocked
// splits a batch element into on nw threads (MC rows, fewer when that
// leaves too few blocks for the threads) and their count.
func (g *gemmProblem[SA, SB, T]) rowBlocks(nw int) (mcb, nIc int) {
	t := g.tile
	mcb = min(t.mc, max(t.mr, roundUp(ceilDiv(g.m, 2*nw), t.mr)))
	if nw == 1 {
		mcb = min(t.mc, roundUp(g.m, t.mr))
	}
	return mcb, ceilDiv(g.m, mcb)
}

// unitCols returns how many parts the columns of each of nIc row blocks
// are split into on nw threads, for a block of npan panels: one, unless
// there are too few row blocks for the threads.
func unitCols(nw, nIc, npan int) int {
	if nw > 1 && nIc < 2*nw {
		return min(npan, ceilDiv(2*nw, nIc))
	}
	return 1
}

// finish hands a final tile of C (rows i0.., columns jc+jlo..) to the
// per-tile hook. whole says the tile spans the block's columns, so that
// in store mode (ld == the block's width) it is contiguous.
func (g *gemmProblem[SA, SB, T]) finish(b, i0, jc, jlo, mc, w int, c []T, ldc int, whole bool) {
	if g.dst != nil {
		if g.fin != nil {
			g.fin(b, i0, jc+jlo, mc, w, c, ldc)
		}
		return
	}
	if whole {
		g.store(b, i0, jc, mc, w, c[:mc*ldc])
		return
	}
	for r := 0; r < mc; r++ {
		g.store(b, i0+r, jc+jlo, 1, w, c[r*ldc:r*ldc+w])
	}
}
