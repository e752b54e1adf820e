package cpu

import (
	"encoding/binary"
	"math"
	"math/rand"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/gguf"
	"github.com/gotpu/gotpu/internal/quant"
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

// linearGGUFCall runs the direct kernel on x [m, k] (f32) and w with the
// kernels k and returns y [m, n].
func linearGGUFCall(t *testing.T, kern quant.Kernels, name string, xs []float32, m, k int, wb []byte, n int) []float32 {
	t.Helper()
	return linearGGUFCallAttrs(t, kern, op.Attrs{"type": name, "k": k}, xs, m, k, wb, n)
}

// linearGGUFCallAttrs is linearGGUFCall with the op's attributes given.
func linearGGUFCallAttrs(t *testing.T, kern quant.Kernels, attrs op.Attrs, xs []float32, m, k int, wb []byte, n int) []float32 {
	t.Helper()
	d := op.MustLookup("linear_gguf")
	a, err := d.Normalize(attrs)
	if err != nil {
		t.Fatal(err)
	}
	xb := make([]byte, 4*len(xs))
	copy(as[float32](xb), xs)
	yb := make([]byte, 4*m*n)
	l := &device.Launch{Op: d, Attrs: a,
		In: []device.Operand{
			{Buf: &Buf{b: xb}, DType: dtype.F32, Layout: op.Contiguous([]int{m, k})},
			{Buf: &Buf{b: wb}, DType: dtype.U8, Layout: op.Contiguous([]int{n, len(wb) / n})},
		},
		Out: []device.Operand{{Buf: &Buf{b: yb}, DType: dtype.F32, Layout: op.Contiguous([]int{m, n})}},
	}
	c := &Call{Launch: l, InB: [][]byte{xb, wb}, OutB: [][]byte{yb}}
	if err := linearGGUF(c, kern); err != nil {
		t.Fatal(err)
	}
	return as[float32](yb)
}

// TestLinearGGUFKernelLevels checks the direct kernel at every CPU level
// against the decomposition: equal bits across levels (quant's contract)
// and, against the f32 product of the dequantized matrix, within the error
// of quantizing x per block to 8 bits (Q8_0/Q8_1 blocks of 32, Q8_K of
// 256): |Δy| ≤ 2·Σ_blocks amax/127 · Σ|w| per block, bounded here by
// tol·(|y|+Σ|x||w|/√k)).
func TestLinearGGUFKernelLevels(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	cpu := tensor.MustDevice("cpu")
	levels := SupportedLevels()
	for _, l := range allLevels {
		if levelRank(l) >= len(levels) {
			t.Logf("level %s: not supported by this CPU, not run", l)
		}
	}
	for _, name := range quantTypes {
		t.Run(name, func(t *testing.T) {
			blk, _ := op.GGUFBlockOf(name)
			for _, sh := range [][3]int{{1, 37, 2 * blk.BlockSize}, {4, 19, blk.BlockSize}, {3, 64, 4 * blk.BlockSize}} {
				m, n, k := sh[0], sh[1], sh[2]
				wb := randomBlocks(rng, name, n, k, 0.05)
				rb, _ := blk.RowBytes(k)
				xs := make([]float32, m*k)
				for i := range xs {
					xs[i] = float32(rng.NormFloat64())
				}
				x := tensor.FromSlice(cpu, xs, m, k)
				w := tensor.FromBytes(cpu, dtype.U8, []int{n, rb}, wb)
				want := linearGGUFDecomposed(t, x, w, op.Attrs{"type": name, "k": k}).Float32s()
				wd := make([]float32, n*k)
				if err := gguf.Dequantize(gguf.Type(blk.GGMLType), wb, n*k, wd); err != nil {
					t.Fatal(err)
				}
				var first []float32
				for _, lv := range levels {
					kern := quant.For(lv)
					if kern.Level() != lv && sh == [3]int{1, 37, 2 * blk.BlockSize} {
						t.Logf("%s: quant has no %s kernels; For(%s) runs %s", name, lv, lv, kern.Level())
					}
					got := linearGGUFCall(t, kern, name, xs, m, k, wb, n)
					if first == nil {
						first = got
					} else {
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
								t.Fatalf("%v level %s: y[%d] = %g, level %s gave %g", sh, lv, i, got[i], levels[0], first[i])
							}
						}
					}
					// x as the kernel sees it: quantized per block to the
					// weight type's activation type and decoded again.
					at, _ := quant.ActType(quant.Type(blk.GGMLType))
					xq := make([]float32, m*k)
					arb, _ := quant.RowBytes(at, k)
					raw := make([]byte, arb)
					for i := range m {
						if err := quant.QuantizeRow(at, xs[i*k:][:k], raw); err != nil {
							t.Fatal(err)
						}
						if err := quant.DequantizeRow(at, raw, xq[i*k:][:k]); err != nil {
							t.Fatal(err)
						}
					}
					for i := range m {
						for j := range n {
							var mag, ref float64
							for p := range k {
								mag += math.Abs(float64(xs[i*k+p]) * float64(wd[j*k+p]))
								ref += float64(xq[i*k+p]) * float64(wd[j*k+p])
							}
							g, w := float64(got[i*n+j]), float64(want[i*n+j])
							// Integer block sums are exact; the f32 chain over
							// blocks and the scale products round, and Q8_1
							// holds each block's d·Σq as an f16 (ggml's
							// vec_dot adds m·s), off by 2^-11 relative.
							tol := 1e-5 * mag
							if at == quant.Q8_1 {
								for b0 := 0; b0 < k; b0 += 32 {
									var wmax, sx float64
									for p := b0; p < b0+32; p++ {
										wmax = max(wmax, math.Abs(float64(wd[j*k+p])))
										sx += math.Abs(float64(xq[i*k+p]))
									}
									tol += wmax * sx * 0x1p-11
								}
							}
							if math.Abs(g-ref) > tol {
								t.Errorf("%v level %s: y[%d,%d] = %g, f64 product with x quantized to %v %g (tol %g)", sh, lv, i, j, g, at, ref, tol)
							}
							// Against the decomposition (unquantized x): the
							// 8-bit rounding of x, half a step of amax/127 per
							// element, in Σ|w|·step/2 at most.
							var bound float64
							bs := quant.Type(at).BlockSize()
							for b0 := 0; b0 < k; b0 += bs {
								var amax, sw float64
								for p := b0; p < b0+bs; p++ {
									amax = max(amax, math.Abs(float64(xs[i*k+p])))
									sw += math.Abs(float64(wd[j*k+p]))
								}
								bound += sw * amax / 127 / 2 * 1.01
							}
							if math.Abs(g-w) > bound+1e-5*mag {
								t.Errorf("%v level %s: y[%d,%d] = %g, decomposition %g (bound %g)", sh, lv, i, j, g, w, bound)
							}
						}
					}
				}
			}
		})
	}
}

