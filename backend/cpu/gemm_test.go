package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// levels returns the CPU levels this machine can run.
func levels() []string {
	return SupportedLevels()
}

func bytesOf[T any](s []T) []byte {
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

// operand is a 2-D matrix view [rows, cols] over a flat buffer.
type operand[T any] struct {
	data []T
	lay  op.Layout
}

func (o operand[T]) at(i, j int) T { return o.data[o.lay.Offset+i*o.lay.Strides[0]+j*o.lay.Strides[1]] }

// layouts of a rows x cols operand: row-major, transposed storage,
// strided (every other column of a wider buffer, with an offset) and a
// broadcast row (stride 0).
var layoutNames = []string{"rowmajor", "transposed", "strided", "bcastrow"}

func makeOperand[T any](r *rand.Rand, kind string, rows, cols int, gen func(*rand.Rand) T) operand[T] {
	var lay op.Layout
	n := rows * cols
	switch kind {
	case "rowmajor":
		lay = op.Layout{Shape: []int{rows, cols}, Strides: []int{cols, 1}}
	case "transposed":
		lay = op.Layout{Shape: []int{rows, cols}, Strides: []int{1, rows}}
	case "strided":
		lay = op.Layout{Shape: []int{rows, cols}, Strides: []int{2*cols + 1, 2}, Offset: 3}
		n = 3 + rows*(2*cols+1)
	case "bcastrow":
		lay = op.Layout{Shape: []int{rows, cols}, Strides: []int{0, 1}}
		n = cols
	}
	data := make([]T, max(n, 1))
	for i := range data {
		data[i] = gen(r)
	}
	return operand[T]{data, lay}
}

// matmul runs dot_general (contracting a's axis 1 with b's axis 0) through
// the CPU kernel and returns the row-major [m, n] result.
func matmul[T any](ks *kset, dt dtype.DType, prec string, a, b operand[T]) ([]T, error) {
	m, n := a.lay.Shape[0], b.lay.Shape[1]
	out := make([]T, max(m*n, 1))
	c := &Call{
		Launch: &device.Launch{
			Attrs: op.Attrs{"lhs_batch": []int{}, "rhs_batch": []int{}, "lhs_contract": []int{1}, "rhs_contract": []int{0}, "precision": prec},
			In:    []device.Operand{{DType: dt, Layout: a.lay}, {DType: dt, Layout: b.lay}},
			Out:   []device.Operand{{DType: dt, Layout: op.Contiguous([]int{m, n})}},
		},
		InB:  [][]byte{bytesOf(a.data), bytesOf(b.data)},
		OutB: [][]byte{bytesOf(out)},
		ks:   ks,
	}
	if err := dotGeneralKernel(c); err != nil {
		return nil, err
	}
	return out[:m*n], nil
}

// fma32 is an exactly rounded float32 fused multiply-add: the product of
// two float32 values is exact in float64, and rounding the float64 sum to
// odd before narrowing avoids double rounding (53 >= 24+2 bits).
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	if math.IsInf(s, 0) || math.IsNaN(s) || math.IsInf(p, 0) {
		return float32(s)
	}
	bv := s - p
	e := (p - (s - bv)) + (float64(c) - bv)
	if bits := math.Float64bits(s); e != 0 && bits&1 == 0 {
		if (e > 0) == (s > 0) {
			bits++
		} else {
			bits--
		}
		s = math.Float64frombits(bits)
	}
	return float32(s)
}

func sameF32(x, y float32) bool {
	return x == y && math.Signbit(float64(x)) == math.Signbit(float64(y)) || x != x && y != y
}

func TestFMA32Reference(t *testing.T) {
	tests := []struct{ a, b, c, want float32 }{
		{1, 1, 1, 2},
		{3, 5, -15, 0},
		// 1+2^-23 squared is 1+2^-22+2^-46: a separate multiply rounds
		// the 2^-46 away, the fused result keeps it against -(1+2^-22).
		{1 + 0x1p-23, 1 + 0x1p-23, -(1 + 0x1p-22), 0x1p-46},
		// Halfway case after the product: 1 + 2^-24 + 2^-48 rounds up.
		{1 + 0x1p-24*2, 0.5, 0.5 + 0x1p-48*0, 1 + 0x1p-24},
	}
	for _, tc := range tests {
		if got := fma32(tc.a, tc.b, tc.c); !sameF32(got, tc.want) {
			t.Errorf("fma32(%g, %g, %g) = %g, want %g", tc.a, tc.b, tc.c, got, tc.want)
		}
	}
	// A double-rounding tie: x = 1 + 2^-24 + 2^-60 is above the midpoint of
	// 1 and 1+2^-23, but x rounded to float64 is the midpoint itself.
	a, b := float32(1+0x1p-12), float32(1+0x1p-12) // a*b = 1 + 2^-11 + 2^-24
	c := float32(-0x1p-11)                         // a*b+c = 1 + 2^-24 exactly: a tie, to even
	if got := fma32(a, b, c); got != 1 {
		t.Errorf("tie: fma32 = %v, want 1", got)
	}
}

