package cpu

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// vecLevels returns the CPU levels this machine can run the vec kernels at.
func vecLevels() []string {
	if haveAVX2() {
		return []string{LevelGeneric, LevelAVX2}
	}
	return []string{LevelGeneric}
}

// withVecLevel runs fn with the kernels forced to level.
func withVecLevel(level string, fn func()) {
	prev := cpuLevel
	cpuLevel = level
	defer func() { cpuLevel = prev }()
	fn()
}

// vecSizes are the lengths every kernel is tested on: empty, shorter than a
// vector, around one and two vectors and their unrolled blocks, and long.
var vecSizes = []int{0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000}

// ulpDist is the number of float32 values between x and y (0 when equal,
// both NaN, or ±0), MaxInt64 when exactly one is NaN.
func ulpDist(x, y float32) int64 {
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

// vecUnaryCase is a unary kernel with its float64 reference, its accuracy
// bound in ulp and the absolute/relative tolerance allowed where ulp is
// meaningless (tiny results): the error is acceptable when it is within
// maxULP of the correctly rounded reference or within atol+rtol*|ref|
// with |ref| < tiny.
type vecUnaryCase struct {
	name   string
	f      func(dst, a []float32)
	ref    func(float64) float64
	maxULP int64
	tiny   float64 // below this |reference| ...
	atol   float64 // ... an absolute error up to atol is accepted
	lo, hi float64 // range of the random inputs
}

func geluRef(x float64) float64 { return x * 0.5 * math.Erfc(-x/math.Sqrt2) }

func geluTanhRef(x float64) float64 {
	const k = 0.7978845608028654
	u := k * (x + 0.044715*x*x*x)
	return 0.5 * x * (1 + math.Tanh(u))
}

func siluRef(x float64) float64 { return x / (1 + math.Exp(-x)) }

func logRef(x float64) float64 { return math.Log(x) }

var vecUnaryCases = []vecUnaryCase{
	{"exp", vecExpF32, math.Exp, 1, 0, 0, -104, 89},
	{"log", vecLogF32, logRef, 1, 0, 0, 0, 1e6},
	{"tanh", vecTanhF32, math.Tanh, 2, 0, 0, -12, 12},
	{"erf", vecErfF32, math.Erf, 2, 0, 0, -5, 5},
	{"sigmoid", vecSigmoidF32, sigmoid, 2, 0, 0, -100, 30},
	{"silu", vecSiluF32, siluRef, 2, 0, 0, -100, 30},
	{"gelu", vecGeluF32, geluRef, 2, 0, 0, -15, 10},
	{"gelu_tanh", vecGeluTanhF32, geluTanhRef, 2, 1e-3, 1e-9, -12, 10},
	{"relu", vecReluF32, func(x float64) float64 {
		if x > 0 || x != x {
			return x
		}
		return 0
	}, 0, 0, 0, -10, 10},
}

// checkUnary returns a description of the first input where got is not
// acceptable for tc, or "".
func (tc vecUnaryCase) check(x, got float32) string {
	want64 := tc.ref(float64(x))
	want := float32(want64)
	d := ulpDist(got, want)
	if d <= tc.maxULP {
		return ""
	}
	if math.IsNaN(want64) || math.IsInf(want64, 0) || got != got {
		return fmt.Sprintf("%s(%g [%#x]) = %g, want %g", tc.name, x, math.Float32bits(x), got, want)
	}
	if math.Abs(want64) < tc.tiny && math.Abs(float64(got)-want64) <= tc.atol {
		return ""
	}
	return fmt.Sprintf("%s(%g [%#x]) = %g, want %g (%d ulp > %d)", tc.name, x, math.Float32bits(x), got, want, d, tc.maxULP)
}

func TestVecUnaryBasic(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, level := range vecLevels() {
		for _, tc := range vecUnaryCases {
			for _, n := range vecSizes {
				// Unaligned: start one element into a larger buffer.
				src := make([]float32, n+3)
				for i := range src {
					src[i] = float32(tc.lo + (tc.hi-tc.lo)*r.Float64())
				}
				a := src[1 : n+1]
				dst := make([]float32, n+2)[1 : n+1]
				alias := append([]float32(nil), a...)
				withVecLevel(level, func() {
					tc.f(dst, a)
					tc.f(alias, alias)
				})
				for i := range a {
					if msg := tc.check(a[i], dst[i]); msg != "" {
						t.Fatalf("%s n=%d i=%d: %s", level, n, i, msg)
					}
					if math.Float32bits(alias[i]) != math.Float32bits(dst[i]) {
						t.Fatalf("%s %s n=%d i=%d: in place %g, out of place %g", level, tc.name, n, i, alias[i], dst[i])
					}
				}
			}
		}
	}
}

// vecBinaryCases are the exact binary kernels with their scalar reference.
var vecBinaryCases = []struct {
	name string
	f    func(dst, a, b []float32)
	ref  func(x, y float32) float32
}{
	{"add", vecAddF32, func(x, y float32) float32 { return x + y }},
	{"sub", vecSubF32, func(x, y float32) float32 { return x - y }},
	{"mul", vecMulF32, func(x, y float32) float32 { return x * y }},
	{"div", vecDivF32, func(x, y float32) float32 { return x / y }},
	{"maximum", vecMaximumF32, func(x, y float32) float32 { return float32(maxNaN(float64(x), float64(y))) }},
	{"add_scalar", func(dst, a, b []float32) { vecAddScalarF32(dst, a, first(b)) }, nil},
	{"mul_scalar", func(dst, a, b []float32) { vecMulScalarF32(dst, a, first(b)) }, nil},
	{"fma", func(dst, a, b []float32) { vecFmaF32(dst, a, b, b) }, func(x, y float32) float32 { return fmaF32(x, y, y) }},
}

// first is b[0], or 0 for an empty slice.
func first(b []float32) float32 {
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// vecSpecials are edge values mixed into the binary tests.
var vecSpecials = []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)),
	float32(math.NaN()), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, 1e-40, -3.5}

