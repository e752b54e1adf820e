//go:build amd64 && !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/gotpu/gotpu/dtype"
)

// TestGEMVDotBF16Skewed checks the skewed dot kernel against the plain
// one bit for bit, signed zeros included, for k around its 32-step
// prologue and epilogue, with NaN, infinities and tiny values (whose
// products round to -0) placed where only one lane is live.
func TestGEMVDotBF16Skewed(t *testing.T) {
	if !haveAVX2() {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(49, 50))
	vals := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-30, -1e-30, 0, float32(math.Copysign(0, -1))}
	for _, k := range []int{32, 40, 64, 72, 96, 200, 3072} {
		for _, lda := range []int{k, k + 8} {
			for trial := 0; trial < 20; trial++ {
				a := make([]dtype.BFloat16, 16*lda)
				x := make([]float32, k)
				for i := range a {
					a[i] = genBF16(r)
					if trial%2 == 1 {
						a[i] = dtype.BF16FromF32(1e-30 * float32(r.NormFloat64()))
					}
				}
				for i := range x {
					x[i] = dtype.RoundBF16(float32(r.NormFloat64()))
					if trial%2 == 1 {
						x[i] = dtype.RoundBF16(1e-20 * float32(r.NormFloat64()))
					}
				}
				for n := 0; n < trial%4; n++ {
					a[r.IntN(len(a))] = dtype.BF16FromF32(vals[r.IntN(len(vals))])
					x[r.IntN(k)] = dtype.RoundBF16(vals[r.IntN(len(vals))])
				}
				var y0, y1 [16]float32
				ap := (*uint16)(unsafe.Pointer(&a[0]))
				gemvDotBF16x16(k, ap, lda, &x[0], &y0[0])
				gemvDotBF16x16s(k, ap, lda, &x[0], &y1[0])
				for i := range y0 {
					b0, b1 := math.Float32bits(y0[i]), math.Float32bits(y1[i])
					if b0 != b1 && !(y0[i] != y0[i] && y1[i] != y1[i]) {
						t.Fatalf("k=%d lda=%d trial %d row %d: skewed %#08x, plain %#08x", k, lda, trial, i, b1, b0)
					}
				}
			}
		}
	}
}