var gemmSizes = []int{1, 7, 15, 16, 17, 31, 33, 63, 65}

func genF32(r *rand.Rand) float32 { return float32(r.NormFloat64()) }

// TestGEMMF32Highest checks f32 highest on every level against references:
// the AVX2 kernel bit-exactly against a sequential exact-FMA chain in k
// order, the pure-Go kernel (FMA emulated in float64, which can double
// round a tie) within a K-scaled f32 tolerance of a float64 reference.
func TestGEMMF32Highest(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for _, m := range gemmSizes {
		for _, n := range gemmSizes {
			for _, k := range gemmSizes {
				la, lb := layoutNames[(m+n+k)%len(layoutNames)], layoutNames[(m*n+k)%len(layoutNames)]
				a := makeOperand(r, la, m, k, genF32)
				b := makeOperand(r, lb, k, n, genF32)
				for _, level := range levels() {
					var got []float32
					var err error
					ks := ksetFor(level)
					got, err = matmul(ks, dtype.F32, op.PrecisionHighest, a, b)
					if err != nil {
						t.Fatal(err)
					}
					name := fmt.Sprintf("%s m=%d n=%d k=%d a=%s b=%s", level, m, n, k, la, lb)
					if bad := checkF32(got, a, b, m, n, k, level != LevelGeneric); bad != "" {
						t.Fatalf("%s: %s", name, bad)
					}
				}
			}
		}
	}
}

func checkF32(got []float32, a, b operand[float32], m, n, k int, exact bool) string {
	if exact && (m == 1 || n == 1) && gemvIsDot(a, b, n, k) {
		// The matrix-vector dot form has its own order (gemm_gemv.go).
		return checkGEMVDotF32(got, a, b, m, n, k)
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var chain float32
			var ref, mag float64
			for p := 0; p < k; p++ {
				x, y := a.at(i, p), b.at(p, j)
				chain = fma32(x, y, chain)
				ref += float64(x) * float64(y)
				mag += math.Abs(float64(x) * float64(y))
			}
			g := got[i*n+j]
			if exact {
				if !sameF32(g, chain) {
					return fmt.Sprintf("[%d,%d] = %v, want FMA chain %v", i, j, g, chain)
				}
				continue
			}
			if tol := float64(k+1) * 0x1p-23 * mag; math.Abs(float64(g)-ref) > tol {
				return fmt.Sprintf("[%d,%d] = %v, float64 reference %v (tol %g)", i, j, g, ref, tol)
			}
		}
	}
	return ""
}

// TestGEMMF64 checks f64 on every level bit-exactly against a math.FMA chain
// in k order.
func TestGEMMF64(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	gen := func(r *rand.Rand) float64 { return r.NormFloat64() }
	for _, m := range gemmSizes {
		for _, n := range gemmSizes {
			for _, k := range []int{1, 16, 17, 65, 300} {
				la, lb := layoutNames[(m+2*n+k)%len(layoutNames)], layoutNames[(m+n*k)%len(layoutNames)]
				a := makeOperand(r, la, m, k, gen)
				b := makeOperand(r, lb, k, n, gen)
				for _, level := range levels() {
					var got []float64
					var err error
					ks := ksetFor(level)
					got, err = matmul(ks, dtype.F64, op.PrecisionHighest, a, b)
					if err != nil {
						t.Fatal(err)
					}
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							var want float64
							for p := 0; p < k; p++ {
								want = math.FMA(a.at(i, p), b.at(p, j), want)
							}
							if g := got[i*n+j]; g != want {
								t.Fatalf("%s m=%d n=%d k=%d: [%d,%d] = %v, want %v", level, m, n, k, i, j, g, want)
							}
						}
					}
				}
			}
		}
	}
}

