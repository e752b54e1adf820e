package models

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/internal/quant"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// TestQuantizedR16Narrow checks that a weight in the r16 layout gives the
// row-major weight's bytes wherever models reads them: RowMajor, Dense and
// the tensor-parallel row and column slices (which unpack first).
func TestQuantizedR16Narrow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 16))
	cpu := device.Device{Type: "cpu"}
	for _, name := range []string{"q4_0", "q4_1", "q8_0"} {
		blk, _ := op.GGUFBlockOf(name)
		const out, in = 37, 128
		rb, _ := blk.RowBytes(in)
		raw := make([]byte, out*rb)
		row := make([]float32, in)
		for j := range out {
			for p := range row {
				row[p] = float32(r.NormFloat64())
			}
			if err := quant.QuantizeRow(quant.Type(blk.GGMLType), row, raw[j*rb:(j+1)*rb]); err != nil {
				t.Fatal(err)
			}
		}
		packed := make([]byte, len(raw))
		if err := quant.Pack(quant.Type(blk.GGMLType), packed, raw, out, rb); err != nil {
			t.Fatal(err)
		}
		rm := Quantized{Blocks: tensor.FromBytes(cpu, dtype.U8, []int{out, rb}, raw), Block: blk, In: in, Compute: dtype.F32}
		pq := rm
		pq.Blocks, pq.Layout = tensor.FromBytes(cpu, dtype.U8, []int{out, rb}, packed), op.LayoutR16
		if got := pq.RowMajor(); got.Layout != "" || !bytes.Equal(got.Blocks.Bytes(), raw) {
			t.Fatalf("%s: RowMajor did not restore the rows", name)
		}
		if a, b := pq.Dense().Float32s(), rm.Dense().Float32s(); !slicesEqualBits(a, b) {
			t.Fatalf("%s: Dense differs", name)
		}
		for _, tc := range []struct {
			what string
			a, b Weight
		}{
			{"rows", narrowRows(pq, 16, 18), narrowRows(rm, 16, 18)},
			{"cols", narrowCols(pq, 32, 64), narrowCols(rm, 32, 64)},
		} {
			qa, ok1 := tc.a.(Quantized)
			qb, ok2 := tc.b.(Quantized)
			if !ok1 || !ok2 || qa.Layout != "" || !bytes.Equal(qa.Blocks.Bytes(), qb.Blocks.Bytes()) {
				t.Fatalf("%s: narrowing %s of the r16 weight differs from the row-major one", name, tc.what)
			}
		}
	}
}

func slicesEqualBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(a[i] != a[i] && b[i] != b[i]) {
			return false
		}
	}
	return true
}
