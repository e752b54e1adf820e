package ir

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

func TestTracePrint(t *testing.T) {
	want := map[string]string{
		"mlp": `graph(%0: f32[4,8], %1: f32[16,8], %2: f32[16], %3: f32[3,16], %4: f32[3]) {
  %5 = linear(%0, %1, %2) {precision=""} : f32[4,16]
  %6 = gelu(%5) {approximate="none"} : f32[4,16]
  %7 = linear(%6, %3, %4) {precision=""} : f32[4,3]
  return %7
}
`,
		"layer_norm": `graph(%0: f32[2,5], %1: f32[5], %2: f32[5]) {
  %3 = layer_norm(%0, %1, %2) {eps=1e-05, normalized_shape=[5]} : f32[2,5]
  return %3
}
`,
		"softmax": `graph(%0: f32[3,4]) {
  %1 = softmax(%0) {dim=1, dtype=none} : f32[3,4]
  return %1
}
`,
		"matmul_promote": `graph(%0: f32[2,1,3,4], %1: f32[5,4,6], %2: i32[6], %3: bf16[6]) {
  %4 = matmul(%0, %1) {precision=""} : f32[2,5,3,6]
  %5 = constant 2.0 (wrapped) : f32[]
  %6 = mul(%4, %5) : f32[2,5,3,6]
  %7 = convert(%2) {dtype=f32} : f32[6]
  %8 = add(%6, %7) {alpha=1} : f32[2,5,3,6]
  %9 = convert(%2) {dtype=f32} : f32[6]
  %10 = constant 2.0 (wrapped) : f32[]
  %11 = div(%9, %10) {rounding_mode=""} : f32[6]
  %12 = constant 0.5 (wrapped) : bf16[]
  %13 = mul(%3, %12) : bf16[6]
  %14 = sub(%8, %11) {alpha=1} : f32[2,5,3,6]
  return %14, %13
}
`,
	}
	for _, p := range programs {
		t.Run(p.name, func(t *testing.T) {
			g, err := p.trace()
			if err != nil {
				t.Fatal(err)
			}
			if got := g.String(); got != want[p.name] {
				t.Errorf("printed form:\n%s\nwant:\n%s", got, want[p.name])
			}
			if err := g.Verify(); err != nil {
				t.Errorf("Verify: %v", err)
			}
		})
	}
}

// TestTracePromotion checks the promotion decisions the tracer makes, as
// the eager runtime makes them (both call op.PromotedDTypes).
func TestTracePromotion(t *testing.T) {
	cases := []struct {
		name    string
		params  []op.Meta
		def     dtype.DType
		fn      func(b op.Builder, p []op.Value) op.Value
		out     op.Meta
		convert int // number of convert nodes
	}{
		{"f32 * int scalar", []op.Meta{meta(dtype.F32, 3)}, dtype.F32,
			func(b op.Builder, p []op.Value) op.Value { return op.Call1(b, "mul", nil, p[0], b.Scalar(3, p[0])) },
			meta(dtype.F32, 3), 0},
		{"i64 * float scalar", []op.Meta{meta(dtype.I64, 3)}, dtype.F32,
			func(b op.Builder, p []op.Value) op.Value { return op.Call1(b, "mul", nil, p[0], b.Scalar(1.5, p[0])) },
			meta(dtype.F32, 3), 1},
		{"i64 * float scalar, default f64", []op.Meta{meta(dtype.I64, 3)}, dtype.F64,
			func(b op.Builder, p []op.Value) op.Value { return op.Call1(b, "mul", nil, p[0], b.Scalar(1.5, p[0])) },
			meta(dtype.F64, 3), 1},
		{"f16 + 0-d f32 keeps f16", []op.Meta{meta(dtype.F16, 3), meta(dtype.F32)}, dtype.F32,
			func(b op.Builder, p []op.Value) op.Value { return op.Call1(b, "add", nil, p[0], p[1]) },
			meta(dtype.F16, 3), 1},
		{"exp of ints", []op.Meta{meta(dtype.I32, 2, 2)}, dtype.F32,
			func(b op.Builder, p []op.Value) op.Value { return op.Call1(b, "exp", nil, p[0]) },
			meta(dtype.F32, 2, 2), 1},
		{"floor div of ints", []op.Meta{meta(dtype.I32, 4)}, dtype.F32,
			func(b op.Builder, p []op.Value) op.Value {
				return op.Call1(b, "div", op.Attrs{"rounding_mode": "floor"}, p[0], b.Scalar(2, p[0]))
			},
			meta(dtype.I32, 4), 0},
		{"clamp int with float bound", []op.Meta{meta(dtype.I32, 4)}, dtype.F32,
			func(b op.Builder, p []op.Value) op.Value { return op.Call1(b, "clamp", op.Attrs{"min": 0.5}, p[0]) },
			meta(dtype.F32, 4), 1},
		{"where with scalar branch", []op.Meta{meta(dtype.Bool, 4), meta(dtype.BF16, 4)}, dtype.F32,
			func(b op.Builder, p []op.Value) op.Value {
				return op.Call1(b, "where", nil, p[0], p[1], b.Scalar(0.0, p[1]))
			},
			meta(dtype.BF16, 4), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := Trace(c.params, func(b op.Builder, p []op.Value) []op.Value { return []op.Value{c.fn(b, p)} }, DefaultFloat(c.def))
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Verify(); err != nil {
				t.Fatalf("Verify: %v\n%s", err, g)
			}
			out := g.Outputs[0].Meta
			if out.DType != c.out.DType || !slices.Equal(out.Shape, c.out.Shape) {
				t.Errorf("output %s, want %s\n%s", metaString(out), metaString(c.out), g)
			}
			n := 0
			for _, nd := range g.Nodes {
				if nd.Name() == "convert" {
					n++
				}
			}
			if n != c.convert {
				t.Errorf("%d convert nodes, want %d\n%s", n, c.convert, g)
			}
		})
	}
}