// TestGEMMBF16Precisions checks f32 medium and high and bf16/f16 inputs:
// every product is exact in f32, so each level must equal, bit for bit, a
// sequential f32 sum of exact products (passes in order for high).
func TestGEMMBF16Precisions(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	sizes := []int{1, 7, 17, 33, 65}
	type pass struct{ a, b func(float32) float32 }
	for _, prec := range []string{op.PrecisionMedium, op.PrecisionHigh} {
		passes := []pass{{bf16Hi, bf16Hi}}
		if prec == op.PrecisionHigh {
			passes = []pass{{bf16Hi, bf16Hi}, {bf16Hi, bf16Lo}, {bf16Lo, bf16Hi}}
		}
		for _, m := range sizes {
			for _, n := range sizes {
				for _, k := range []int{1, 16, 65, 270} {
					a := makeOperand(r, layoutNames[(m+k)%4], m, k, genF32)
					b := makeOperand(r, layoutNames[(n+k)%4], k, n, genF32)
					for _, level := range levels() {
						var got []float32
						var err error
						ks := ksetFor(level)
						got, err = matmul(ks, dtype.F32, prec, a, b)
						if err != nil {
							t.Fatal(err)
						}
						for i := 0; i < m; i++ {
							for j := 0; j < n; j++ {
								var want float32
								for _, ps := range passes {
									for p := 0; p < k; p++ {
										want += ps.a(a.at(i, p)) * ps.b(b.at(p, j))
									}
								}
								if amxProduct(level, m, n) {
									want = amxRef(0, func(p int) float32 { return passes[p/k].a(a.at(i, p%k)) }, func(p int) float32 { return passes[p/k].b(b.at(p%k, j)) }, k*len(passes))
								}
								if g := got[i*n+j]; !sameF32(g, want) {
									t.Fatalf("%s %s m=%d n=%d k=%d: [%d,%d] = %v, want %v", prec, level, m, n, k, i, j, g, want)
								}
							}
						}
					}
				}
			}
		}
	}
	// bf16 and f16 storage: exact products, f32 sums, one final rounding.
	for i, dt := range []dtype.DType{dtype.BF16, dtype.F16, dtype.BF16, dtype.F16} {
		m, n, k := 19, 35, 70
		la, lb := "rowmajor", "rowmajor"
		if i >= 2 {
			la, lb = "transposed", "strided"
		}
		mk := func(lay string, rows, cols int) operand[uint16] {
			return makeOperand(r, lay, rows, cols, func(r *rand.Rand) uint16 {
				x := float32(r.NormFloat64())
				if dt == dtype.BF16 {
					return uint16(dtype.BF16FromF32(x))
				}
				return uint16(dtype.F16FromF32(x))
			})
		}
		to := func(h uint16) float32 {
			if dt == dtype.BF16 {
				return dtype.BFloat16(h).F32()
			}
			return dtype.Float16(h).F32()
		}
		a, b := mk(la, m, k), mk(lb, k, n)
		for _, level := range levels() {
			var got []uint16
			var err error
			ks := ksetFor(level)
			got, err = matmul(ks, dt, "", a, b)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					var acc float32
					for p := 0; p < k; p++ {
						acc += to(a.at(i, p)) * to(b.at(p, j))
					}
					if dt == dtype.BF16 && amxProduct(level, m, n) {
						acc = amxRef(0, func(p int) float32 { return to(a.at(i, p)) }, func(p int) float32 { return to(b.at(p, j)) }, k)
					}
					if g, w := to(got[i*n+j]), to(uint16(dtype.BF16FromF32(acc))); dt == dtype.BF16 && g != w {
						t.Fatalf("%s %s [%d,%d] = %v, want %v", dt, level, i, j, g, w)
					}
					if g, w := to(got[i*n+j]), to(uint16(dtype.F16FromF32(acc))); dt == dtype.F16 && g != w {
						t.Fatalf("%s %s [%d,%d] = %v, want %v", dt, level, i, j, g, w)
					}
				}
			}
		}
	}
}

// TestGEMMNonFinite checks NaN and Inf propagation on every level: the
// exact FMA chain reference is IEEE arithmetic, so NaN rows/columns and
// Inf-Inf cancellations must come out the same.
func TestGEMMNonFinite(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	m, n, k := 13, 21, 40
	a := makeOperand(r, "rowmajor", m, k, genF32)
	b := makeOperand(r, "rowmajor", k, n, genF32)
	inf := float32(math.Inf(1))
	a.data[2*k+5] = float32(math.NaN()) // row 2 all NaN
	a.data[7*k+3] = inf                 // row 7: +-Inf, or NaN where b[3,j] is 0
	b.data[3*n+4] = 0
	for i := 0; i < m; i++ {
		a.data[i*k+9], a.data[i*k+10] = 1, 2
	}
	b.data[9*n+11] = -inf // column 11: -Inf + Inf = NaN in every row
	b.data[10*n+11] = inf
	for _, level := range levels() {
		var got []float32
		var err error
		ks := ksetFor(level)
		got, err = matmul(ks, dtype.F32, op.PrecisionHighest, a, b)
		if err != nil {
			t.Fatal(err)
		}
		if bad := checkF32(got, a, b, m, n, k, true); level != LevelGeneric && bad != "" {
			t.Fatalf("%s: %s", level, bad)
		}
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				g := float64(got[i*n+j])
				wantNaN := i == 2 || (i == 7 && j == 4) || j == 11
				if wantNaN != math.IsNaN(g) {
					t.Fatalf("%s [%d,%d] = %v, want NaN: %v", level, i, j, g, wantNaN)
				}
				if i == 7 && !wantNaN && !math.IsInf(g, 0) {
					t.Fatalf("%s [%d,%d] = %v, want Inf", level, i, j, g)
				}
			}
		}
	}
}

