package cpu

import (
	"os"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// The register-tiled GEMM path (BLIS-style loop nest around an assembly
// micro-kernel), used when the CPU level allows it; the 4x4 pure-Go kernels
// in linalg.go are the portable fallback.
//
// Loop nest per work unit (batch, NC columns, a block of rows):
//
//	for each KC slice of k (in order):     pack B (KC x NC) into NR-wide panels
//	    for each MC block of the unit's rows: pack A (MC x KC) into MR-high panels
//	        for each NR panel, each MR panel: micro-kernel on an MR x NR tile of C
//
// The tile of C lives in a per-unit buffer that the kernel loads, updates
// with one FMA per k step and stores, so every output element is a single
// FMA chain in k order whatever the blocking, the edge handling or the
// number of threads: results are deterministic and independent of them.

// CPU kernel levels (GOTPU_CPU_LEVEL).
const (
	// LevelGeneric is the portable pure-Go GEMM.
	LevelGeneric = "generic"
	// LevelAVX2 is the AVX2+FMA assembly GEMM (amd64).
	LevelAVX2 = "avx2"
)

// cpuLevel is the active level: GOTPU_CPU_LEVEL=generic forces the pure-Go
// kernels; otherwise (avx2, empty or unknown) the best level the CPU
// supports is used, so asking for avx2 on a CPU without it falls back to
// generic instead of faulting.
var cpuLevel = pickLevel(os.Getenv("GOTPU_CPU_LEVEL"))

func pickLevel(env string) string {
	if env != LevelGeneric && haveAVX2() {
		return LevelAVX2
	}
	return LevelGeneric
}

// CPULevel reports the GEMM kernel level in use ("generic" or "avx2").
func CPULevel() string { return cpuLevel }

// tileF32 and tileF64 return the assembly micro-kernels for the active
// level, or nil for the pure-Go path.
func tileF32() *gemmTile[float32] {
	if cpuLevel == LevelAVX2 {
		return asmTileF32
	}
	return nil
}

func tileF64() *gemmTile[float64] {
	if cpuLevel == LevelAVX2 {
		return asmTileF64
	}
	return nil
}

// gemmTile is a register-tiled micro-kernel with its cache blocking: kern
// accumulates a packed mr x kc A panel times a packed kc x nr B panel into
// the mr x nr tile at c (row stride ldc elements), prefetching the tile at
// pf, the one it will be called on next. kc, mc and nc are the
// blocking of k, of the rows packed at once (A block, sized for L2) and of
// the columns per unit (B block).
type gemmTile[T gemmNum] struct {
	mr, nr, kc, mc, nc int
	kern               func(kc int, a, b, c *T, ldc int, pf *T)
}

// gemmUnitRows caps the rows of one work unit, bounding its C buffer.
const gemmUnitRows = 512

// runTiled is run for a problem with a tile kernel.
func (g *gemmProblem[SA, SB, T]) runTiled() {
	if g.n == 1 && g.m > 1 {
		// A matrix-vector product: swap the operands so the vector is the
		// (padded) MR side; C^T = B^T A^T is the same FMA chains.
		s := gemmProblem[SB, SA, T]{nb: g.nb, m: g.n, n: g.m, k: g.k, a: g.b, b: g.a, tile: g.tile,
			store: func(b, i0, j0, mc, nc int, c []T) { g.store(b, j0, i0, nc, mc, c) }}
		s.runTiled()
		return
	}
	t := g.tile
	mr, nr := t.mr, t.nr
	workers := runtime.GOMAXPROCS(0)
	nc0 := min(g.n, t.nc)
	nJ := ceilDiv(g.n, nc0)
	rows := min(roundUp(g.m, mr), gemmUnitRows)
	nI := ceilDiv(g.m, rows)
	cost := g.nb * g.m * g.n * max(g.k, 1)
	if cost >= ParallelThreshold && g.nb*nJ*nI < workers {
		// Too few units to keep every worker busy: split the rows.
		nI = ceilDiv(workers, g.nb*nJ)
		rows = roundUp(ceilDiv(g.m, nI), mr)
		nI = ceilDiv(g.m, rows)
	}
	units := g.nb * nJ * nI
	kcap := min(max(g.k, 1), t.kc)
	mcap := min(rows, t.mc)
	na, nbp, ncb := roundUp(mcap, mr)*kcap, roundUp(nc0, nr)*kcap, rows*nc0
	var z T
	sz := int(unsafe.Sizeof(z))
	nw := min(workers, units)
	var next atomic.Int64
	parallelFor(nw, cost, func(lo, hi int) {
		buf := getScratch((na + nbp + ncb + mr*nr) * sz)
		defer putScratch(buf)
		all := as[T](*buf)
		apack := all[:na:na]
		bpack := all[na : na+nbp : na+nbp]
		cbuf := all[na+nbp : na+nbp+ncb : na+nbp+ncb]
		edge := all[na+nbp+ncb : na+nbp+ncb+mr*nr]
		for {
			u := int(next.Add(1) - 1)
			if u >= units {
				return
			}
			b := u / (nJ * nI)
			j0 := (u / nI % nJ) * nc0
			i0 := (u % nI) * rows
			mu, nc := min(rows, g.m-i0), min(nc0, g.n-j0)
			c := cbuf[:mu*nc]
			clear(c)
			for p0 := 0; p0 < g.k; p0 += t.kc {
				kc := min(t.kc, g.k-p0)
				packSide(bpack, &g.b, b, j0, nc, p0, kc, nr)
				for ic := 0; ic < mu; ic += t.mc {
					mc := min(t.mc, mu-ic)
					packSide(apack, &g.a, b, i0+ic, mc, p0, kc, mr)
					for jr := 0; jr < nc; jr += nr {
						bp := &bpack[jr*kc]
						w := min(nr, nc-jr)
						for ir := 0; ir < mc; ir += mr {
							ap := &apack[ir*kc]
							h := min(mr, mc-ir)
							co := (ic+ir)*nc + jr
							// Prefetch the next tile down, or the top of the next strip.
							pf := &c[co]
							if ir+mr < mc {
								pf = &c[co+mr*nc]
							} else if jr+nr < nc {
								pf = &c[ic*nc+jr+nr]
							}
							if h == mr && w == nr {
								t.kern(kc, ap, bp, &c[co], nc, pf)
								continue
							}
							// Edge tile: run the kernel on a full-size copy
							// (the packed panels are zero-padded).
							for r := 0; r < h; r++ {
								copy(edge[r*nr:r*nr+w], c[co+r*nc:co+r*nc+w])
							}
							t.kern(kc, ap, bp, &edge[0], nr, pf)
							for r := 0; r < h; r++ {
								copy(c[co+r*nc:co+r*nc+w], edge[r*nr:r*nr+w])
							}
						}
					}
				}
			}
			g.store(b, i0, j0, mu, nc, c)
		}
	})
}

func roundUp(a, b int) int { return ceilDiv(a, b) * b }
