package dist

import (
	"math"
	"testing"

	"github.com/gotpu/gotpu/dtype"
)

func f32bytes(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	copy(asSlice[float32](b), v)
	return b
}

// TestReduceBytes checks every reduction and source count on float32,
// including the in-place form (dst is one of the sources) and empty parts.
func TestReduceBytes(t *testing.T) {
	srcs := [][]float32{{1, -2, 3, math.MaxFloat32}, {4, 5, -6, 1}, {-7, 8, 9, 2}, {2, 2, 2, 2}}
	tests := []struct {
		n    int
		op   ReduceOp
		want []float32
	}{
		{1, Sum, srcs[0]},
		{1, Avg, srcs[0]},
		{2, Sum, []float32{5, 3, -3, math.MaxFloat32}},
		{2, Avg, []float32{2.5, 1.5, -1.5, math.MaxFloat32 / 2}},
		{3, Sum, []float32{-2, 11, 6, math.MaxFloat32}},
		{3, Max, []float32{4, 8, 9, math.MaxFloat32}},
		{3, Min, []float32{-7, -2, -6, 1}},
		{4, Prod, []float32{-56, -160, -324, float32(math.Inf(1))}},
		{4, Avg, []float32{0, 13.0 / 4, 8.0 / 4, math.MaxFloat32 / 4}},
	}
	for _, tc := range tests {
		for _, inPlace := range []bool{false, true} {
			bs := make([][]byte, tc.n)
			for r := range bs {
				bs[r] = f32bytes(srcs[r]...)
			}
			dst := make([]byte, 16)
			if inPlace {
				dst = bs[tc.n-1]
			}
			reduceBytes(dst, bs, dtype.F32, tc.op, tc.n)
			got := asSlice[float32](dst)
			for i := range tc.want {
				if got[i] != tc.want[i] {
					t.Errorf("%d sources %s (in place %v): got %v, want %v", tc.n, tc.op, inPlace, got, tc.want)
					break
				}
			}
			reduceBytes(dst[:0], [][]byte{bs[0][:0]}, dtype.F32, tc.op, tc.n) // an empty part must not panic
		}
	}
}
