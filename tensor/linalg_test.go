package tensor_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// The golden cases keep tensors tiny; these tests run the GEMM and the
// convolution on shapes that cross every cache block (MC=64, NC=256,
// KC=256), in parallel, against straightforward references.

var laDev = tensor.MustDevice("cpu")

func randF64(r *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = r.NormFloat64()
	}
	return out
}

func toF32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func transposeT(t *tensor.Tensor) *tensor.Tensor {
	r := t.Dim()
	perm := make([]int, r)
	for i := range perm {
		perm[i] = i
	}
	perm[r-2], perm[r-1] = r-1, r-2
	return tensor.Apply1("permute", []*tensor.Tensor{t}, op.Attrs{"dims": perm})
}

// naiveMM returns a (m x k) @ b (k x n) in float64.
func naiveMM(a, b []float64, m, k, n int) []float64 {
	out := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for p := 0; p < k; p++ {
			av := a[i*k+p]
			for j := 0; j < n; j++ {
				out[i*n+j] += av * b[p*n+j]
			}
		}
	}
	return out
}

func TestMatmulBlocked(t *testing.T) {
	cases := []struct {
		m, k, n    int
		dt         dtype.DType
		transposeA bool
		transposeB bool
	}{
		{70, 300, 260, dtype.F64, false, false},
		{70, 300, 260, dtype.F64, true, true},
		{65, 257, 5, dtype.F32, false, true},
		{1, 513, 300, dtype.F32, false, false},
		{129, 3, 1, dtype.F64, true, false},
		{33, 260, 17, dtype.BF16, false, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%dx%dx%d/%s/tA=%v/tB=%v", c.m, c.k, c.n, c.dt, c.transposeA, c.transposeB), func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(c.m*c.k*c.n)))
			av, bv := randF64(r, c.m*c.k), randF64(r, c.k*c.n)
			mk := func(v []float64, rows, cols int, tr bool) *tensor.Tensor {
				if !tr {
					return tensor.FromSlice(laDev, v, rows, cols)
				}
				tv := make([]float64, len(v))
				for i := 0; i < rows; i++ {
					for j := 0; j < cols; j++ {
						tv[j*rows+i] = v[i*cols+j]
					}
				}
				return transposeT(tensor.FromSlice(laDev, tv, cols, rows))
			}
			a, b := mk(av, c.m, c.k, c.transposeA), mk(bv, c.k, c.n, c.transposeB)
			if c.dt != dtype.F64 {
				a = tensor.Apply1("convert", []*tensor.Tensor{a}, op.Attrs{"dtype": c.dt})
				b = tensor.Apply1("convert", []*tensor.Tensor{b}, op.Attrs{"dtype": c.dt})
				// The reference sees the rounded inputs.
				av, bv = a.Float64s(), b.Float64s()
			}
			got := tensor.Matmul(a, b).Float64s()
			want := naiveMM(av, bv, c.m, c.k, c.n)
			rtol, atol := 1e-12, 1e-12
			switch c.dt {
			case dtype.F32:
				rtol, atol = 1e-5, 1e-4
			case dtype.BF16:
				rtol, atol = 1e-2, 5e-2
			}
			for i := range want {
				if math.Abs(got[i]-want[i]) > atol+rtol*math.Abs(want[i]) {
					t.Fatalf("element %d: got %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
}

// TestDotGeneralPrecisionExact checks the f32 precision modes bit for bit
// against sequential emulations of their contracts: highest is an f32 FMA
// chain, medium sums exact bf16 products in f32, high sums the hi*hi, hi*lo
// and lo*hi passes in f32 (in that order over K), on a K that spans several
// KC blocks.
func TestDotGeneralPrecisionExact(t *testing.T) {
	// 3x5 runs the tiled kernels; 1xN and Mx1 the matrix-vector path. 1xN
	// (B contiguous along n, the axpy form) gives the same bits; Mx1 at
	// highest (A contiguous along k, the dot form) has its own documented
	// summation order (backend/cpu/gemm_gemv.go) and is checked within
	// tolerance of the chain and for determinism.
	for _, sz := range [][3]int{{3, 600, 5}, {1, 600, 5}, {3, 600, 1}} {
		t.Run(fmt.Sprint(sz), func(t *testing.T) { precisionExact(t, sz[0], sz[1], sz[2]) })
	}
}

func precisionExact(t *testing.T, m, k, n int) {
	r := rand.New(rand.NewPCG(7, 9))
	av, bv := toF32(randF64(r, m*k)), toF32(randF64(r, k*n))
	a, b := tensor.FromSlice(laDev, av, m, k), tensor.FromSlice(laDev, bv, k, n)
	hi := func(x float32) float32 { return dtype.RoundBF16(x) }
	lo := func(x float32) float32 { return dtype.RoundBF16(x - dtype.RoundBF16(x)) }
	type term struct{ fa, fb func(float32) float32 }
	id := func(x float32) float32 { return x }
	modes := map[string][]term{
		"highest": {{id, id}},
		"medium":  {{hi, hi}},
		"high":    {{hi, hi}, {hi, lo}, {lo, hi}},
	}
	for prec, passes := range modes {
		got := tensor.DotGeneral(a, b, tensor.DotGeneralDims{LhsContract: []int{1}, RhsContract: []int{0}, Precision: prec}).Float32s()
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var acc float32
				for _, ps := range passes {
					for p := 0; p < k; p++ {
						x, y := ps.fa(av[i*k+p]), ps.fb(bv[p*n+j])
						acc = float32(math.FMA(float64(x), float64(y), float64(acc)))
					}
				}
				if prec != "highest" && m > 1 && n > 1 && cpu.CPULevel() == cpu.LevelAMX {
					// The AMX tiles' contract (backend/cpu/amx.go): per chunk of
					// 32 steps of the passes' concatenated k, an even-step and an
					// odd-step chain, summed and added (no denormals here).
					kk := k * len(passes)
					f := func(p int) (float32, float32) {
						ps := passes[p/k]
						return ps.fa(av[i*k+p%k]), ps.fb(bv[(p%k)*n+j])
					}
					fma := func(x, y, z float32) float32 { return float32(math.FMA(float64(x), float64(y), float64(z))) }
					acc = 0
					for c := 0; c < kk; c += 32 {
						var e, o float32
						for p := c; p < min(c+32, kk); p++ {
							x, y := f(p)
							if p%2 == 0 {
								e = fma(x, y, e)
							} else {
								o = fma(x, y, o)
							}
						}
						acc += e + o
					}
				}
				if dotForm := n == 1 && prec == "highest"; dotForm {
					if d := math.Abs(float64(got[i*n+j] - acc)); d > 1e-5*math.Abs(float64(acc))+1e-5 {
						t.Fatalf("%s [%d,%d]: got %v, want %v within tolerance", prec, i, j, got[i*n+j], acc)
					}
				} else if got[i*n+j] != acc {
					t.Fatalf("%s [%d,%d]: got %v, want %v", prec, i, j, got[i*n+j], acc)
				}
			}
		}
	}
	// The modes must actually differ on random data.
	h := tensor.DotGeneral(a, b, tensor.DotGeneralDims{LhsContract: []int{1}, RhsContract: []int{0}, Precision: "highest"}).Float32s()
	md := tensor.DotGeneral(a, b, tensor.DotGeneralDims{LhsContract: []int{1}, RhsContract: []int{0}, Precision: "medium"}).Float32s()
	same := true
	for i := range h {
		if h[i] != md[i] {
			same = false
		}
	}
	if same {
		t.Fatal("medium and highest gave identical results")
	}
}

func TestMatmulPrecisionSetting(t *testing.T) {
	a := tensor.FromSlice(laDev, []float32{1 + 1.0/1024, 1}, 1, 2)
	b := tensor.FromSlice(laDev, []float32{1, 1}, 2, 1)
	prev := tensor.SetMatmulPrecision("medium")
	defer tensor.SetMatmulPrecision(prev)
	if got := tensor.Matmul(a, b).Item(); got != 2 {
		t.Fatalf("medium: got %v, want 2 (1+2^-10 rounds to 1 in bf16)", got)
	}
	tensor.SetMatmulPrecision("highest")
	if got := tensor.Matmul(a, b).Item(); got != 2+1.0/1024 {
		t.Fatalf("highest: got %v, want %v", got, 2+1.0/1024)
	}
	if err := tensor.Catch(func() { tensor.SetMatmulPrecision("fast") }); err == nil {
		t.Fatal("unknown precision accepted")
	}
}

func TestIntMatmulWraps(t *testing.T) {
	const k = 300
	av, bv := make([]int8, k), make([]int8, k)
	var want int64
	for i := range av {
		av[i], bv[i] = int8(100-i%7), int8(i%5-90)
		want += int64(av[i]) * int64(bv[i])
	}
	got := tensor.Matmul(tensor.FromSlice(laDev, av, 1, k), tensor.FromSlice(laDev, bv, k, 1)).Int64s()[0]
	if got != int64(int8(want)) {
		t.Fatalf("got %d, want %d (wrapped from %d)", got, int8(want), want)
	}
}

// naiveConv2d is a direct 2-d (transposed) convolution in float64.
func naiveConv2d(x, w []float64, n, cin, h, wd, cout, kh, kw, s, p, d, g int, transposed bool) ([]float64, int, int) {
	var oh, ow int
	if transposed {
		oh, ow = (h-1)*s-2*p+d*(kh-1)+1, (wd-1)*s-2*p+d*(kw-1)+1
	} else {
		oh, ow = (h+2*p-d*(kh-1)-1)/s+1, (wd+2*p-d*(kw-1)-1)/s+1
	}
	out := make([]float64, n*cout*oh*ow)
	cinG, coutG := cin/g, cout/g
	for b := 0; b < n; b++ {
		for gi := 0; gi < g; gi++ {
			for co := 0; co < coutG; co++ {
				for ci := 0; ci < cinG; ci++ {
					for i := 0; i < kh; i++ {
						for j := 0; j < kw; j++ {
							var wv float64
							if transposed {
								wv = w[(((gi*cinG+ci)*coutG+co)*kh+i)*kw+j]
							} else {
								wv = w[(((gi*coutG+co)*cinG+ci)*kh+i)*kw+j]
							}
							if transposed {
								for y := 0; y < h; y++ {
									for xx := 0; xx < wd; xx++ {
										oy, ox := y*s-p+i*d, xx*s-p+j*d
										if oy < 0 || oy >= oh || ox < 0 || ox >= ow {
											continue
										}
										out[((b*cout+gi*coutG+co)*oh+oy)*ow+ox] += wv * x[((b*cin+gi*cinG+ci)*h+y)*wd+xx]
									}
								}
								continue
							}
							for oy := 0; oy < oh; oy++ {
								for ox := 0; ox < ow; ox++ {
									y, xx := oy*s-p+i*d, ox*s-p+j*d
									if y < 0 || y >= h || xx < 0 || xx >= wd {
										continue
									}
									out[((b*cout+gi*coutG+co)*oh+oy)*ow+ox] += wv * x[((b*cin+gi*cinG+ci)*h+y)*wd+xx]
								}
							}
						}
					}
				}
			}
		}
	}
	return out, oh, ow
}

func TestConv2dLarge(t *testing.T) {
	cases := []struct {
		n, cin, h, w, cout, kh, kw, s, p, d, g int
		transposed                             bool
	}{
		{2, 6, 20, 23, 8, 3, 3, 1, 1, 1, 1, false},
		{1, 8, 17, 19, 6, 3, 2, 2, 1, 2, 2, false},
		{2, 36, 9, 9, 70, 3, 3, 1, 0, 1, 1, false}, // K = 324 > KC, M = 70 > MC
		{2, 6, 7, 9, 4, 3, 3, 2, 1, 1, 2, true},
		{1, 4, 11, 5, 6, 2, 3, 3, 0, 2, 1, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, uint64(c.cin*c.h)))
			xv := randF64(r, c.n*c.cin*c.h*c.w)
			var wshape []int
			if c.transposed {
				wshape = []int{c.cin, c.cout / c.g, c.kh, c.kw}
			} else {
				wshape = []int{c.cout, c.cin / c.g, c.kh, c.kw}
			}
			wv := randF64(r, op.Numel(wshape))
			bv := randF64(r, c.cout)
			x := tensor.FromSlice(laDev, xv, c.n, c.cin, c.h, c.w)
			w := tensor.FromSlice(laDev, wv, wshape...)
			b := tensor.FromSlice(laDev, bv, c.cout)
			var got *tensor.Tensor
			if c.transposed {
				got = tensor.ConvTranspose2d(x, w, b, tensor.ConvTransposeOpts{Stride: []int{c.s}, Padding: []int{c.p}, Dilation: []int{c.d}, Groups: c.g})
			} else {
				got = tensor.Conv2d(x, w, b, tensor.Conv2dOpts{Stride: []int{c.s}, Padding: []int{c.p}, Dilation: []int{c.d}, Groups: c.g})
			}
			want, oh, ow := naiveConv2d(xv, wv, c.n, c.cin, c.h, c.w, c.cout, c.kh, c.kw, c.s, c.p, c.d, c.g, c.transposed)
			if s := got.Shape(); s[2] != oh || s[3] != ow {
				t.Fatalf("shape %v, want spatial %dx%d", s, oh, ow)
			}
			gv := got.Float64s()
			for i := range want {
				wi := want[i] + bv[(i/(oh*ow))%c.cout]
				if math.Abs(gv[i]-wi) > 1e-11*(1+math.Abs(wi)) {
					t.Fatalf("element %d: got %v, want %v", i, gv[i], wi)
				}
			}
		})
	}
}

