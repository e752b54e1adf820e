package cpu

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/gotpu/gotpu/tensor"
)

// TestSumInterleaved: a sum over every dimension but one (a bias gradient)
// runs four outputs' chains at once and still gives, bit for bit, each
// output's float64 sum in index order rounded once; on dense and permuted
// (strided) inputs, for output counts that leave short groups.
func TestSumInterleaved(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	dev := tensor.MustDevice("cpu")
	for _, c := range []int{2, 3, 5, 6, 9, 16} {
		for _, perm := range []bool{false, true} {
			n, hw := 7, 300
			xs := make([]float32, n*c*hw)
			for i := range xs {
				xs[i] = float32(r.NormFloat64()) * float32(math.Pow(2, float64(r.Intn(40)-20)))
			}
			x := tensor.FromSlice(dev, xs, n, c, hw) // element [i, ch, k] at (i*c+ch)*hw+k
			dims := []int{0, 2}
			if perm {
				x = x.Permute(2, 1, 0) // [hw, c, n]: strided runs
				dims = []int{0, 2}
			}
			got := x.Sum(dims, false).Float32s()
			for ch := range c {
				var acc float64
				if perm {
					for k := range hw {
						for i := range n {
							acc += float64(xs[(i*c+ch)*hw+k])
						}
					}
				} else {
					for i := range n {
						for k := range hw {
							acc += float64(xs[(i*c+ch)*hw+k])
						}
					}
				}
				if want := float32(acc); math.Float32bits(got[ch]) != math.Float32bits(want) {
					t.Fatalf("%s c=%d: sum[%d] = %v, want %v", fmt.Sprint(map[bool]string{false: "dense", true: "permuted"}[perm]), c, ch, got[ch], want)
				}
			}
		}
	}
}
