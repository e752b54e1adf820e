package compile_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/stablehlo"
	"github.com/gotpu/gotpu/tensor"
)

var update = flag.Bool("update", false, "rewrite the golden .mlir files in testdata")

// TestExportStableHLOGolden exports three traced programs — an MLP's
// forward and backward, an attention block, layer_norm forward and
// backward — and compares them with the golden MLIR in testdata; each is
// also checked by the structural verifier and for the ops it must contain.
func TestExportStableHLOGolden(t *testing.T) {
	cases := []struct {
		name string
		fn   func() (*compile.Function, []*tensor.Tensor)
		ops  []string
	}{
		{"mlp_fwd_bwd", func() (*compile.Function, []*tensor.Tensor) {
			tensor.ManualSeed(1)
			m := newMLP(cpu, 8, 16, 3)
			x := tensor.RandnGen(tensor.NewGenerator(2), cpu, dtype.F32, 4, 8)
			y := tensor.FromSlice(cpu, []int64{0, 2, 1, 2}, 4)
			return compile.Fn(func(in ...*tensor.Tensor) []*tensor.Tensor {
				loss := tensor.CrossEntropy(m.forward(in[0]), in[1], tensor.CrossEntropyOpts{})
				loss.Backward()
				out := []*tensor.Tensor{loss}
				for _, p := range nn.Parameters(m) {
					out = append(out, p.Grad())
				}
				return out
			}, compile.Name("mlp_fwd_bwd")), []*tensor.Tensor{x, y}
		}, []string{"stablehlo.dot_general", "stablehlo.maximum", "stablehlo.exponential", "stablehlo.reduce", "stablehlo.select"}},
		{"attention", func() (*compile.Function, []*tensor.Tensor) {
			tensor.ManualSeed(3)
			const d, heads = 16, 2
			proj := []*nn.Linear{nn.NewLinear(cpu, d, d, true), nn.NewLinear(cpu, d, d, true), nn.NewLinear(cpu, d, d, true), nn.NewLinear(cpu, d, d, true)}
			x := tensor.RandnGen(tensor.NewGenerator(4), cpu, dtype.F32, 2, 6, d)
			split := func(t *tensor.Tensor) *tensor.Tensor {
				return t.Reshape(2, 6, heads, d/heads).Transpose(1, 2)
			}
			return compile.Fn(func(in ...*tensor.Tensor) []*tensor.Tensor {
				q, k, v := split(proj[0].Forward(in[0])), split(proj[1].Forward(in[0])), split(proj[2].Forward(in[0]))
				a := tensor.ScaledDotProductAttention(q, k, v, tensor.SDPAOpts{IsCausal: true})
				return []*tensor.Tensor{proj[3].Forward(a.Transpose(1, 2).Reshape(2, 6, d)).Add(in[0])}
			}, compile.Name("attention")), []*tensor.Tensor{x}
		}, []string{"stablehlo.dot_general", "stablehlo.exponential", "stablehlo.transpose", "stablehlo.select"}},
		{"layer_norm", func() (*compile.Function, []*tensor.Tensor) {
			g := tensor.NewGenerator(5)
			x := tensor.RandnGen(g, cpu, dtype.F32, 4, 16)
			w, b := tensor.RandnGen(g, cpu, dtype.F32, 16), tensor.RandnGen(g, cpu, dtype.F32, 16)
			cot := tensor.RandnGen(g, cpu, dtype.F32, 4, 16)
			x.SetRequiresGrad(true)
			w.SetRequiresGrad(true)
			b.SetRequiresGrad(true)
			return compile.Fn(func(in ...*tensor.Tensor) []*tensor.Tensor {
				y := tensor.LayerNorm(in[0], []int{16}, in[1], in[2], 1e-5)
				gs := tensor.Grad([]*tensor.Tensor{y}, []*tensor.Tensor{cot}, in[:3], false)
				return append([]*tensor.Tensor{y}, gs...)
			}, compile.Name("layer_norm")), []*tensor.Tensor{x, w, b}
		}, []string{"stablehlo.rsqrt", "stablehlo.reduce", "stablehlo.multiply"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fn, in := c.fn()
			var buf bytes.Buffer
			if err := compile.ExportStableHLO(&buf, fn, in...); err != nil {
				t.Fatal(err)
			}
			text := buf.String()
			if err := stablehlo.Verify(text); err != nil {
				t.Fatalf("does not verify: %v", err)
			}
			for _, o := range c.ops {
				if !strings.Contains(text, o) {
					t.Errorf("no %s in the exported %s", o, c.name)
				}
			}
			path := filepath.Join("testdata", c.name+".mlir")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./compile -run Export -update)", err)
			}
			if text != string(want) {
				t.Errorf("exported %s differs from %s (go test ./compile -run Export -update rewrites it)", c.name, path)
			}
		})
	}
}

// TestExportRejectsOptimizerStep: an in-place optimizer step has no
// StableHLO form yet; export says so, naming the op.
func TestExportRejectsOptimizerStep(t *testing.T) {
	s := newSetup("adamw")
	x, y := batch(0)
	err := compile.ExportStableHLO(&bytes.Buffer{}, compile.Fn(s.step), x, y)
	if err == nil || !strings.Contains(err.Error(), "adam_step") {
		t.Fatalf("got %v, want an error naming adam_step", err)
	}
}