// TestGEMMBatchedAndInts checks a batched contraction (batch axis first in
// both operands) and an integer dtype give the same on every level.
func TestGEMMBatchedAndInts(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	nb, m, n, k := 3, 20, 18, 37
	av := make([]float32, nb*m*k)
	bv := make([]float32, nb*n*k)
	for i := range av {
		av[i] = genF32(r)
	}
	for i := range bv {
		bv[i] = genF32(r)
	}
	ai := make([]int32, m*k)
	bi := make([]int32, k*n)
	for i := range ai {
		ai[i] = int32(r.IntN(2000) - 1000)
	}
	for i := range bi {
		bi[i] = int32(r.IntN(2000) - 1000)
	}
	for _, level := range levels() {
		ks := ksetFor(level)
		// a: [nb, m, k]; b stored [nb, n, k], contracted on its last axis.
		out := make([]float32, nb*m*n)
		c := &Call{ks: ks,
			Launch: &device.Launch{
				Attrs: op.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}, "lhs_contract": []int{2}, "rhs_contract": []int{2}, "precision": ""},
				In: []device.Operand{{DType: dtype.F32, Layout: op.Contiguous([]int{nb, m, k})},
					{DType: dtype.F32, Layout: op.Contiguous([]int{nb, n, k})}},
				Out: []device.Operand{{DType: dtype.F32, Layout: op.Contiguous([]int{nb, m, n})}},
			},
			InB: [][]byte{bytesOf(av), bytesOf(bv)}, OutB: [][]byte{bytesOf(out)},
		}
		if err := dotGeneralKernel(c); err != nil {
			t.Fatal(err)
		}
		for bb := 0; bb < nb; bb++ {
			a := operand[float32]{av, op.Layout{Shape: []int{m, k}, Strides: []int{k, 1}, Offset: bb * m * k}}
			b := operand[float32]{bv, op.Layout{Shape: []int{k, n}, Strides: []int{1, k}, Offset: bb * n * k}}
			if bad := checkF32(out[bb*m*n:(bb+1)*m*n], a, b, m, n, k, level != LevelGeneric); bad != "" {
				t.Fatalf("%s batch %d: %s", level, bb, bad)
			}
		}
		got, err := matmul(ks, dtype.I32, "", operand[int32]{ai, op.Contiguous([]int{m, k})}, operand[int32]{bi, op.Contiguous([]int{k, n})})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var want int32
				for p := 0; p < k; p++ {
					want += ai[i*k+p] * bi[p*n+j]
				}
				if got[i*n+j] != want {
					t.Fatalf("%s i32 [%d,%d] = %d, want %d", level, i, j, got[i*n+j], want)
				}
			}
		}
	}
}

// TestGEMMThreadIndependence checks results are bit-identical whatever the
// number of workers (the split changes, each element's FMA chain does not).
func TestGEMMThreadIndependence(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	m, n, k := 301, 197, 530
	a := makeOperand(r, "rowmajor", m, k, genF32)
	b := makeOperand(r, "transposed", k, n, genF32)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, level := range levels() {
		var ref []float32
		for _, procs := range []int{1, 2, 3, 8} {
			runtime.GOMAXPROCS(procs)
			var got []float32
			var err error
			ks := ksetFor(level)
			got, err = matmul(ks, dtype.F32, op.PrecisionHighest, a, b)
			if err != nil {
				t.Fatal(err)
			}
			if ref == nil {
				ref = got
				continue
			}
			for i := range got {
				if !sameF32(got[i], ref[i]) {
					t.Fatalf("%s GOMAXPROCS=%d: [%d] = %v, with 1 worker %v", level, procs, i, got[i], ref[i])
				}
			}
		}
	}
}

