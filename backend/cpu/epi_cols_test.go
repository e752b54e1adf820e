package cpu

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// epiKind is a fused epilogue on a product d, with inputs bias [n],
// res [.., n] (the output's shape), rowv [.., 1] and a 0-d s.
type epiKind struct {
	name string
	fn   func(b op.Builder, d, bias, res, rowv, s op.Value) op.Value
}

var epiKinds = []epiKind{
	{"bias,relu", func(b op.Builder, d, bias, res, rowv, s op.Value) op.Value {
		return op.Call1(b, "relu", nil, op.Call1(b, "add", nil, d, bias))
	}},
	{"bias,gelu", func(b op.Builder, d, bias, res, rowv, s op.Value) op.Value {
		return op.Call1(b, "gelu", nil, op.Call1(b, "add", nil, bias, d))
	}},
	{"min(tanh((d-b)*1.5)+res, b)", func(b op.Builder, d, bias, res, rowv, s op.Value) op.Value {
		h := op.Call1(b, "mul", nil, op.Call1(b, "sub", nil, d, bias), b.Scalar(1.5, d))
		return op.Call1(b, "minimum", nil, op.Call1(b, "add", nil, op.Call1(b, "tanh", nil, h), res), bias)
	}},
	{"left sub div max", func(b op.Builder, d, bias, res, rowv, s op.Value) op.Value {
		// The product is read once (the planner fuses a GEMM only into a
		// group where it is).
		a := op.Call1(b, "sub", nil, bias, d)
		q := op.Call1(b, "div", nil, bias, op.Call1(b, "add", nil, op.Call1(b, "abs", nil, a), b.Scalar(0.5, a)))
		return op.Call1(b, "add", nil, op.Call1(b, "maximum", nil, bias, a), q)
	}},
	{"relu backward", func(b op.Builder, d, bias, res, rowv, s op.Value) op.Value {
		le := op.Call1(b, "le", nil, res, b.Scalar(0.0, res))
		return op.Call1(b, "where", nil, le, s, d)
	}},
	{"row vector, scalar twice", func(b op.Builder, d, bias, res, rowv, s op.Value) op.Value {
		h := op.Call1(b, "mul", nil, op.Call1(b, "sigmoid", nil, d), rowv)
		return op.Call1(b, "add", nil, op.Call1(b, "mul", nil, h, s), s)
	}},
	{"bias used twice", func(b op.Builder, d, bias, res, rowv, s op.Value) op.Value {
		return op.Call1(b, "add", nil, op.Call1(b, "mul", nil, op.Call1(b, "exp", nil, op.Call1(b, "tanh", nil, d)), bias), bias)
	}},
}

// epilogueProgram traces fn over params, compiles it, checks that a GEMM
// epilogue was fused, and returns the graph, inputs (from seed), interp's
// outputs on them and the compiled program.
func epilogueProgram(t *testing.T, be *Backend, params []op.Meta, fn func(b op.Builder, p []op.Value) []op.Value, seed uint64) (*ir.Graph, [][]byte, [][]byte, device.Program) {
	t.Helper()
	g, err := ir.Trace(params, fn)
	if err != nil {
		t.Fatal(err)
	}
	ins := inputsFor(params, seed, 0)
	ip, p := interpAndCompiled(t, be, g)
	want := runProg(t, be, ip, g, ins, device.RunOptions{})
	if !bytes.Contains([]byte(p.(*cprogram).pl.summary()), []byte("GEMM epilogue")) {
		t.Fatalf("no GEMM epilogue fused:\n%s", p.(*cprogram).pl.summary())
	}
	return g, ins, want, p
}

