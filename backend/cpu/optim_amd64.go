//go:build amd64 && !purego

package cpu

// adamF32AVX2 runs adamF32 on the first n elements (n a positive multiple
// of 8) with AVX2+FMA; k and flags are packed by adamF32Vec.
//
//go:noescape
func adamF32AVX2(p, grad, m, v, mx *float32, n int, k *[9]float32, flags int)

// sgdF32AVX2 runs sgdF32 on the first n elements (n a positive multiple of
// 8) with AVX2+FMA; k and flags are packed by sgdF32Vec.
//
//go:noescape
func sgdF32AVX2(p, grad, buf *float32, n int, k *[4]float32, flags int)

// optimAVX2 selects the assembly loops (tests turn it off to compare).
var optimAVX2 = haveAVX2()

// adamF32Vec runs the vector loop on the longest multiple-of-8 prefix and
// returns its length (0 without AVX2).
func adamF32Vec(p, g, m, v, mx []float32, s *adamScalars[float32]) int {
	n := len(p) &^ 7
	if !optimAVX2 || n == 0 {
		return 0
	}
	k := [9]float32{s.decay, s.wd, s.b1, s.omb1, s.b2, s.omb2, s.bc2s, s.eps, s.negss}
	flags := 0
	if s.decoupled {
		flags |= 1
	}
	if s.l2 {
		flags |= 2
	}
	var mxp *float32
	if mx != nil {
		flags |= 4
		mxp = &mx[0]
	}
	adamF32AVX2(&p[0], &g[:n][0], &m[:n][0], &v[:n][0], mxp, n, &k, flags)
	return n
}

// sgdF32Vec is adamF32Vec for sgdF32.
func sgdF32Vec(p, g, buf []float32, s *sgdScalars[float32]) int {
	n := len(p) &^ 7
	if !optimAVX2 || n == 0 {
		return 0
	}
	k := [4]float32{s.wd, s.mom, s.omd, s.neglr}
	flags := 0
	if s.l2 {
		flags |= 1
	}
	var bp *float32
	if s.momentum {
		flags |= 2
		bp = &buf[:n][0]
	}
	if s.nesterov {
		flags |= 4
	}
	if s.first {
		flags |= 8
	}
	sgdF32AVX2(&p[0], &g[:n][0], bp, n, &k, flags)
	return n
}