// TestGEMMSteadyStateAlloc checks a repeated 256^3 matmul reuses its
// packing buffers: what it allocates per call (offset tables, closures,
// goroutines) is far below one packed panel.
func TestGEMMSteadyStateAlloc(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	a := makeOperand(r, "rowmajor", 256, 256, genF32)
	b := makeOperand(r, "rowmajor", 256, 256, genF32)
	out := make([]float32, 256*256)
	c := &Call{
		Launch: &device.Launch{
			Attrs: op.Attrs{"lhs_batch": []int{}, "rhs_batch": []int{}, "lhs_contract": []int{1}, "rhs_contract": []int{0}, "precision": ""},
			In:    []device.Operand{{DType: dtype.F32, Layout: a.lay}, {DType: dtype.F32, Layout: b.lay}},
			Out:   []device.Operand{{DType: dtype.F32, Layout: op.Contiguous([]int{256, 256})}},
		},
		InB: [][]byte{bytesOf(a.data), bytesOf(b.data)}, OutB: [][]byte{bytesOf(out)},
	}
	for _, level := range levels() {
		ks := ksetFor(level)
		c.ks = ks
		run := func() {
			if err := dotGeneralKernel(c); err != nil {
				t.Fatal(err)
			}
		}
		run()
		var before, after runtime.MemStats
		const reps = 20
		allocs := testing.AllocsPerRun(reps, run)
		runtime.ReadMemStats(&before)
		for i := 0; i < reps; i++ {
			run()
		}
		runtime.ReadMemStats(&after)
		perCall := (after.TotalAlloc - before.TotalAlloc) / reps
		t.Logf("%s: %.0f allocs, %d bytes per 256^3 matmul", level, allocs, perCall)
		// One 256x256 f32 block of packed B alone is 256 KiB.
		if perCall > 32<<10 || allocs > 64 {
			t.Errorf("%s: %.0f allocs and %d bytes per call, want the packing buffers reused", level, allocs, perCall)
		}
	}
}

// BenchmarkGEMM reports GFLOP/s of square matmuls (f32 highest and f64) at
// every level; GOMAXPROCS sets the workers.
func BenchmarkGEMM(b *testing.B) {
	for _, dt := range []dtype.DType{dtype.F32, dtype.F64} {
		for _, size := range []int{256, 512, 1024, 2048} {
			for _, level := range levels() {
				if level == LevelGeneric && size > 1024 {
					continue // minutes per op
				}
				b.Run(fmt.Sprintf("%s/%d/%s", dt, size, level), func(b *testing.B) {
					ks := ksetFor(level)
					benchGEMM(b, ks, dt, size)
				})
			}
		}
	}
}

func benchGEMM(b *testing.B, ks *kset, dt dtype.DType, size int) {
	r := rand.New(rand.NewPCG(1, 1))
	n := size * size
	ab, bb, ob := make([]byte, n*dt.Size()), make([]byte, n*dt.Size()), make([]byte, n*dt.Size())
	for i := 0; i < n; i++ {
		if dt == dtype.F32 {
			as[float32](ab)[i], as[float32](bb)[i] = genF32(r), genF32(r)
		} else {
			as[float64](ab)[i], as[float64](bb)[i] = r.NormFloat64(), r.NormFloat64()
		}
	}
	lay := op.Contiguous([]int{size, size})
	c := &Call{
		Launch: &device.Launch{
			Attrs: op.Attrs{"lhs_batch": []int{}, "rhs_batch": []int{}, "lhs_contract": []int{1}, "rhs_contract": []int{0}, "precision": ""},
			In:    []device.Operand{{DType: dt, Layout: lay}, {DType: dt, Layout: lay}},
			Out:   []device.Operand{{DType: dt, Layout: lay}},
		},
		InB: [][]byte{ab, bb}, OutB: [][]byte{ob},
	}
	b.ResetTimer()
	cpu0 := cpuSeconds()
	for i := 0; i < b.N; i++ {
		if err := dotGeneralKernel(c); err != nil {
			b.Fatal(err)
		}
	}
	flops := 2 * float64(size) * float64(size) * float64(size) * float64(b.N)
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	// On a shared, loaded machine wall time mostly measures the neighbours;
	// flops per CPU-second of this process is the kernel's own efficiency
	// (multiply by the workers for the uncontended wall-clock rate).
	if cs := cpuSeconds() - cpu0; cs > 0 {
		b.ReportMetric(flops/cs/1e9, "GFLOP/cpu-s")
	}
}

