package op

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/dtype"
)

// normTestDef declares one attribute of every type.
var normTestDef = &Def{Name: "norm_test", Attrs: []AttrSpec{
	{Name: "i", Type: AttrInt, Default: 1},
	{Name: "is", Type: AttrInts, Optional: true},
	{Name: "f", Type: AttrFloat, Default: 0.5},
	{Name: "fs", Type: AttrFloats, Optional: true},
	{Name: "b", Type: AttrBool, Default: false},
	{Name: "s", Type: AttrString, Default: "x"},
	{Name: "d", Type: AttrDType, Optional: true},
	{Name: "sc", Type: AttrScalar, Optional: true},
	{Name: "req", Type: AttrInt},
}}

// TestNormalize: values already in normalized form come back as they are
// (the fast path), other forms are converted, defaults filled, and bad
// attribute sets rejected; NormalizeWith equals Normalize of the merged map.
func TestNormalize(t *testing.T) {
	cases := []struct {
		name    string
		a, over Attrs
		want    Attrs
		err     string
	}{
		{"defaults", Attrs{"req": 3}, nil,
			Attrs{"i": 1, "is": nil, "f": 0.5, "fs": nil, "b": false, "s": "x", "d": nil, "sc": nil, "req": 3}, ""},
		{"normalized forms kept", Attrs{"req": 3, "i": 7, "is": []int{1, 2}, "f": 2.5, "fs": []float64{1, 2}, "b": true, "s": "y", "d": dtype.BF16, "sc": int64(2)}, nil,
			Attrs{"i": 7, "is": []int{1, 2}, "f": 2.5, "fs": []float64{1, 2}, "b": true, "s": "y", "d": dtype.BF16, "sc": int64(2), "req": 3}, ""},
		{"other forms converted", Attrs{"req": int64(3), "i": 7.0, "is": []any{1.0, int64(2)}, "f": 2, "fs": []any{1, 2.5}, "d": "f16", "sc": 2}, nil,
			Attrs{"i": 7, "is": []int{1, 2}, "f": 2.0, "fs": []float64{1, 2.5}, "b": false, "s": "x", "d": dtype.F16, "sc": int64(2), "req": 3}, ""},
		{"int becomes a list", Attrs{"req": 3, "is": 4}, nil,
			Attrs{"i": 1, "is": []int{4}, "f": 0.5, "fs": nil, "b": false, "s": "x", "d": nil, "sc": nil, "req": 3}, ""},
		{"over replaces", Attrs{"req": 3, "i": 7}, Attrs{"i": int64(9), "f": 0},
			Attrs{"i": 9, "is": nil, "f": 0.0, "fs": nil, "b": false, "s": "x", "d": nil, "sc": nil, "req": 3}, ""},
		{"over supplies the required one", nil, Attrs{"req": 5},
			Attrs{"i": 1, "is": nil, "f": 0.5, "fs": nil, "b": false, "s": "x", "d": nil, "sc": nil, "req": 5}, ""},
		{"over's nil means absent", Attrs{"req": 3, "i": 7}, Attrs{"i": nil},
			Attrs{"i": 1, "is": nil, "f": 0.5, "fs": nil, "b": false, "s": "x", "d": nil, "sc": nil, "req": 3}, ""},
		{"missing required", Attrs{"i": 2}, nil, nil, `missing required attribute "req"`},
		{"unknown in a", Attrs{"req": 3, "zz": 1}, nil, nil, `unknown attribute "zz"`},
		{"unknown in over", Attrs{"req": 3}, Attrs{"zz": 1}, nil, `unknown attribute "zz"`},
		{"wrong type", Attrs{"req": 3, "b": 1}, nil, nil, `attribute "b"`},
		{"wrong type in over", Attrs{"req": 3}, Attrs{"s": 1}, nil, `attribute "s"`},
		{"not a scalar", Attrs{"req": 3, "sc": "2"}, nil, nil, `attribute "sc"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := normTestDef.NormalizeWith(c.a, c.over)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %#v\nwant %#v", got, c.want)
			}
			merged := Attrs{}
			for k, v := range c.a {
				merged[k] = v
			}
			for k, v := range c.over {
				merged[k] = v
			}
			if m, err := normTestDef.Normalize(merged); err != nil || !reflect.DeepEqual(m, got) {
				t.Errorf("Normalize of the merged map: %#v, %v", m, err)
			}
			if c.over == nil {
				if again, err := normTestDef.Normalize(got); err != nil || !reflect.DeepEqual(again, got) {
					t.Errorf("normalizing twice: %#v, %v", again, err)
				}
			}
		})
	}
}
