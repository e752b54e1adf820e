package cpu

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// TestCompileSiblingLinears: a compiled program runs linear_gguf steps
// that multiply the same activations (a layer's q/k/v projections) as one
// product, and every output has the bits of the op-by-op run; a product of
// other activations in between is not drawn in.
func TestCompileSiblingLinears(t *testing.T) {
	be := testBackend(t)
	rng := rand.New(rand.NewSource(11))
	const k = 256
	for _, name := range []string{"q4_1", "q8_0", "q4_k"} {
		for _, m := range []int{1, 5} {
			t.Run(fmt.Sprintf("%s/m=%d", name, m), func(t *testing.T) {
				blk, _ := op.GGUFBlockOf(name)
				rb, _ := blk.RowBytes(k)
				ns := []int{40, 17, 17}
				params := []op.Meta{fm(m, k)}
				for _, n := range ns {
					params = append(params, op.Meta{Shape: []int{n, rb}, DType: dtype.U8})
				}
				a := op.Attrs{"type": name, "k": k}
				g, err := ir.Trace(params, func(b op.Builder, p []op.Value) []op.Value {
					x := p[0]
					y0 := op.Call1(b, "linear_gguf", a, x, p[1])
					y1 := op.Call1(b, "linear_gguf", a, x, p[2])
					y2 := op.Call1(b, "linear_gguf", a, x, p[3])
					// Other activations: a run of its own.
					x2 := op.Call1(b, "add", nil, x, x)
					y3 := op.Call1(b, "linear_gguf", a, x2, p[1])
					return []op.Value{y0, y1, y2, y3}
				})
				if err != nil {
					t.Fatal(err)
				}
				ins := [][]byte{inputsFor(params[:1], 3, 0)[0]}
				for _, n := range ns {
					ins = append(ins, randomBlocks(rng, name, n, k, 0.05))
				}
				ip, p := interpAndCompiled(t, be, g)
				want := runProg(t, be, ip, g, ins, device.RunOptions{})
				before := linearGGUFMultiRuns.Load()
				got := runProg(t, be, p, g, ins, device.RunOptions{})
				if runs := linearGGUFMultiRuns.Load() - before; runs != 1 {
					t.Errorf("%d sibling runs done as one product, want 1", runs)
				}
				for i := range want {
					if !bytes.Equal(got[i], want[i]) {
						t.Errorf("output %d differs from the op-by-op run", i)
					}
				}
			})
		}
	}
}

// TestCompileSiblingGEMVs: dense x·Wᵀ products of the same activations
// (f32 and bf16, one to gemvRowsMax rows) run as one GEMV run in a
// compiled program, each output with the bits of the op-by-op run; a run
// that has a product the GEMV kernels do not take (x·W) runs step by
// step, with the same bits.
func TestCompileSiblingGEMVs(t *testing.T) {
	be := testBackend(t)
	xwt := op.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{1}}
	xw := op.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{0}}
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		for _, k := range []int{200, 576} {
			for _, m := range []int{1, 3, 5, gemvRowsMax} {
				for _, mixed := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/k=%d/m=%d/mixed=%v", dt, k, m, mixed), func(t *testing.T) {
						ns := []int{40, 17, 17}
						params := []op.Meta{{Shape: []int{m, k}, DType: dt}}
						for _, n := range ns {
							params = append(params, op.Meta{Shape: []int{n, k}, DType: dt})
						}
						params = append(params, op.Meta{Shape: []int{k, 24}, DType: dt})
						g, err := ir.Trace(params, func(b op.Builder, p []op.Value) []op.Value {
							x := p[0]
							var ys []op.Value
							for i := range ns {
								ys = append(ys, op.Call1(b, "dot_general", xwt, x, p[1+i]))
							}
							if mixed {
								ys = append(ys, op.Call1(b, "dot_general", xw, x, p[4]))
							}
							// Other activations: a run of their own.
							x2 := op.Call1(b, "add", nil, x, x)
							ys = append(ys, op.Call1(b, "dot_general", xwt, x2, p[1]))
							return ys
						})
						if err != nil {
							t.Fatal(err)
						}
						ins := inputsFor(params, 5, 0)
						ip, p := interpAndCompiled(t, be, g)
						want := runProg(t, be, ip, g, ins, device.RunOptions{})
						before := denseGEMVMultiRuns.Load()
						got := runProg(t, be, p, g, ins, device.RunOptions{})
						wantRuns := int64(1)
						if mixed {
							wantRuns = 0
						}
						if runs := denseGEMVMultiRuns.Load() - before; gemvTakes(procKS, m) && runs != wantRuns {
							t.Errorf("%d sibling runs done as one product, want %d", runs, wantRuns)
						}
						for i := range want {
							if !bytes.Equal(got[i], want[i]) {
								t.Errorf("output %d differs from the op-by-op run", i)
							}
						}
					})
				}
			}
		}
	}
}
