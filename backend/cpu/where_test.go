package cpu

import (
	"math"
	"testing"
)

// TestVecWhereF32 checks the vector select against the element loop at
// every length around the vector width, unaligned, in place, with NaN,
// -0 and +0 conditions, at both levels.
func TestVecWhereF32(t *testing.T) {
	conds := []float32{0, 1, float32(math.NaN()), float32(math.Copysign(0, -1)), -2, 1e-45, float32(math.Inf(-1))}
	for _, level := range []string{LevelAVX2, LevelGeneric} {
		prev := cpuLevel
		cpuLevel = level
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 100} {
			for _, off := range []int{0, 1} {
				c := make([]float32, n+off)
				a := make([]float32, n+off)
				b := make([]float32, n+off)
				for i := range c {
					c[i] = conds[(i*3)%len(conds)]
					a[i] = float32(i) + 0.5
					b[i] = -float32(i) - 0.25
				}
				want := make([]float32, n)
				whereF32Go(want, c[off:], a[off:], b[off:])
				got := make([]float32, n)
				vecWhereF32(got, c[off:], a[off:], b[off:])
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s n=%d off=%d: element %d = %v, want %v", level, n, off, i, got[i], want[i])
					}
				}
				// In place over the condition.
				cc := append([]float32(nil), c[off:]...)
				vecWhereF32(cc, cc, a[off:], b[off:])
				for i := range want {
					if math.Float32bits(cc[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s n=%d off=%d in place: element %d = %v, want %v", level, n, off, i, cc[i], want[i])
					}
				}
			}
		}
		cpuLevel = prev
	}
}
