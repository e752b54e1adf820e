package cpu

import "sync"

// gemmF32 is the plain f32 GEMM entry point for code inside this package
// that has raw slices rather than a device.Launch (the compiler's fused
// matmul epilogues): it sets
//
//	C[i, j] = sum over p of opA[i, p] * opB[p, j]   (C is overwritten)
//
// for i < m, j < n, p < k, where opA[i, p] is a[i*lda+p], or a[p*lda+i]
// when transA, opB[p, j] is b[p*ldb+j], or b[j*ldb+p] when transB, and
// C[i, j] is c[i*ldc+j]. The arithmetic is the dot_general kernel's at
// precision highest: each element one f32 FMA chain over p in order (the
// pure-Go level emulates it), so results do not depend on the blocking or
// the threads.
//
// epi, when not nil, is the epilogue hook: it is called exactly once on
// every final tile of C — rows i0..i0+mc, columns j0..j0+nc, c starting at
// element (i0, j0) with row stride ldc — as soon as that tile is complete
// and while it is still in cache, possibly from several goroutines at once
// for disjoint tiles. A fused bias, activation or residual is applied
// there in place. The slices must hold every element the strides reach;
// m, n or k of 0 is allowed (k == 0 gives zeros, and epi still runs).
func gemmF32(ks *kset, m, n, k int, a []float32, lda int, transA bool, b []float32, ldb int, transB bool, c []float32, ldc int, epi func(i0, j0, mc, nc int, c []float32, ldc int)) {
	if m <= 0 || n <= 0 {
		return
	}
	// Offsets of opA's rows and k steps, and of opB's columns and k steps.
	ar, ak := seqShared(m, lda), seqShared(k, 1)
	if transA {
		ar, ak = seqShared(m, 1), seqShared(k, lda)
	}
	br, bk := seqShared(n, 1), seqShared(k, ldb)
	if transB {
		br, bk = seqShared(n, ldb), seqShared(k, 1)
	}
	var fin func(b, i0, j0, mc, nc int, c []float32, ldc int)
	if epi != nil {
		fin = func(_, i0, j0, mc, nc int, c []float32, ldc int) { epi(i0, j0, mc, nc, c, ldc) }
	}
	if t := tileF32(ks); t != nil {
		id := convIdF32
		g := gemmProblem[float32, float32, float32]{nb: 1, m: m, n: n, k: k,
			a:    gemmSide[float32, float32]{src: a, row: ar, k: ak, conv: id, plain: true},
			b:    gemmSide[float32, float32]{src: b, row: br, k: bk, conv: id, plain: true},
			kern: kern4x4[float32], dot: dotPlain[float32], tile: t,
			dst: c, ldc: ldc, fin: fin, ks: ks,
		}
		g.run()
		return
	}
	w := convWidenF32
	g := gemmProblem[float32, float32, float64]{nb: 1, m: m, n: n, k: k,
		a:    gemmSide[float32, float64]{src: a, row: ar, k: ak, conv: w, plain: true},
		b:    gemmSide[float32, float64]{src: b, row: br, k: bk, conv: w, plain: true},
		kern: kern4x4F32, dot: dotF32, ks: ks,
		store: func(_, i0, j0, mc, nc int, t []float64) {
			for i := 0; i < mc; i++ {
				row := c[(i0+i)*ldc+j0 : (i0+i)*ldc+j0+nc]
				for j := range row {
					row[j] = float32(t[i*nc+j])
				}
			}
			if epi != nil {
				epi(i0, j0, mc, nc, c[i0*ldc+j0:], ldc)
			}
		},
	}
	g.run()
}

// The converter lists of the entry point's sides (shared, read-only, so
// that a call does not allocate them).
var (
	convIdF32    = []func(float32) float32{idF32}
	convWidenF32 = []func(float32) float64{widen32}
)

// seqShared returns seq(n, step), shared and cached: the plain entry
// point's offset tables are the same from call to call, so steady-state
// calls do not allocate them. The tables are read-only.
func seqShared(n, step int) []int {
	key := [2]int{n, step}
	seqCache.Lock()
	defer seqCache.Unlock()
	if s, ok := seqCache.m[key]; ok {
		return s
	}
	if seqCache.m == nil || len(seqCache.m) >= 256 {
		seqCache.m = map[[2]int][]int{}
	}
	s := make([]int, n)
	for i := range s {
		s[i] = i * step
	}
	seqCache.m[key] = s
	return s
}

var seqCache struct {
	sync.Mutex
	m map[[2]int][]int
}
