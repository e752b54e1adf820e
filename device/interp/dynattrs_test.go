package interp_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/device/interp"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// TestDynamicAttrs: a node's run-time attributes are its planned ones with
// the dynamic values of its source node replacing them, normalized; an
// unseeded random node draws its seed once per run and source node; a
// node without a dynamic index, or without values, keeps its map.
func TestDynamicAttrs(t *testing.T) {
	adam, bits := op.MustLookup("adam_step"), op.MustLookup("random_bits")
	norm := func(d *op.Def, a op.Attrs) op.Attrs {
		t.Helper()
		n, err := d.Normalize(a)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	adamAttrs := norm(adam, op.Attrs{"lr": 0.0, "step": 1})
	bitsAttrs := norm(bits, op.Attrs{"shape": []int{4}})
	seeded := norm(bits, op.Attrs{"shape": []int{4}, "seed": 7})
	cases := []struct {
		name  string
		d     *op.Def
		attrs op.Attrs
		k     int
		dyn   []op.Attrs
		want  op.Attrs // nil: attrs itself
		err   string
	}{
		{"no dynamic index", adam, adamAttrs, -1, []op.Attrs{{"lr": 0.5}}, nil, ""},
		{"no values", adam, adamAttrs, 0, nil, nil, ""},
		{"no values for this node", adam, adamAttrs, 0, []op.Attrs{{}}, nil, ""},
		{"lr and step replaced, step an int again", adam, adamAttrs, 1, []op.Attrs{{}, {"lr": 0.25, "step": int64(3)}},
			norm(adam, op.Attrs{"lr": 0.25, "step": 3}), ""},
		{"a value of the wrong type", adam, adamAttrs, 0, []op.Attrs{{"step": "three"}}, nil, `attribute "step"`},
		{"a seeded random node keeps its seed", bits, seeded, 0, nil, nil, ""},
		{"a dynamic seed", bits, bitsAttrs, 0, []op.Attrs{{"seed": int64(11), "offset": int64(4)}},
			norm(bits, op.Attrs{"shape": []int{4}, "seed": 11, "offset": 4}), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := &ir.Node{Op: c.d, Attrs: c.attrs}
			drawn := make([]any, 2)
			got, err := interp.DynamicAttrs(n, c.attrs, c.k, c.dyn, drawn)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := c.want
			if want == nil {
				want = c.attrs
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %#v\nwant %#v", got, want)
			}
			if c.want == nil && reflect.ValueOf(got).Pointer() != reflect.ValueOf(c.attrs).Pointer() {
				t.Error("an unchanged node's attributes were copied")
			}
			if reflect.DeepEqual(c.attrs, adamAttrs) && c.attrs["lr"] != 0.0 {
				t.Error("the planned attributes were modified")
			}
		})
	}
	t.Run("an unseeded random node draws once per run", func(t *testing.T) {
		n := &ir.Node{Op: bits, Attrs: bitsAttrs}
		drawn := make([]any, 1)
		a1, err := interp.DynamicAttrs(n, bitsAttrs, 0, nil, drawn)
		if err != nil {
			t.Fatal(err)
		}
		a2, err := interp.DynamicAttrs(n, bitsAttrs, 0, nil, drawn)
		if err != nil {
			t.Fatal(err)
		}
		if a1["seed"] == nil || a1["seed"] != drawn[0] || a2["seed"] != a1["seed"] {
			t.Errorf("seeds %v and %v, drawn %v: want one drawn seed", a1["seed"], a2["seed"], drawn[0])
		}
		if bitsAttrs["seed"] != nil {
			t.Error("the planned attributes got the seed")
		}
	})
}
