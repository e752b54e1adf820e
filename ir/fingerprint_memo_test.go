package ir

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// memoVariants returns graphs that differ from one another in one detail
// each (and some that differ in nothing the fingerprint reads).
func memoVariants(t *testing.T) map[string]*Graph {
	t.Helper()
	gs := map[string]*Graph{}
	for _, p := range programs {
		gs["program "+p.name] = mustTrace(t, p.params, p.fn)
	}
	add, gelu, sm := op.MustLookup("add"), op.MustLookup("gelu"), op.MustLookup("softmax")
	ln, sgd, sum := op.MustLookup("layer_norm"), op.MustLookup("sgd_step"), op.MustLookup("sum")
	x23 := meta(dtype.F32, 2, 3)
	// one builds x, y (f32[2,3] unless given) and one node of d.
	one := func(name string, d *op.Def, a op.Attrs, in func(x, y *Value) []*Value, out []op.Meta, outs func(n *Node, x, y *Value) []*Value, pm ...op.Meta) {
		g := New()
		if len(pm) == 0 {
			pm = []op.Meta{x23, x23}
		}
		x, y := g.Param(pm[0]), g.Param(pm[1])
		n := g.AddNode(d, a, in(x, y), out)
		if outs == nil {
			g.SetOutputs(n.Out...)
		} else {
			g.SetOutputs(outs(n, x, y)...)
		}
		gs[name] = g
	}
	xy := func(x, y *Value) []*Value { return []*Value{x, y} }
	yx := func(x, y *Value) []*Value { return []*Value{y, x} }
	xOnly := func(x, y *Value) []*Value { return []*Value{x} }
	o23 := []op.Meta{x23}
	one("add", add, op.Attrs{"alpha": int64(1)}, xy, o23, nil)
	one("add again", add, op.Attrs{"alpha": int64(1)}, xy, o23, nil)
	one("add alpha 2", add, op.Attrs{"alpha": int64(2)}, xy, o23, nil)
	one("add alpha int", add, op.Attrs{"alpha": 1}, xy, o23, nil)
	one("add alpha float", add, op.Attrs{"alpha": 1.0}, xy, o23, nil)
	one("add alpha bool", add, op.Attrs{"alpha": true}, xy, o23, nil)
	one("add alpha nil", add, op.Attrs{"alpha": nil}, xy, o23, nil)
	one("add alpha dtype", add, op.Attrs{"alpha": dtype.F64}, xy, o23, nil)
	one("add alpha string", add, op.Attrs{"alpha": "1"}, xy, o23, nil)
	one("add alpha other", add, op.Attrs{"alpha": uint8(1)}, xy, o23, nil)
	one("add no attrs", add, nil, xy, o23, nil)
	one("add swapped", add, op.Attrs{"alpha": int64(1)}, yx, o23, nil)
	one("add same input twice", add, op.Attrs{"alpha": int64(1)}, func(x, y *Value) []*Value { return []*Value{x, x} }, o23, nil)
	one("add out f64", add, op.Attrs{"alpha": int64(1)}, xy, []op.Meta{meta(dtype.F64, 2, 3)}, nil)
	one("add out 3x2", add, op.Attrs{"alpha": int64(1)}, xy, []op.Meta{meta(dtype.F32, 3, 2)}, nil)
	one("add out wrapped", add, op.Attrs{"alpha": int64(1)}, xy, []op.Meta{{Shape: []int{2, 3}, DType: dtype.F32, Wrapped: true}}, nil)
	one("add params f16", add, op.Attrs{"alpha": int64(1)}, xy, o23, nil, meta(dtype.F16, 2, 3), x23)
	one("add params 6", add, op.Attrs{"alpha": int64(1)}, xy, o23, nil, meta(dtype.F32, 6), x23)
	one("add outputs n x", add, op.Attrs{"alpha": int64(1)}, xy, o23, func(n *Node, x, y *Value) []*Value { return []*Value{n.Out[0], x} })
	one("add outputs n y", add, op.Attrs{"alpha": int64(1)}, xy, o23, func(n *Node, x, y *Value) []*Value { return []*Value{n.Out[0], y} })
	one("add outputs n n", add, op.Attrs{"alpha": int64(1)}, xy, o23, func(n *Node, x, y *Value) []*Value { return []*Value{n.Out[0], n.Out[0]} })
	one("add outputs none", add, op.Attrs{"alpha": int64(1)}, xy, o23, func(*Node, *Value, *Value) []*Value { return nil })
	one("add outputs nil", add, op.Attrs{"alpha": int64(1)}, xy, o23, func(*Node, *Value, *Value) []*Value { return []*Value{nil} })
	one("gelu tanh", gelu, op.Attrs{"approximate": "tanh"}, xOnly, o23, nil)
	one("gelu none", gelu, op.Attrs{"approximate": "none"}, xOnly, o23, nil)
	one("gelu tanh!", gelu, op.Attrs{"approximate": "tanh!"}, xOnly, o23, nil)
	one("gelu 9-byte string", gelu, op.Attrs{"approximate": "abcdefghi"}, xOnly, o23, nil)
	one("gelu 9-byte string'", gelu, op.Attrs{"approximate": "abcdefghj"}, xOnly, o23, nil)
	one("sum dims 1,2", sum, op.Attrs{"dim": []int{1, 2}}, xOnly, o23, nil)
	one("sum dims 12", sum, op.Attrs{"dim": []int{12}}, xOnly, o23, nil)
	one("sum dims empty", sum, op.Attrs{"dim": []int{}}, xOnly, o23, nil)
	one("sum dims floats", sum, op.Attrs{"dim": []float64{1, 2}}, xOnly, o23, nil)
	one("sum dims floats'", sum, op.Attrs{"dim": []float64{1, 2.5}}, xOnly, o23, nil)
	one("sum two attrs", sum, op.Attrs{"dim": []int{1}, "keepdim": true}, xOnly, o23, nil)
	one("sum two attrs'", sum, op.Attrs{"dim": []int{1}, "keepdim": false}, xOnly, o23, nil)
	one("sum other key", sum, op.Attrs{"dimx": []int{1}, "keepdim": true}, xOnly, o23, nil)
	one("softmax", sm, op.Attrs{"dim": -1}, xOnly, o23, nil)
	one("softmax 1", sm, op.Attrs{"dim": 1}, xOnly, o23, nil)
	one("layer_norm nil affine", ln, op.Attrs{"eps": 1e-5}, func(x, y *Value) []*Value { return []*Value{x, nil, nil} }, o23, nil)
	one("layer_norm weight", ln, op.Attrs{"eps": 1e-5}, func(x, y *Value) []*Value { return []*Value{x, y, nil} }, o23, nil)
	one("layer_norm bias", ln, op.Attrs{"eps": 1e-5}, func(x, y *Value) []*Value { return []*Value{x, nil, y} }, o23, nil)
	one("two outputs", add, nil, xy, []op.Meta{x23, x23}, nil)
	one("nil output", add, nil, xy, nil, func(*Node, *Value, *Value) []*Value { return nil })
	// Dynamic attributes do not count: these two read alike.
	one("sgd lr 0.1", sgd, op.Attrs{"lr": 0.1}, xy, o23, nil)
	one("sgd lr 0.2", sgd, op.Attrs{"lr": 0.2}, xy, o23, nil)
	one("sgd momentum", sgd, op.Attrs{"lr": 0.1, "momentum": 0.9}, xy, o23, nil)

	// Constants, and edges to nodes.
	chain := func(name string, data []byte, wrapped bool, ref func(c *Value, n *Node, x *Value) []*Value) {
		g := New()
		x := g.Param(x23)
		c := g.AddConst(op.Meta{Shape: []int{}, DType: dtype.F32, Wrapped: wrapped}, data)
		n := g.AddNode(add, nil, []*Value{x, c}, o23)
		m := g.AddNode(add, nil, ref(c, n, x), o23)
		g.SetOutputs(m.Out[0])
		gs[name] = g
	}
	cx := func(c *Value, n *Node, x *Value) []*Value { return []*Value{n.Out[0], c} }
	chain("const 2", []byte{0, 0, 0, 0x40}, true, cx)
	chain("const 1", []byte{0, 0, 0x80, 0x3f}, true, cx)
	chain("const unwrapped", []byte{0, 0, 0, 0x40}, false, cx)
	chain("const 8 bytes", []byte{0, 0, 0, 0x40, 0, 0, 0, 0}, true, cx)
	chain("const 9 bytes", []byte{0, 0, 0, 0x40, 0, 0, 0, 0, 0}, true, cx)
	chain("const empty", nil, true, cx)
	chain("edge to param", []byte{0, 0, 0, 0x40}, true, func(c *Value, n *Node, x *Value) []*Value { return []*Value{x, c} })
	chain("edge to node twice", []byte{0, 0, 0, 0x40}, true, func(c *Value, n *Node, x *Value) []*Value { return []*Value{n.Out[0], n.Out[0]} })
	other := New().Param(x23)
	chain("edge to another graph", []byte{0, 0, 0, 0x40}, true, func(c *Value, n *Node, x *Value) []*Value { return []*Value{other, c} })
	chain("nil edge", []byte{0, 0, 0, 0x40}, true, func(c *Value, n *Node, x *Value) []*Value { return []*Value{nil, c} })
	return gs
}

