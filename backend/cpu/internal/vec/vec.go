// Package vec holds the CPU backend's float32 slice kernels — elementwise
// arithmetic, the transcendentals, sums and maxima, the rotate-half row of
// RoPE, comparisons and selects (select.go), the bfloat16 block
// conversions and bf16 RoPE row (bf16.go), and the softmax and norm rows
// built from them (rows.go) — as one table of entry points per CPU kernel
// level (For).
//
// Every kernel works on len(dst) elements (the inputs must be at least that
// long), handles any length including 0, allocates nothing, and allows dst
// to alias any input exactly (dst[i] is written only after a[i], b[i], c[i]
// were read). They are the building blocks of the contiguous f32 fast paths
// of the elementwise kernels and of the fused-program compiler, which calls
// them on cache-sized blocks.
//
// At level avx2 and above the AVX2+FMA loops of vec_amd64.s do the work; at
// level generic, and on other architectures, the Go loops here. The exactly
// rounded kernels (arithmetic, fma, maximum, relu, rope) and the sum give
// bit-identical results at every level (but for the payload of a NaN that
// maximum produces from a NaN second operand); the transcendentals use
// different algorithms (float32 polynomials in assembly, float64 math in
// Go, which reproduces the generic elementwise kernels exactly) within the
// documented error of each. ExpSubSum's AVX-512 pass gives Exp's bits and
// sums in 16 lanes.
package vec

import (
	"math"

	"github.com/gotpu/gotpu/internal/cpulevel"
)

// Kernels is one CPU level's kernels: its methods run that level's code
// (the methods dispatch on the value, not on a process-wide setting, so
// that tests may run every level side by side). The error bounds below
// hold at every level; the avx2 ones were confirmed over all 2^32 float32
// inputs (TestVecExhaustive).
type Kernels struct {
	// Level is the level whose kernels the value runs: the best one with
	// kernels of its own at or below the level asked of For.
	Level string
	// Asm reports whether the kernels are assembly loops (avx2 and
	// above), so that callers with vector kernels of their own can follow
	// the same choice.
	Asm bool
	// z: the AVX-512 one-pass ExpSubSum.
	z bool
}

// SumLanes is the number of interleaved partial sums of Sum's blocks, and
// SumBlock the largest block summed that way.
const (
	SumLanes = 32
	SumBlock = 4096
)

// For returns the kernels of level (a cpulevel name) on this CPU: those
// of the best level at or below it that has kernels of its own and that
// this CPU and build run. An unknown name gives the generic kernels.
func For(level string) *Kernels {
	r := cpulevel.Rank(level)
	for i := len(tables) - 1; i >= 0; i-- {
		if t := tables[i]; t != nil && cpulevel.Rank(t.Level) <= r {
			return t
		}
	}
	return &generic
}

// Levels returns the levels with kernels of their own on this CPU and
// build, generic first: what a test of every kernel at every level
// iterates.
func Levels() []string {
	out := []string{generic.Level}
	for _, t := range tables {
		out = append(out, t.Level)
	}
	return out
}

// generic is the pure-Go level; tables the assembly levels this CPU runs,
// least capable first (vec_amd64.go fills it).
var (
	generic = Kernels{Level: cpulevel.Generic}
	tables  []*Kernels
)

// Add sets dst[i] = a[i] + b[i].
func (k *Kernels) Add(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := k.binaryAsm(opAdd, dst, a, b); i < len(dst); i++ {
		dst[i] = a[i] + b[i]
	}
}

// Sub sets dst[i] = a[i] - b[i].
func (k *Kernels) Sub(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := k.binaryAsm(opSub, dst, a, b); i < len(dst); i++ {
		dst[i] = a[i] - b[i]
	}
}

// Mul sets dst[i] = a[i] * b[i].
func (k *Kernels) Mul(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := k.binaryAsm(opMul, dst, a, b); i < len(dst); i++ {
		dst[i] = a[i] * b[i]
	}
}

// Div sets dst[i] = a[i] / b[i] (IEEE: x/0 is ±Inf, 0/0 NaN).
func (k *Kernels) Div(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := k.binaryAsm(opDiv, dst, a, b); i < len(dst); i++ {
		dst[i] = a[i] / b[i]
	}
}

// Fma sets dst[i] = a[i]*b[i] + c[i] rounded once (a fused multiply-add).
func (k *Kernels) Fma(dst, a, b, c []float32) {
	a, b, c = a[:len(dst)], b[:len(dst)], c[:len(dst)]
	for i := k.fmaAsm(dst, a, b, c); i < len(dst); i++ {
		dst[i] = FMA(a[i], b[i], c[i])
	}
}

