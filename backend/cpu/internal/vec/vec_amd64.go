//go:build amd64 && !purego

package vec

import (
	"math"

	"github.com/gotpu/gotpu/internal/cpulevel"
)

// The AVX2+FMA loops of vec_amd64.s. Each takes n, a multiple of 8, and
// works on the first n elements; the avx2 table runs them on the longest
// such prefix and the Go loops on the rest, or (the transcendentals) the
// last len%8 elements through an 8-element buffer, so that every element
// sees the same arithmetic.

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
func vecSumLanesF32AVX2(a *float32, n int, acc *[SumLanes]float32)

//go:noescape
func vecMaxF32AVX2(a *float32, n int) float32

//go:noescape
func vecRopeF32AVX2(dst, x, c, s *float32, h, n int)

// expSubSumF32Y is ExpSubSum's AVX2 pass over the first n (a multiple of
// 32) values: x[i] = exp(x[i] + negm), acc[i%32] += x[i]; it returns
// FoldLanes(acc) (see vec_amd64.s).
//
//go:noescape
func expSubSumF32Y(x *float32, n int, negm float32, acc *[SumLanes]float32) float32

// expSubSumF32Z sets x[i] = exp(x[i] - m) for i < n and returns their sum
// (AVX-512; see vec_amd64.s).
//
//go:noescape
func expSubSumF32Z(x *float32, n int, m float32) float32

func init() {
	if cpulevel.Has(cpulevel.AVX2) {
		tables = append(tables, &Kernels{Level: cpulevel.AVX2, Asm: true})
	}
	if cpulevel.Has(cpulevel.AVX512) {
		tables = append(tables, &Kernels{Level: cpulevel.AVX512, Asm: true, z: true})
	}
}

// binaryAsm runs binary kernel o on the longest multiple-of-8 prefix of
// dst (a and b at least as long) and returns its length, 0 without
// assembly.
func (k *Kernels) binaryAsm(o op, dst, a, b []float32) int {
	n := len(dst) &^ 7
	if n == 0 || !k.Asm {
		return 0
	}
	d, x, y := &dst[0], &a[0], &b[0]
	switch o {
	case opAdd:
		vecAddF32AVX2(d, x, y, n)
	case opSub:
		vecSubF32AVX2(d, x, y, n)
	case opMul:
		vecMulF32AVX2(d, x, y, n)
	case opDiv:
		vecDivF32AVX2(d, x, y, n)
	case opMaximum:
		vecMaximumF32AVX2(d, x, y, n)
	default:
		return 0
	}
	return n
}

// fmaAsm is binaryAsm for Fma.
func (k *Kernels) fmaAsm(dst, a, b, c []float32) int {
	n := len(dst) &^ 7
	if n == 0 || !k.Asm {
		return 0
	}
	vecFmaF32AVX2(&dst[0], &a[0], &b[0], &c[0], n)
	return n
}

// scalarAsm is binaryAsm for the kernels with a scalar operand (opAdd,
// opMul) and relu (s unused).
func (k *Kernels) scalarAsm(o op, dst, a []float32, s float32) int {
	n := len(dst) &^ 7
	if n == 0 || !k.Asm {
		return 0
	}
	switch o {
	case opAdd:
		vecAddScalarF32AVX2(&dst[0], &a[0], n, s)
	case opMul:
		vecMulScalarF32AVX2(&dst[0], &a[0], n, s)
	case opRelu:
		vecReluF32AVX2(&dst[0], &a[0], n)
	default:
		return 0
	}
	return n
}

// unaryAsm runs transcendental kernel o on all of dst (the last len%8
// elements through an 8-element buffer, so every element sees the same
// arithmetic) and reports whether it did, false without assembly.
func (k *Kernels) unaryAsm(o op, dst, a []float32) bool {
	if !k.Asm {
		return false
	}
	n := len(dst) &^ 7
	if n > 0 {
		unaryAVX2(o, &dst[0], &a[0], n)
	}
	if r := len(dst) - n; r > 0 {
		var buf [8]float32
		copy(buf[:], a[n:len(dst)])
		unaryAVX2(o, &buf[0], &buf[0], 8)
		copy(dst[n:], buf[:r])
	}
	return true
}

func unaryAVX2(o op, d, x *float32, n int) {
	switch o {
	case opExp:
		vecExpF32AVX2(d, x, n)
	case opLog:
		vecLogF32AVX2(d, x, n)
	case opTanh:
		vecTanhF32AVX2(d, x, n)
	case opErf:
		vecErfF32AVX2(d, x, n)
	case opSigmoid:
		vecSigmoidF32AVX2(d, x, n)
	case opSilu:
		vecSiluF32AVX2(d, x, n)
	case opGelu:
		vecGeluF32AVX2(d, x, n)
	case opGeluTanh:
		vecGeluTanhF32AVX2(d, x, n)
	}
}