// cpuSeconds is the process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// BenchmarkGEMMShapes covers the other shapes training hits: the bf16
// precisions, a transposed left operand (weight gradients), and
// matrix-vector products (decode-shaped linears).
func BenchmarkGEMMShapes(b *testing.B) {
	tests := []struct {
		name      string
		prec      string
		m, n, k   int
		la        string
		skipSlowG bool
	}{
		{"medium/512", op.PrecisionMedium, 512, 512, 512, "rowmajor", false},
		{"high/512", op.PrecisionHigh, 512, 512, 512, "rowmajor", true},
		{"aT/512", op.PrecisionHighest, 512, 512, 512, "transposed", false},
		{"m1/2048", op.PrecisionHighest, 1, 2048, 2048, "rowmajor", false},
		{"n1/2048", op.PrecisionHighest, 2048, 1, 2048, "rowmajor", false},
	}
	for _, tc := range tests {
		for _, level := range levels() {
			if level == LevelGeneric && tc.skipSlowG {
				continue
			}
			b.Run(tc.name+"/"+level, func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 1))
				a := makeOperand(r, tc.la, tc.m, tc.k, genF32)
				bo := makeOperand(r, "rowmajor", tc.k, tc.n, genF32)
				ks := ksetFor(level)
				b.ResetTimer()
				cpu0 := cpuSeconds()
				for i := 0; i < b.N; i++ {
					if _, err := matmul(ks, dtype.F32, tc.prec, a, bo); err != nil {
						b.Fatal(err)
					}
				}
				flops := 2 * float64(tc.m) * float64(tc.n) * float64(tc.k) * float64(b.N)
				b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				if cs := cpuSeconds() - cpu0; cs > 0 {
					b.ReportMetric(flops/cs/1e9, "GFLOP/cpu-s")
				}
			})
		}
	}
}

