package ir

import (
	"slices"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

func countOps(g *Graph) map[string]int {
	c := map[string]int{}
	for _, n := range g.Nodes {
		c[n.Name()]++
	}
	return c
}

// sameSignature fails unless a and b have the same parameter and output metas.
func sameSignature(t *testing.T, a, b *Graph) {
	t.Helper()
	if len(a.Params) != len(b.Params) || len(a.Outputs) != len(b.Outputs) {
		t.Fatalf("signature changed:\n%s\n%s", a, b)
	}
	for i := range a.Params {
		if metaKey(a.Params[i].Meta) != metaKey(b.Params[i].Meta) {
			t.Errorf("param %d: %s vs %s", i, metaKey(a.Params[i].Meta), metaKey(b.Params[i].Meta))
		}
	}
	for i := range a.Outputs {
		if metaString(a.Outputs[i].Meta) != metaString(b.Outputs[i].Meta) {
			t.Errorf("output %d: %s vs %s", i, metaString(a.Outputs[i].Meta), metaString(b.Outputs[i].Meta))
		}
	}
}

func TestDCE(t *testing.T) {
	cases := []struct {
		name  string
		fn    func(b op.Builder, p []op.Value) []op.Value
		want  map[string]int // op counts after DCE
		nodes int            // before
	}{
		{"dead branch", func(b op.Builder, p []op.Value) []op.Value {
			e := op.Call1(b, "exp", nil, p[0])
			_ = op.Call1(b, "log", nil, e)                      // dead
			_ = op.Call1(b, "mul", nil, p[0], b.Scalar(3.0, e)) // dead, with its constant
			return []op.Value{op.Call1(b, "neg", nil, e)}
		}, map[string]int{"exp": 1, "neg": 1}, 5},
		{"dead random op", func(b op.Builder, p []op.Value) []op.Value {
			_ = op.Call1(b, "rand", op.Attrs{"shape": []int{2, 3}, "seed": 1, "offset": 0})
			return []op.Value{op.Call1(b, "exp", nil, p[0])}
		}, map[string]int{"exp": 1}, 2},
		{"dead chain feeding nothing", func(b op.Builder, p []op.Value) []op.Value {
			x := p[0]
			for range 4 {
				x = op.Call1(b, "sin", nil, x)
			}
			return []op.Value{p[0]}
		}, map[string]int{}, 4},
		{"all live", func(b op.Builder, p []op.Value) []op.Value {
			e := op.Call1(b, "exp", nil, p[0])
			return []op.Value{e, op.Call1(b, "add", nil, e, p[1])}
		}, map[string]int{"exp": 1, "add": 1}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := mustTrace(t, []op.Meta{meta(dtype.F32, 2, 3), meta(dtype.F32, 2, 3)}, c.fn)
			if len(g.Nodes) != c.nodes {
				t.Fatalf("traced %d nodes, want %d:\n%s", len(g.Nodes), c.nodes, g)
			}
			before := g.String()
			d := DCE(g)
			if g.String() != before {
				t.Error("DCE modified its argument")
			}
			if err := d.Verify(); err != nil {
				t.Fatalf("%v\n%s", err, d)
			}
			sameSignature(t, g, d)
			if got := countOps(d); !mapsEqual(got, c.want) {
				t.Errorf("after DCE %v, want %v:\n%s", got, c.want, d)
			}
			if DCE(d).Fingerprint() != d.Fingerprint() {
				t.Error("DCE is not idempotent")
			}
		})
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestCSE(t *testing.T) {
	cases := []struct {
		name string
		fn   func(b op.Builder, p []op.Value) []op.Value
		want map[string]int
	}{
		{"same op twice", func(b op.Builder, p []op.Value) []op.Value {
			return []op.Value{op.Call1(b, "add", nil, op.Call1(b, "exp", nil, p[0]), op.Call1(b, "exp", nil, p[0]))}
		}, map[string]int{"exp": 1, "add": 1}},
		{"chains merge transitively", func(b op.Builder, p []op.Value) []op.Value {
			a := op.Call1(b, "sin", nil, op.Call1(b, "exp", nil, p[0]))
			c := op.Call1(b, "sin", nil, op.Call1(b, "exp", nil, p[0]))
			return []op.Value{a, c}
		}, map[string]int{"exp": 1, "sin": 1}},
		{"equal constants merge", func(b op.Builder, p []op.Value) []op.Value {
			x := op.Call1(b, "mul", nil, p[0], b.Scalar(2.0, p[0]))
			return []op.Value{op.Call1(b, "mul", nil, x, b.Scalar(2, x))} // int 2 materialises as f32 2.0 too
		}, map[string]int{"constant": 1, "mul": 2}},
		{"different constants stay", func(b op.Builder, p []op.Value) []op.Value {
			x := op.Call1(b, "mul", nil, p[0], b.Scalar(2.0, p[0]))
			return []op.Value{op.Call1(b, "mul", nil, x, b.Scalar(3.0, x))}
		}, map[string]int{"constant": 2, "mul": 2}},
		{"different attrs stay", func(b op.Builder, p []op.Value) []op.Value {
			return []op.Value{op.Call1(b, "sum", op.Attrs{"dims": []int{0}}, p[0]), op.Call1(b, "sum", op.Attrs{"dims": []int{1}}, p[0])}
		}, map[string]int{"sum": 2}},
		{"default attrs merge with explicit", func(b op.Builder, p []op.Value) []op.Value {
			return []op.Value{op.Call1(b, "add", nil, p[0], p[1]), op.Call1(b, "add", op.Attrs{"alpha": 1}, p[0], p[1])}
		}, map[string]int{"add": 1}},
		{"operand order matters", func(b op.Builder, p []op.Value) []op.Value {
			return []op.Value{op.Call1(b, "sub", nil, p[0], p[1]), op.Call1(b, "sub", nil, p[1], p[0])}
		}, map[string]int{"sub": 2}},
		{"random ops never merge", func(b op.Builder, p []op.Value) []op.Value {
			a := op.Call1(b, "rand", op.Attrs{"shape": []int{2, 3}, "seed": 7, "offset": 0})
			c := op.Call1(b, "rand", op.Attrs{"shape": []int{2, 3}, "seed": 7, "offset": 0})
			return []op.Value{a, c}
		}, map[string]int{"rand": 2}},
		{"converts merge", func(b op.Builder, p []op.Value) []op.Value {
			return []op.Value{op.Call1(b, "convert", op.Attrs{"dtype": dtype.F64}, p[0]), op.Call1(b, "convert", op.Attrs{"dtype": dtype.F64}, p[0])}
		}, map[string]int{"convert": 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := mustTrace(t, []op.Meta{meta(dtype.F32, 2, 3), meta(dtype.F32, 2, 3)}, c.fn)
			before := g.String()
			s := CSE(g)
			if g.String() != before {
				t.Error("CSE modified its argument")
			}
			if err := s.Verify(); err != nil {
				t.Fatalf("%v\n%s", err, s)
			}
			sameSignature(t, g, s)
			if got := countOps(s); !mapsEqual(got, c.want) {
				t.Errorf("after CSE %v, want %v:\n%s", got, c.want, s)
			}
			if CSE(s).Fingerprint() != s.Fingerprint() {
				t.Error("CSE is not idempotent")
			}
		})
	}
}

// TestCSEOutputsShareValue: merged outputs become the same value.
func TestCSEOutputsShareValue(t *testing.T) {
	g := mustTrace(t, []op.Meta{meta(dtype.F32, 3)}, func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "exp", nil, p[0]), op.Call1(b, "exp", nil, p[0])}
	})
	s := CSE(g)
	if s.Outputs[0] != s.Outputs[1] {
		t.Errorf("outputs not merged:\n%s", s)
	}
	want := "graph(%0: f32[3]) {\n  %1 = exp(%0) : f32[3]\n  return %1, %1\n}\n"
	if s.String() != want {
		t.Errorf("got\n%s\nwant\n%s", s, want)
	}
}