// TestFingerprintMemoExact: two graphs' structure streams are equal
// exactly when their canonical forms are, so the memo returns a
// fingerprint only for the structure it was computed from; and every
// fingerprint, memoised or not, is the SHA-256 of the canonical form.
func TestFingerprintMemoExact(t *testing.T) {
	gs := memoVariants(t)
	names := make([]string, 0, len(gs))
	for n := range gs {
		names = append(names, n)
	}
	slices.Sort(names)
	toks := map[string][]uint64{}
	for _, n := range names {
		sc := &fpScratch{}
		if !gs[n].structTokens(sc) {
			t.Fatalf("%s: no structure stream", n)
		}
		toks[n] = sc.toks
	}
	sameCanonical := 0
	for i, a := range names {
		for _, b := range names[i+1:] {
			ca, cb := gs[a].canonical() == gs[b].canonical(), slices.Equal(toks[a], toks[b])
			if ca != cb {
				t.Errorf("%q and %q: canonical forms equal %v, structure streams equal %v\n%s\n%s", a, b, ca, cb, gs[a].canonical(), gs[b].canonical())
			}
			if ca {
				sameCanonical++
			}
		}
	}
	if sameCanonical == 0 {
		t.Error("no two variants share a canonical form: the test checks only one direction")
	}
	for range 2 { // the second round is served by the memo
		for _, n := range names {
			sum := sha256.Sum256([]byte(gs[n].canonical()))
			if got, want := gs[n].Fingerprint(), hex.EncodeToString(sum[:]); got != want {
				t.Errorf("%s: Fingerprint %s, want %s", n, got, want)
			}
		}
	}
}

