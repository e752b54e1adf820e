package ir

import (
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

func TestLowerIf(t *testing.T) {
	crossEntropy := program{
		name:   "cross_entropy",
		params: []op.Meta{meta(dtype.F32, 4, 5), meta(dtype.I64, 4)},
		fn: func(b op.Builder, p []op.Value) []op.Value {
			return []op.Value{op.Call1(b, "cross_entropy", nil, p[0], p[1], nil)}
		},
	}
	named := func(names ...string) func(*Node) bool {
		return func(n *Node) bool {
			for _, s := range names {
				if n.Op.Name == s {
					return true
				}
			}
			return false
		}
	}
	all := func(*Node) bool { return true }
	none := func(*Node) bool { return false }
	cases := []struct {
		name    string
		prog    program
		sel     func(*Node) bool
		keep    []string // composites left in the result
		dropped []string // composites that must be gone
	}{
		{"none", mlp, none, []string{"linear", "gelu"}, nil},
		{"only gelu", mlp, named("gelu"), []string{"linear"}, []string{"gelu"}},
		{"only linear", mlp, named("linear"), []string{"gelu"}, []string{"linear"}},
		// cross_entropy decomposes into log_softmax and nll_loss, which
		// stay unless selected; selecting them too expands them.
		{"outer composite only", crossEntropy, named("cross_entropy"), []string{"log_softmax"}, []string{"cross_entropy"}},
		{"nested", crossEntropy, named("cross_entropy", "log_softmax"), nil, []string{"cross_entropy", "log_softmax"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := c.prog.trace()
			if err != nil {
				t.Fatal(err)
			}
			l, err := LowerIf(g, c.sel)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Verify(); err != nil {
				t.Fatalf("result does not verify: %v\n%s", err, l)
			}
			ops := countOps(l)
			for _, k := range c.keep {
				if ops[k] == 0 {
					t.Errorf("%s was lowered:\n%s", k, l)
				}
			}
			for _, k := range c.dropped {
				if ops[k] != 0 {
					t.Errorf("%s was kept:\n%s", k, l)
				}
			}
			sameSignature(t, g, l)
		})
	}
	// LowerIf(all) is Lower; LowerIf(none) is an equal copy.
	for _, p := range append(programs, crossEntropy) {
		g, err := p.trace()
		if err != nil {
			t.Fatal(err)
		}
		want, err := Lower(g)
		if err != nil {
			t.Fatal(err)
		}
		got, err := LowerIf(g, all)
		if err != nil {
			t.Fatal(err)
		}
		if got.Fingerprint() != want.Fingerprint() {
			t.Errorf("%s: LowerIf(all) differs from Lower:\n%s\nvs\n%s", p.name, got, want)
		}
		same, err := LowerIf(g, none)
		if err != nil {
			t.Fatal(err)
		}
		if same == g || same.Fingerprint() != g.Fingerprint() {
			t.Errorf("%s: LowerIf(none) is not an equal copy", p.name)
		}
	}
}

// TestLowerIfOrigin: every lowered node maps back to the node it came from.
func TestLowerIfOrigin(t *testing.T) {
	g := mustTrace(t, []op.Meta{meta(dtype.F32, 4, 5), meta(dtype.I64, 4)}, func(b op.Builder, p []op.Value) []op.Value {
		e := op.Call1(b, "exp", nil, p[0])
		ce := op.Call1(b, "cross_entropy", nil, e, p[1], nil)
		return []op.Value{op.Call1(b, "neg", nil, ce)}
	})
	ceIdx := -1
	for j, n := range g.Nodes {
		if n.Name() == "cross_entropy" {
			ceIdx = j
		}
	}
	l, origin, err := LowerIfOrigin(g, func(*Node) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if len(origin) != len(l.Nodes) {
		t.Fatalf("%d origins for %d nodes", len(origin), len(l.Nodes))
	}
	counts := map[int]int{}
	for j, n := range l.Nodes {
		o := origin[j]
		counts[o]++
		if src := g.Nodes[o]; src.Name() != "cross_entropy" && src.Name() != n.Name() {
			t.Errorf("node %d (%s) claims to come from %s", j, n.Name(), src.Name())
		}
		if j > 0 && o < origin[j-1] {
			t.Errorf("origins not monotone at %d", j)
		}
	}
	if counts[ceIdx] < 3 {
		t.Errorf("cross_entropy lowered to %d nodes", counts[ceIdx])
	}
}