func TestLower(t *testing.T) {
	for _, p := range programs {
		t.Run(p.name, func(t *testing.T) {
			g, err := p.trace()
			if err != nil {
				t.Fatal(err)
			}
			before := g.String()
			l, err := Lower(g)
			if err != nil {
				t.Fatal(err)
			}
			if g.String() != before {
				t.Error("Lower modified its argument")
			}
			checkLowered(t, l)
			sameSignature(t, g, l)
			l2, err := Lower(l)
			if err != nil {
				t.Fatal(err)
			}
			if l2.Fingerprint() != l.Fingerprint() {
				t.Error("Lower is not idempotent")
			}
			// The usual pipeline stays well-formed.
			opt := DCE(CSE(l))
			checkLowered(t, opt)
			if len(opt.Nodes) > len(l.Nodes) {
				t.Errorf("CSE+DCE grew the graph: %d -> %d nodes", len(l.Nodes), len(opt.Nodes))
			}
		})
	}
}

// TestLowerMLPPrimitives checks what the MLP lowers to: the linears become
// dot_general plus a bias add, gelu its erf form, and nothing else.
func TestLowerMLPPrimitives(t *testing.T) {
	g, err := mlp.trace()
	if err != nil {
		t.Fatal(err)
	}
	l, err := Lower(g)
	if err != nil {
		t.Fatal(err)
	}
	c := countOps(l)
	if c["dot_general"] != 2 || c["erf"] != 1 || c["linear"] != 0 || c["gelu"] != 0 {
		t.Errorf("unexpected lowering %v:\n%s", c, l)
	}
	text := l.String()
	for _, s := range []string{"lhs_contract=[1]", "rhs_contract=[1]", ": f32[4,16]", ": f32[4,3]"} {
		if !strings.Contains(text, s) {
			t.Errorf("lowered MLP lacks %q:\n%s", s, text)
		}
	}
}

