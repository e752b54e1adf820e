package compile_test

import (
	"encoding/binary"
	"math"
	"math/rand"
	"testing"

	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// ggufBlocks returns n rows of k elements of a ggml block encoding: random
// bytes with small finite f16 scales at the given offsets of each block.
func ggufBlocks(rng *rand.Rand, name string, n, k int, scaleOffs ...int) *tensor.Tensor {
	blk, err := op.GGUFBlockOf(name)
	if err != nil {
		panic(err)
	}
	rb, _ := blk.RowBytes(k)
	w := make([]byte, n*rb)
	rng.Read(w)
	for b := 0; b < len(w)/blk.TypeSize; b++ {
		for _, off := range scaleOffs {
			binary.LittleEndian.PutUint16(w[b*blk.TypeSize+off:], uint16(dtype.F16FromF32(rng.Float32()*0.01)))
		}
	}
	return tensor.FromBytes(cpu, dtype.U8, []int{n, rb}, w)
}

// TestLinearGGUFCompiled runs a two-layer MLP on block-quantized weights
// (one captured by the function, one passed in) compiled and checks that
// the program keeps linear_gguf whole (the CPU's direct kernel) and gives
// Strict's bits.
func TestLinearGGUFCompiled(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	const k, h, n = 256, 64, 32
	w1 := ggufBlocks(rng, "q4_k", h, k, 0, 2)
	w2 := ggufBlocks(rng, "q8_0", n, h, 0)
	f := func(in ...*tensor.Tensor) []*tensor.Tensor {
		a := tensor.Apply1("linear_gguf", []*tensor.Tensor{in[0], w1}, op.Attrs{"type": "q4_k", "k": k}).Silu()
		return []*tensor.Tensor{tensor.Apply1("linear_gguf", []*tensor.Tensor{a, in[1]}, op.Attrs{"type": "q8_0", "k": h})}
	}
	xs := make([]float32, 3*k)
	for i := range xs {
		xs[i] = float32(rng.NormFloat64())
	}
	x := tensor.FromSlice(cpu, xs, 3, k)
	want := f(x, w2)[0].Float32s()
	fn := compile.Fn(f, compile.Name("qmlp"))
	for range 3 { // trace, compile, replay
		got := fn.MustCall(x, w2)[0].Float32s()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("compiled y[%d] = %g, strict %g", i, got[i], want[i])
			}
		}
	}
	g, err := fn.Graph(x, w2)
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, nd := range g.Nodes {
		if nd.Op != nil && nd.Op.Name == "linear_gguf" {
			count++
		}
	}
	if count != 2 {
		t.Errorf("traced graph has %d linear_gguf nodes, want 2", count)
	}
}
