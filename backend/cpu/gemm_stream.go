package cpu

import (
	"sync/atomic"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
)

// The streaming path for x·Wᵀ with few activation rows (a Linear layer at
// a small batch). With m ≤ gemmStreamMaxM rows of x, each element of the
// weight W [n, k] is used only m times, so packing W into panels — one
// more read and a write of the largest operand — costs about as much as
// the arithmetic (measured: the six-row pack took half the micro-kernel's
// time on a 64×1024·(4096×1024)ᵀ product). Here W is read in place by the
// strided micro-kernel, six rows at a time, once: x is transposed into
// 16-column panels (small: m·k), and for each six-row panel of W the
// kernel runs against every x panel while that W panel is in L1/L2
// (k blocked by gemmStreamKB so the x panels' blocks stay in L2). Each
// 6×16 tile of Cᵀ is transposed into C. Every element is one f32 FMA
// chain over k in order from zero, the products' factors swapped — the
// bits of dot_general, as the other paths.

const (
	// gemmStreamMaxM is the largest m the streaming path takes.
	gemmStreamMaxM = 96
	// gemmStreamKB is its k block (16·96·1024·4 bytes of x panels = 6 MiB
	// at the largest m; 256 KiB per 16 rows).
	gemmStreamKB = 1024
	// gemmStreamChunk is the most six-row W panels a thread takes at a
	// time (and the epilogue's widest tile: 48 columns of C).
	gemmStreamChunk = 8
)

// gemmStreamOff disables the path (benchmarks compare with it).
var gemmStreamOff bool

// gemmStreamXWt sets out[i*ldo+j] = sum over p of x[i*ldx+p]*w[j*ldw+p]
// for i < m, j < n, calling fin (if not nil) on every finished block of
// C — rows i0..i0+mc, columns j0..j0+nc — possibly from several
// goroutines for disjoint blocks. col, when not nil, is a column
// epilogue: it is called once on every group of h (at most 6) finished
// columns j0..j0+h of C before they are stored, with column j0+r's m
// values (rows 0..m) at t[r*ldt:r*ldt+m], contiguous, which it may
// rewrite in place; it too may run on several goroutines at once for
// disjoint columns. It reports false, having done nothing, when the path
// does not apply.
func gemmStreamXWt(ks *kset, m, n, k int, x []float32, ldx int, w []float32, ldw int, out []float32, ldo int, fin func(i0, j0, mc, nc int), col func(j0, h int, t []float32, ldt int)) bool {
	if !gemmStreamApplies(ks, m, n, k) {
		return false
	}
	const mr, nr = 6, 16
	nq := ceilDiv(m, nr)
	wq := nq * nr // width of the tile row (all x panels)
	xsz := wq * k
	tsz := roundUp(mr*min(k, gemmStreamKB)+mr*wq, 16)
	nw := pool.Workers(m * n * k)
	buf := getScratch((xsz + nw*tsz) * 4)
	defer putScratch(buf)
	all := as[float32](*buf)
	xt := all[:xsz:xsz]
	npan := ceilDiv(n, mr)
	// Chunks small enough to balance the threads (8 per thread at least),
	// at most gemmStreamChunk panels.
	cp := max(1, min(gemmStreamChunk, npan/(8*nw)))
	nchunk := ceilDiv(npan, cp)
	// x is small (m·k): packed up front by the caller, so that the
	// threads need no barrier and a late one simply takes fewer chunks.
	for q := 0; q < nq; q++ {
		gemmPackT16(ks, xt[q*nr*k:(q+1)*nr*k], x[q*nr*ldx:], ldx, min(nr, m-q*nr), k)
	}
	var next atomic.Int64
	kern := smallKern(ks)
	job := func(tid, nw int) {
		mine := all[xsz+tid*tsz : xsz+(tid+1)*tsz]
		apad := mine[:mr*min(k, gemmStreamKB)]
		tile := mine[len(apad) : len(apad)+mr*wq]
		for {
			ch := int(next.Add(1) - 1)
			if ch >= nchunk {
				return
			}
			p0, p1 := ch*cp, min((ch+1)*cp, npan)
			for pi := p0; pi < p1; pi++ {
				j0 := pi * mr
				h := min(mr, n-j0)
				for kb := 0; kb < k; kb += gemmStreamKB {
					kc := min(gemmStreamKB, k-kb)
					a, rsa := &w[j0*ldw+kb], ldw
					if h < mr {
						for r := 0; r < mr; r++ {
							d := apad[r*kc : (r+1)*kc]
							if r < h {
								copy(d, w[(j0+r)*ldw+kb:(j0+r)*ldw+kb+kc])
							} else {
								clear(d)
							}
						}
						a, rsa = &apad[0], kc
					}
					load := 0
					if kb > 0 {
						load = 1
					}
					for q := 0; q < nq; q++ {
						kern(kc, a, rsa, 1, &xt[q*nr*k+kb*nr], nr, &tile[q*nr], wq, load)
					}
				}
				// Tile row r is column j0+r of C.
				if col != nil {
					col(j0, h, tile, wq)
				}
				gemmStoreT6(ks, out[j0:], ldo, tile, wq, h, m)
			}
			if fin != nil {
				c0 := p0 * mr
				fin(0, c0, m, min(p1*mr, n)-c0)
			}
		}
	}
	pool.RunShare(nw, job)
	return true
}

// gemmStreamApplies reports whether gemmStreamXWt takes an m×n product
// over k.
func gemmStreamApplies(ks *kset, m, n, k int) bool {
	return !gemmStreamOff && smallKernF32 != nil && ks.atLeast(LevelAVX2) && m >= 1 && m <= gemmStreamMaxM && n >= 6 && k >= 1
}