func TestVecBinary(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, level := range vecLevels() {
		for _, tc := range vecBinaryCases {
			for _, n := range vecSizes {
				a := make([]float32, n+1)[1:]
				b := make([]float32, n+2)[2:]
				for i := range a {
					a[i] = float32(r.NormFloat64() * 10)
					b[i] = float32(r.NormFloat64() * 10)
					if r.Intn(4) == 0 {
						a[i] = vecSpecials[r.Intn(len(vecSpecials))]
					}
					if r.Intn(4) == 0 {
						b[i] = vecSpecials[r.Intn(len(vecSpecials))]
					}
				}
				ref := tc.ref
				if ref == nil && n > 0 {
					s := b[0]
					if tc.name == "add_scalar" {
						ref = func(x, _ float32) float32 { return x + s }
					} else {
						ref = func(x, _ float32) float32 { return x * s }
					}
				}
				dst := make([]float32, n)
				a2 := append([]float32(nil), a...)
				b2 := append([]float32(nil), b...)
				withVecLevel(level, func() {
					tc.f(dst, a, b)
					tc.f(a2, a2, b)                            // dst == a
					tc.f(b2, append([]float32(nil), a...), b2) // dst == b
				})
				for i := range dst {
					want := ref(a[i], b[i])
					same := func(g float32) bool {
						return math.Float32bits(g) == math.Float32bits(want) || (g != g && want != want)
					}
					if !same(dst[i]) || !same(a2[i]) || (tc.name != "add_scalar" && tc.name != "mul_scalar" && !same(b2[i])) {
						t.Fatalf("%s %s n=%d i=%d: f(%g, %g) = %g (dst=a %g, dst=b %g), want %g",
							level, tc.name, n, i, a[i], b[i], dst[i], a2[i], b2[i], want)
					}
				}
			}
		}
	}
}

func TestVecReductions(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	sizes := append(append([]int(nil), vecSizes...), 4096, 4097, 10000, 100003)
	for _, n := range sizes {
		a := make([]float32, n+1)[1:]
		exact := 0.0
		for i := range a {
			a[i] = float32(r.NormFloat64())
			exact += float64(a[i])
		}
		var sums, maxes []float32
		for _, level := range vecLevels() {
			withVecLevel(level, func() {
				sums = append(sums, vecSumF32(a))
				maxes = append(maxes, vecMaxF32(a))
			})
		}
		wantMax := float32(math.Inf(-1))
		for _, v := range a {
			wantMax = max(wantMax, v)
		}
		for i := range sums {
			if math.Float32bits(sums[i]) != math.Float32bits(sums[0]) {
				t.Errorf("n=%d: sum differs between levels: %g vs %g", n, sums[i], sums[0])
			}
			if maxes[i] != wantMax {
				t.Errorf("n=%d level %d: max %g, want %g", n, i, maxes[i], wantMax)
			}
		}
		// Pairwise error bound: a few ulp of the sum of magnitudes times log2(n).
		if err := math.Abs(float64(sums[0]) - exact); err > 1e-6*math.Sqrt(float64(n))*8+1e-6 {
			t.Errorf("n=%d: sum %g, exact %g (error %g)", n, sums[0], exact, err)
		}
		if n > 0 {
			a[n/2] = float32(math.NaN())
			for _, level := range vecLevels() {
				withVecLevel(level, func() {
					if s, m := vecSumF32(a), vecMaxF32(a); s == s || m == m {
						t.Errorf("%s n=%d: NaN did not propagate: sum %g max %g", level, n, s, m)
					}
				})
			}
		}
	}
}
