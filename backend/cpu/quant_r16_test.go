package cpu

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/internal/quant"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// TestLinearGGUFR16 checks linear_gguf on weights in the r16 layout
// against the same weights row-major, bit for bit: the direct kernel at
// every level (with finite activations, and with an Inf, which takes the
// dequantizing path), and the decomposition (UnpackR16), which the XLA
// backend and the other modes run.
func TestLinearGGUFR16(t *testing.T) {
	rng := rand.New(rand.NewSource(16))
	cpu := tensor.MustDevice("cpu")
	for _, name := range []string{"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_k"} {
		blk, _ := op.GGUFBlockOf(name)
		for _, sh := range [][3]int{{1, 37, 2 * blk.BlockSize}, {3, 16, blk.BlockSize}, {2, 5, blk.BlockSize}, {5, 48, 3 * blk.BlockSize}} {
			m, n, k := sh[0], sh[1], sh[2]
			t.Run(fmt.Sprintf("%s/%dx%dx%d", name, m, n, k), func(t *testing.T) {
				wb := randomBlocks(rng, name, n, k, 0.05)
				rb, _ := blk.RowBytes(k)
				pb := make([]byte, len(wb))
				if err := quant.Pack(quant.Type(blk.GGMLType), pb, wb, n, rb); err != nil {
					t.Fatal(err)
				}
				xs := make([]float32, m*k)
				for i := range xs {
					xs[i] = float32(rng.NormFloat64())
				}
				rowMajor := op.Attrs{"type": name, "k": k}
				r16 := op.Attrs{"type": name, "k": k, "layout": op.LayoutR16}
				same := func(what string, got, want []float32) {
					t.Helper()
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s: y[%d] = %g, row-major %g", what, i, got[i], want[i])
						}
					}
				}
				for _, lv := range SupportedLevels() {
					kern := quant.For(lv)
					same("kernel "+lv, linearGGUFCallAttrs(t, kern, r16, xs, m, k, pb, n), linearGGUFCallAttrs(t, kern, rowMajor, xs, m, k, wb, n))
				}
				inf := append([]float32(nil), xs...)
				inf[len(inf)-1] = float32(math.Inf(1))
				same("non-finite x", linearGGUFCallAttrs(t, procKS.quant, r16, inf, m, k, pb, n), linearGGUFCallAttrs(t, procKS.quant, rowMajor, inf, m, k, wb, n))

				x := tensor.FromSlice(cpu, xs, m, k)
				w := tensor.FromBytes(cpu, dtype.U8, []int{n, rb}, wb)
				p := tensor.FromBytes(cpu, dtype.U8, []int{n, rb}, pb)
				same("decomposition", linearGGUFDecomposed(t, x, p, r16).Float32s(), linearGGUFDecomposed(t, x, w, rowMajor).Float32s())
				if got := op.UnpackR16(tensorBuilder{}, p, blk, k).(*tensor.Tensor).Bytes(); string(got) != string(wb) {
					t.Fatal("UnpackR16 is not quant.Unpack")
				}
			})
		}
	}
	d := op.MustLookup("linear_gguf")
	for _, a := range []op.Attrs{
		{"type": "q6_k", "k": 256, "layout": op.LayoutR16},
		{"type": "q4_0", "k": 32, "layout": "r8"},
	} {
		na, err := d.Normalize(a)
		if err == nil {
			blk, _ := op.GGUFBlockOf(a.String("type"))
			k := a.Int("k")
			_, err = d.Infer([]op.Meta{{Shape: []int{1, k}, DType: dtype.F32}, {Shape: []int{16, k / blk.BlockSize * blk.TypeSize}, DType: dtype.U8}}, na)
		}
		if err == nil {
			t.Errorf("linear_gguf accepted %v", a)
		}
	}
}
