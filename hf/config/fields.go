package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Sentinel errors; every error returned by this package wraps one of them.
var (
	// ErrSyntax: the document is not a JSON object.
	ErrSyntax = errors.New("config: malformed JSON")
	// ErrMissingField: a required field is absent or null.
	ErrMissingField = errors.New("config: missing required field")
	// ErrInvalidField: a field has the wrong JSON type or an impossible value.
	ErrInvalidField = errors.New("config: invalid field")
	// ErrUnsupported: the model_type / architecture (or rope type) is not one this package knows.
	ErrUnsupported = errors.New("config: unsupported model")
)

// Sanity limits: no real config comes near them, and they keep per-layer
// allocations bounded for hostile input.
const (
	maxInt    = math.MaxInt32
	maxLayers = 1 << 16
)

// decodeObject parses data as a JSON object into its top-level fields.
func decodeObject(data []byte, what string) (map[string]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: %s is not a JSON object", ErrSyntax, what)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrSyntax, what, err)
	}
	return raw, nil
}

// fields reads typed values out of a raw JSON object, recording the first
// error; the context (model_type, path prefix) is used in every message.
type fields struct {
	raw    map[string]json.RawMessage
	ctx    string // e.g. `model_type "llama"`
	prefix string // e.g. "text_config." or "rope_scaling."
	err    error
}

func newFields(raw map[string]json.RawMessage, ctx, prefix string) *fields {
	return &fields{raw: raw, ctx: ctx, prefix: prefix}
}

func (f *fields) fail(err error, key, format string, args ...any) {
	if f.err == nil {
		f.err = fmt.Errorf("%w: %q %s (%s)", err, f.prefix+key, fmt.Sprintf(format, args...), f.ctx)
	}
}

// get returns the raw value of key, treating null as absent.
func (f *fields) get(key string) (json.RawMessage, bool) {
	v, ok := f.raw[key]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil, false
	}
	return v, true
}

func (f *fields) has(key string) bool {
	_, ok := f.get(key)
	return ok
}

// number parses a JSON number; ok is false (and an error recorded) for other types.
func (f *fields) number(key string, v json.RawMessage) (float64, string, bool) {
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		f.fail(ErrInvalidField, key, "is not valid JSON")
		return 0, "", false
	}
	n, ok := x.(json.Number)
	if !ok {
		f.fail(ErrInvalidField, key, "must be a number, got %s", kind(x))
		return 0, "", false
	}
	fv, err := n.Float64()
	if err != nil {
		f.fail(ErrInvalidField, key, "is out of range (%s)", n)
		return 0, "", false
	}
	return fv, n.String(), true
}

func kind(x any) string {
	switch v := x.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return strconv.Quote(v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case json.Number:
		return v.String()
	}
	return fmt.Sprintf("%T", x)
}

func (f *fields) toInt(key string, v json.RawMessage) (int, bool) {
	fv, text, ok := f.number(key, v)
	if !ok {
		return 0, false
	}
	if fv != math.Trunc(fv) {
		f.fail(ErrInvalidField, key, "must be an integer, got %s", text)
		return 0, false
	}
	if math.Abs(fv) > maxInt {
		f.fail(ErrInvalidField, key, "is implausibly large (%s)", text)
		return 0, false
	}
	return int(fv), true
}

// intReq reads a required positive integer.
func (f *fields) intReq(key string) int {
	v, ok := f.get(key)
	if !ok {
		if f.err == nil {
			f.err = fmt.Errorf("%w: %q (%s)", ErrMissingField, f.prefix+key, f.ctx)
		}
		return 0
	}
	n, ok := f.toInt(key, v)
	if ok && n <= 0 {
		f.fail(ErrInvalidField, key, "must be positive, got %d", n)
	}
	return n
}

// intOr reads an optional integer (>= 0), returning def when absent or null.
func (f *fields) intOr(key string, def int) int {
	v, ok := f.get(key)
	if !ok {
		return def
	}
	n, ok := f.toInt(key, v)
	if !ok {
		return def
	}
	if n < 0 {
		f.fail(ErrInvalidField, key, "must not be negative, got %d", n)
	}
	return n
}

// intPtr reads an optional integer that may be negative (token ids are not).
func (f *fields) intPtr(key string) *int {
	v, ok := f.get(key)
	if !ok {
		return nil
	}
	n, ok := f.toInt(key, v)
	if !ok {
		return nil
	}
	return &n
}

func (f *fields) floatOr(key string, def float64) float64 {
	if p := f.floatPtr(key); p != nil {
		return *p
	}
	return def
}

func (f *fields) floatPtr(key string) *float64 {
	v, ok := f.get(key)
	if !ok {
		return nil
	}
	fv, _, ok := f.number(key, v)
	if !ok {
		return nil
	}
	return &fv
}

func (f *fields) floatList(key string) []float64 {
	v, ok := f.get(key)
	if !ok {
		return nil
	}
	var out []float64
	if err := json.Unmarshal(v, &out); err != nil {
		f.fail(ErrInvalidField, key, "must be a list of numbers")
		return nil
	}
	return out
}

func (f *fields) strOr(key, def string) string {
	v, ok := f.get(key)
	if !ok {
		return def
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		f.fail(ErrInvalidField, key, "must be a string")
		return def
	}
	return s
}

func (f *fields) strList(key string) []string {
	v, ok := f.get(key)
	if !ok {
		return nil
	}
	var out []string
	if err := json.Unmarshal(v, &out); err != nil {
		f.fail(ErrInvalidField, key, "must be a list of strings")
		return nil
	}
	return out
}

func (f *fields) boolOr(key string, def bool) bool {
	v, ok := f.get(key)
	if !ok {
		return def
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		f.fail(ErrInvalidField, key, "must be true or false")
		return def
	}
	return b
}

// intOrList reads a field that is an integer or a list of integers (eos_token_id).
func (f *fields) intOrList(key string) []int {
	v, ok := f.get(key)
	if !ok {
		return nil
	}
	if t := bytes.TrimSpace(v); len(t) > 0 && t[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(t, &raws); err != nil {
			f.fail(ErrInvalidField, key, "must be an integer or a list of integers")
			return nil
		}
		out := make([]int, 0, len(raws))
		for _, r := range raws {
			n, ok := f.toInt(key, r)
			if !ok {
				return nil
			}
			out = append(out, n)
		}
		return out
	}
	n, ok := f.toInt(key, v)
	if !ok {
		return nil
	}
	return []int{n}
}

// object returns a nested object field (nil when absent or null).
func (f *fields) object(key string) map[string]json.RawMessage {
	v, ok := f.get(key)
	if !ok {
		return nil
	}
	var m map[string]json.RawMessage
	if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &m) != nil {
		f.fail(ErrInvalidField, key, "must be a JSON object")
		return nil
	}
	return m
}
