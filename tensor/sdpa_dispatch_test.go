package tensor_test

import (
	"slices"
	"testing"

	"github.com/gotpu/gotpu/tensor"
)

// TestSDPADispatch: attention without dropout is recorded whole in the
// Fused mode (one node, run by the backend's kernel) with Strict's bits;
// with dropout it is recorded as its parts; below precision highest every
// mode runs the decomposition, whose matmuls follow that precision.
func TestSDPADispatch(t *testing.T) {
	dev := tensor.MustDevice("cpu")
	q, k, v := randT(dev, 1, 2, 300, 16), randT(dev, 2, 2, 300, 16), randT(dev, 3, 2, 300, 16)
	attn := func(p float64) *tensor.Tensor {
		return tensor.ScaledDotProductAttention(q, k, v, tensor.SDPAOpts{DropoutP: p, Generator: tensor.NewGenerator(5)})
	}
	fused := func(f func() *tensor.Tensor) ([]float32, int) {
		log := watchFlushes(t)
		prev := tensor.SetMode(tensor.Fused)
		out := f()
		if err := tensor.Sync(dev); err != nil {
			t.Fatal(err)
		}
		tensor.SetMode(prev)
		nodes := 0
		for _, f := range log.fs {
			nodes += f.Nodes
		}
		return out.Float32s(), nodes
	}
	for _, tc := range []struct {
		name      string
		p         float64
		prec      string
		wantWhole bool
	}{
		{"no dropout", 0, "", true},
		{"dropout", 0.3, "", false},
		{"medium", 0, "medium", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := tensor.SetMatmulPrecision(tc.prec)
			defer tensor.SetMatmulPrecision(prev)
			want := attn(tc.p).Float32s()
			got, nodes := fused(func() *tensor.Tensor { return attn(tc.p) })
			if !slices.Equal(got, want) {
				t.Errorf("fused differs from strict")
			}
			if whole := nodes == 1; whole != tc.wantWhole {
				t.Errorf("recorded %d nodes, whole = %v, want %v", nodes, whole, tc.wantWhole)
			}
			if tc.prec != "" {
				// The kernel computes in full f32 whatever the precision:
				// different bits show Strict ran the decomposition.
				tensor.SetMatmulPrecision("highest")
				if full := attn(tc.p).Float32s(); slices.Equal(full, want) {
					t.Errorf("precision %s gave full-f32 results", tc.prec)
				}
			}
		})
	}
}
