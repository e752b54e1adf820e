package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

func genBF16(r *rand.Rand) dtype.BFloat16 {
	return dtype.BF16FromF32(float32(r.NormFloat64()))
}

// gemvBF16Ref is the bf16 matrix-vector product's definition at a level:
// each output the f32 FMA chain (the kernels' levels) or multiply-add
// chain (the generic level; the same but where a product overflows or
// underflows) over p in order from zero — or on the kernels' levels, for
// the dot form, the bf16 dot order (gemvOrderBF16); at level avx512bf16
// the axpy form's chain reads denormals as zero and flushes denormal sums
// (fmaDAZ, VDPBF16PS) — rounded to bf16 once.
func gemvBF16Ref(a, b operand[dtype.BFloat16], m, n, k int, level string) []dtype.BFloat16 {
	out := make([]dtype.BFloat16, m*n)
	fused := level != LevelGeneric
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			if fused && gemvIsDot(a, b, n, k) {
				out[i*n+j] = dtype.BF16FromF32(gemvOrderBF16(k, func(p int) float32 { return a.at(i, p).F32() }, func(p int) float32 { return b.at(p, j).F32() }))
				continue
			}
			var acc float32
			for p := 0; p < k; p++ {
				if level == LevelAVX512BF16 {
					// The VDPBF16PS axpy kernel. (The strided layouts take the
					// GEMM's widening path instead, whose plain FMA chain agrees
					// with this on the normal values the tests give them.)
					acc = fmaDAZ(acc, a.at(i, p).F32(), b.at(p, j).F32())
				} else if fused {
					acc = fma32(a.at(i, p).F32(), b.at(p, j).F32(), acc)
				} else {
					acc += a.at(i, p).F32() * b.at(p, j).F32()
				}
			}
			out[i*n+j] = dtype.BF16FromF32(acc)
		}
	}
	return out
}

// TestGEMVBF16 checks bf16 matrix-vector products (both forms, every
// layout, ragged row counts and k) bit for bit against gemvBF16Ref on
// every level, and that the bf16 gemv kernels ran
// for the contiguous layouts at level avx2.
func TestGEMVBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	lens := []int{1, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 129}
	ks := []int{1, 7, 8, 9, 15, 16, 17, 64, 300, 512, 1000}
	if testing.Short() {
		ks = []int{1, 7, 8, 17, 300, 512}
	}
	for _, vecLeft := range []bool{true, false} {
		for _, ml := range layoutNames {
			for _, rows := range lens {
				for _, k := range ks {
					var a, b operand[dtype.BFloat16]
					m, n := 1, rows
					if vecLeft {
						a = makeOperand(r, "rowmajor", 1, k, genBF16)
						b = makeOperand(r, ml, k, rows, genBF16)
					} else {
						m, n = rows, 1
						a = makeOperand(r, ml, rows, k, genBF16)
						b = makeOperand(r, "transposed", k, 1, genBF16)
					}
					for _, level := range levels() {
						want := gemvBF16Ref(a, b, m, n, k, level)
						before := gemvHits.Load()
						var got []dtype.BFloat16
						var err error
						ks := ksetFor(level)
						got, err = matmul(ks, dtype.BF16, "", a, b)
						if err != nil {
							t.Fatal(err)
						}
						name := fmt.Sprintf("%s m=%d n=%d k=%d matrix=%s", level, m, n, k, ml)
						for i := range want {
							if got[i] != want[i] {
								t.Fatalf("%s: [%d] = %#04x, want %#04x", name, i, uint16(got[i]), uint16(want[i]))
							}
						}
						if hit := gemvHits.Load() > before; level != LevelGeneric && ml != "strided" && !hit {
							t.Fatalf("%s: the gemv kernels did not run", name)
						}
					}
				}
			}
		}
	}
}

