package vec

import (
	"fmt"
	"github.com/gotpu/gotpu/internal/cpulevel"
	"math"
	"math/rand"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// vecSizes are the lengths every kernel is tested on: empty, shorter than a
// vector, around one and two vectors and their unrolled blocks, and long.
var vecSizes = []int{0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000}

// vecUnaryCase is a unary kernel with its float64 reference, its accuracy
// bound in ulp and the absolute/relative tolerance allowed where ulp is
// meaningless (tiny results): the error is acceptable when it is within
// maxULP of the correctly rounded reference or within atol+rtol*|ref|
// with |ref| < tiny.
type vecUnaryCase struct {
	name   string
	f      func(k *Kernels, dst, a []float32)
	ref    func(float64) float64
	maxULP int64
	tiny   float64 // below this |reference| ...
	atol   float64 // ... an absolute error up to atol is accepted
	lo, hi float64 // range of the random inputs
}

// minNormal is the smallest normal float32; below it (subnormal results,
// where an exp input's own rounding already costs many ulp) the kernels are
// held to subnormalAtol instead of an ulp bound.
const (
	minNormal     = 0x1p-126
	subnormalAtol = 1e-42
)

func geluRef(x float64) float64 { return x * 0.5 * math.Erfc(-x/math.Sqrt2) }

// geluTanhRef is 0.5x(1+tanh(u)) written as x/(1+exp(-2u)), which does not
// cancel for x < 0.
func geluTanhRef(x float64) float64 {
	const k = 0.7978845608028654
	u := k * (x + 0.044715*x*x*x)
	return x / (1 + math.Exp(-2*u))
}

func siluRef(x float64) float64 { return x / (1 + math.Exp(-x)) }

func logRef(x float64) float64 { return math.Log(x) }

var vecUnaryCases = []vecUnaryCase{
	{"exp", (*Kernels).Exp, math.Exp, 1, 0, 0, -104, 89},
	{"log", (*Kernels).Log, logRef, 1, 0, 0, 0, 1e6},
	{"tanh", (*Kernels).Tanh, math.Tanh, 2, 0, 0, -12, 12},
	{"erf", (*Kernels).Erf, math.Erf, 2, 0, 0, -5, 5},
	{"sigmoid", (*Kernels).Sigmoid, sigmoid, 2, minNormal, subnormalAtol, -100, 30},
	{"silu", (*Kernels).Silu, siluRef, 2, minNormal, subnormalAtol, -100, 30},
	{"gelu", (*Kernels).Gelu, geluRef, 2, minNormal, subnormalAtol, -15, 10},
	{"gelu_tanh", (*Kernels).GeluTanh, geluTanhRef, 17, 1e-3, 1e-8, -12, 10},
	{"relu", (*Kernels).Relu, func(x float64) float64 {
		if x < 0 {
			return 0
		}
		return x
	}, 0, 0, 0, -10, 10},
}

// checkUnary returns a description of the first input where got is not
// acceptable for tc, or "".
func (tc vecUnaryCase) check(x, got float32) string {
	want64 := tc.ref(float64(x))
	want := float32(want64)
	d := ULPDist(got, want)
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
	for _, level := range Levels() {
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
				k := For(level)
				tc.f(k, dst, a)
				tc.f(k, alias, alias)
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
	f    func(k *Kernels, dst, a, b []float32)
	ref  func(x, y float32) float32
}{
	{"add", (*Kernels).Add, func(x, y float32) float32 { return x + y }},
	{"sub", (*Kernels).Sub, func(x, y float32) float32 { return x - y }},
	{"mul", (*Kernels).Mul, func(x, y float32) float32 { return x * y }},
	{"div", (*Kernels).Div, func(x, y float32) float32 { return x / y }},
	{"maximum", (*Kernels).Maximum, maxNaN},
	{"add_scalar", func(k *Kernels, dst, a, b []float32) { k.AddScalar(dst, a, first(b)) }, nil},
	{"mul_scalar", func(k *Kernels, dst, a, b []float32) { k.MulScalar(dst, a, first(b)) }, nil},
	{"fma", func(k *Kernels, dst, a, b []float32) { k.Fma(dst, a, b, b) }, func(x, y float32) float32 { return FMA(x, y, y) }},
}

// maxNaN is torch.maximum's reference: NaN if either is NaN, else the
// larger, x on ties.
func maxNaN(x, y float32) float32 {
	if x != x || y != y {
		return float32(math.NaN())
	}
	if x < y {
		return y
	}
	return x
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

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
	for _, level := range Levels() {
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
				k := For(level)
				tc.f(k, dst, a, b)
				tc.f(k, a2, a2, b)                            // dst == a
				tc.f(k, b2, append([]float32(nil), a...), b2) // dst == b
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
		for _, level := range Levels() {
			sums = append(sums, For(level).Sum(a))
			maxes = append(maxes, For(level).Max(a))
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
			for _, level := range Levels() {
				if s, m := For(level).Sum(a), For(level).Max(a); s == s || m == m {
					t.Errorf("%s n=%d: NaN did not propagate: sum %g max %g", level, n, s, m)
				}
			}
		}
	}
}

// vecEdges are the edge inputs of every unary kernel: zeros, infinities,
// NaN, subnormals, the smallest normal, exp's overflow and underflow
// thresholds, and saturation points of tanh/erf/sigmoid.
var vecEdges = []float64{
	0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
	math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 1e-40, -1e-40, 0x1p-126, -0x1p-126,
	math.MaxFloat32, -math.MaxFloat32, 1, -1, 0.5, 2,
	88.72283, 88.72284, 88.7229, 89, 100, -87.33654, -87.3366, -103.0, -103.27893, -103.9720, -103.973, -104, -150,
	0.625, -0.625, 0.62499994, 0.875, -0.875, 0.87499994, 1.2374368, -1.2374368,
	3.9, 3.92, 4, 9, 9.01, 10, 15, 20, 44, 45, -9, -15, -20, -45, 1e6, -1e6, 1e30, -1e30,
}

// vecSweep returns the inputs of the accuracy test for tc: its edges,
// every 4099th float32 bit pattern (all magnitudes, both signs,
// subnormals, Inf and NaN), a dense grid over tc's range and the
// intervals around each branch point, and nRandom uniform draws in it.
func (tc vecUnaryCase) sweep(r *rand.Rand, nRandom int) []float32 {
	var xs []float32
	for _, e := range vecEdges {
		xs = append(xs, float32(e))
	}
	for b := uint64(0); b < 1<<32; b += 4099 {
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	grid := func(lo, hi float64, n int) {
		for i := 0; i <= n; i++ {
			xs = append(xs, float32(lo+(hi-lo)*float64(i)/float64(n)))
		}
	}
	grid(tc.lo, tc.hi, 200000)
	for _, c := range []float64{0, 0.625, 0.875, 1, 1.2374368, 3.92, 9, 88.7, -87.3, -103.9} {
		grid(c-0.01, c+0.01, 20000)
		grid(-c-0.01, -c+0.01, 20000)
	}
	for i := 0; i < nRandom; i++ {
		xs = append(xs, float32(tc.lo+(tc.hi-tc.lo)*r.Float64()))
	}
	return xs
}

// TestVecAccuracy checks every unary kernel at every level against its
// float64 reference over vecSweep's inputs (about 2.7M per kernel, 1M of
// them random), and logs the largest error seen in ulp.
func TestVecAccuracy(t *testing.T) {
	const nRandom = 1 << 20
	for _, tc := range vecUnaryCases {
		xs := tc.sweep(rand.New(rand.NewSource(4)), nRandom)
		got := make([]float32, len(xs))
		for _, level := range Levels() {
			tc.f(For(level), got, xs)
			var worst int64
			var worstX float32
			fails := 0
			for i, x := range xs {
				if msg := tc.check(x, got[i]); msg != "" {
					if fails++; fails <= 5 {
						t.Errorf("%s: %s", level, msg)
					}
					continue
				}
				want := float32(tc.ref(float64(x)))
				if d := ULPDist(got[i], want); d > worst && math.Abs(float64(want)) >= max(tc.tiny, minNormal) {
					worst, worstX = d, x
				}
			}
			t.Logf("%-9s %-7s max %d ulp (at %g) over %d inputs, %d failures", tc.name, level, worst, worstX, len(xs), fails)
		}
	}
}

// BenchmarkVec measures the unary kernels on a cache-resident block of
// 64K elements, one goroutine, at each level (generic is the float64 math
// loop the elementwise kernels ran before), reporting Gelem/s.
func BenchmarkVec(b *testing.B) {
	const n = 1 << 16
	r := rand.New(rand.NewSource(8))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 3)
	}
	pos := make([]float32, n)
	for i := range pos {
		pos[i] = float32(math.Abs(float64(x[i]))) + 1e-3
	}
	dst := make([]float32, n)
	for _, tc := range vecUnaryCases {
		in := x
		if tc.name == "log" {
			in = pos
		}
		for _, level := range Levels() {
			b.Run(tc.name+"/"+level, func(b *testing.B) {
				k := For(level)
				b.SetBytes(4 * n)
				for b.Loop() {
					tc.f(k, dst, in)
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
			})
		}
	}
	for _, level := range Levels() {
		k := For(level)
		b.Run("add/"+level, func(b *testing.B) {
			b.SetBytes(4 * n)
			for b.Loop() {
				k.Add(dst, x, pos)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
		b.Run("sum/"+level, func(b *testing.B) {
			b.SetBytes(4 * n)
			for b.Loop() {
				k.Sum(x)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}

// TestVecNoAlloc checks that every kernel is allocation-free at every
// level, on a ragged length (the assembly's tail buffer must stay on the
// stack).
func TestVecNoAlloc(t *testing.T) {
	a := make([]float32, 1003)
	b := make([]float32, 1003)
	for i := range a {
		a[i], b[i] = float32(i)/100+0.5, float32(i%7)+1
	}
	d := make([]float32, 1003)
	for _, level := range Levels() {
		k := For(level)
		for _, tc := range vecUnaryCases {
			if n := testing.AllocsPerRun(10, func() { tc.f(k, d, a) }); n != 0 {
				t.Errorf("%s %s: %v allocations", level, tc.name, n)
			}
		}
		for _, tc := range vecBinaryCases {
			if n := testing.AllocsPerRun(10, func() { tc.f(k, d, a, b) }); n != 0 {
				t.Errorf("%s %s: %v allocations", level, tc.name, n)
			}
		}
		if n := testing.AllocsPerRun(10, func() { k.Sum(a); k.Max(a); k.ExpSubSum(d, 1); k.Rope(b[:64], a, a, a, 32) }); n != 0 {
			t.Errorf("%s sum/max/expsubsum/rope: %v allocations", level, n)
		}
	}
}

// TestVecExhaustive checks the avx2 kernels named in GOTPU_VEC_EXHAUSTIVE
// (comma-separated, or "all") over all 2^32 float32 inputs against
// vecUnaryCases' bounds, and logs each one's largest error. It takes
// minutes per kernel, so it runs only when asked (never in -short mode):
//
//	GOTPU_VEC_EXHAUSTIVE=gelu,erf go test -run VecExhaustive -timeout 2h ./backend/cpu/internal/vec/
func TestVecExhaustive(t *testing.T) {
	want := os.Getenv("GOTPU_VEC_EXHAUSTIVE")
	if testing.Short() || want == "" {
		t.Skip("set GOTPU_VEC_EXHAUSTIVE=name,... or all (not in -short mode)")
	}
	k := For(cpulevel.AVX2)
	if k.Level != cpulevel.AVX2 {
		t.Skip("no AVX2")
	}
	names := strings.Split(want, ",")
	for _, tc := range vecUnaryCases {
		if want != "all" && !slices.Contains(names, tc.name) {
			continue
		}
		func() {
			const chunk = 1 << 20
			workers := runtime.GOMAXPROCS(0)
			type result struct {
				worst  int64
				worstX float32
				fails  int
				first  string
			}
			res := make([]result, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					xs := make([]float32, chunk)
					got := make([]float32, chunk)
					r := &res[w]
					for base := uint64(w) * chunk; base < 1<<32; base += uint64(workers) * chunk {
						for i := range xs {
							xs[i] = math.Float32frombits(uint32(base + uint64(i)))
						}
						tc.f(k, got, xs)
						for i, x := range xs {
							if msg := tc.check(x, got[i]); msg != "" {
								if r.fails++; r.fails == 1 {
									r.first = msg
								}
								continue
							}
							want := float32(tc.ref(float64(x)))
							if d := ULPDist(got[i], want); d > r.worst && math.Abs(float64(want)) >= max(tc.tiny, minNormal) {
								r.worst, r.worstX = d, x
							}
						}
					}
				}()
			}
			wg.Wait()
			var all result
			for _, r := range res {
				if r.fails > 0 && all.fails == 0 {
					all.first = r.first
				}
				all.fails += r.fails
				if r.worst > all.worst {
					all.worst, all.worstX = r.worst, r.worstX
				}
			}
			if all.fails > 0 {
				t.Errorf("%s: %d failures over 2^32 inputs, first: %s", tc.name, all.fails, all.first)
			}
			t.Logf("%-9s avx2 max %d ulp (at %g) over all 2^32 inputs, %d failures", tc.name, all.worst, all.worstX, all.fails)
		}()
	}
}

// TestRopeRow checks the rotate-half row kernel at every level against
// its definition, bit for bit, for half-widths around the vector length.
func TestRopeRow(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	for _, h := range []int{1, 3, 7, 8, 9, 15, 16, 17, 32, 33, 64} {
		w := 2 * h
		x, c, s := make([]float32, w), make([]float32, w), make([]float32, w)
		for i := range x {
			x[i], c[i], s[i] = float32(r.NormFloat64()*4), float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		want := make([]float32, w)
		for j := range h {
			want[j] = float32(x[j]*c[j]) + float32(-x[j+h]*s[j])
			want[j+h] = float32(x[j+h]*c[j+h]) + float32(x[j]*s[j+h])
		}
		for _, level := range Levels() {
			got := make([]float32, w)
			For(level).Rope(got, x, c, s, h)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s h=%d: [%d] = %g, want %g", level, h, i, got[i], want[i])
				}
			}
		}
	}
}

// expFlushes reports whether ExpSubSum's avx2 pass gives +0 for
// exp(d), d = x - m rounded: where the scale 2^n of Exp's p·2^n would be
// 2^-127 or less (n = round(d·log2e) after the clamp at -88), so that
// Exp's result is subnormal or 0.
func expFlushes(d float32) bool {
	return d == d && math.RoundToEven(float64(max(d, -88)*float32(math.Log2E))) <= -127
}

// TestExpSubSum checks ExpSubSum at every level: the exp values equal the
// assembly Exp of x - m bit for bit (the AVX-512 pass runs the same Cephes
// operations; generic within float rounding of it), and the sum is within
// float rounding of the f64 sum, over lengths around the 16-lane tail and
// special values, some x - m in the band where Exp turns subnormal. Below
// avx512 (the AVX2 one pass, or the passes themselves) the values and the
// sum are AddScalar, Exp and Sum's bits, NaNs' included (a NaN m, NaN and
// infinite x), but that the AVX2 pass flushes to +0 where expFlushes
// says.
func TestExpSubSum(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	ref := For(cpulevel.AVX2) // the generic kernels where there is no assembly
	ninf, inf, nan := float32(math.Inf(-1)), float32(math.Inf(1)), float32(math.NaN())
	for _, lv := range Levels() {
		k := For(lv)
		for _, n := range []int{1, 2, 7, 15, 16, 17, 31, 32, 33, 63, 64, 66, 95, 255, 256, 1000, 4095, 4096, 4097, 5000} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(r.NormFloat64() * 8)
				switch r.Intn(20) {
				case 0:
					x[i] = ninf
				case 1:
					x[i] = -200
				case 2, 3:
					x[i] = -86.5 - float32(r.Float64())*3 // m is added below
				}
			}
			m := float32(r.NormFloat64())
			for i := range x {
				if x[i] > -90 && x[i] < -86 {
					x[i] += m
				}
			}
			flush := k.Asm && !k.z && n <= SumBlock // the AVX2 pass's +0s
			if !k.z {
				// The three passes, bit for bit (also with a NaN m).
				for _, m := range []float32{m, nan, -nan, ninf} {
					x3 := append([]float32(nil), x...)
					if n > 3 {
						x3[n/2], x3[n-1], x3[1] = nan, -nan, inf
					}
					y := append([]float32(nil), x3...)
					k.AddScalar(y, y, -m)
					d := append([]float32(nil), y...)
					k.Exp(y, y)
					for i := range y {
						if flush && !math.IsInf(float64(m), -1) && expFlushes(d[i]) {
							y[i] = 0
						}
					}
					ws := k.Sum(y)
					gs := k.ExpSubSum(x3, m)
					if math.Float32bits(gs) != math.Float32bits(ws) {
						t.Fatalf("%s n=%d m=%v: sum %#x, the three passes give %#x", lv, n, m, math.Float32bits(gs), math.Float32bits(ws))
					}
					for i := range y {
						if math.Float32bits(x3[i]) != math.Float32bits(y[i]) {
							t.Fatalf("%s n=%d m=%v: x[%d] = %#x, the three passes give %#x", lv, n, m, i, math.Float32bits(x3[i]), math.Float32bits(y[i]))
						}
					}
				}
			}
			want := make([]float32, n)
			for i := range want {
				want[i] = x[i] - m
			}
			d := append([]float32(nil), want...)
			ref.Exp(want, want)
			for i := range want {
				if flush && expFlushes(d[i]) {
					want[i] = 0
				}
			}
			got := append([]float32(nil), x...)
			sum := k.ExpSubSum(got, m)
			var exact float64
			for i := range got {
				if k.Asm == ref.Asm && math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s n=%d: exp(x[%d]-m) = %v, want %v", lv, n, i, got[i], want[i])
				}
				if k.Asm != ref.Asm && math.Abs(float64(got[i]-want[i])) > 2e-7*float64(want[i])+subnormalAtol {
					t.Fatalf("%s n=%d: exp(x[%d]-m) = %v, want %v", lv, n, i, got[i], want[i])
				}
				exact += float64(got[i])
			}
			if math.Abs(float64(sum)-exact) > 1e-6*exact {
				t.Fatalf("%s n=%d: sum %v, want %v", lv, n, sum, exact)
			}
		}
		if !k.z {
			// NaNs of both signs in one lane, the rest finite: the sum's NaN
			// is the one the lane's additions keep.
			for _, n := range []int{64, 96, 1000} {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				// Then NaNs of both signs in lanes that the fold adds
				// together (j and j + w for each width w).
				for _, pair := range [][2]int{{3, 35}, {0, 16}, {16, 0}, {9, 25}, {25, 9}, {5, 13}, {1, 5}, {5, 1}, {1, 3}, {2, 0}, {0, 1}, {1, 0}} {
					x := append([]float32(nil), x...)
					x[pair[0]], x[pair[1]] = nan, -nan
					y := append([]float32(nil), x...)
					k.AddScalar(y, y, -1)
					k.Exp(y, y)
					if got, want := k.ExpSubSum(x, 1), k.Sum(y); math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("%s n=%d NaNs at %v: sum %#x, the three passes give %#x", lv, n, pair, math.Float32bits(got), math.Float32bits(want))
					}
				}
			}
		}
		x := []float32{0, inf, nan, 1}
		sum := k.ExpSubSum(x, 0)
		if x[0] != 1 || !math.IsInf(float64(x[1]), 1) || x[2] == x[2] || sum == sum {
			t.Fatalf("%s: special values gave %v, sum %v", lv, x, sum)
		}
		if s := k.ExpSubSum(nil, 3); s != 0 {
			t.Fatalf("%s: empty sum %v", lv, s)
		}
	}
}

// TestFor checks the level table: For gives each level the best kernels
// at or below it that this CPU runs, Levels lists each distinct table
// once, and the tables above generic are assembly.
func TestFor(t *testing.T) {
	lv := Levels()
	if lv[0] != cpulevel.Generic || For(cpulevel.Generic).Asm {
		t.Fatalf("Levels() = %v; generic must come first and be Go", lv)
	}
	for i, l := range lv {
		if got := For(l).Level; got != l {
			t.Errorf("For(%s).Level = %s", l, got)
		}
		if i > 0 && !For(l).Asm {
			t.Errorf("For(%s) is not assembly", l)
		}
	}
	for _, l := range cpulevel.All() {
		k := For(l)
		if cpulevel.Rank(k.Level) > cpulevel.Rank(l) {
			t.Errorf("For(%s) gives the higher level %s", l, k.Level)
		}
		if !cpulevel.Has(k.Level) {
			t.Errorf("For(%s) gives %s, which this CPU does not run", l, k.Level)
		}
		want := cpulevel.Generic
		for _, m := range lv {
			if cpulevel.Rank(m) <= cpulevel.Rank(l) {
				want = m
			}
		}
		if k.Level != want {
			t.Errorf("For(%s) = %s, want %s", l, k.Level, want)
		}
	}
	if For("no-such-level").Level != cpulevel.Generic {
		t.Errorf("an unknown level must give the generic kernels")
	}
	if cpulevel.Has(cpulevel.AVX2) && !slices.Contains(lv, cpulevel.AVX2) {
		t.Errorf("the CPU runs avx2 but Levels() = %v", lv)
	}
	// Say which levels the tests of this package did not run, and why.
	for _, l := range cpulevel.All() {
		switch {
		case slices.Contains(lv, l):
		case !cpulevel.Has(l):
			t.Logf("level %s: not run here (this CPU or build does not support it)", l)
		default:
			t.Logf("level %s: no kernels of its own; it runs %s's, tested above", l, For(l).Level)
		}
	}
}
