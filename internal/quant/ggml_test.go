package quant

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

func readF32(t *testing.T, name string) []float32 {
	raw := readGolden(t, name)
	x := make([]float32, len(raw)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return x
}

// TestQuantizeRowGGML compares QuantizeRow with ggml's own
// quantize_row_*_ref (libggml-base from the libggml-python package, built
// without FMA contraction; tools/quant/gen_golden_ggml.py), byte for byte,
// for every type.
func TestQuantizeRowGGML(t *testing.T) {
	x := goldenInput(t)
	for _, typ := range allTypes {
		t.Run(typ.String(), func(t *testing.T) {
			want := readGolden(t, "ggml_"+typ.String()+".bin")
			rb, _ := RowBytes(typ, len(x))
			got := make([]byte, rb)
			if err := QuantizeRow(typ, x, got); err != nil {
				t.Fatal(err)
			}
			ts := typ.TypeSize()
			if len(want) != len(got) {
				t.Fatalf("golden has %d bytes, want %d", len(want), len(got))
			}
			for b := 0; b < len(got)/ts; b++ {
				if !bytes.Equal(got[b*ts:(b+1)*ts], want[b*ts:(b+1)*ts]) {
					t.Fatalf("block %d differs:\n got %x\nwant %x", b, got[b*ts:(b+1)*ts], want[b*ts:(b+1)*ts])
				}
			}
		})
	}
}

// fusedByGGMLBuild are the types whose generic vec_dot the golden data's
// libggml-cpu build compiled with FMA contraction (seen in its code).
var fusedByGGMLBuild = map[Type]bool{Q4_1: true, Q5_1: true, Q4_K: true, Q5_K: true}

// TestMatMulGGML checks against ggml's ggml_vec_dot_*_generic (libggml-cpu):
// W is input.f32 as 8 rows of 512 quantized to the type, x the two rows of
// act.f32. The model of the C code (modelDot, with the contractions that
// build made) must give ggml's bits; every level's MatMul must give ggml's
// bits where that build did not contract, and otherwise the unfused
// model's bits (TestMatMulModel), within 1e-5·(|y|+1) of ggml's: the
// roundings of the fused products, magnified by cancellation in the sums.
func TestMatMulGGML(t *testing.T) {
	w := goldenInput(t)
	x := readF32(t, "act.f32")
	want := readF32(t, "ggml_dot.f32")
	const k, n, m = 512, 8, 2
	for ti, typ := range weightTypes {
		rb, _ := RowBytes(typ, k)
		wq := make([]byte, n*rb)
		for j := range n {
			if err := QuantizeRow(typ, w[j*k:(j+1)*k], wq[j*rb:(j+1)*rb]); err != nil {
				t.Fatal(err)
			}
		}
		at, _ := ActType(typ)
		arb, _ := RowBytes(at, k)
		ya := make([]byte, arb)
		for i := range m {
			if err := QuantizeRow(at, x[i*k:(i+1)*k], ya); err != nil {
				t.Fatal(err)
			}
			for j := range n {
				g := modelDot(typ, wq[j*rb:(j+1)*rb], ya, k, fusedByGGMLBuild[typ])
				if e := want[ti*m*n+i*n+j]; math.Float32bits(g) != math.Float32bits(e) {
					t.Errorf("%v: model y[%d,%d] = %g, ggml %g", typ, i, j, g, e)
				}
			}
		}
		for _, kern := range levels(t) {
			got := make([]float32, m*n)
			if err := kern.MatMul(typ, wq, n, k, x[:m*k], m, got, nil); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				g, e := got[i], want[ti*m*n+i]
				if fusedByGGMLBuild[typ] {
					if d := math.Abs(float64(g - e)); d > 1e-5*(math.Abs(float64(e))+1) {
						t.Errorf("%v %s: y[%d] = %g, ggml %g", typ, kern.Level(), i, g, e)
					}
				} else if math.Float32bits(g) != math.Float32bits(e) {
					t.Errorf("%v %s: y[%d] = %g, ggml %g", typ, kern.Level(), i, g, e)
				}
			}
		}
	}
}
