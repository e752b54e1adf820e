package stablehlo

import (
	"strings"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// TestLinearGGUFExports lowers linear_gguf of every block type (f32 and
// bf16 activations) to primitives and exports it as StableHLO that
// Verify accepts: the path XLA backends run the op by.
func TestLinearGGUFExports(t *testing.T) {
	for _, name := range []string{"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_k", "q5_k", "q6_k"} {
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			blk, err := op.GGUFBlockOf(name)
			if err != nil {
				t.Fatal(err)
			}
			k := 2 * blk.BlockSize
			rb, _ := blk.RowBytes(k)
			params := []op.Meta{{Shape: []int{3, k}, DType: dt}, {Shape: []int{5, rb}, DType: dtype.U8}}
			g, err := ir.Trace(params, func(b op.Builder, p []op.Value) []op.Value {
				return b.Call("linear_gguf", p, op.Attrs{"type": name, "k": k})
			})
			if err != nil {
				t.Fatalf("%s %v: trace: %v", name, dt, err)
			}
			if g, err = ir.Lower(g); err != nil {
				t.Fatalf("%s %v: lower: %v", name, dt, err)
			}
			text, err := Export(g, "linear_gguf_"+name)
			if err != nil {
				t.Fatalf("%s %v: export: %v", name, dt, err)
			}
			if err := Verify(text); err != nil {
				t.Fatalf("%s %v: verify: %v", name, dt, err)
			}
			if !strings.Contains(text, "stablehlo.dot_general") {
				t.Errorf("%s %v: no dot_general in the export", name, dt)
			}
		}
	}
}
