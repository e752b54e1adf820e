package ir

import (
	"errors"
	"reflect"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// serialGraphs returns the graphs the round-trip tests use: the test
// programs traced (composites kept and lowered, f32 and f64 defaults), the
// verify base graph, and every composite op of the table that traces on
// [3,4] inputs, lowered.
func serialGraphs(t *testing.T) map[string]*Graph {
	t.Helper()
	gs := map[string]*Graph{}
	for _, p := range programs {
		g, err := p.trace()
		if err != nil {
			t.Fatal(err)
		}
		gs[p.name] = g
		l, err := Lower(g)
		if err != nil {
			t.Fatal(err)
		}
		gs[p.name+"/lowered"] = l
		g64, err := p.trace(DefaultFloat(dtype.F64))
		if err != nil {
			t.Fatal(err)
		}
		gs[p.name+"/f64"] = g64
	}
	gs["verify_base"] = verifyBase(t)
	gs["empty"] = New()
	for _, dt := range []dtype.DType{dtype.F32, dtype.I64, dtype.Bool} {
		for _, d := range op.All() {
			params := make([]op.Meta, len(d.Inputs))
			for i := range params {
				params[i] = meta(dt, 3, 4)
			}
			g, err := Trace(params, func(b op.Builder, p []op.Value) []op.Value { return b.Call(d.Name, p, nil) })
			if err != nil {
				continue
			}
			gs[d.Name+"/"+dt.String()] = g
			if d.Kind == op.Composite {
				if l, err := Lower(g); err == nil {
					gs[d.Name+"/"+dt.String()+"/lowered"] = l
				}
			}
		}
	}
	return gs
}

func TestSerialRoundTrip(t *testing.T) {
	gs := serialGraphs(t)
	if len(gs) < 100 {
		t.Fatalf("only %d graphs traced; the round trip is not exercising the table", len(gs))
	}
	for name, g := range gs {
		data, err := g.MarshalBinary()
		if err != nil {
			t.Errorf("%s: marshal: %v", name, err)
			continue
		}
		h, err := UnmarshalGraph(data)
		if err != nil {
			t.Errorf("%s: unmarshal: %v", name, err)
			continue
		}
		if h.String() != g.String() {
			t.Errorf("%s: String differs after round trip:\n%s\nvs\n%s", name, h.String(), g.String())
		}
		if h.Fingerprint() != g.Fingerprint() {
			t.Errorf("%s: Fingerprint differs after round trip", name)
		}
		if h.DefaultFloat != g.DefaultFloat {
			t.Errorf("%s: DefaultFloat %v, want %v", name, h.DefaultFloat, g.DefaultFloat)
		}
		if g.Verify() == nil {
			if err := h.Verify(); err != nil {
				t.Errorf("%s: decoded graph does not verify: %v", name, err)
			}
		}
		// Attribute Go types are preserved exactly.
		for j, n := range g.Nodes {
			if !n.IsConst() && !reflect.DeepEqual(normAttrs(n.Attrs), normAttrs(h.Nodes[j].Attrs)) {
				t.Errorf("%s: node %d attrs %#v, decoded %#v", name, j, n.Attrs, h.Nodes[j].Attrs)
			}
		}
		// Encoding is deterministic and a fixed point.
		again, err := h.MarshalBinary()
		if err != nil || string(again) != string(data) {
			t.Errorf("%s: re-marshal differs (%v)", name, err)
		}
		// New values appended after decoding get fresh IDs.
		if len(h.Params) > 0 {
			v := h.Param(h.Params[0].Meta)
			for _, u := range h.Params[:len(h.Params)-1] {
				if u.ID == v.ID {
					t.Errorf("%s: new parameter reuses id %d", name, v.ID)
				}
			}
		}
	}
}

func normAttrs(a op.Attrs) op.Attrs {
	if a == nil {
		return op.Attrs{}
	}
	return a
}

// TestSerialAttrTypes: every normalized attribute type survives with its Go
// type (2 and 2.0 and int64(2) stay distinct).
func TestSerialAttrTypes(t *testing.T) {
	g := New()
	x := g.Param(meta(dtype.F32, 2, 3))
	attrs := op.Attrs{
		"int": 2, "int64": int64(2), "float": 2.0, "bool": true, "string": "tanh",
		"dtype": dtype.BF16, "ints": []int{-1, 0, 7}, "floats": []float64{0.5, -1e300}, "nil": nil,
		"empty_ints": []int{},
	}
	n := g.AddNode(op.MustLookup("exp"), attrs, []*Value{x}, []op.Meta{meta(dtype.F32, 2, 3)})
	g.SetOutputs(n.Out[0], x, n.Out[0])
	data, err := g.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	h, err := UnmarshalGraph(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h.Nodes[0].Attrs, attrs) {
		t.Errorf("attrs %#v, want %#v", h.Nodes[0].Attrs, attrs)
	}
	if h.Outputs[0] != h.Outputs[2] || h.Outputs[1] != h.Params[0] {
		t.Errorf("output identities not preserved")
	}
	if _, err := (&Graph{Nodes: []*Node{{Op: op.MustLookup("exp"), Attrs: op.Attrs{"x": []int64{1}}, In: []*Value{x}}}}).MarshalBinary(); !errors.Is(err, ErrSerial) {
		t.Errorf("unencodable attribute: err = %v, want ErrSerial", err)
	}
}

func TestSerialErrors(t *testing.T) {
	g := verifyBase(t)
	good, err := g.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// Every truncation fails cleanly.
	for i := 0; i < len(good); i++ {
		if _, err := UnmarshalGraph(good[:i]); !errors.Is(err, ErrSerial) {
			t.Fatalf("truncated to %d bytes: err = %v, want ErrSerial", i, err)
		}
	}
	// Unknown op name.
	h, _ := UnmarshalGraph(good)
	h.Nodes[0].Op = &op.Def{Name: "no_such_op"}
	bad, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := UnmarshalGraph(bad); !errors.Is(err, ErrUnknownOp) || !errors.Is(err, ErrSerial) {
		t.Errorf("unknown op: err = %v, want ErrUnknownOp and ErrSerial", err)
	}
	cases := map[string][]byte{
		"bad magic":      append([]byte("notgraph"), good[8:]...),
		"future version": append(append([]byte(serialMagic), 9), good[len(serialMagic)+1:]...),
		"trailing bytes": append(append([]byte{}, good...), 0),
		"empty":          nil,
	}
	for name, data := range cases {
		if _, err := UnmarshalGraph(data); !errors.Is(err, ErrSerial) {
			t.Errorf("%s: err = %v, want ErrSerial", name, err)
		}
	}
	// Single-byte corruptions never panic (errors or other graphs are fine).
	for i := range good {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			c := append([]byte{}, good...)
			c[i] ^= x
			_, _ = UnmarshalGraph(c)
		}
	}
}

func FuzzUnmarshalGraph(f *testing.F) {
	for _, p := range programs {
		g, err := p.trace()
		if err != nil {
			f.Fatal(err)
		}
		data, err := g.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(serialMagic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := UnmarshalGraph(data)
		if err != nil {
			if !errors.Is(err, ErrSerial) {
				t.Fatalf("error %v does not wrap ErrSerial", err)
			}
			return
		}
		// Whatever decodes prints, fingerprints and re-encodes identically.
		_ = g.String()
		_ = g.Fingerprint()
		_ = g.Verify()
		again, err := g.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded graph does not re-encode: %v", err)
		}
		h, err := UnmarshalGraph(again)
		if err != nil {
			t.Fatalf("re-encoded graph does not decode: %v", err)
		}
		if h.Fingerprint() != g.Fingerprint() || h.String() != g.String() {
			t.Fatalf("re-encoded graph differs")
		}
	})
}
