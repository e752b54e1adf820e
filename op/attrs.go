package op

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gotpu/gotpu/dtype"
)

// AttrType is the type of an op attribute.
type AttrType uint8

// Attribute types. Scalar attributes hold a float64, int64 or bool and keep
// which one it was (PyTorch distinguishes 2 from 2.0 in promotion).
const (
	AttrInt AttrType = iota
	AttrInts
	AttrFloat
	AttrFloats
	AttrBool
	AttrString
	AttrDType
	AttrScalar
)

func (t AttrType) String() string {
	return [...]string{"int", "ints", "float", "floats", "bool", "string", "dtype", "scalar"}[t]
}

// AttrSpec declares one attribute. Default nil means the attribute is
// required, unless Optional is set (then an absent attribute reads as nil).
type AttrSpec struct {
	Name     string
	Type     AttrType
	Default  any
	Optional bool
}

// Attrs holds an op call's attribute values by name. Values are int, []int,
// float64, []float64, bool, string, dtype.DType, or for scalars float64, int64
// or bool; an absent optional attribute is nil.
type Attrs map[string]any

// Int returns attribute k as an int (it panics if k is missing or not integral,
// which is a programming error in an op declaration).
func (a Attrs) Int(k string) int {
	switch v := a[k].(type) {
	case int:
		return v
	case int64:
		return int(v)
	case float64:
		return int(v)
	}
	panic(fmt.Sprintf("op: attribute %q is %T, not int", k, a[k]))
}

// Ints returns attribute k as []int (nil if absent).
func (a Attrs) Ints(k string) []int {
	switch v := a[k].(type) {
	case nil:
		return nil
	case []int:
		return v
	case int:
		return []int{v}
	case []int64:
		out := make([]int, len(v))
		for i, x := range v {
			out[i] = int(x)
		}
		return out
	case []any:
		out := make([]int, len(v))
		for i, x := range v {
			out[i] = toInt(x)
		}
		return out
	}
	panic(fmt.Sprintf("op: attribute %q is %T, not []int", k, a[k]))
}

func toInt(x any) int {
	switch v := x.(type) {
	case int:
		return v
	case int64:
		return int(v)
	case float64:
		return int(v)
	}
	panic(fmt.Sprintf("op: %T is not an int", x))
}

// Float returns attribute k as a float64.
func (a Attrs) Float(k string) float64 {
	switch v := a[k].(type) {
	case float64:
		return v
	case float32:
		return float64(v)
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case bool:
		if v {
			return 1
		}
		return 0
	}
	panic(fmt.Sprintf("op: attribute %q is %T, not float", k, a[k]))
}

// Floats returns attribute k as []float64 (nil if absent).
func (a Attrs) Floats(k string) []float64 {
	switch v := a[k].(type) {
	case nil:
		return nil
	case []float64:
		return v
	case []any:
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = Attrs{"x": x}.Float("x")
		}
		return out
	}
	panic(fmt.Sprintf("op: attribute %q is %T, not []float64", k, a[k]))
}

// Bool returns attribute k as a bool.
func (a Attrs) Bool(k string) bool {
	v, ok := a[k].(bool)
	if !ok {
		panic(fmt.Sprintf("op: attribute %q is %T, not bool", k, a[k]))
	}
	return v
}

// String returns attribute k as a string.
func (a Attrs) String(k string) string {
	v, ok := a[k].(string)
	if !ok {
		panic(fmt.Sprintf("op: attribute %q is %T, not string", k, a[k]))
	}
	return v
}

// DType returns attribute k as a dtype (Invalid if absent).
func (a Attrs) DType(k string) dtype.DType {
	switch v := a[k].(type) {
	case nil:
		return dtype.Invalid
	case dtype.DType:
		return v
	case string:
		d, err := dtype.Parse(v)
		if err != nil {
			panic(err)
		}
		return d
	}
	panic(fmt.Sprintf("op: attribute %q is %T, not dtype", k, a[k]))
}