// sumLanesAsm adds the longest multiple-of-32 prefix of a into acc's
// lanes (sumBlock's order) and returns its length.
func (k *Kernels) sumLanesAsm(a []float32, acc *[SumLanes]float32) int {
	n := len(a) &^ (SumLanes - 1)
	if n == 0 || !k.Asm {
		return 0
	}
	vecSumLanesF32AVX2(&a[0], n, acc)
	return n
}

// maxAsm returns the maximum of the longest multiple-of-8 prefix of a
// (NaN if it holds one) and its length.
func (k *Kernels) maxAsm(a []float32) (float32, int) {
	n := len(a) &^ 7
	if n == 0 || !k.Asm {
		return 0, 0
	}
	return vecMaxF32AVX2(&a[0], n), n
}

// expSubSumAsm is ExpSubSum's one AVX-512 pass over a non-empty x, or at
// avx2 its one AVX2 pass (Exp's bits but for the flushed results, Sum's
// lanes) for x of one Sum block: the 32-value blocks, then the tail's
// exponentials in a block padded with -Inf, added in Go as Sum adds its
// tail. With m = -Inf (x - m is +Inf or NaN) or longer rows it takes the
// three passes.
func (k *Kernels) expSubSumAsm(x []float32, m float32) (float32, bool) {
	if k.z {
		return expSubSumF32Z(&x[0], len(x), m), true
	}
	if !k.Asm || len(x) > SumBlock || math.IsInf(float64(m), -1) {
		return 0, false
	}
	n := len(x) &^ (SumLanes - 1)
	var acc [SumLanes]float32
	s := expSubSumF32Y(&x[0], n, -m, &acc)
	if t := x[n:]; len(t) > 0 {
		// AddScalar splits the tail between its assembly and Go loops
		// where the three passes split it (n is a multiple of 8), which
		// keeps their NaN operand order; adding 0 then changes nothing.
		k.AddScalar(t, t, -m)
		var pad [SumLanes]float32
		for j := range pad {
			pad[j] = float32(math.Inf(-1))
		}
		copy(pad[:], t)
		var scratch [SumLanes]float32
		expSubSumF32Y(&pad[0], SumLanes, 0, &scratch)
		copy(t, pad[:])
		// Sum's own tail loop (its NaN operand order is the compiler's).
		for j, v := range t {
			acc[j] += v
		}
		s = FoldLanes(&acc)
	}
	return s, true
}

// ropeAsm runs Rope's vector kernel on the longest multiple-of-8 prefix
// of each half of one rotate-half row (w = 2h elements of dst, x, c and
// s) and returns its length, 0 without assembly.
func (k *Kernels) ropeAsm(dst, x, c, s []float32, h int) int {
	n := h &^ 7
	if n == 0 || !k.Asm {
		return 0
	}
	_, _, _, _ = dst[2*h-1], x[2*h-1], c[2*h-1], s[2*h-1]
	vecRopeF32AVX2(&dst[0], &x[0], &c[0], &s[0], h, n)
	return n
}

// cmpF32AVX2 sets d[i] = x[i] op y[i] (op the comparison kind; y[0] for
// every i when scalar) for i < n, n a multiple of 32.
//
//go:noescape
func cmpF32AVX2(kind int, d *bool, x, y *float32, scalar bool, n int)

// cmpAsm compares the longest multiple-of-32 prefix of d (x c y, or
// x c y[0] when scalar) and returns its length, 0 without assembly.
func (k *Kernels) cmpAsm(c Cmp, d []bool, x, y []float32, scalar bool) int {
	n := len(d) &^ 31
	if n == 0 || !k.Asm {
		return 0
	}
	_, _ = x[n-1], y[0]
	if !scalar {
		_ = y[n-1]
	}
	cmpF32AVX2(int(c), &d[0], &x[0], &y[0], scalar, n)
	return n
}

// whereB32AVX2 is selectAsm's loop (n a multiple of 32).
//
//go:noescape
func whereB32AVX2(c *byte, a, b, d *uint32, mode, n int)

// selectAsm sets the longest multiple-of-32 prefix of d to c ? a : b
// (Select32's modes) and returns its length, 0 without assembly.
func (k *Kernels) selectAsm(d []uint32, c []byte, a, b []uint32, mode int) int {
	n := len(d) &^ 31
	if n == 0 || !k.Asm {
		return 0
	}
	_, _, _ = c[n-1], a[0], b[0]
	if mode != 2 {
		_ = a[n-1]
	}
	if mode != 1 {
		_ = b[n-1]
	}
	whereB32AVX2(&c[0], &a[0], &b[0], &d[0], mode, n)
	return n
}

// whereF32AVX2 is Where's vector loop (n a multiple of 8).
//
//go:noescape
func whereF32AVX2(d, c, a, b *float32, n int)

// whereAsm runs Where's vector loop on the longest multiple-of-8 prefix
// and returns its length, 0 without assembly.
func (k *Kernels) whereAsm(d, c, a, b []float32) int {
	n := len(d) &^ 7
	if n == 0 || !k.Asm {
		return 0
	}
	whereF32AVX2(&d[0], &c[0], &a[0], &b[0], n)
	return n
}