// TestGEMMEpilogueShapes checks compiled GEMM epilogues bit for bit
// against interp (Strict eager: the product, then each op's kernel) over
// the epilogue kinds above and shapes taking each path: the streaming
// x·Wᵀ path's column epilogue (m up to 96, odd m, n, k, a 3-D x), the
// blocked driver's tile epilogue at a small output (wide tiles), and
// shapes where the group runs after the product.
func TestGEMMEpilogueShapes(t *testing.T) {
	be := testBackend(t)
	type shape struct {
		lead    []int // x's leading dims (their product is m)
		n, k    int
		nn      bool // a·b (b [k, n]) rather than x·Wᵀ
		colPath bool // the column epilogue must be taken (AVX2)
	}
	shapes := []shape{
		{[]int{1}, 6, 16, false, false}, // m = 1: the gemv kernels, the group after
		{[]int{2}, 6, 16, false, false}, // m ≤ gemvRowsMax: the same
		{[]int{7}, 13, 17, false, false},
		{[]int{9}, 13, 17, false, true},
		{[]int{16}, 48, 33, false, true},
		{[]int{64}, 70, 100, false, true},
		{[]int{64}, 50, 100, false, false}, // n < m: not swapped
		{[]int{96}, 97, 64, false, true},
		{[]int{2, 12}, 40, 70, false, true},
		{[]int{33}, 200, 1025, false, true},
		{[]int{100}, 130, 20, false, false}, // m past the streaming path
		{[]int{40}, 256, 60, true, false},   // blocked, wide tiles
		{[]int{5}, 20, 9, true, false},      // small path: after the product
	}
	for _, sh := range shapes {
		m := 1
		for _, d := range sh.lead {
			m *= d
		}
		outShape := append(append([]int{}, sh.lead...), sh.n)
		rowShape := append(append([]int{}, sh.lead...), 1)
		for _, ek := range epiKinds {
			name := fmt.Sprintf("%s/%vx%dx%d/nn=%v", ek.name, sh.lead, sh.n, sh.k, sh.nn)
			t.Run(name, func(t *testing.T) {
				wShape := []int{sh.n, sh.k}
				if sh.nn {
					wShape = []int{sh.k, sh.n}
				}
				params := []op.Meta{fm(append(append([]int{}, sh.lead...), sh.k)...), fm(wShape...), fm(sh.n), fm(outShape...), fm(rowShape...), fm()}
				fn := func(b op.Builder, p []op.Value) []op.Value {
					contract := []int{len(sh.lead)}
					rc := []int{1}
					if sh.nn {
						rc = []int{0}
					}
					d := op.Call1(b, "dot_general", op.Attrs{"lhs_batch": []int{}, "rhs_batch": []int{}, "lhs_contract": contract, "rhs_contract": rc}, p[0], p[1])
					return []op.Value{ek.fn(b, d, p[2], p[3], p[4], p[5])}
				}
				g, ins, want, p := epilogueProgram(t, be, params, fn, uint64(m*sh.n+sh.k))
				cols0 := epiColsRuns.Load()
				got := runProg(t, be, p, g, ins, device.RunOptions{})
				tookCols := epiColsRuns.Load() > cols0
				if sh.colPath && procKS.atLeast(LevelAVX2) && !tookCols {
					t.Errorf("column epilogue not taken")
				}
				if !sh.colPath && tookCols {
					t.Errorf("column epilogue taken")
				}
				w, gg := as[float32](want[0]), as[float32](got[0])
				for i := range w {
					if math.Float32bits(w[i]) != math.Float32bits(gg[i]) && !(w[i] != w[i] && gg[i] != gg[i]) {
						t.Fatalf("element %d = %v, interp %v", i, gg[i], w[i])
					}
				}
			})
		}
	}
}

// TestGEMMEpilogueTileRuns checks that a small-output product on the
// blocked driver with wide tiles takes the per-tile epilogue, and a
// small-path product the epilogue after the product.
func TestGEMMEpilogueTileRuns(t *testing.T) {
	if tileF32(procKS) == nil {
		t.Skip("no tiled kernels")
	}
	be := testBackend(t)
	for _, c := range []struct {
		m, n, k int
		tile    bool
	}{{64, 512, 256, true}, {40, 256, 60, true}, {64, 10, 256, false}, {5, 300, 20, false}} {
		params := []op.Meta{fm(c.m, c.k), fm(c.k, c.n), fm(c.m, c.n)}
		g, err := ir.Trace(params, func(b op.Builder, p []op.Value) []op.Value {
			return []op.Value{op.Call1(b, "mul", nil, dotNN(b, p[0], p[1]), p[2])}
		})
		if err != nil {
			t.Fatal(err)
		}
		p, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t0 := epiTileRuns.Load()
		runProg(t, be, p, g, inputsFor(params, 1, 0), device.RunOptions{})
		if got := epiTileRuns.Load() > t0; got != c.tile {
			t.Errorf("%dx%dx%d: per-tile epilogue %v, want %v", c.m, c.n, c.k, got, c.tile)
		}
	}
}

