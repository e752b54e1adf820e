package cpu

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// TestCastFloat16s checks the direct f32 <-> bf16/f16 conversions against
// castLoop's generic per-element path, on contiguous and strided layouts
// and awkward values (NaN, infinities, subnormals, ties).
func TestCastFloat16s(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float32, 3*37*41)
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		1e-40, -1e-40, 65504, 65520, 1.00390625, 1.01171875, 3.4e38}
	for i := range vals {
		if i < len(special) {
			vals[i] = special[i]
		} else {
			vals[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(12)-6)))
		}
	}
	shape := []int{3, 37, 41}
	// The contiguous layout and a transposed view of the same buffer.
	layouts := []op.Layout{op.Contiguous(shape), {Shape: []int{41, 37, 3}, Strides: []int{1, 41, 37 * 41}}}
	for _, half := range []dtype.DType{dtype.BF16, dtype.F16} {
		src32 := f32Bytes(vals)
		for _, lay := range layouts {
			s := device.Operand{DType: dtype.F32, Layout: lay}
			d := device.Operand{DType: half, Layout: op.Contiguous(lay.Shape)}
			got, want := make([]byte, 2*len(vals)), make([]byte, 2*len(vals))
			if !castFloat16s(procKS, s, src32, d, got) {
				t.Fatalf("f32 -> %s not taken", half)
			}
			genericCast(s, src32, d, want)
			if !bytes.Equal(got, want) {
				t.Errorf("f32 -> %s %v: bits differ from the generic path", half, s.Strides)
			}
			// And back, from the converted values.
			s2 := device.Operand{DType: half, Layout: d.Layout}
			d2 := device.Operand{DType: dtype.F32, Layout: op.Contiguous(lay.Shape)}
			back, wantBack := make([]byte, 4*len(vals)), make([]byte, 4*len(vals))
			if !castFloat16s(procKS, s2, got, d2, back) {
				t.Fatalf("%s -> f32 not taken", half)
			}
			genericCast(s2, got, d2, wantBack)
			if !bytes.Equal(back, wantBack) {
				t.Errorf("%s -> f32: bits differ from the generic path", half)
			}
		}
	}
}

// genericCast is castLoop's per-element path.
func genericCast(s device.Operand, srcB []byte, d device.Operand, dstB []byte) {
	load, store := loader(s.DType), storer(d.DType)
	forEachRun(d.Shape, [][]int{d.Strides, s.Strides}, []int{d.Offset, s.Offset}, func(offs []int, n int, inner []int) {
		for i := 0; i < n; i++ {
			store(dstB, offs[0]+i*inner[0], load(srcB, offs[1]+i*inner[1]))
		}
	})
}
