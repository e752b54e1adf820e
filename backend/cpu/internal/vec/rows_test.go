package vec

import (
	"math"
	"math/rand"
	"testing"
)

// TestExpUnderflow: arguments below -104 (the kernels' clamp) give +0,
// the bits the clamped arithmetic gives at -104 itself, without running
// it (its subnormal steps are microcode assists on Intel cores), at every
// level; NaN stays NaN and arguments just above the clamp are untouched.
func TestExpUnderflow(t *testing.T) {
	ninf := float32(math.Inf(-1))
	nan := float32(math.NaN())
	in := []float32{-104, -104.00001, -105, -200, -1e30, ninf, nan, -103.9, -90, -1, 0}
	for _, lv := range Levels() {
		k := For(lv)
		func() {
			got := make([]float32, len(in))
			k.Exp(got, in)
			for i, x := range in {
				switch {
				case x != x:
					if got[i] == got[i] {
						t.Errorf("%s: exp(NaN) = %v", lv, got[i])
					}
				case x <= -104:
					if math.Float32bits(got[i]) != 0 {
						t.Errorf("%s: exp(%v) = %v (bits %#x), want +0", lv, x, got[i], math.Float32bits(got[i]))
					}
				default:
					want := math.Exp(float64(x))
					if d := math.Abs(float64(got[i]) - want); d > 2e-7*want+1.5e-45 {
						t.Errorf("%s: exp(%v) = %v, want %v", lv, x, got[i], want)
					}
				}
			}
			// ExpSubSum: the same after subtracting m.
			x := []float32{0, -150, ninf, -104, -3}
			s := k.ExpSubSum(x, 2)
			if x[1] != 0 || x[2] != 0 || math.Float32bits(x[1]) != 0 || math.Abs(float64(s)-math.Exp(-2)-math.Exp(-5)-math.Exp(-106)) > 1e-6 {
				t.Errorf("%s: ExpSubSum gave %v, sum %v", lv, x, s)
			}
		}()
	}
}

// TestSoftmaxPrefix: SoftmaxPrefix gives SoftmaxRow's bits for rows
// whose tail from n is -Inf, including rows with NaN, +Inf, all -Inf, and
// lengths on both sides of vec.Kernels.Sum's block.
func TestSoftmaxPrefix(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	ninf := float32(math.Inf(-1))
	for _, lv := range Levels() {
		k := For(lv)
		func() {
			for _, s := range []int{1, 2, 7, 16, 33, 257, 1000, 4097, 9000} {
				for _, n := range []int{0, 1, s / 2, s - 1, s} {
					for _, special := range []string{"", "nan", "inf", "ninf", "big"} {
						x := make([]float32, s)
						for i := range x {
							if i < n {
								x[i] = float32(r.NormFloat64() * 4)
							} else {
								x[i] = ninf
							}
						}
						if n > 0 {
							j := r.Intn(n)
							switch special {
							case "nan":
								x[j] = float32(math.NaN())
							case "inf":
								x[j] = float32(math.Inf(1))
							case "ninf":
								for i := range x[:n] {
									x[i] = ninf
								}
							case "big":
								x[j] = 300 // the others underflow
							}
						}
						want := make([]float32, s)
						k.SoftmaxRow(want, x)
						got := make([]float32, s)
						for i := range got {
							got[i] = 42
						}
						k.SoftmaxPrefix(got, x, n)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
								t.Fatalf("%s s=%d n=%d %q: [%d] = %v, want %v", lv, s, n, special, i, got[i], want[i])
							}
						}
					}
				}
			}
		}()
	}
}