// TestLinearGGUFDispatch checks that dispatch runs the direct kernel for
// f32, bf16 and f16 inputs with a batch dimension and a strided (transposed)
// input, bit for bit as the kernel called on the f32 values with one
// rounding of the output, and that a non-finite activation propagates as
// in the decomposition.
func TestLinearGGUFDispatch(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	cpu := tensor.MustDevice("cpu")
	const name, n, k = "q4_k", 9, 256
	blk, _ := op.GGUFBlockOf(name)
	rb, _ := blk.RowBytes(k)
	wb := randomBlocks(rng, name, n, k, 0.05)
	w := tensor.FromBytes(cpu, dtype.U8, []int{n, rb}, wb)
	xs := make([]float32, 2*3*k)
	for i := range xs {
		xs[i] = float32(rng.NormFloat64())
	}
	x := tensor.FromSlice(cpu, xs, 2, 3, k)
	a := op.Attrs{"type": name, "k": k}
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16, dtype.F16} {
		xd := x.ToDType(dt)
		want := tensor.FromSlice(cpu, linearGGUFCall(t, procKS.quant, name, xd.ToDType(dtype.F32).Float32s(), 6, k, wb, n), 2, 3, n).ToDType(dt).ToDType(dtype.F32).Float32s()
		before := linearGGUFRuns.Load()
		y := tensor.Apply1("linear_gguf", []*tensor.Tensor{xd, w}, a)
		if linearGGUFRuns.Load() == before {
			t.Fatalf("%v: the direct kernel did not run", dt)
		}
		if y.DType() != dt || len(y.Shape()) != 3 || y.Size(2) != n {
			t.Fatalf("%v: output %v %v", dt, y.DType(), y.Shape())
		}
		got := y.ToDType(dtype.F32).Float32s()
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%v: y[%d] = %g, kernel on f32 values %g", dt, i, got[i], want[i])
			}
		}
	}
	// A transposed view of x is made contiguous by the runtime.
	xt := tensor.FromSlice(cpu, xs, 2, k, 3).Transpose(1, 2)
	yt := tensor.Apply1("linear_gguf", []*tensor.Tensor{xt, w}, a).Float32s()
	wt := linearGGUFCall(t, procKS.quant, name, xt.Contiguous().Float32s(), 6, k, wb, n)
	for i := range yt {
		if math.Float32bits(yt[i]) != math.Float32bits(wt[i]) {
			t.Fatalf("transposed x: y[%d] = %g, kernel on a contiguous copy %g", i, yt[i], wt[i])
		}
	}
	xs[5] = float32(math.NaN())
	y := tensor.Apply1("linear_gguf", []*tensor.Tensor{tensor.FromSlice(cpu, xs, 2, 3, k), w}, a).Float32s()
	for j := range n {
		if !math.IsNaN(float64(y[j])) {
			t.Fatalf("NaN in x row 0: y[0,%d] = %g, want NaN", j, y[j])
		}
	}
	if math.IsNaN(float64(y[n])) {
		t.Fatalf("NaN in x row 0 leaked into row 1")
	}
}