// BenchmarkGEMV reports the matrix-vector products of a batch-1 decode
// step (x·W and x·Wᵀ for 768x3072 and 3072x768 weights) in GB/s of the
// weight read, next to a plain copy of the same bytes split over the same
// workers (GB/s of bytes copied): the memory-bound ceiling.
func BenchmarkGEMV(b *testing.B) {
	shapes := [][2]int{{768, 3072}, {3072, 768}}
	for _, sh := range shapes {
		in, out := sh[0], sh[1]
		r := rand.New(rand.NewPCG(1, 1))
		x := makeOperand(r, "rowmajor", 1, in, genF32)
		w := makeOperand(r, "rowmajor", in, out, genF32)    // x·W: [in, out]
		wt := makeOperand(r, "transposed", in, out, genF32) // x·Wᵀ: W stored [out, in]
		bytes := float64(in * out * 4)
		for _, tc := range []struct {
			name string
			w    operand[float32]
		}{{"xW", w}, {"xWt", wt}} {
			for _, level := range levels() {
				b.Run(fmt.Sprintf("%s/%dx%d/%s", tc.name, in, out, level), func(b *testing.B) {
					ks := ksetFor(level)
					for i := 0; i < b.N; i++ {
						if _, err := matmul(ks, dtype.F32, op.PrecisionHighest, x, tc.w); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
				})
			}
		}
		b.Run(fmt.Sprintf("copy/%dx%d", in, out), func(b *testing.B) {
			dst := make([]float32, in*out)
			src := w.data
			nw := runtime.GOMAXPROCS(0)
			for i := 0; i < b.N; i++ {
				pool.Run(nw, nil, func(tid, nw int) {
					lo, hi := len(src)*tid/nw, len(src)*(tid+1)/nw
					copy(dst[lo:hi], src[lo:hi])
				})
			}
			b.ReportMetric(bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// TestGEMMPrecisionBounds checks the bf16 precisions at larger K against
// their definitions through float64 references: medium (inputs rounded to
// bf16, exact products, f32 sums) within the f32 summation bound
// k·2⁻²⁴·Σ|products| of the exact sum of the bf16 products; high within
// that bound for three passes plus the split's own error (2⁻¹⁵·Σ|x·y|) of
// the exact f32 product; and NaN/Inf inputs stay non-finite.
func TestGEMMPrecisionBounds(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(19, 20))
	for _, tc := range []struct {
		m, n, k int
		la, lb  string
	}{
		{9, 23, 1000, "rowmajor", "rowmajor"},
		{31, 17, 4099, "transposed", "rowmajor"},
		{65, 33, 777, "strided", "transposed"},
		{1, 70, 2000, "rowmajor", "transposed"},
		{70, 1, 2000, "rowmajor", "rowmajor"},
	} {
		a := makeOperand(r, tc.la, tc.m, tc.k, genF32)
		b := makeOperand(r, tc.lb, tc.k, tc.n, genF32)
		for _, prec := range []string{op.PrecisionMedium, op.PrecisionHigh} {
			for _, level := range levels() {
				var got []float32
				var err error
				ks := ksetFor(level)
				got, err = matmul(ks, dtype.F32, prec, a, b)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < tc.m; i++ {
					for j := 0; j < tc.n; j++ {
						var ref, mag float64
						for p := 0; p < tc.k; p++ {
							x, y := a.at(i, p), b.at(p, j)
							if prec == op.PrecisionMedium {
								x, y = dtype.RoundBF16(x), dtype.RoundBF16(y)
							}
							ref += float64(x) * float64(y)
							mag += math.Abs(float64(x) * float64(y))
						}
						tol := 1.01 * float64(tc.k) * 0x1p-24 * mag
						if prec == op.PrecisionHigh {
							tol = 3*tol + 0x1p-15*mag
						}
						if g := float64(got[i*tc.n+j]); math.Abs(g-ref) > tol {
							t.Fatalf("%s %s m=%d n=%d k=%d [%d,%d] = %v, reference %v (tol %g)", prec, level, tc.m, tc.n, tc.k, i, j, g, ref, tol)
						}
					}
				}
			}
		}
	}
	// Non-finite inputs: a NaN row and an Inf column stay non-finite.
	m, n, k := 8, 20, 50
	a := makeOperand(r, "rowmajor", m, k, genF32)
	b := makeOperand(r, "rowmajor", k, n, genF32)
	a.data[3*k+7] = float32(math.NaN())
	for p := 0; p < k; p++ {
		b.data[p*n+5] = 1
	}
	b.data[11*n+5] = float32(math.Inf(1))
	for _, prec := range []string{op.PrecisionMedium, op.PrecisionHigh} {
		for _, level := range levels() {
			var got []float32
			ks := ksetFor(level)
			got, _ = matmul(ks, dtype.F32, prec, a, b)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					g := float64(got[i*n+j])
					wantNaN := i == 3 || (prec == op.PrecisionHigh && j == 5) // high: Inf - RoundBF16(Inf) is NaN
					if wantNaN != math.IsNaN(g) {
						t.Fatalf("%s %s [%d,%d] = %v, want NaN %v", prec, level, i, j, g, wantNaN)
					}
					if !wantNaN && j == 5 && !math.IsInf(g, 0) {
						t.Fatalf("%s %s [%d,%d] = %v, want ±Inf", prec, level, i, j, g)
					}
				}
			}
		}
	}
}

// TestGEMMF32Entry checks the plain entry point on every level: all four
// transpose combinations with padded leading dimensions, bit-exact against
// the FMA chain on AVX2 (the float64 reference bound on the pure-Go
// level), and the epilogue hook called exactly once on every element.
func TestGEMMF32Entry(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, sz := range [][3]int{{1, 1, 1}, {7, 33, 17}, {65, 16, 63}, {130, 97, 300}, {1, 300, 70}, {300, 1, 70}, {5, 5, 0}} {
		m, n, k := sz[0], sz[1], sz[2]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				ra, ca := m, k
				if tA {
					ra, ca = k, m
				}
				rb, cb := k, n
				if tB {
					rb, cb = n, k
				}
				lda, ldb, ldc := ca+3, cb+5, n+2
				a := make([]float32, max(ra*lda, 1))
				b := make([]float32, max(rb*ldb, 1))
				for i := range a {
					a[i] = genF32(r)
				}
				for i := range b {
					b[i] = genF32(r)
				}
				opA := operand[float32]{a, op.Layout{Shape: []int{m, k}, Strides: []int{lda, 1}}}
				if tA {
					opA.lay.Strides = []int{1, lda}
				}
				opB := operand[float32]{b, op.Layout{Shape: []int{k, n}, Strides: []int{ldb, 1}}}
				if tB {
					opB.lay.Strides = []int{1, ldb}
				}
				for _, level := range levels() {
					c := make([]float32, m*ldc)
					for i := range c {
						c[i] = float32(math.NaN()) // must be overwritten
					}
					var mu sync.Mutex
					seen := make([]int, m*n)
					ks := ksetFor(level)
					gemmF32(ks, m, n, k, a, lda, tA, b, ldb, tB, c, ldc, func(i0, j0, mc, nc int, ct []float32, ld int) {
						mu.Lock()
						defer mu.Unlock()
						for i := 0; i < mc; i++ {
							for j := 0; j < nc; j++ {
								seen[(i0+i)*n+j0+j]++
								if &ct[i*ld+j] != &c[(i0+i)*ldc+j0+j] {
									t.Errorf("epilogue tile element (%d,%d) is not C's", i0+i, j0+j)
								}
							}
						}
					})
					got := make([]float32, m*n)
					for i := 0; i < m; i++ {
						copy(got[i*n:(i+1)*n], c[i*ldc:i*ldc+n])
					}
					name := fmt.Sprintf("%s m=%d n=%d k=%d tA=%v tB=%v", level, m, n, k, tA, tB)
					if bad := checkF32(got, opA, opB, m, n, k, level != LevelGeneric); bad != "" {
						t.Fatalf("%s: %s", name, bad)
					}
					for i, s := range seen {
						if s != 1 {
							t.Fatalf("%s: epilogue saw element %d %d times", name, i, s)
						}
					}
				}
			}
		}
	}
}

// BenchmarkGEMMSmall reports small and skinny f32 products through the
// plain entry point (no launch overhead), where packing and threading
// costs show.
func BenchmarkGEMMSmall(b *testing.B) {
	for _, sz := range [][3]int{{8, 8, 8}, {16, 16, 16}, {32, 32, 32}, {64, 64, 64}, {128, 128, 128}, {16, 512, 512}, {512, 16, 512}, {512, 512, 16}} {
		m, n, k := sz[0], sz[1], sz[2]
		r := rand.New(rand.NewPCG(1, 1))
		a, bb, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
		for i := range a {
			a[i] = genF32(r)
		}
		for i := range bb {
			bb[i] = genF32(r)
		}
		for _, level := range levels() {
			b.Run(fmt.Sprintf("%dx%dx%d/%s", m, n, k, level), func(b *testing.B) {
				ks := ksetFor(level)
				for i := 0; i < b.N; i++ {
					gemmF32(ks, m, n, k, a, k, false, bb, n, false, c, n, nil)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestGEMMBroadcastBatch checks batched products whose right operand is
// broadcast over the batch (batch stride 0, as an expanded view in a
// matmul broadcast), on shapes that take each path (blocked with batches
// in parallel or one by one, unpacked small, matrix-vector), with 1 and 2
// workers, bit-exactly against the FMA chain on AVX2.
func TestGEMMBroadcastBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, sz := range [][4]int{{4, 70, 90, 200}, {3, 130, 100, 150}, {5, 10, 20, 30}, {2, 1, 300, 90}, {3, 200, 1, 90}, {1, 140, 150, 100}} {
		nb, m, n, k := sz[0], sz[1], sz[2], sz[3]
		av := make([]float32, nb*m*k)
		bv := make([]float32, k*n)
		for i := range av {
			av[i] = genF32(r)
		}
		for i := range bv {
			bv[i] = genF32(r)
		}
		for _, procs := range []int{1, 2} {
			runtime.GOMAXPROCS(procs)
			for _, level := range levels() {
				ks := ksetFor(level)
				out := make([]float32, nb*m*n)
				c := &Call{ks: ks,
					Launch: &device.Launch{
						Attrs: op.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}, "lhs_contract": []int{2}, "rhs_contract": []int{1}, "precision": ""},
						In: []device.Operand{{DType: dtype.F32, Layout: op.Contiguous([]int{nb, m, k})},
							{DType: dtype.F32, Layout: op.Layout{Shape: []int{nb, k, n}, Strides: []int{0, n, 1}}}},
						Out: []device.Operand{{DType: dtype.F32, Layout: op.Contiguous([]int{nb, m, n})}},
					},
					InB: [][]byte{bytesOf(av), bytesOf(bv)}, OutB: [][]byte{bytesOf(out)},
				}
				if err := dotGeneralKernel(c); err != nil {
					t.Fatal(err)
				}
				for bb := 0; bb < nb; bb++ {
					a := operand[float32]{av, op.Layout{Shape: []int{m, k}, Strides: []int{k, 1}, Offset: bb * m * k}}
					b := operand[float32]{bv, op.Contiguous([]int{k, n})}
					if bad := checkF32(out[bb*m*n:(bb+1)*m*n], a, b, m, n, k, level != LevelGeneric); bad != "" {
						t.Fatalf("%s procs=%d nb=%d m=%d n=%d k=%d batch %d: %s", level, procs, nb, m, n, k, bb, bad)
					}
				}
			}
		}
	}
}

// TestRoundBF16Slices checks the in-place bf16 rounding of packed panels
// (vector and scalar parts) bit for bit against dtype.RoundBF16 and the
// hi/lo split's definition, over special values (NaN payloads, ±Inf,
// subnormals, ties) and random bit patterns.
func TestRoundBF16Slices(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(25, 26))
	vals := []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffbfffff, 0x00000001, 0x807fffff,
		0x3f808000, 0x3f818000, 0x3f80ffff, 0x7f7fffff, 0x7f7f8000, 0x00008000, 0x00018000}
	for len(vals) < 1003 {
		vals = append(vals, r.Uint32())
	}
	for i, lo := range []bool{false, true, false, true} {
		x := make([]float32, len(vals))
		for i, v := range vals {
			x[i] = math.Float32frombits(v)
		}
		level := levels()[i/2%len(levels())]
		ks := ksetFor(level)
		if lo {
			ks.vec.RoundLo(x)
		} else {
			ks.vec.RoundHi(x)
		}
		for i, v := range vals {
			f := math.Float32frombits(v)
			want := bf16Hi(f)
			if lo {
				want = bf16Lo(f)
			}
			if g := x[i]; math.Float32bits(g) != math.Float32bits(want) {
				t.Fatalf("%s lo=%v %#08x: got %#08x, want %#08x", level, lo, v, math.Float32bits(g), math.Float32bits(want))
			}
		}
	}
}