// Has reports whether attribute k is present and not nil.
func (a Attrs) Has(k string) bool { return a[k] != nil }

// With returns a copy of a with k set to v.
func (a Attrs) With(k string, v any) Attrs {
	out := make(Attrs, len(a)+1)
	for kk, vv := range a {
		out[kk] = vv
	}
	out[k] = v
	return out
}

// Canonical renders a in a stable order, for logs and fingerprints.
func (a Attrs) Canonical() string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for i, k := range keys {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "%s=%v", k, a[k])
	}
	return sb.String()
}

// Normalize checks a against d's attribute specs, fills defaults, converts
// numeric forms (ints given as float64 from JSON, []any lists), and rejects
// unknown attributes. It returns a new map.
func (d *Def) Normalize(a Attrs) (Attrs, error) { return d.NormalizeWith(a, nil) }

// NormalizeWith is Normalize of a with the entries of over replacing a's
// (over is read, not kept): one new map, where copying a, setting over's
// entries and normalizing would make two.
func (d *Def) NormalizeWith(a, over Attrs) (Attrs, error) {
	out := make(Attrs, len(d.Attrs))
	for _, m := range [2]Attrs{a, over} {
		for k := range m {
			if !d.hasAttr(k) {
				return nil, fmt.Errorf("%s: unknown attribute %q", d.Name, k)
			}
		}
	}
	for _, s := range d.Attrs {
		v, ok := a[s.Name]
		if ov, set := over[s.Name]; set {
			v, ok = ov, true
		}
		if !ok || v == nil {
			if s.Default == nil {
				if s.Optional {
					out[s.Name] = nil
					continue
				}
				return nil, fmt.Errorf("%s: missing required attribute %q", d.Name, s.Name)
			}
			v = s.Default
		}
		nv, err := convertAttr(s, v)
		if err != nil {
			return nil, fmt.Errorf("%s: attribute %q: %w", d.Name, s.Name, err)
		}
		out[s.Name] = nv
	}
	return out, nil
}

func (d *Def) hasAttr(k string) bool {
	for _, s := range d.Attrs {
		if s.Name == k {
			return true
		}
	}
	return false
}

func convertAttr(s AttrSpec, v any) (res any, err error) {
	// A value already in its normalized form (every attribute an op call
	// passes on after its first Normalize) is returned as it is, without
	// the conversions below.
	switch s.Type {
	case AttrInt:
		if x, ok := v.(int); ok {
			return x, nil
		}
	case AttrInts:
		if x, ok := v.([]int); ok {
			return x, nil
		}
	case AttrFloat:
		if x, ok := v.(float64); ok {
			return x, nil
		}
	case AttrFloats:
		if x, ok := v.([]float64); ok {
			return x, nil
		}
	case AttrBool:
		if x, ok := v.(bool); ok {
			return x, nil
		}
	case AttrString:
		if x, ok := v.(string); ok {
			return x, nil
		}
	case AttrDType:
		if x, ok := v.(dtype.DType); ok {
			return x, nil
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	tmp := Attrs{"v": v}
	switch s.Type {
	case AttrInt:
		return tmp.Int("v"), nil
	case AttrInts:
		return tmp.Ints("v"), nil
	case AttrFloat:
		return tmp.Float("v"), nil
	case AttrFloats:
		return tmp.Floats("v"), nil
	case AttrBool:
		return tmp.Bool("v"), nil
	case AttrString:
		return tmp.String("v"), nil
	case AttrDType:
		return tmp.DType("v"), nil
	case AttrScalar:
		switch x := v.(type) {
		case float64, int64, bool:
			return x, nil
		case int:
			return int64(x), nil
		case float32:
			return float64(x), nil
		}
		return nil, fmt.Errorf("%T is not a scalar", v)
	}
	return nil, fmt.Errorf("unknown attribute type %v", s.Type)
}
