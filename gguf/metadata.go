package gguf

import (
	"fmt"
	"slices"
)

// KV is one metadata key–value pair.
type KV struct {
	Key   string
	Value Value
}

// Metadata is a file's key–value metadata, in file order. Typed accessors
// (String, Uint, Float, Strings, ...) fail with an error wrapping
// ErrKeyNotFound when the key is absent, or ErrValueType, naming the key and
// the value's actual type, when it holds something else. A Metadata is
// read-only and safe for concurrent use.
type Metadata struct {
	kvs   []KV
	index map[string]int
}

// Len returns the number of key–value pairs.
func (m *Metadata) Len() int { return len(m.kvs) }

// Keys returns every key in file order.
func (m *Metadata) Keys() []string {
	out := make([]string, len(m.kvs))
	for i, kv := range m.kvs {
		out[i] = kv.Key
	}
	return out
}

// All returns every pair in file order (a new slice; the values' arrays are
// shared and read-only).
func (m *Metadata) All() []KV { return slices.Clone(m.kvs) }

// Has reports whether the key is present.
func (m *Metadata) Has(key string) bool {
	_, ok := m.index[key]
	return ok
}

// Get returns the value under key.
func (m *Metadata) Get(key string) (Value, bool) {
	i, ok := m.index[key]
	if !ok {
		return Value{}, false
	}
	return m.kvs[i].Value, true
}

// Value returns the value under key, or an error wrapping ErrKeyNotFound.
func (m *Metadata) Value(key string) (Value, error) {
	v, ok := m.Get(key)
	if !ok {
		return Value{}, fmt.Errorf("%w: %q", ErrKeyNotFound, key)
	}
	return v, nil
}

func (m *Metadata) typed(key, want string, ok func(Value) bool) (Value, error) {
	v, err := m.Value(key)
	if err != nil {
		return Value{}, err
	}
	if !ok(v) {
		return Value{}, fmt.Errorf("%w: %q is %s, not %s", ErrValueType, key, describe(v), want)
	}
	return v, nil
}

// describe names a value's type for an error, with the value when that says
// why an integer was refused.
func describe(v Value) string {
	switch {
	case v.typ.isSigned() && int64(v.bits) < 0:
		return fmt.Sprintf("%s %d", v.typ, int64(v.bits))
	case v.typ == TypeUint64:
		return fmt.Sprintf("%s %d", v.typ, v.bits)
	}
	return v.TypeName()
}

// String returns the string under key.
func (m *Metadata) String(key string) (string, error) {
	v, err := m.typed(key, "string", func(v Value) bool { return v.typ == TypeString })
	return v.str, err
}

// Uint returns the integer under key (any of the eight integer types) as a
// uint64; negative values are an ErrValueType error.
func (m *Metadata) Uint(key string) (uint64, error) {
	v, err := m.typed(key, "a non-negative integer", func(v Value) bool { _, ok := v.Uint(); return ok })
	x, _ := v.Uint()
	return x, err
}

// Int returns the integer under key (any of the eight integer types) as an
// int64; a uint64 above math.MaxInt64 is an ErrValueType error.
func (m *Metadata) Int(key string) (int64, error) {
	v, err := m.typed(key, "an integer within int64", func(v Value) bool { _, ok := v.Int(); return ok })
	x, _ := v.Int()
	return x, err
}

// Float returns the float32 or float64 under key as a float64 (exactly).
// Integers are not converted: they are an ErrValueType error.
func (m *Metadata) Float(key string) (float64, error) {
	v, err := m.typed(key, "float32 or float64", func(v Value) bool { _, ok := v.Float(); return ok })
	x, _ := v.Float()
	return x, err
}

// Bool returns the bool under key.
func (m *Metadata) Bool(key string) (bool, error) {
	v, err := m.typed(key, "bool", func(v Value) bool { return v.typ == TypeBool })
	return v.bits != 0, err
}

// Array returns the array under key.
func (m *Metadata) Array(key string) (*Array, error) {
	v, err := m.typed(key, "array", func(v Value) bool { return v.typ == TypeArray })
	return v.arr, err
}

// Strings returns the string array under key (shared; do not modify).
func (m *Metadata) Strings(key string) ([]string, error) {
	v, err := m.typed(key, "array[string]", func(v Value) bool { return v.typ == TypeArray && v.arr.elem == TypeString })
	if err != nil {
		return nil, err
	}
	s, _ := v.arr.Strings()
	return s, nil
}

// Ints returns the integer array under key (any integer element type) as
// int64s, in a new slice.
func (m *Metadata) Ints(key string) ([]int64, error) {
	v, err := m.typed(key, "an array of integers", func(v Value) bool {
		return v.typ == TypeArray && (v.arr.elem.isSigned() || v.arr.elem.isUnsigned())
	})
	if err != nil {
		return nil, err
	}
	out, ok := v.arr.Ints()
	if !ok {
		return nil, fmt.Errorf("%w: %q is %s with an element above the int64 range", ErrValueType, key, v.TypeName())
	}
	return out, nil
}

// Floats returns the float32 or float64 array under key as float64s, in a
// new slice.
func (m *Metadata) Floats(key string) ([]float64, error) {
	v, err := m.typed(key, "array[float32] or array[float64]", func(v Value) bool {
		return v.typ == TypeArray && (v.arr.elem == TypeFloat32 || v.arr.elem == TypeFloat64)
	})
	if err != nil {
		return nil, err
	}
	out, _ := v.arr.Floats()
	return out, nil
}
