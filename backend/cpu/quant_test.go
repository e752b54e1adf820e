package cpu

import (
	"encoding/binary"
	"math"
	"math/rand"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/gguf"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// quantTypes are the block encodings linear_gguf takes.
var quantTypes = []string{"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_k", "q5_k", "q6_k"}

// quantScaleOffsets returns the byte offsets of the f16 fields of a block.
func quantScaleOffsets(name string) []int {
	switch name {
	case "q4_0", "q5_0", "q8_0":
		return []int{0}
	case "q4_1", "q5_1", "q4_k", "q5_k":
		return []int{0, 2}
	case "q6_k":
		return []int{208}
	}
	return nil
}

// randomBlocks returns n rows of k elements of encoding name: random bytes
// (every bit pattern of the quants, sub-scales and high bits is valid) with
// finite f16 scales of about scale, some of them subnormal.
func randomBlocks(rng *rand.Rand, name string, n, k int, scale float32) []byte {
	blk, err := op.GGUFBlockOf(name)
	if err != nil {
		panic(err)
	}
	rb, _ := blk.RowBytes(k)
	w := make([]byte, n*rb)
	rng.Read(w)
	for b := 0; b < len(w)/blk.TypeSize; b++ {
		for j, off := range quantScaleOffsets(name) {
			v := (rng.Float32()*2 - 1) * scale
			if j == 1 && (name == "q4_k" || name == "q5_k") {
				v = rng.Float32() * scale // dmin is positive in real files
			}
			if rng.Intn(50) == 0 {
				v = float32(rng.Intn(1024)-512) * 0x1p-24 // subnormal f16
			}
			binary.LittleEndian.PutUint16(w[b*blk.TypeSize+off:], uint16(dtype.F16FromF32(v)))
		}
	}
	return w
}

// linearGGUFDecomposed evaluates linear_gguf's decomposition eagerly.
func linearGGUFDecomposed(t *testing.T, x, w *tensor.Tensor, a op.Attrs) *tensor.Tensor {
	t.Helper()
	d := op.MustLookup("linear_gguf")
	na, err := d.Normalize(a)
	if err != nil {
		t.Fatal(err)
	}
	return d.Decompose(tensorBuilder{}, []op.Value{x, w}, na)[0].(*tensor.Tensor)
}

// TestLinearGGUFDecomposition checks the decomposition's dequantized
// matrix against gguf.Dequantize (ggml's reference) bit for bit, and its
// product against the f32 product of that matrix.
func TestLinearGGUFDecomposition(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	cpu := tensor.MustDevice("cpu")
	for _, name := range quantTypes {
		t.Run(name, func(t *testing.T) {
			blk, _ := op.GGUFBlockOf(name)
			n, k, m := 5, 2*blk.BlockSize, 3
			wb := randomBlocks(rng, name, n, k, 0.05)
			rb, _ := blk.RowBytes(k)
			w := tensor.FromBytes(cpu, dtype.U8, []int{n, rb}, wb)
			ref := make([]float32, n*k)
			if err := gguf.Dequantize(gguf.Type(blk.GGMLType), wb, n*k, ref); err != nil {
				t.Fatal(err)
			}
			got := op.DequantizeGGUF(tensorBuilder{}, w, blk, k).(*tensor.Tensor).Float32s()
			for i := range ref {
				if math.Float32bits(got[i]) != math.Float32bits(ref[i]) && !(got[i] == 0 && ref[i] == 0) {
					t.Fatalf("element %d (row %d col %d): decomposition %g, gguf.Dequantize %g", i, i/k, i%k, got[i], ref[i])
				}
			}
			xs := make([]float32, m*k)
			for i := range xs {
				xs[i] = float32(rng.NormFloat64())
			}
			x := tensor.FromSlice(cpu, xs, m, k)
			y := linearGGUFDecomposed(t, x, w, op.Attrs{"type": name, "k": k}).Float32s()
			for i := range m {
				for j := range n {
					var s float64
					for l := range k {
						s += float64(xs[i*k+l]) * float64(ref[j*k+l])
					}
					if d := math.Abs(float64(y[i*n+j]) - s); d > 1e-5*(1+math.Abs(s)) {
						t.Errorf("y[%d,%d] = %g, f64 product of the dequantized matrix %g", i, j, y[i*n+j], s)
					}
				}
			}
		})
	}
}
