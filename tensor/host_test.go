package tensor_test

import (
	"math"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// TestFloat32s checks Float32s against Float64s for f32 tensors (their
// direct path: contiguous, a transposed view, NaN and Inf) and for
// narrower and wider dtypes (converted).
func TestFloat32s(t *testing.T) {
	dev := tensor.MustDevice("cpu")
	vals := []float32{1.5, -2.25, float32(math.Inf(1)), float32(math.NaN()), 3e38, -1e-45, 0, 7}
	base := tensor.FromSlice(dev, vals, 2, 4)
	cases := map[string]*tensor.Tensor{
		"f32":            base,
		"f32 transposed": base.Transpose(0, 1),
		"bf16":           base.ToDType(dtype.BF16),
		"f64":            base.ToDType(dtype.F64),
		"f32 second row": base.Narrow(0, 1, 1),
	}
	for name, x := range cases {
		want := x.Float64s()
		big := make([]float32, 3, 16)
		for _, rd := range []struct {
			how string
			got []float32
		}{
			{"Float32s", x.Float32s()},
			{"CopyFloat32s(nil)", x.CopyFloat32s(nil)},
			{"CopyFloat32s(short)", x.CopyFloat32s(make([]float32, 2))},
			{"CopyFloat32s(room)", x.CopyFloat32s(big)},
		} {
			got := rd.got
			if len(got) != len(want) {
				t.Fatalf("%s %s: %d values, want %d", name, rd.how, len(got), len(want))
			}
			for i := range want {
				w := float32(want[i])
				if !(got[i] == w || (got[i] != got[i] && w != w)) {
					t.Errorf("%s %s: [%d] = %v, want %v", name, rd.how, i, got[i], w)
				}
			}
			if rd.how == "CopyFloat32s(room)" && &got[0] != &big[:1][0] {
				t.Errorf("%s: CopyFloat32s did not reuse a buffer with room", name)
			}
		}
	}
}