// AddScalar sets dst[i] = a[i] + s.
func (k *Kernels) AddScalar(dst, a []float32, s float32) {
	a = a[:len(dst)]
	for i := k.scalarAsm(opAdd, dst, a, s); i < len(dst); i++ {
		dst[i] = a[i] + s
	}
}

// MulScalar sets dst[i] = a[i] * s.
func (k *Kernels) MulScalar(dst, a []float32, s float32) {
	a = a[:len(dst)]
	for i := k.scalarAsm(opMul, dst, a, s); i < len(dst); i++ {
		dst[i] = a[i] * s
	}
}

// Maximum is torch.maximum: NaN if either operand is NaN, otherwise the
// larger, a on ties (so maximum(-0, +0) is -0).
func (k *Kernels) Maximum(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := k.binaryAsm(opMaximum, dst, a, b); i < len(dst); i++ {
		x, y := a[i], b[i]
		switch {
		case x != x:
			dst[i] = x
		case y != y || x < y:
			dst[i] = y
		default:
			dst[i] = x
		}
	}
}

// Relu is torch.relu: x < 0 ? 0 : x, so NaN and -0 pass through.
func (k *Kernels) Relu(dst, a []float32) {
	a = a[:len(dst)]
	for i := k.scalarAsm(opRelu, dst, a, 0); i < len(dst); i++ {
		if x := a[i]; x < 0 {
			dst[i] = 0
		} else {
			dst[i] = x
		}
	}
}

// Exp sets dst[i] = exp(a[i]). Max error 1 ulp (avx2: Cephes expf
// polynomial, subnormal results rounded once; generic: float64 math.Exp,
// 0 ulp), +Inf above 88.7228, 0 below -103.97.
func (k *Kernels) Exp(dst, a []float32) {
	a = a[:len(dst)]
	if k.unaryAsm(opExp, dst, a) {
		return
	}
	for i := range dst {
		dst[i] = float32(math.Exp(float64(a[i])))
	}
}

// Log sets dst[i] = log(a[i]) (-Inf at ±0, NaN below 0, subnormals
// handled). Max error 1 ulp.
func (k *Kernels) Log(dst, a []float32) {
	a = a[:len(dst)]
	if k.unaryAsm(opLog, dst, a) {
		return
	}
	for i := range dst {
		dst[i] = float32(math.Log(float64(a[i])))
	}
}

// Tanh sets dst[i] = tanh(a[i]). Max error 1 ulp.
func (k *Kernels) Tanh(dst, a []float32) {
	a = a[:len(dst)]
	if k.unaryAsm(opTanh, dst, a) {
		return
	}
	for i := range dst {
		dst[i] = float32(math.Tanh(float64(a[i])))
	}
}

// Erf sets dst[i] = erf(a[i]). Max error 2 ulp (avx2: x*P(x^2) below
// |x| = 0.875, 1 - 2^L(|x|) above with L a polynomial approximating
// log2(erfc(|x|)) on [0.875, 3.95], whose error costs erf only erfc(|x|)
// times as much; polynomials fitted by tools/vecfit).
func (k *Kernels) Erf(dst, a []float32) {
	a = a[:len(dst)]
	if k.unaryAsm(opErf, dst, a) {
		return
	}
	for i := range dst {
		dst[i] = float32(math.Erf(float64(a[i])))
	}
}

// Sigmoid sets dst[i] = 1/(1+exp(-a[i])). Max error 1 ulp for normal
// results (for x < 0 it is computed as e/(1+e), e = exp(x), without
// cancellation); subnormal results within 1e-42.
func (k *Kernels) Sigmoid(dst, a []float32) {
	a = a[:len(dst)]
	if k.unaryAsm(opSigmoid, dst, a) {
		return
	}
	for i := range dst {
		dst[i] = float32(1 / (1 + math.Exp(-float64(a[i]))))
	}
}