// TestFingerprintMemoHits: fingerprinting the same structure again is a
// memo hit; a graph whose value IDs cannot index a table (renumbered)
// still gets its fingerprint, computed.
func TestFingerprintMemoHits(t *testing.T) {
	g := mustTrace(t, mlp.params, mlp.fn)
	want := g.Fingerprint()
	fingerprints.mu.Lock()
	h0 := fingerprints.hits
	fingerprints.mu.Unlock()
	for range 3 {
		if got := mustTrace(t, mlp.params, mlp.fn).Fingerprint(); got != want {
			t.Fatalf("retrace: %s, want %s", got, want)
		}
	}
	fingerprints.mu.Lock()
	hits := fingerprints.hits - h0
	fingerprints.mu.Unlock()
	if hits < 3 {
		t.Errorf("%d memo hits for three fingerprints of a known structure, want 3", hits)
	}
	for _, p := range g.Params {
		p.ID += 1000
	}
	if sc := (&fpScratch{}); g.structTokens(sc) {
		t.Fatal("IDs past the graph's next ID gave a structure stream")
	}
	if got := g.Fingerprint(); got != want {
		t.Errorf("renumbered: %s, want %s", got, want)
	}
}

// TestFingerprintMemoBounded: the memo starts again when full.
func TestFingerprintMemoBounded(t *testing.T) {
	m := &fpMemo{}
	big := make([]uint64, fpMemoMaxWords/2+1)
	for i := range 3 {
		big[0] = uint64(i)
		m.put(big, fmt.Sprint(i))
		if m.words > fpMemoMaxWords {
			t.Fatalf("memo holds %d words, bound %d", m.words, fpMemoMaxWords)
		}
	}
	if fp, ok := m.get(big); !ok || fp != "2" {
		t.Errorf("latest entry: %q, %v", fp, ok)
	}
	big[0] = 0
	if _, ok := m.get(big); ok {
		t.Error("an entry from before the reset survived")
	}
}
