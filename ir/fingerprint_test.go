package ir

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

func mustTrace(t *testing.T, params []op.Meta, fn func(b op.Builder, p []op.Value) []op.Value, opts ...Option) *Graph {
	t.Helper()
	g, err := Trace(params, fn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestFingerprintIdenticalTraces(t *testing.T) {
	for _, p := range programs {
		a, err := p.trace()
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.trace()
		if err != nil {
			t.Fatal(err)
		}
		if a.Fingerprint() != b.Fingerprint() {
			t.Errorf("%s: two traces differ", p.name)
		}
		if len(a.Fingerprint()) != 64 {
			t.Errorf("%s: fingerprint %q is not SHA-256 hex", p.name, a.Fingerprint())
		}
	}
}

// TestFingerprintDiffers: changing one attribute, shape, dtype, edge,
// constant or output changes the fingerprint.
func TestFingerprintDiffers(t *testing.T) {
	type prog = func(b op.Builder, p []op.Value) []op.Value
	x33 := []op.Meta{meta(dtype.F32, 3, 3), meta(dtype.F32, 3, 3)}
	softmaxDim := func(dim int) prog {
		return func(b op.Builder, p []op.Value) []op.Value {
			return []op.Value{op.Call1(b, "softmax", op.Attrs{"dim": dim}, p[0])}
		}
	}
	addAlpha := func(alpha any) prog {
		return func(b op.Builder, p []op.Value) []op.Value {
			return []op.Value{op.Call1(b, "add", op.Attrs{"alpha": alpha}, p[0], p[1])}
		}
	}
	addOrder := func(i, j int) prog {
		return func(b op.Builder, p []op.Value) []op.Value { return []op.Value{op.Call1(b, "sub", nil, p[i], p[j])} }
	}
	mulBy := func(v any) prog {
		return func(b op.Builder, p []op.Value) []op.Value {
			return []op.Value{op.Call1(b, "mul", nil, p[0], b.Scalar(v, p[0]))}
		}
	}
	lnEps := func(eps float64) prog {
		return func(b op.Builder, p []op.Value) []op.Value {
			return []op.Value{op.Call1(b, "layer_norm", op.Attrs{"normalized_shape": []int{3}, "eps": eps}, p[0], nil, nil)}
		}
	}
	twoOut := func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "exp", nil, p[0]), op.Call1(b, "neg", nil, p[0])}
	}
	twoOutSwapped := func(b op.Builder, p []op.Value) []op.Value {
		e, n := op.Call1(b, "exp", nil, p[0]), op.Call1(b, "neg", nil, p[0])
		return []op.Value{n, e}
	}
	cases := []struct {
		name       string
		pa, pb     []op.Meta
		fa, fb     prog
		same       bool
		defa, defb dtype.DType
	}{
		{"same program", x33, x33, softmaxDim(1), softmaxDim(1), true, dtype.F32, dtype.F32},
		{"attr dim", x33, x33, softmaxDim(1), softmaxDim(0), false, dtype.F32, dtype.F32},
		{"attr dim -1 vs 1 stays distinct", x33, x33, softmaxDim(1), softmaxDim(-1), false, dtype.F32, dtype.F32},
		{"attr int vs float alpha", x33, x33, addAlpha(1), addAlpha(1.0), false, dtype.F32, dtype.F32},
		{"attr alpha value", x33, x33, addAlpha(1), addAlpha(2), false, dtype.F32, dtype.F32},
		{"attr eps", x33, x33, lnEps(1e-5), lnEps(1e-6), false, dtype.F32, dtype.F32},
		{"shape", x33, []op.Meta{meta(dtype.F32, 4, 3), meta(dtype.F32, 4, 3)}, softmaxDim(1), softmaxDim(1), false, dtype.F32, dtype.F32},
		{"rank", x33, []op.Meta{meta(dtype.F32, 1, 3, 3), meta(dtype.F32, 3, 3)}, softmaxDim(1), softmaxDim(1), false, dtype.F32, dtype.F32},
		{"dtype", x33, []op.Meta{meta(dtype.F64, 3, 3), meta(dtype.F64, 3, 3)}, softmaxDim(1), softmaxDim(1), false, dtype.F32, dtype.F32},
		{"edge order", x33, x33, addOrder(0, 1), addOrder(1, 0), false, dtype.F32, dtype.F32},
		{"constant value", x33, x33, mulBy(2.0), mulBy(3.0), false, dtype.F32, dtype.F32},
		// A Go int 2 and float 2.0 materialise as the same f32 constant.
		{"int and float scalar give one graph", x33, x33, mulBy(2), mulBy(2.0), true, dtype.F32, dtype.F32},
		{"output order", x33, x33, twoOut, twoOutSwapped, false, dtype.F32, dtype.F32},
		// Default float changes promotion, which shows up as structure.
		{"default float via promotion", []op.Meta{meta(dtype.I32, 3)}, []op.Meta{meta(dtype.I32, 3)}, mulBy(0.5), mulBy(0.5), false, dtype.F32, dtype.F64},
		// ... but not when it changes nothing.
		{"default float alone", x33, x33, softmaxDim(1), softmaxDim(1), true, dtype.F32, dtype.F64},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := mustTrace(t, c.pa, c.fa, DefaultFloat(c.defa))
			b := mustTrace(t, c.pb, c.fb, DefaultFloat(c.defb))
			if same := a.Fingerprint() == b.Fingerprint(); same != c.same {
				t.Errorf("same fingerprint = %v, want %v\n%s\n%s", same, c.same, a, b)
			}
		})
	}
}