// Gelu sets dst[i] = x*0.5*(1+erf(x/sqrt2)) for x = a[i]. Max error 2 ulp
// for normal results, subnormal ones within 1e-42 (avx2: x/2 + s G(s),
// s = x^2/2, below |x| = 1/sqrt2, where 1+erf does not cancel much;
// beyond, x - y for x > 0 and -y for x < 0 with y = exp(-x^2/2) N(|x|) =
// |x| erfc(|x|/sqrt2)/2, N a polynomial in t = (|x|-1.5)/(|x|+1.5) and
// x^2/2 carried as a float32 pair into exp, so negative tails keep their
// relative accuracy where PyTorch's 1+erf loses it entirely). gelu(-Inf)
// is NaN as in PyTorch.
func (k *Kernels) Gelu(dst, a []float32) {
	a = a[:len(dst)]
	if k.unaryAsm(opGelu, dst, a) {
		return
	}
	for i := range dst {
		x := float64(a[i])
		dst[i] = float32(x * 0.5 * math.Erfc(-x/math.Sqrt2))
	}
}

// GeluTanh sets dst[i] = 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))) for
// x = a[i] (gelu's approximate="tanh"), computed as x*sigmoid(2u) without
// cancellation. Max error 17 ulp where |result| >= 1e-3 (rounding of 2u's
// own inputs, amplified by |2u| for x < 0; the worst near x = -3),
// absolute error below 1e-8 elsewhere: well inside f32 tolerances, and
// far better than 1+tanh in float32.
func (k *Kernels) GeluTanh(dst, a []float32) {
	a = a[:len(dst)]
	if k.unaryAsm(opGeluTanh, dst, a) {
		return
	}
	const c = 0.7978845608028654 // sqrt(2/pi)
	for i := range dst {
		x := float64(a[i])
		dst[i] = float32(0.5 * x * (1 + math.Tanh(c*(x+0.044715*x*x*x))))
	}
}

// Silu sets dst[i] = x/(1+exp(-x)) for x = a[i]. Max error 2 ulp for
// normal results, subnormal ones within 1e-42; silu(-Inf) is NaN as in
// PyTorch.
func (k *Kernels) Silu(dst, a []float32) {
	a = a[:len(dst)]
	if k.unaryAsm(opSilu, dst, a) {
		return
	}
	for i := range dst {
		x := float64(a[i])
		dst[i] = float32(x / (1 + math.Exp(-x)))
	}
}

// Sum returns the float32 sum of a in a fixed order that does not depend
// on the level: a slice longer than SumBlock is split at half its length
// rounded up to a multiple of 32, and the halves' sums (recursively) are
// added; a block of at most SumBlock elements is summed in 32 partial
// sums, partial j accumulating a[j], a[j+32], a[j+64], ... in order from
// +0, which are then folded pairwise (j += j+16, j += j+8, j += j+4,
// j += j+2, j += j+1). The error grows like log2(n) rather than n. The
// empty sum is +0.
func (k *Kernels) Sum(a []float32) float32 {
	if len(a) <= SumBlock {
		return k.sumBlock(a)
	}
	m := (len(a)/2 + SumLanes - 1) &^ (SumLanes - 1)
	return k.Sum(a[:m]) + k.Sum(a[m:])
}

// sumBlock is Sum's lane sum of one block.
func (k *Kernels) sumBlock(a []float32) float32 {
	var acc [SumLanes]float32
	i := k.sumLanesAsm(a, &acc)
	for ; i+SumLanes <= len(a); i += SumLanes {
		s := a[i : i+SumLanes]
		for j := range acc {
			acc[j] += s[j]
		}
	}
	for j, v := range a[i:] {
		acc[j] += v
	}
	return FoldLanes(&acc)
}

// FoldLanes folds 32 partial sums pairwise in Sum's order.
func FoldLanes(acc *[SumLanes]float32) float32 {
	for w := SumLanes / 2; w > 0; w /= 2 {
		for j := 0; j < w; j++ {
			acc[j] += acc[j+w]
		}
	}
	return acc[0]
}

// Max returns the largest element of a, NaN if any element is NaN, -Inf
// for an empty slice. Between +0 and -0 either may be returned.
func (k *Kernels) Max(a []float32) float32 {
	m, n := k.maxAsm(a)
	if n == 0 {
		m = float32(math.Inf(-1))
	} else if m != m {
		return m
	}
	for _, v := range a[n:] {
		if v != v {
			return v
		}
		if v > m {
			m = v
		}
	}
	return m
}