func TestTraceDecompose(t *testing.T) {
	for _, p := range programs {
		t.Run(p.name, func(t *testing.T) {
			g, err := p.trace(Decompose(true))
			if err != nil {
				t.Fatal(err)
			}
			checkLowered(t, g)
			rec, err := p.trace()
			if err != nil {
				t.Fatal(err)
			}
			l, err := Lower(rec)
			if err != nil {
				t.Fatal(err)
			}
			// Tracing with decomposition and lowering a recorded trace build
			// the same graph.
			if g.Fingerprint() != l.Fingerprint() {
				t.Errorf("Decompose(true) trace and Lower differ:\n%s\nvs\n%s", g, l)
			}
		})
	}
}

func TestTraceErrors(t *testing.T) {
	f32 := []op.Meta{meta(dtype.F32, 2, 3), meta(dtype.F32, 4, 5)}
	other := NewTracer()
	foreign := other.Param(meta(dtype.F32, 2, 3))
	cases := []struct {
		name string
		fn   func(b op.Builder, p []op.Value) []op.Value
		want error
		path string
	}{
		{"unknown op", func(b op.Builder, p []op.Value) []op.Value { return b.Call("frobnicate", p[:1], nil) }, ErrUnknownOp, "frobnicate"},
		{"arity", func(b op.Builder, p []op.Value) []op.Value { return b.Call("add", p[:1], nil) }, ErrArity, "add"},
		{"required input nil", func(b op.Builder, p []op.Value) []op.Value { return b.Call("add", []op.Value{p[0], nil}, nil) }, ErrArity, "add"},
		{"unknown attr", func(b op.Builder, p []op.Value) []op.Value {
			return b.Call("exp", p[:1], op.Attrs{"bogus": 1})
		}, ErrAttr, "exp"},
		{"broadcast mismatch", func(b op.Builder, p []op.Value) []op.Value { return b.Call("add", p, nil) }, ErrShape, "add"},
		{"bad view", func(b op.Builder, p []op.Value) []op.Value {
			return b.Call("reshape", p[:1], op.Attrs{"shape": []int{7}})
		}, ErrShape, "reshape"},
		{"dtype unsupported", func(b op.Builder, p []op.Value) []op.Value {
			x := op.Call1(b, "convert", op.Attrs{"dtype": dtype.Bool}, p[0])
			return b.Call("matmul", []op.Value{x, x}, nil)
		}, ErrDType, "matmul"},
		{"in-place", func(b op.Builder, p []op.Value) []op.Value { return b.Call("copy_", []op.Value{p[0], p[0]}, nil) }, ErrInplace, "copy_"},
		{"foreign value", func(b op.Builder, p []op.Value) []op.Value { return b.Call("exp", []op.Value{foreign}, nil) }, ErrForeignValue, "exp"},
		{"foreign output", func(b op.Builder, p []op.Value) []op.Value { return []op.Value{foreign} }, ErrForeignValue, "output"},
		{"bad scalar", func(b op.Builder, p []op.Value) []op.Value { return []op.Value{b.Scalar("x", p[0])} }, ErrAttr, "scalar"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := Trace(f32, c.fn)
			if err == nil {
				t.Fatalf("no error; graph:\n%s", g)
			}
			if !errors.Is(err, c.want) {
				t.Errorf("error %v does not match %v", err, c.want)
			}
			var te *TraceError
			if !errors.As(err, &te) || te.Path != c.path {
				t.Errorf("error %v: path %q, want %q", err, te.Path, c.path)
			}
		})
	}
}

// TestTraceErrorPath checks that an error inside a decomposition names the
// composite it came from.
func TestTraceErrorPath(t *testing.T) {
	_, err := Trace([]op.Meta{meta(dtype.F32, 2)}, func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "gelu", op.Attrs{"approximate": "cubic"}, p[0])}
	}, Decompose(true))
	if !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "gelu") {
		t.Errorf("error %v, want ErrShape naming gelu", err)
	}
}

func TestTraceBadParams(t *testing.T) {
	for _, m := range []op.Meta{{Shape: []int{2}}, meta(dtype.F32, -1)} {
		if _, err := Trace([]op.Meta{m}, func(b op.Builder, p []op.Value) []op.Value { return p }); err == nil {
			t.Errorf("param %v: no error", m)
		}
	}
}

// checkLowered fails unless g verifies and holds only primitives, views and
// constants.
func checkLowered(t *testing.T, g *Graph) {
	t.Helper()
	if err := g.Verify(); err != nil {
		t.Fatalf("Verify: %v\n%s", err, g)
	}
	for _, n := range g.Nodes {
		if !n.IsConst() && n.Op.Kind == op.Composite {
			t.Errorf("composite %s left in lowered graph:\n%s", n.Op.Name, g)
		}
	}
}