// TestFingerprintIgnoresIDs: the fingerprint reads edges by position, not
// by value ID, so renumbering values changes the text form but not the key.
func TestFingerprintIgnoresIDs(t *testing.T) {
	g, err := matmulPromote.trace()
	if err != nil {
		t.Fatal(err)
	}
	fp, text := g.Fingerprint(), g.String()
	for _, p := range g.Params {
		p.ID = 1000 - p.ID
	}
	for _, n := range g.Nodes {
		for _, o := range n.Out {
			o.ID = 1000 - 7*o.ID
		}
	}
	if err := g.Verify(); err != nil {
		t.Fatal(err)
	}
	if g.String() == text {
		t.Fatal("renumbering did not change the text form")
	}
	if g.Fingerprint() != fp {
		t.Error("fingerprint depends on value IDs")
	}
}

// TestFingerprintGolden pins the serialization: a change to it must bump
// fingerprintVersion (and this golden), or cache keys would silently alias.
func TestFingerprintGolden(t *testing.T) {
	g := New()
	x := g.Param(meta(dtype.F32, 2, 3))
	c := g.AddConst(op.Meta{Shape: []int{}, DType: dtype.F32, Wrapped: true}, []byte{0, 0, 0, 0x40})
	add := op.MustLookup("add")
	n := g.AddNode(add, op.Attrs{"alpha": int64(1)}, []*Value{x, c}, []op.Meta{meta(dtype.F32, 2, 3)})
	sm := op.MustLookup("softmax")
	m := g.AddNode(sm, op.Attrs{"dim": -1, "dtype": nil}, []*Value{n.Out[0]}, []op.Meta{meta(dtype.F32, 2, 3)})
	g.SetOutputs(m.Out[0], x)
	if err := g.Verify(); err != nil {
		t.Fatal(err)
	}
	want := `gotpu-ir-fingerprint/2
params 1
p f32[2,3]
nodes 3
c 1 f32[]w data 4 00000040
n "add" attrs 1 "alpha"=l:1 in 2 p0 n0.0 out 1 f32[2,3]
n "softmax" attrs 2 "dim"=i:-1 "dtype"=none in 1 n1.0 out 1 f32[2,3]
outputs 2 n2.0 p0
`
	if got := g.canonical(); got != want {
		t.Errorf("canonical form:\n%s\nwant:\n%s", got, want)
	}
	sum := sha256.Sum256([]byte(want))
	if got := g.Fingerprint(); got != hex.EncodeToString(sum[:]) {
		t.Errorf("Fingerprint %s is not SHA-256 of the canonical form", got)
	}
	const golden = "a226732df835dfcb0effb6101d0fe3820a87477d14d4037db6c52beb37105028"
	if got := g.Fingerprint(); got != golden {
		t.Errorf("fingerprint %s, golden %s", got, golden)
	}
}

// TestFingerprintIgnoresDynamicAttrs: two random nodes that differ only in
// their seed, and two optimizer steps that differ only in lr and step, hash
// the same; a static attribute still counts.
func TestFingerprintIgnoresDynamicAttrs(t *testing.T) {
	build := func(name string, a op.Attrs, in ...op.Meta) string {
		g := New()
		var vs []*Value
		for _, m := range in {
			vs = append(vs, g.Param(m))
		}
		d := op.MustLookup(name)
		na, err := d.Normalize(a)
		if err != nil {
			t.Fatal(err)
		}
		n := g.AddNode(d, na, vs, []op.Meta{{Shape: []int{4}, DType: dtype.I64}})
		g.SetOutputs(n.Out...)
		return g.Fingerprint()
	}
	f32 := op.Meta{Shape: []int{4}, DType: dtype.F32}
	cases := []struct {
		name   string
		op     string
		a, b   op.Attrs
		in     []op.Meta
		sameFP bool
	}{
		{"seed", "random_bits", op.Attrs{"shape": []int{4}, "seed": int64(1), "offset": int64(0)}, op.Attrs{"shape": []int{4}, "seed": int64(2), "offset": int64(8)}, nil, true},
		{"shape", "random_bits", op.Attrs{"shape": []int{4}, "seed": int64(1)}, op.Attrs{"shape": []int{5}, "seed": int64(1)}, nil, false},
		{"lr-step", "sgd_step", op.Attrs{"lr": 0.1}, op.Attrs{"lr": 0.01}, []op.Meta{f32, f32, {}}, true},
		{"momentum", "sgd_step", op.Attrs{"lr": 0.1, "momentum": 0.9}, op.Attrs{"lr": 0.1, "momentum": 0.8}, []op.Meta{f32, f32, f32}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := build(c.op, c.a, c.in...) == build(c.op, c.b, c.in...); got != c.sameFP {
				t.Errorf("same fingerprint = %v, want %v", got, c.sameFP)
			}
		})
	}
}
