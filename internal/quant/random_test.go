package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// halfOffsets are the byte offsets of the half-precision scales in a
// block of each weight type.
var halfOffsets = map[Type][]int{Q4_0: {0}, Q4_1: {0, 2}, Q5_0: {0}, Q5_1: {0, 2}, Q8_0: {0}, Q4_K: {0, 2}, Q5_K: {0, 2}, Q6_K: {208}}

// TestMatMulRandomBlocks runs every level on weights of random bytes (any
// level, any qh bit, any scale code, Q8_0's -128, negative Q6_K scales)
// with finite random half-precision scales, against the generic code, bit
// for bit: GGUF files need not come from the reference quantizer.
func TestMatMulRandomBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	ks := levels(t)
	for _, typ := range weightTypes {
		k := 2 * typ.BlockSize() * 3
		n, m := 13, 6
		rb, _ := RowBytes(typ, k)
		w := randBlocks(r, typ, n, k)
		x := randActs(r, m, k)
		want := make([]float32, m*n)
		if err := For(LevelGeneric).MatMul(typ, w, n, k, x, m, want, nil); err != nil {
			t.Fatal(err)
		}
		at, _ := ActType(typ)
		arb, _ := RowBytes(at, k)
		ya := make([]byte, arb)
		for i := range m {
			if err := QuantizeRow(at, x[i*k:(i+1)*k], ya); err != nil {
				t.Fatal(err)
			}
			for j := range n {
				if g, e := want[i*n+j], modelDot(typ, w[j*rb:(j+1)*rb], ya, k, false); math.Float32bits(g) != math.Float32bits(e) {
					t.Fatalf("%v generic: y[%d,%d] = %g, model %g", typ, i, j, g, e)
				}
			}
		}
		for _, kern := range ks {
			for _, mm := range []int{1, m} {
				got := make([]float32, mm*n)
				if err := kern.MatMul(typ, w, n, k, x, mm, got, goPar); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%v %s m=%d: y[%d] = %g, generic %g", typ, kern.Level(), mm, i, got[i], want[i])
					}
				}
			}
		}
	}
}
