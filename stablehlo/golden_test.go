package stablehlo

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

var update = flag.Bool("update", false, "rewrite the golden .mlir files in testdata")

// traceGrad traces fwd (which returns a scalar loss) decomposed into
// primitives, then builds its backward pass by calling every node's VJP
// through the same tracer in reverse topological order, and returns the
// graph of (loss, d loss / d params[i] for i in wrt), dead code removed.
func traceGrad(params []op.Meta, wrt []int, fwd func(b op.Builder, p []op.Value) op.Value) (*ir.Graph, error) {
	t := ir.NewTracer(ir.Decompose(true))
	var (
		ps   []*ir.Value
		loss op.Value
	)
	err := catchTrace(func() {
		in := make([]op.Value, len(params))
		for i, m := range params {
			ps = append(ps, t.Param(m))
			in[i] = ps[i]
		}
		loss = fwd(t, in)
		lv := loss.(*ir.Value)
		fwdNodes := append([]*ir.Node(nil), t.Graph().Nodes...)
		grads := map[*ir.Value]op.Value{lv: op.Call1(t, "full", op.Attrs{"shape": []int{}, "value": 1.0, "dtype": lv.Meta.DType})}
		for j := len(fwdNodes) - 1; j >= 0; j-- {
			n := fwdNodes[j]
			if n.IsConst() {
				continue
			}
			gout := make([]op.Value, len(n.Out))
			any := false
			for k, o := range n.Out {
				if g, ok := grads[o]; ok {
					gout[k], any = g, true
				} else {
					gout[k] = op.Zeros(t, o.Meta.Shape, o.Meta.DType)
				}
			}
			if !any || n.Op.VJP == nil || !n.Out[0].Meta.DType.IsFloat() {
				continue // no gradient flows through integer results
			}
			in := make([]op.Value, len(n.In))
			for k, v := range n.In {
				if v != nil {
					in[k] = v
				}
			}
			out := make([]op.Value, len(n.Out))
			for k, o := range n.Out {
				out[k] = o
			}
			gin := n.Op.VJP(t, in, out, gout, n.Attrs)
			for k, g := range gin {
				if g == nil || k >= len(n.In) || n.In[k] == nil || !n.In[k].Meta.DType.IsFloat() {
					continue
				}
				if prev, ok := grads[n.In[k]]; ok {
					g = op.Call1(t, "add", nil, prev, g)
				}
				grads[n.In[k]] = g
			}
		}
		outs := []op.Value{loss}
		for _, i := range wrt {
			g, ok := grads[ps[i]]
			if !ok {
				g = op.Zeros(t, params[i].Shape, params[i].DType)
			}
			outs = append(outs, g)
		}
		if _, err := t.Finish(outs...); err != nil {
			panic(err)
		}
	})
	if err != nil {
		return nil, err
	}
	return ir.DCE(t.Graph()), nil
}

// catchTrace runs f, turning a trace panic (*ir.TraceError) into an error.
func catchTrace(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
				return
			}
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

type golden struct {
	name  string
	build func() (*ir.Graph, error)
}

var goldens = []golden{
	{"mlp_train", func() (*ir.Graph, error) {
		// x[4,8] -> linear(16) -> gelu -> linear(3) -> cross_entropy(target).
		params := []op.Meta{m(f32, 4, 8), m(i64, 4), m(f32, 16, 8), m(f32, 16), m(f32, 3, 16), m(f32, 3)}
		return traceGrad(params, []int{2, 3, 4, 5}, func(b op.Builder, p []op.Value) op.Value {
			h := op.Call1(b, "linear", nil, p[0], p[2], p[3])
			h = op.Call1(b, "gelu", nil, h)
			y := op.Call1(b, "linear", nil, h, p[4], p[5])
			return b.Call("cross_entropy", []op.Value{y, p[1], nil}, nil)[0]
		})
	}},
	{"attention", func() (*ir.Graph, error) {
		// One causal self-attention block: x[2,5,8], two heads of 4.
		params := []op.Meta{m(f32, 2, 5, 8), m(f32, 24, 8), m(f32, 24), m(f32, 8, 8), m(f32, 8)}
		g, err := ir.Trace(params, func(b op.Builder, p []op.Value) []op.Value {
			qkv := op.Call1(b, "linear", nil, p[0], p[1], p[2])
			qkv = op.Call1(b, "reshape", op.Attrs{"shape": []int{2, 5, 3, 2, 4}}, qkv)
			qkv = op.Call1(b, "permute", op.Attrs{"dims": []int{2, 0, 3, 1, 4}}, qkv)
			q := op.Call1(b, "select", op.Attrs{"dim": 0, "index": 0}, qkv)
			k := op.Call1(b, "select", op.Attrs{"dim": 0, "index": 1}, qkv)
			v := op.Call1(b, "select", op.Attrs{"dim": 0, "index": 2}, qkv)
			a := b.Call("scaled_dot_product_attention", []op.Value{q, k, v, nil}, op.Attrs{"is_causal": true})[0]
			a = op.Call1(b, "transpose", op.Attrs{"dim0": 1, "dim1": 2}, a)
			a = op.Call1(b, "reshape", op.Attrs{"shape": []int{2, 5, 8}}, a)
			return []op.Value{op.Call1(b, "linear", nil, a, p[3], p[4])}
		}, ir.Decompose(true))
		if err != nil {
			return nil, err
		}
		return ir.DCE(g), nil
	}},
	{"layer_norm", func() (*ir.Graph, error) {
		params := []op.Meta{m(f32, 2, 5), m(f32, 5), m(f32, 5)}
		g, err := ir.Trace(params, func(b op.Builder, p []op.Value) []op.Value {
			return []op.Value{op.Call1(b, "layer_norm", op.Attrs{"normalized_shape": []int{5}, "eps": 1e-5}, p[0], p[1], p[2])}
		})
		if err != nil {
			return nil, err
		}
		return ir.Lower(g)
	}},
}

// TestGolden exports traced programs and compares them with the committed
// files (go test ./stablehlo -update rewrites them); each must verify.
func TestGolden(t *testing.T) {
	for _, gd := range goldens {
		t.Run(gd.name, func(t *testing.T) {
			g, err := gd.build()
			if err != nil {
				t.Fatalf("trace: %v", err)
			}
			text, err := Export(g, gd.name)
			if err != nil {
				t.Fatalf("Export: %v", err)
			}
			if err := Verify(text); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			path := filepath.Join("testdata", gd.name+".mlir")
			if *update {
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./stablehlo -update)", err)
			}
			if string(want) != text {
				t.Errorf("%s differs from the export (run go test ./stablehlo -update after checking the change):\n%s", path, firstDiff(string(want), text))
			}
			// The golden file itself must verify.
			if err := Verify(string(want)); err != nil {
				t.Errorf("golden %s: %v", path, err)
			}
		})
	}
}

func firstDiff(a, b string) string {
	la, lb := splitLines(a), splitLines(b)
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n golden: %s\n export: %s", i+1, x, y)
		}
	}
	return ""
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
