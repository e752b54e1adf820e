package ir

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// verifyBase is the graph the broken variants start from:
//
//	graph(%0: f32[2,3], %1: i32[3]) {
//	  %2 = exp(%0) : f32[2,3]
//	  %3 = convert(%1) {dtype=f32} : f32[3]
//	  %4 = add(%2, %3) {alpha=1} : f32[2,3]
//	  %5 = constant 2.0 (wrapped) : f32[]
//	  %6 = mul(%4, %5) : f32[2,3]
//	  return %6
//	}
func verifyBase(t *testing.T) *Graph {
	t.Helper()
	return mustTrace(t, []op.Meta{meta(dtype.F32, 2, 3), meta(dtype.I32, 3)}, func(b op.Builder, p []op.Value) []op.Value {
		e := op.Call1(b, "exp", nil, p[0])
		s := op.Call1(b, "add", nil, e, p[1])
		return []op.Value{op.Call1(b, "mul", nil, s, b.Scalar(2, s))}
	})
}

func TestVerifyCatchesBrokenGraphs(t *testing.T) {
	nodeNamed := func(g *Graph, name string) *Node {
		for _, n := range g.Nodes {
			if n.Name() == name {
				return n
			}
		}
		panic("no node " + name)
	}
	cases := []struct {
		name   string
		mutate func(g *Graph)
		want   string // substring of the error
	}{
		{"use before definition", func(g *Graph) { g.Nodes[0], g.Nodes[2] = g.Nodes[2], g.Nodes[0] }, "node 0 (%4 = add): input 0 (%2) is not defined before its use"},
		{"duplicate id", func(g *Graph) { nodeNamed(g, "mul").Out[0].ID = 2 }, "value id %2 is not unique"},
		{"value defined twice", func(g *Graph) { n := nodeNamed(g, "mul"); n.Out[0] = g.Nodes[0].Out[0] }, "does not point back"},
		{"undefined output", func(g *Graph) { g.Outputs[0] = New().Param(meta(dtype.F32, 2, 3)) }, "output 0 (%0) is not defined"},
		{"nil output", func(g *Graph) { g.Outputs = append(g.Outputs, nil) }, "output 1 (_) is not defined"},
		{"wrong output shape", func(g *Graph) { nodeNamed(g, "exp").Out[0].Meta.Shape = []int{3, 2} }, "(%2 = exp): output 0 (%2) is f32[3,2], shape rule says f32[2,3]"},
		{"wrong output dtype", func(g *Graph) { nodeNamed(g, "mul").Out[0].Meta.DType = dtype.F64 }, "(%6 = mul): output 0 (%6) is f64[2,3], shape rule says f32[2,3]"},
		{"wrapped op output", func(g *Graph) { nodeNamed(g, "exp").Out[0].Meta.Wrapped = true }, "is f32[2,3]w"},
		{"too many outputs", func(g *Graph) {
			n := nodeNamed(g, "exp")
			n.Out = append(n.Out, &Value{ID: 99, Meta: meta(dtype.F32, 2, 3), Def: n, Index: 1})
		}, "has 2 outputs, shape rule says 1"},
		{"arity", func(g *Graph) { n := nodeNamed(g, "add"); n.In = n.In[:1] }, "add takes 2 inputs"},
		{"nil required input", func(g *Graph) { nodeNamed(g, "add").In[1] = nil }, "input 1 (other) is required"},
		{"attr missing default", func(g *Graph) { delete(nodeNamed(g, "add").Attrs, "alpha") }, "not normalized"},
		{"attr unknown", func(g *Graph) { nodeNamed(g, "add").Attrs = op.Attrs{"alpha": int64(1), "beta": 2} }, `unknown attribute "beta"`},
		{"attr wrong type", func(g *Graph) { nodeNamed(g, "add").Attrs = op.Attrs{"alpha": "one"} }, `attribute "alpha"`},
		{"attr not in normal form", func(g *Graph) { nodeNamed(g, "convert").Attrs = op.Attrs{"dtype": "f32"} }, "dtype=\"f32\" is not normalized"},
		{"missing convert", func(g *Graph) { nodeNamed(g, "add").In[1] = g.Params[1] }, "(%4 = add): input 1 (%1) is i32 but promotion wants f32 (missing convert)"},
		{"unsupported dtype", func(g *Graph) {
			// matmul does not promote and rejects bool.
			h := New()
			a := h.Param(meta(dtype.Bool, 2, 2))
			m := h.AddNode(op.MustLookup("matmul"), op.Attrs{"precision": ""}, []*Value{a, a}, []op.Meta{meta(dtype.Bool, 2, 2)})
			h.SetOutputs(m.Out[0])
			*g = *h
		}, "(%1 = matmul): matmul does not support dtype bool"},
		{"constant size", func(g *Graph) { nodeNamed(g, "constant").Data = []byte{1, 2} }, "constant f32[] holds 2 bytes, want 4"},
		{"constant with input", func(g *Graph) { n := nodeNamed(g, "constant"); n.In = []*Value{g.Params[0]} }, "constant has inputs"},
		{"unregistered op", func(g *Graph) {
			fake := *op.MustLookup("exp")
			nodeNamed(g, "exp").Op = &fake
		}, `op "exp" is not the registered op`},
		{"in-place op", func(g *Graph) {
			n := nodeNamed(g, "add")
			n.Op, n.Attrs = op.MustLookup("copy_"), op.Attrs{}
		}, "in-place"},
		{"parameter index", func(g *Graph) { g.Params[1].Index = 0 }, "parameter 1"},
		{"wrapped parameter", func(g *Graph) { g.Params[0].Meta.Wrapped = true }, "wrapped scalar"},
		{"invalid dtype", func(g *Graph) { g.Params[0].Meta.DType = dtype.Invalid }, "invalid dtype"},
		{"negative dim", func(g *Graph) { g.Params[0].Meta.Shape = []int{-2, 3} }, "negative dimension"},
		{"nil node", func(g *Graph) { g.Nodes[1] = nil }, "node 1 is nil"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := verifyBase(t)
			if err := g.Verify(); err != nil {
				t.Fatalf("base graph: %v", err)
			}
			c.mutate(g)
			err := g.Verify()
			if err == nil {
				t.Fatalf("Verify accepted the broken graph:\n%s", g)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
			_ = g.Fingerprint() // must not panic on a broken graph
		})
	}
}