// TestLowerKeepsViews: views stay view nodes; a composite's decomposition
// that returns its input maps uses to that input.
func TestLowerKeepsViews(t *testing.T) {
	g := mustTrace(t, []op.Meta{meta(dtype.F32, 2, 3, 4)}, func(b op.Builder, p []op.Value) []op.Value {
		x := op.Call1(b, "permute", op.Attrs{"dims": []int{2, 0, 1}}, p[0])
		x = op.Call1(b, "reshape", op.Attrs{"shape": []int{4, 6}}, x)
		return []op.Value{op.Call1(b, "softmax", op.Attrs{"dim": 0}, x)}
	})
	l, err := Lower(g)
	if err != nil {
		t.Fatal(err)
	}
	checkLowered(t, l)
	views := 0
	for _, n := range l.Nodes {
		if !n.IsConst() && n.Op.Kind == op.View {
			views++
		}
	}
	if views < 2 {
		t.Errorf("lowered graph has %d views, want at least the permute and reshape:\n%s", views, l)
	}
	if !slices.Equal(l.Outputs[0].Meta.Shape, []int{4, 6}) {
		t.Errorf("output %v", l.Outputs[0].Meta)
	}
}

func TestUses(t *testing.T) {
	g := mustTrace(t, []op.Meta{meta(dtype.F32, 3), meta(dtype.F32, 3)}, func(b op.Builder, p []op.Value) []op.Value {
		e := op.Call1(b, "exp", nil, p[0])
		s := op.Call1(b, "add", nil, e, e)
		return []op.Value{s, e}
	})
	u := g.Uses()
	e := g.Nodes[0].Out[0]
	if u[e] != 3 || u[g.Params[0]] != 1 || u[g.Params[1]] != 0 || u[g.Nodes[1].Out[0]] != 1 {
		t.Errorf("uses %v in\n%s", u, g)
	}
	if g.NumValues() != 4 {
		t.Errorf("NumValues %d, want 4", g.NumValues())
	}
}

func TestFoldParams(t *testing.T) {
	f32 := op.Meta{Shape: []int{2}, DType: dtype.F32}
	g, err := Trace([]op.Meta{f32, f32}, func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "add", nil, p[0], p[1])}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := FoldParams(g, [][]byte{nil, nil}); got != g {
		t.Error("folding nothing returned a new graph")
	}
	two := make([]byte, 8) // [0, 0] f32
	f := FoldParams(g, [][]byte{nil, two})
	if len(f.Params) != 1 || len(g.Params) != 2 {
		t.Fatalf("params: folded %d, source %d; want 1 and 2", len(f.Params), len(g.Params))
	}
	if c := countOps(f); c["add"] != 1 {
		t.Errorf("folded graph nodes %v", c)
	}
	if len(f.Outputs) != 1 || f.Outputs[0].Def == nil || f.Outputs[0].Def.In[1].Def == nil || !f.Outputs[0].Def.In[1].Def.IsConst() {
		t.Errorf("the add does not read a constant: %v", f.Outputs)
	}
}
