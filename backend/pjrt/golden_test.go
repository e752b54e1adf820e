//go:build pjrt

package pjrt_test

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	_ "github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

var tensorType = regexp.MustCompile(`tensor<([0-9x]*)([a-z][a-z0-9]*)>`)

// parseSignature returns the parameter and result metas of @main.
func parseSignature(t *testing.T, text string) (params, outs []op.Meta) {
	t.Helper()
	i := strings.Index(text, "func.func @main(")
	if i < 0 {
		t.Fatal("no @main")
	}
	line := text[i:]
	line = line[:strings.Index(line, "{\n")]
	args, res, ok := strings.Cut(line, ") -> (")
	if !ok {
		t.Fatalf("cannot parse signature %q", line)
	}
	parse := func(s string) []op.Meta {
		var ms []op.Meta
		for _, m := range tensorType.FindAllStringSubmatch(s, -1) {
			shape := []int{}
			for _, d := range strings.Split(strings.TrimSuffix(m[1], "x"), "x") {
				if d == "" {
					continue
				}
				n, err := strconv.Atoi(d)
				if err != nil {
					t.Fatal(err)
				}
				shape = append(shape, n)
			}
			ht := op.HLOType{Shape: shape, Elem: m[2]}
			if ht.DType() == dtype.Invalid {
				t.Fatalf("element type %s", m[2])
			}
			ms = append(ms, op.Meta{Shape: shape, DType: ht.DType()})
		}
		return ms
	}
	return parse(args), parse(res)
}

// inputs makes deterministic inputs: floats in [-1, 1), integers in [0, 3).
func inputs(params []op.Meta) [][]byte {
	seed := uint64(12345)
	next := func() float64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return float64(seed>>11) / float64(1<<53)
	}
	out := make([][]byte, len(params))
	for i, m := range params {
		n := op.Numel(m.Shape)
		out[i] = make([]byte, n*m.DType.Size())
		for k := 0; k < n; k++ {
			if m.DType.IsFloat() {
				dtype.PutFloat64(m.DType, out[i], k, 2*next()-1)
			} else {
				dtype.PutInt64(m.DType, out[i], k, int64(next()*3))
			}
		}
	}
	return out
}

// goldenReference computes a golden program's outputs with eager tensors
// on cpu (the same model the stablehlo package traced).
func goldenReference(t *testing.T, name string, params []op.Meta, in [][]byte) [][]byte {
	cpu := tensor.MustDevice("cpu")
	ts := make([]*tensor.Tensor, len(in))
	for i, m := range params {
		ts[i] = tensor.FromBytes(cpu, m.DType, m.Shape, in[i])
	}
	a := func(name string, attrs op.Attrs, in ...*tensor.Tensor) *tensor.Tensor {
		return tensor.Apply1(name, in, attrs)
	}
	var outs []*tensor.Tensor
	err := tensor.Catch(func() {
		switch name {
		case "layer_norm":
			outs = []*tensor.Tensor{a("layer_norm", op.Attrs{"normalized_shape": []int{5}, "eps": 1e-5}, ts...)}
		case "attention":
			qkv := a("linear", nil, ts[0], ts[1], ts[2])
			qkv = a("reshape", op.Attrs{"shape": []int{2, 5, 3, 2, 4}}, qkv)
			qkv = a("permute", op.Attrs{"dims": []int{2, 0, 3, 1, 4}}, qkv)
			q := a("select", op.Attrs{"dim": 0, "index": 0}, qkv)
			k := a("select", op.Attrs{"dim": 0, "index": 1}, qkv)
			v := a("select", op.Attrs{"dim": 0, "index": 2}, qkv)
			o := tensor.Apply("scaled_dot_product_attention", []*tensor.Tensor{q, k, v, nil}, op.Attrs{"is_causal": true})[0]
			o = a("transpose", op.Attrs{"dim0": 1, "dim1": 2}, o)
			o = a("reshape", op.Attrs{"shape": []int{2, 5, 8}}, o)
			outs = []*tensor.Tensor{a("linear", nil, o, ts[3], ts[4])}
		case "mlp_train":
			for _, i := range []int{2, 3, 4, 5} {
				ts[i].SetRequiresGrad(true)
			}
			h := a("linear", nil, ts[0], ts[2], ts[3])
			h = a("gelu", nil, h)
			y := a("linear", nil, h, ts[4], ts[5])
			loss := tensor.Apply("cross_entropy", []*tensor.Tensor{y, ts[1], nil}, nil)[0]
			loss.Backward()
			outs = []*tensor.Tensor{loss, ts[2].Grad(), ts[3].Grad(), ts[4].Grad(), ts[5].Grad()}
		default:
			t.Fatalf("no reference for golden program %s", name)
		}
	})
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	res := make([][]byte, len(outs))
	for i, o := range outs {
		res[i] = o.Bytes()
	}
	return res
}

// TestXLAStableHLOGoldens compiles every StableHLO golden program of package
// stablehlo with the plugin, runs it, and compares its outputs with eager
// cpu tensors running the same model.
func TestXLAStableHLOGoldens(t *testing.T) {
	be := xla(t)
	paths, err := filepath.Glob(filepath.Join("..", "..", "stablehlo", "testdata", "*.mlir"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden programs: %v", err)
	}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".mlir")
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			params, outs := parseSignature(t, string(text))
			in := inputs(params)
			got, err := be.RunStableHLO(0, string(text), params, in, outs)
			if err != nil {
				t.Fatalf("RunStableHLO: %v", err)
			}
			want := goldenReference(t, name, params, in)
			if len(want) != len(got) {
				t.Fatalf("%d outputs, reference has %d", len(got), len(want))
			}
			for i, m := range outs {
				for k := 0; k < op.Numel(m.Shape); k++ {
					g, w := dtype.Float64At(m.DType, got[i], k), dtype.Float64At(m.DType, want[i], k)
					if math.IsNaN(g) || math.Abs(g-w) > 1e-5+1e-4*math.Abs(w) {
						t.Fatalf("output %d[%d]: xla %v, cpu %v", i, k, g, w)
					}
				}
			}
		})
	}
}