func TestVerifyBaseText(t *testing.T) {
	g := verifyBase(t)
	want := `graph(%0: f32[2,3], %1: i32[3]) {
  %2 = exp(%0) : f32[2,3]
  %3 = convert(%1) {dtype=f32} : f32[3]
  %4 = add(%2, %3) {alpha=1} : f32[2,3]
  %5 = constant 2.0 (wrapped) : f32[]
  %6 = mul(%4, %5) : f32[2,3]
  return %6
}
`
	if g.String() != want {
		t.Errorf("got\n%s\nwant\n%s", g, want)
	}
}

// TestVerifyHandBuilt builds a graph with the raw constructors, including
// multi-output ops, views, absent optional inputs and a parameter output.
func TestVerifyHandBuilt(t *testing.T) {
	g := New()
	x := g.Param(meta(dtype.F32, 4, 6))
	w := g.Param(meta(dtype.F32, 6))
	r := g.AddNode(op.MustLookup("reshape"), op.Attrs{"shape": []int{2, 12}}, []*Value{x}, []op.Meta{meta(dtype.F32, 2, 12)})
	ln := g.AddNode(op.MustLookup("layer_norm"), op.Attrs{"normalized_shape": []int{6}, "eps": 1e-5}, []*Value{x, w, nil}, []op.Meta{meta(dtype.F32, 4, 6)})
	g.SetOutputs(r.Out[0], ln.Out[0], x)
	if err := g.Verify(); err != nil {
		t.Fatalf("%v\n%s", err, g)
	}
	if !slices.Equal(g.Outputs[0].Meta.Shape, []int{2, 12}) {
		t.Fatal("bad test graph")
	}
	// A view whose attributes do not fit its input.
	r.Attrs = op.Attrs{"shape": []int{5, 5}}
	if err := g.Verify(); err == nil || !strings.Contains(err.Error(), "%2 = reshape") {
		t.Errorf("bad reshape: %v", err)
	}
}