// ExpSubSum sets x[i] = exp(x[i] - m) (Exp's bits) and returns their sum:
// one pass at avx512 and above (summed in 16 lanes, element i in lane
// i mod 16, the tail under a mask, folded pairwise), else the bits of
// AddScalar, Exp and Sum. At avx2, rows of up to SumBlock values take one
// pass that flushes the exponentials Exp makes subnormal from a power of
// two below 2^-126 — x[i] - m below about -87.68 — to +0 instead (the
// softmax weights of flash attention, its caller, are then exact zeros
// for those, below 1.2e-38 of the row's largest; a single scale 2^n
// replaces Exp's two halves and its underflow mask: the pass takes a
// third less time).
func (k *Kernels) ExpSubSum(x []float32, m float32) float32 {
	if len(x) == 0 {
		return 0
	}
	if s, ok := k.expSubSumAsm(x, m); ok {
		return s
	}
	k.AddScalar(x, x, -m)
	k.Exp(x, x)
	return k.Sum(x)
}

// Rope computes one rotate-half row of width 2h: dst[j] = x[j]·c[j] -
// x[j+h]·s[j] and dst[j+h] = x[j+h]·c[j+h] + x[j]·s[j+h] for j < h, each
// product rounded to float32 before the sum (no FMA), the same bits at
// every level. dst may not alias x.
func (k *Kernels) Rope(dst, x, c, s []float32, h int) {
	for j := k.ropeAsm(dst, x, c, s, h); j < h; j++ {
		dst[j] = float32(x[j]*c[j]) + float32(-x[j+h]*s[j])
		dst[j+h] = float32(x[j+h]*c[j+h]) + float32(x[j]*s[j+h])
	}
}

// op names a kernel for the assembly dispatchers.
type op uint8

const (
	opAdd op = iota
	opSub
	opMul
	opDiv
	opMaximum
	opRelu
	opExp
	opLog
	opTanh
	opErf
	opSigmoid
	opSilu
	opGelu
	opGeluTanh
)

// ULPDist is the number of float32 values between x and y (0 when equal,
// both NaN, or ±0), MaxInt64 when exactly one is NaN.
func ULPDist(x, y float32) int64 {
	if x != x || y != y {
		if x != x && y != y {
			return 0
		}
		return math.MaxInt64
	}
	ord := func(v float32) int64 {
		b := int64(math.Float32bits(v))
		if b&(1<<31) != 0 {
			return -(b & (1<<31 - 1))
		}
		return b
	}
	d := ord(x) - ord(y)
	if d < 0 {
		d = -d
	}
	return d
}

// FMA returns a*b + c rounded once to float32, as the FMA instruction
// PyTorch's vectorized f32 kernels use.
func FMA(a, b, c float32) float32 {
	if r, tie := FMAFast(a, b, c); !tie {
		return r
	}
	p := float64(a) * float64(b)
	return FMATie(p, float64(c), p+float64(c))
}

// FMAFast returns a*b + c rounded to float32 through float64 (the product
// is exact in float64, the sum rounds once there) and whether that result
// may be wrong by double rounding: when the float64 sum lies exactly
// halfway between two float32s (its low 29 significand bits are 1000...0)
// without being the exact sum, or is a non-zero float32 subnormal. Callers
// then redo the step with FMA. Sums of two float32s of similar magnitude
// (alpha = 1) are often exact midpoints, which round correctly as they
// are, so the check for exactness matters. It has no calls, so loops
// inline it.
func FMAFast(a, b, c float32) (float32, bool) {
	p := float64(a) * float64(b)
	s := p + float64(c)
	bits := math.Float64bits(s)
	if bits&(1<<29-1) == 1<<28 {
		bb := s - p
		if (p-(s-bb))+(float64(c)-bb) != 0 { // TwoSum's error: s is inexact
			return 0, true
		}
	}
	return float32(s), bits&(0x7ff<<52) < 0x381<<52 && bits<<1 != 0
}

// FMATie is FMA's rare path: it rounds the exact p + c (s is its float64
// rounding) to float32 correctly, including subnormal results.
func FMATie(p, c, s float64) float32 {
	bb := s - p
	e := (p - (s - bb)) + (c - bb) // TwoSum: p + c == s + e exactly
	r := float32(s)
	if e == 0 || math.IsInf(s, 0) || math.IsNaN(s) || float64(r) == s {
		return r
	}
	lo, hi := r, r
	if float64(r) < s {
		hi = math.Nextafter32(r, float32(math.Inf(1)))
	} else {
		lo = math.Nextafter32(r, float32(math.Inf(-1)))
	}
	if (float64(lo)+float64(hi))/2 != s {
		return r // not a tie: s's rounding is the exact sum's
	}
	if e > 0 {
		return hi
	}
	return lo
}
