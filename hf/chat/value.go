package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/ardanlabs/jinja"
)

// maxValueDepth bounds the nesting of values handed to a template, so that a
// self-referencing map or a pathological JSON document fails with an error
// instead of exhausting the stack.
const maxValueDepth = 256

// toValue converts a Go value into the template engine's value, the way
// transformers hands Python objects to Jinja:
//
//   - nil → None; bool, integers, floats, strings → the same scalar (a
//     float keeps its float-ness, so 1.0 prints as 1.0 under tojson);
//   - json.RawMessage and json.Number are decoded as JSON with object key
//     order preserved (use them when the order of keys matters, as it does
//     for tool schemas printed with tojson);
//   - []T and [N]T → list; map[string]T → dict with keys sorted (Go maps have
//     no order);
//   - anything else (structs, pointers, types with MarshalJSON) goes through
//     encoding/json and is decoded with its field order kept.
func toValue(v any) (jinja.Value, error) {
	return toValueDepth(v, 0)
}

func toValueDepth(v any, depth int) (jinja.Value, error) {
	if depth > maxValueDepth {
		return jinja.Value{}, fmt.Errorf("value nested deeper than %d levels", maxValueDepth)
	}
	switch x := v.(type) {
	case nil:
		return jinja.None(), nil
	case jinja.Value:
		return x, nil
	case bool:
		return jinja.NewBool(x), nil
	case string:
		return jinja.NewString(x), nil
	case int:
		return jinja.NewInt(int64(x)), nil
	case int8:
		return jinja.NewInt(int64(x)), nil
	case int16:
		return jinja.NewInt(int64(x)), nil
	case int32:
		return jinja.NewInt(int64(x)), nil
	case int64:
		return jinja.NewInt(x), nil
	case uint:
		return uintValue(uint64(x)), nil
	case uint8:
		return jinja.NewInt(int64(x)), nil
	case uint16:
		return jinja.NewInt(int64(x)), nil
	case uint32:
		return jinja.NewInt(int64(x)), nil
	case uint64:
		return uintValue(x), nil
	case float32:
		return jinja.NewFloat(float64(x)), nil
	case float64:
		return jinja.NewFloat(x), nil
	case json.Number:
		return decodeJSONValue([]byte(x))
	case json.RawMessage:
		return decodeJSONValue(x)
	case []any:
		items := make([]jinja.Value, len(x))
		for i, e := range x {
			ev, err := toValueDepth(e, depth+1)
			if err != nil {
				return jinja.Value{}, err
			}
			items[i] = ev
		}
		return jinja.NewList(items), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := jinja.NewDict()
		dd := d.AsDict()
		for _, k := range keys {
			ev, err := toValueDepth(x[k], depth+1)
			if err != nil {
				return jinja.Value{}, err
			}
			dd.Set(k, ev)
		}
		return d, nil
	}

	if _, ok := v.(json.Marshaler); ok {
		return marshalValue(v)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return jinja.None(), nil
		}
		return toValueDepth(rv.Elem().Interface(), depth+1)
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8 {
			// encoding/json's convention: []byte is base64 text.
			return marshalValue(v)
		}
		items := make([]jinja.Value, rv.Len())
		for i := range rv.Len() {
			ev, err := toValueDepth(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return jinja.Value{}, err
			}
			items[i] = ev
		}
		return jinja.NewList(items), nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return marshalValue(v)
		}
		keys := make([]string, 0, rv.Len())
		vals := make(map[string]reflect.Value, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			k := it.Key().String()
			keys = append(keys, k)
			vals[k] = it.Value()
		}
		sort.Strings(keys)
		d := jinja.NewDict()
		dd := d.AsDict()
		for _, k := range keys {
			ev, err := toValueDepth(vals[k].Interface(), depth+1)
			if err != nil {
				return jinja.Value{}, err
			}
			dd.Set(k, ev)
		}
		return d, nil
	case reflect.String:
		return jinja.NewString(rv.String()), nil
	case reflect.Bool:
		return jinja.NewBool(rv.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return jinja.NewInt(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintValue(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return jinja.NewFloat(rv.Float()), nil
	case reflect.Func, reflect.Chan, reflect.UnsafePointer, reflect.Complex64, reflect.Complex128:
		return jinja.Value{}, fmt.Errorf("cannot pass a %s to a chat template", rv.Type())
	}
	return marshalValue(v)
}

// uintValue keeps integers that fit int64 integral; larger ones (which
// Python would keep exact) become floats, the closest the engine can hold.
func uintValue(u uint64) jinja.Value {
	if u <= math.MaxInt64 {
		return jinja.NewInt(int64(u))
	}
	return jinja.NewFloat(float64(u))
}

// marshalValue converts v through encoding/json, keeping struct field order.
func marshalValue(v any) (jinja.Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return jinja.Value{}, fmt.Errorf("converting %T for the chat template: %w", v, err)
	}
	return decodeJSONValue(b)
}

// decodeJSONValue decodes one JSON document into an engine value, keeping
// the order of object keys (as Python's json.loads does) and telling
// integers ("1") from floats ("1.0", "1e3") as Python does.
func decodeJSONValue(data []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeJSONToken(dec, 0)
	if err != nil {
		return jinja.Value{}, fmt.Errorf("decoding JSON for the chat template: %w", err)
	}
	if _, err := dec.Token(); err == nil {
		return jinja.Value{}, fmt.Errorf("decoding JSON for the chat template: trailing data after the value")
	}
	return v, nil
}

func decodeJSONToken(dec *json.Decoder, depth int) (jinja.Value, error) {
	if depth > maxValueDepth {
		return jinja.Value{}, fmt.Errorf("JSON nested deeper than %d levels", maxValueDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return jinja.Value{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := jinja.NewDict()
			dd := d.AsDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return jinja.Value{}, err
				}
				k, ok := kt.(string)
				if !ok {
					return jinja.Value{}, fmt.Errorf("object key %v is not a string", kt)
				}
				v, err := decodeJSONToken(dec, depth+1)
				if err != nil {
					return jinja.Value{}, err
				}
				dd.Set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return jinja.Value{}, err
			}
			return d, nil
		case '[':
			items := []jinja.Value{}
			for dec.More() {
				v, err := decodeJSONToken(dec, depth+1)
				if err != nil {
					return jinja.Value{}, err
				}
				items = append(items, v)
			}
			if _, err := dec.Token(); err != nil {
				return jinja.Value{}, err
			}
			return jinja.NewList(items), nil
		}
		return jinja.Value{}, fmt.Errorf("unexpected %v", t)
	case string:
		return jinja.NewString(t), nil
	case json.Number:
		s := string(t)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := t.Int64(); err == nil {
				return jinja.NewInt(i), nil
			}
		}
		f, err := t.Float64()
		if err != nil {
			return jinja.Value{}, fmt.Errorf("number %s: %w", s, err)
		}
		return jinja.NewFloat(f), nil
	case bool:
		return jinja.NewBool(t), nil
	case nil:
		return jinja.None(), nil
	}
	return jinja.Value{}, fmt.Errorf("unexpected JSON token %v", tok)
}