// TestGEMMEpilogueOutputs checks GEMM epilogues whose group has outputs
// besides its last value — a pre-activation the backward pass keeps, the
// conservative outputs of a Fused graph, the product itself — bit for bit
// against interp, on every path of TestGEMMEpilogueShapes, and after
// Marshal and LoadProgram.
func TestGEMMEpilogueOutputs(t *testing.T) {
	be := testBackend(t)
	kinds := []struct {
		name string
		fn   func(b op.Builder, d, bias, res op.Value) []op.Value
	}{
		{"h=d+bias; relu(h), h", func(b op.Builder, d, bias, res op.Value) []op.Value {
			h := op.Call1(b, "add", nil, d, bias)
			return []op.Value{op.Call1(b, "relu", nil, h), h}
		}},
		{"h, gelu(h) (outputs in node order)", func(b op.Builder, d, bias, res op.Value) []op.Value {
			h := op.Call1(b, "add", nil, bias, d)
			return []op.Value{h, op.Call1(b, "gelu", nil, h)}
		}},
		{"the product too: d, relu(d+bias)", func(b op.Builder, d, bias, res op.Value) []op.Value {
			return []op.Value{d, op.Call1(b, "relu", nil, op.Call1(b, "add", nil, d, bias))}
		}},
		{"the product and all: relu(h), d, h", func(b op.Builder, d, bias, res op.Value) []op.Value {
			h := op.Call1(b, "add", nil, d, bias)
			return []op.Value{op.Call1(b, "relu", nil, h), d, h}
		}},
		{"three outputs", func(b op.Builder, d, bias, res op.Value) []op.Value {
			h := op.Call1(b, "mul", nil, d, bias)
			s := op.Call1(b, "tanh", nil, h)
			return []op.Value{s, op.Call1(b, "add", nil, s, res), h}
		}},
	}
	shapes := []struct {
		lead []int
		n, k int
		nn   bool
	}{
		{[]int{2}, 6, 16, false},
		{[]int{9}, 13, 17, false},
		{[]int{64}, 70, 100, false},
		{[]int{2, 12}, 40, 70, false},
		{[]int{100}, 130, 20, false},
		{[]int{40}, 256, 60, true},
		{[]int{5}, 20, 9, true},
		{[]int{300}, 256, 64, true}, // past the size of the per-tile epilogue
	}
	for _, sh := range shapes {
		m := 1
		for _, d := range sh.lead {
			m *= d
		}
		outShape := append(append([]int{}, sh.lead...), sh.n)
		for _, ek := range kinds {
			t.Run(fmt.Sprintf("%s/%vx%dx%d/nn=%v", ek.name, sh.lead, sh.n, sh.k, sh.nn), func(t *testing.T) {
				wShape := []int{sh.n, sh.k}
				rc := []int{1}
				if sh.nn {
					wShape, rc = []int{sh.k, sh.n}, []int{0}
				}
				params := []op.Meta{fm(append(append([]int{}, sh.lead...), sh.k)...), fm(wShape...), fm(sh.n), fm(outShape...)}
				g, ins, want, p := epilogueProgram(t, be, params, func(b op.Builder, p []op.Value) []op.Value {
					d := op.Call1(b, "dot_general", op.Attrs{"lhs_batch": []int{}, "rhs_batch": []int{}, "lhs_contract": []int{len(sh.lead)}, "rhs_contract": rc}, p[0], p[1])
					return ek.fn(b, d, p[2], p[3])
				}, uint64(m*sh.n+sh.k))
				cols0, tiles0 := epiColsRuns.Load(), epiTileRuns.Load()
				got := runProg(t, be, p, g, ins, device.RunOptions{})
				if epiColsRuns.Load() > cols0 || epiTileRuns.Load() > tiles0 {
					t.Errorf("column or tile epilogue taken with several outputs: the group runs after the product")
				}
				for o := range want {
					w, gg := as[float32](want[o]), as[float32](got[o])
					for i := range w {
						if math.Float32bits(w[i]) != math.Float32bits(gg[i]) && !(w[i] != w[i] && gg[i] != gg[i]) {
							t.Fatalf("output %d element %d = %v, interp %v", o, i, gg[i], w[i])
						}
					}
				}
				// The plan survives serialization.
				data, err := p.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				lp, err := be.LoadProgram(0, data)
				if err != nil {
					t.Fatalf("loading the plan: %v", err)
				}
				again := runProg(t, be, lp, g, ins, device.RunOptions{})
				for o := range want {
					if !bytes.Equal(again[o], got[o]) {
						t.Fatalf("output %d differs after Marshal and LoadProgram", o)
					}
				}
			})
		}
	}
}
