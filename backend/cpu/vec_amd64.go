//go:build amd64 && !purego

package cpu

// The AVX2+FMA loops of vec_amd64.s. Each takes n, a multiple of 8, and
// works on the first n elements; the wrappers below run them on the longest
// such prefix when the CPU level is avx2.

//go:noescape
func vecAddF32AVX2(dst, a, b *float32, n int)

//go:noescape
func vecSubF32AVX2(dst, a, b *float32, n int)

//go:noescape
func vecMulF32AVX2(dst, a, b *float32, n int)

//go:noescape
func vecDivF32AVX2(dst, a, b *float32, n int)

//go:noescape
func vecMaximumF32AVX2(dst, a, b *float32, n int)

//go:noescape
func vecFmaF32AVX2(dst, a, b, c *float32, n int)

//go:noescape
func vecAddScalarF32AVX2(dst, a *float32, n int, s float32)

//go:noescape
func vecMulScalarF32AVX2(dst, a *float32, n int, s float32)

//go:noescape
func vecReluF32AVX2(dst, a *float32, n int)

//go:noescape
func vecExpF32AVX2(dst, a *float32, n int)

//go:noescape
func vecLogF32AVX2(dst, a *float32, n int)

//go:noescape
func vecTanhF32AVX2(dst, a *float32, n int)

//go:noescape
func vecErfF32AVX2(dst, a *float32, n int)

//go:noescape
func vecSigmoidF32AVX2(dst, a *float32, n int)

//go:noescape
func vecSiluF32AVX2(dst, a *float32, n int)

//go:noescape
func vecGeluF32AVX2(dst, a *float32, n int)

//go:noescape
func vecGeluTanhF32AVX2(dst, a *float32, n int)

//go:noescape
func vecSumLanesF32AVX2(a *float32, n int, acc *[vecSumLanes]float32)

//go:noescape
func vecMaxF32AVX2(a *float32, n int) float32

//go:noescape
func vecRopeF32AVX2(dst, x, c, s *float32, h, n int)

// vecRopeAsm runs vecRopeF32AVX2 on the longest multiple-of-8 prefix of
// each half of one rotate-half row (w = 2h elements of dst, x, c and s)
// and returns its length, 0 without AVX2.
func vecRopeAsm(dst, x, c, s []float32, h int) int {
	n := h &^ 7
	if n == 0 || !vecAsm() {
		return 0
	}
	_, _, _, _ = dst[2*h-1], x[2*h-1], c[2*h-1], s[2*h-1]
	vecRopeF32AVX2(&dst[0], &x[0], &c[0], &s[0], h, n)
	return n
}

// vecAsm reports whether the assembly loops are in use.
func vecAsm() bool { return atLeast(LevelAVX2) }

// vecBinaryAsm runs binary kernel k on the longest multiple-of-8 prefix of
// dst (a and b at least as long) and returns its length, 0 without AVX2.
func vecBinaryAsm(k vecOp, dst, a, b []float32) int {
	n := len(dst) &^ 7
	if n == 0 || !vecAsm() {
		return 0
	}
	d, x, y := &dst[0], &a[0], &b[0]
	switch k {
	case vecOpAdd:
		vecAddF32AVX2(d, x, y, n)
	case vecOpSub:
		vecSubF32AVX2(d, x, y, n)
	case vecOpMul:
		vecMulF32AVX2(d, x, y, n)
	case vecOpDiv:
		vecDivF32AVX2(d, x, y, n)
	case vecOpMaximum:
		vecMaximumF32AVX2(d, x, y, n)
	default:
		return 0
	}
	return n
}

// vecFmaAsm is vecBinaryAsm for vecFmaF32.
func vecFmaAsm(dst, a, b, c []float32) int {
	n := len(dst) &^ 7
	if n == 0 || !vecAsm() {
		return 0
	}
	vecFmaF32AVX2(&dst[0], &a[0], &b[0], &c[0], n)
	return n
}

// vecScalarAsm is vecBinaryAsm for the kernels with a scalar operand
// (vecOpAdd, vecOpMul) and relu (s unused).
func vecScalarAsm(k vecOp, dst, a []float32, s float32) int {
	n := len(dst) &^ 7
	if n == 0 || !vecAsm() {
		return 0
	}
	switch k {
	case vecOpAdd:
		vecAddScalarF32AVX2(&dst[0], &a[0], n, s)
	case vecOpMul:
		vecMulScalarF32AVX2(&dst[0], &a[0], n, s)
	case vecOpRelu:
		vecReluF32AVX2(&dst[0], &a[0], n)
	default:
		return 0
	}
	return n
}

// vecUnaryAsm runs transcendental kernel k on all of dst (the last len%8
// elements through an 8-element buffer, so every element sees the same
// arithmetic) and reports whether it did, false without AVX2.
func vecUnaryAsm(k vecOp, dst, a []float32) bool {
	if !vecAsm() {
		return false
	}
	n := len(dst) &^ 7
	if n > 0 {
		vecUnaryAVX2(k, &dst[0], &a[0], n)
	}
	if r := len(dst) - n; r > 0 {
		var buf [8]float32
		copy(buf[:], a[n:len(dst)])
		vecUnaryAVX2(k, &buf[0], &buf[0], 8)
		copy(dst[n:], buf[:r])
	}
	return true
}

func vecUnaryAVX2(k vecOp, d, x *float32, n int) {
	switch k {
	case vecOpExp:
		vecExpF32AVX2(d, x, n)
	case vecOpLog:
		vecLogF32AVX2(d, x, n)
	case vecOpTanh:
		vecTanhF32AVX2(d, x, n)
	case vecOpErf:
		vecErfF32AVX2(d, x, n)
	case vecOpSigmoid:
		vecSigmoidF32AVX2(d, x, n)
	case vecOpSilu:
		vecSiluF32AVX2(d, x, n)
	case vecOpGelu:
		vecGeluF32AVX2(d, x, n)
	case vecOpGeluTanh:
		vecGeluTanhF32AVX2(d, x, n)
	}
}

// vecSumLanesAsm adds the longest multiple-of-32 prefix of a into acc's
// lanes (vecSumBlockF32's order) and returns its length.
func vecSumLanesAsm(a []float32, acc *[vecSumLanes]float32) int {
	n := len(a) &^ (vecSumLanes - 1)
	if n == 0 || !vecAsm() {
		return 0
	}
	vecSumLanesF32AVX2(&a[0], n, acc)
	return n
}

// vecMaxAsm returns the maximum of the longest multiple-of-8 prefix of a
// (NaN if it holds one) and its length.
func vecMaxAsm(a []float32) (float32, int) {
	n := len(a) &^ 7
	if n == 0 || !vecAsm() {
		return 0, 0
	}
	return vecMaxF32AVX2(&a[0], n), n
}

// expSubSumF32Z sets x[i] = exp(x[i] - m) for i < n and returns their sum
// (AVX-512; see vec_amd64.s).
//
//go:noescape
func expSubSumF32Z(x *float32, n int, m float32) float32

func init() {
	if haveAVX512() {
		expSubSumZ = expSubSumF32Z
	}
}