func TestEinsumMatchesMatmul(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	a := tensor.FromSlice(laDev, randF64(r, 3*40*70), 3, 40, 70)
	b := tensor.FromSlice(laDev, randF64(r, 3*70*30), 3, 70, 30)
	want := tensor.Bmm(a, b).Float64s()
	for _, eq := range []string{"bij,bjk->bik", "...ij,...jk->...ik", "bij,bjk->...bik"} {
		got := tensor.Einsum(eq, a, b).Float64s()
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
				t.Fatalf("%s element %d: got %v, want %v", eq, i, got[i], want[i])
			}
		}
	}
	// Trace of a product through three operands with a repeated label.
	m := tensor.FromSlice(laDev, randF64(r, 16), 4, 4)
	tr := tensor.Einsum("ij,jk,ki->", m, m, m).Item()
	mm := tensor.Matmul(tensor.Matmul(m, m), m)
	if want := tensor.Einsum("ii", mm).Item(); math.Abs(tr-want) > 1e-12*(1+math.Abs(want)) {
		t.Fatalf("trace: got %v, want %v", tr, want)
	}
}

func TestLinalgShapeErrors(t *testing.T) {
	f32 := func(s ...int) *tensor.Tensor { return tensor.FromSlice(laDev, make([]float32, op.Numel(s)), s...) }
	cases := []struct {
		name string
		fn   func()
		want string
	}{
		{"mm", func() { tensor.Mm(f32(2, 3), f32(4, 5)) }, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"},
		{"matmul", func() { tensor.Matmul(f32(2, 3), f32(4, 5)) }, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"},
		{"linear", func() { tensor.Linear(f32(2, 3), f32(4, 5), nil) }, "(2x3 and 5x4)"},
		{"conv2d", func() { tensor.Conv2d(f32(1, 2, 5, 5), f32(3, 3, 2, 2), nil, tensor.Conv2dOpts{}) }, "to have 3 channels, but got 2 channels instead"},
		{"max_pool2d", func() { tensor.MaxPool2d(f32(1, 1, 4, 4), tensor.PoolOpts{KernelSize: []int{2}, Padding: []int{2}}) }, "pad should be at most half"},
		{"einsum", func() { tensor.Einsum("ij,jk->ik", f32(2, 3), f32(4, 5)) }, "subscript j has size 4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := tensor.Catch(c.fn)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func benchMatmul(b *testing.B, n int, dt dtype.DType, prec string) {
	r := rand.New(rand.NewPCG(1, 2))
	x := tensor.Apply1("convert", []*tensor.Tensor{tensor.FromSlice(laDev, randF64(r, n*n), n, n)}, op.Attrs{"dtype": dt})
	y := tensor.Apply1("convert", []*tensor.Tensor{tensor.FromSlice(laDev, randF64(r, n*n), n, n)}, op.Attrs{"dtype": dt})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tensor.MatmulPrec(x, y, prec)
	}
	b.ReportMetric(2*float64(n*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkMatmulF32_256(b *testing.B)       { benchMatmul(b, 256, dtype.F32, "highest") }
func BenchmarkMatmulF32_512(b *testing.B)       { benchMatmul(b, 512, dtype.F32, "highest") }
func BenchmarkMatmulF32Medium_512(b *testing.B) { benchMatmul(b, 512, dtype.F32, "medium") }
func BenchmarkMatmulF64_512(b *testing.B)       { benchMatmul(b, 512, dtype.F64, "") }
func BenchmarkMatmulBF16_512(b *testing.B)      { benchMatmul(b, 512, dtype.BF16, "") }

func BenchmarkConv2d(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := tensor.FromSlice(laDev, toF32(randF64(r, 8*64*28*28)), 8, 64, 28, 28)
	w := tensor.FromSlice(laDev, toF32(randF64(r, 64*64*9)), 64, 64, 3, 3)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tensor.Conv2d(x, w, nil, tensor.Conv2dOpts{Padding: []int{1}})
	}
	b.ReportMetric(2*float64(8*64*64*9*28*28)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkLinearGEMV is one token through a 1024x1024 f32 linear layer
// (the decode-time shape: M = 1).
func BenchmarkLinearGEMV(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 1024
	x := tensor.FromSlice(laDev, toF32(randF64(r, n)), 1, n)
	w := tensor.FromSlice(laDev, toF32(randF64(r, n*n)), n, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tensor.Linear(x, w, nil)
	}
	b.ReportMetric(2*float64(n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func TestAddmmInPlace(t *testing.T) {
	c := tensor.FromSlice(laDev, []float64{1, 2, 3, 4}, 2, 2)
	a := tensor.FromSlice(laDev, []float64{1, 0, 0, 1}, 2, 2)
	b := tensor.FromSlice(laDev, []float64{5, 6, 7, 8}, 2, 2)
	v := c.Version()
	if got := c.AddmmInPlace(a, b, 0.5, 2); got != c {
		t.Fatal("AddmmInPlace must return its receiver")
	}
	want := []float64{0.5 + 10, 1 + 12, 1.5 + 14, 2 + 16}
	if got := c.Float64s(); !slicesEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if c.Version() == v {
		t.Fatal("version counter not bumped")
	}
	// A broadcasting input cannot be written in place.
	small := tensor.FromSlice(laDev, []float64{1, 2}, 2)
	if err := tensor.Catch(func() { small.AddmmInPlace(a, b, 1, 1) }); err == nil {
		t.Fatal("in-place addmm into a broadcast input accepted")
	}
	// Mixed dtypes are rejected (PyTorch: "expected scalar type").
	ci := tensor.FromSlice(laDev, []int64{1, 2, 3, 4}, 2, 2)
	if err := tensor.Catch(func() { ci.AddmmInPlace(a, b, 1, 1) }); err == nil {
		t.Fatal("in-place addmm of float matrices into int64 accepted")
	}
	bb := tensor.FromSlice(laDev, []float64{1, 1}, 1, 1, 2)
	acc := tensor.FromSlice(laDev, []float64{1}, 1, 1, 1)
	acc.BaddbmmInPlace(bb, tensor.FromSlice(laDev, []float64{2, 3}, 1, 2, 1), 1, 1)
	if got := acc.Item(); got != 6 {
		t.Fatalf("baddbmm_: got %v, want 6", got)
	}
}

func slicesEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestMaxPool2dUnderAutograd: with x recorded by autograd MaxPool2d runs
// max_pool2d_with_indices (PyTorch's forward under autograd); its values
// equal the plain forward's and its gradient routes to each window's first
// maximum, as the plain op's backward (which pools again) does.
func TestMaxPool2dUnderAutograd(t *testing.T) {
	xs := []float32{1, 3, 3, 0, 2, 2, 5, 5, -1, 7, 7, 7, 4, 4, 6, 6, 1, 9, 0, 0}
	o := tensor.PoolOpts{KernelSize: []int{2, 2}}
	plain := func() []float32 {
		var v []float32
		tensor.NoGrad(func() { v = tensor.MaxPool2d(tensor.FromSlice(laDev, xs, 1, 1, 4, 5), o).Float32s() })
		return v
	}()
	x := tensor.FromSlice(laDev, xs, 1, 1, 4, 5).SetRequiresGrad(true)
	y := tensor.MaxPool2d(x, o)
	if n := y.GradFn(); n != "max_pool2d_with_indices" {
		t.Errorf("recorded %q, want max_pool2d_with_indices", n)
	}
	if got := y.Float32s(); fmt.Sprint(got) != fmt.Sprint(plain) {
		t.Fatalf("values %v, want %v", got, plain)
	}
	y.Sum(nil, false).Backward()
	// 4x5 input, rows [1 3 3 0 2] [2 5 5 -1 7] [7 7 4 4 6] [6 1 9 0 0]: the
	// windows' first maxima are at flat 6 (5), 7 (5), 10 (the first 7), 17 (9).
	want := make([]float32, 20)
	for _, p := range []int{6, 7, 10, 17} {
		want[p] = 1
	}
	if got := x.Grad().Float32s(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("grad %v, want %v", got, want)
	}
}