// TestGEMVBF16Specials checks NaN, ±Inf, subnormal and overflowing
// values through both forms: NaN and Inf propagate as in the f32 chain,
// subnormal products are kept, and an f32 overflow gives ±Inf.
func TestGEMVBF16Specials(t *testing.T) {
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x00010000), -math.Float32frombits(0x007f0000), 3e38, -3e38, 0, float32(math.Copysign(0, -1))}
	r := rand.New(rand.NewPCG(43, 44))
	for _, vecLeft := range []bool{true, false} {
		for _, k := range []int{8, 33} {
			rows := 37
			gen := func(r *rand.Rand) dtype.BFloat16 {
				if r.IntN(6) == 0 {
					return dtype.BF16FromF32(specials[r.IntN(len(specials))])
				}
				return genBF16(r)
			}
			var a, b operand[dtype.BFloat16]
			m, n := 1, rows
			if vecLeft {
				a = makeOperand(r, "rowmajor", 1, k, genBF16)
				b = makeOperand(r, "rowmajor", k, rows, gen)
			} else {
				m, n = rows, 1
				a = makeOperand(r, "rowmajor", rows, k, gen)
				b = makeOperand(r, "transposed", k, 1, genBF16)
			}
			for _, level := range levels() {
				want := gemvBF16Ref(a, b, m, n, k, level)
				var got []dtype.BFloat16
				var err error
				ks := ksetFor(level)
				got, err = matmul(ks, dtype.BF16, "", a, b)
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if got[i] != want[i] && !(want[i].F32() != want[i].F32() && got[i].F32() != got[i].F32()) {
						t.Fatalf("%s vecLeft=%v k=%d: [%d] = %#04x, want %#04x", level, vecLeft, k, i, uint16(got[i]), uint16(want[i]))
					}
				}
			}
		}
	}
}

// TestGEMVBF16Threads checks a large bf16 product is the same on 1 and 2
// threads (work split by rows or column strips) and matches gemvBF16Ref.
func TestGEMVBF16Threads(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, vecLeft := range []bool{true, false} {
		rows, k := 1000, 777
		var a, b operand[dtype.BFloat16]
		m, n := 1, rows
		if vecLeft {
			a = makeOperand(r, "rowmajor", 1, k, genBF16)
			b = makeOperand(r, "rowmajor", k, rows, genBF16)
		} else {
			m, n = rows, 1
			a = makeOperand(r, "rowmajor", rows, k, genBF16)
			b = makeOperand(r, "transposed", k, 1, genBF16)
		}
		want := gemvBF16Ref(a, b, m, n, k, procKS.level)
		for _, procs := range []int{1, 2} {
			runtime.GOMAXPROCS(procs)
			got, err := matmul(procKS, dtype.BF16, op.PrecisionHighest, a, b)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("procs=%d vecLeft=%v: [%d] = %#04x, want %#04x", procs, vecLeft, i, uint16(got[i]), uint16(want[i]))
				}
			}
		}
	}
}

// TestGEMVBF16Batched checks batched bf16 matrix-vector products ([nb,1,k]
// times [nb,k,n], the matrix stored [nb,k,n] (axpy form) or [nb,n,k] (dot
// form)) against gemvBF16Ref per batch at every level.
func TestGEMVBF16Batched(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	nb, n, k := 3, 77, 131
	av := make([]dtype.BFloat16, nb*k)
	bv := make([]dtype.BFloat16, nb*k*n)
	for i := range av {
		av[i] = genBF16(r)
	}
	for i := range bv {
		bv[i] = genBF16(r)
	}
	for _, level := range levels() {
		for _, bT := range []bool{false, true} {
			out := make([]dtype.BFloat16, nb*n)
			bl, rc := op.Contiguous([]int{nb, k, n}), 1
			if bT {
				bl, rc = op.Contiguous([]int{nb, n, k}), 2
			}
			c := &Call{
				Launch: &device.Launch{
					Attrs: op.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}, "lhs_contract": []int{2}, "rhs_contract": []int{rc}, "precision": ""},
					In:    []device.Operand{{DType: dtype.BF16, Layout: op.Contiguous([]int{nb, 1, k})}, {DType: dtype.BF16, Layout: bl}},
					Out:   []device.Operand{{DType: dtype.BF16, Layout: op.Contiguous([]int{nb, 1, n})}},
				},
				InB: [][]byte{bytesOf(av), bytesOf(bv)}, OutB: [][]byte{bytesOf(out)},
			}
			before := gemvHits.Load()
			ks := ksetFor(level)
			c.ks = ks
			if err := dotGeneralKernel(c); err != nil {
				t.Fatal(err)
			}
			if level != LevelGeneric && gemvHits.Load() == before {
				t.Fatalf("%s bT=%v: the gemv kernels did not run", level, bT)
			}
			for bb := 0; bb < nb; bb++ {
				a := operand[dtype.BFloat16]{av, op.Layout{Shape: []int{1, k}, Strides: []int{k, 1}, Offset: bb * k}}
				b := operand[dtype.BFloat16]{bv, op.Layout{Shape: []int{k, n}, Strides: []int{n, 1}, Offset: bb * k * n}}
				if bT {
					b.lay.Strides = []int{1, k}
				}
				want := gemvBF16Ref(a, b, 1, n, k, level)
				for j := range want {
					if got := out[bb*n+j]; got != want[j] {
						t.Fatalf("%s bT=%v batch %d [%d]: %#04x, want %#04x", level, bT, bb, j, uint16(got), uint16(want[j]))
					}
				}
			}
		}
	}
}
