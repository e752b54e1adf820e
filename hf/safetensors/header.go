package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxHeaderSize is the largest JSON header accepted, in bytes (the reference
// implementation's limit).
const MaxHeaderSize = 100_000_000

// metadataKey is the reserved header key holding the free-form string map.
const metadataKey = "__metadata__"

// TensorInfo describes one tensor of a safetensors file.
type TensorInfo struct {
	// Name is the tensor's key in the header.
	Name string
	// DType is the element type.
	DType DType
	// Shape is the list of dimensions; an empty shape is a scalar.
	Shape []int
	// Begin and End are the absolute byte range of the tensor's data in File
	// (the header's data_offsets plus 8 plus the header length).
	Begin, End int64
	// File is the base name of the file holding the tensor (the shard's file
	// name for a sharded checkpoint).
	File string
}

// NumElements returns the product of the dimensions (1 for a scalar).
func (t TensorInfo) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// NumBytes returns End - Begin, the size of the tensor's data.
func (t TensorInfo) NumBytes() int64 { return t.End - t.Begin }

// header is a parsed and validated safetensors header.
type header struct {
	tensors  []TensorInfo // in storage (offset) order
	index    map[string]int
	metadata map[string]string // nil when absent
	dataLen  int64
}

// readPrefix decodes the 8-byte header length and checks it against the file size.
func readPrefix(prefix []byte, fileSize int64) (int64, error) {
	if fileSize < 8 || len(prefix) < 8 {
		return 0, fmt.Errorf("%w: file is %d bytes, shorter than the 8-byte header length", ErrInvalidHeader, fileSize)
	}
	n := uint64(prefix[0]) | uint64(prefix[1])<<8 | uint64(prefix[2])<<16 | uint64(prefix[3])<<24 |
		uint64(prefix[4])<<32 | uint64(prefix[5])<<40 | uint64(prefix[6])<<48 | uint64(prefix[7])<<56
	if n > MaxHeaderSize {
		return 0, fmt.Errorf("%w: header length %d exceeds the %d-byte limit", ErrHeaderTooLarge, n, MaxHeaderSize)
	}
	if int64(n) > fileSize-8 {
		return 0, fmt.Errorf("%w: header length %d exceeds the %d bytes after the length prefix", ErrInvalidHeader, n, fileSize-8)
	}
	return int64(n), nil
}

// rawTensor is one tensor entry as it appears in the JSON header. Keys are
// matched exactly (encoding/json's struct decoding would match them
// case-insensitively); unknown keys are ignored, as the reference does.
type rawTensor map[string]json.RawMessage

// parseHeader parses and validates hdr, the JSON header of a file whose data
// section (everything after the header) is dataLen bytes long. dataStart is
// the absolute offset of the data section and file the base name recorded in
// each TensorInfo.
func parseHeader(hdr []byte, dataStart, dataLen int64, file string) (*header, error) {
	if !utf8.Valid(hdr) {
		return nil, fmt.Errorf("%w: header is not valid UTF-8", ErrInvalidHeader)
	}
	h := &header{index: make(map[string]int), dataLen: dataLen}
	type span struct{ begin, end uint64 }
	var spans []span

	dec := json.NewDecoder(bytes.NewReader(hdr))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: header is not JSON: %v", ErrInvalidHeader, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%w: header is not a JSON object", ErrInvalidHeader)
	}
	sawMeta := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: header is not valid JSON: %v", ErrInvalidHeader, err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("%w: header object key is not a string", ErrInvalidHeader)
		}
		if name == metadataKey {
			if sawMeta {
				return nil, fmt.Errorf("%w: %s appears twice", ErrDuplicate, metadataKey)
			}
			sawMeta = true
			m, err := decodeMetadata(dec)
			if err != nil {
				return nil, err
			}
			h.metadata = m
			continue
		}
		if _, dup := h.index[name]; dup {
			return nil, fmt.Errorf("%w: tensor %q appears twice in the header", ErrDuplicate, name)
		}
		var raw rawTensor
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%w: tensor %q: %v", ErrInvalidHeader, name, cleanJSONError(err))
		}
		info, sp, err := checkTensor(name, &raw, dataLen)
		if err != nil {
			return nil, err
		}
		info.Begin = dataStart + int64(sp[0])
		info.End = dataStart + int64(sp[1])
		info.File = file
		h.index[name] = len(h.tensors)
		h.tensors = append(h.tensors, info)
		spans = append(spans, span{sp[0], sp[1]})
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, fmt.Errorf("%w: header is not valid JSON: %v", ErrInvalidHeader, err)
	}
	// Only whitespace (the writer's space padding) may follow the object.
	rest := hdr[dec.InputOffset():]
	if len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return nil, fmt.Errorf("%w: trailing characters after the header's JSON object", ErrInvalidHeader)
	}

	// Coverage: sorted by offsets, the tensors must tile [0, dataLen) exactly.
	order := make([]int, len(h.tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmpU64(spans[a].begin, spans[b].begin); c != 0 {
			return c
		}
		return cmpU64(spans[a].end, spans[b].end)
	})
	var pos uint64
	prev := -1
	for _, i := range order {
		sp := spans[i]
		switch {
		case sp.begin > pos:
			return nil, fmt.Errorf("%w: tensor %q starts at data offset %d, leaving bytes [%d, %d) of the data section unused",
				ErrOffsets, h.tensors[i].Name, sp.begin, pos, sp.begin)
		case sp.begin < pos:
			return nil, fmt.Errorf("%w: tensor %q data_offsets [%d, %d] overlap tensor %q data_offsets ending at %d",
				ErrOffsets, h.tensors[i].Name, sp.begin, sp.end, h.tensors[prev].Name, pos)
		}
		pos = sp.end
		prev = i
	}
	if pos != uint64(dataLen) {
		return nil, fmt.Errorf("%w: tensors cover %d bytes but the data section has %d bytes", ErrOffsets, pos, dataLen)
	}
	// Store the tensors in storage order.
	sorted := make([]TensorInfo, len(order))
	for k, i := range order {
		sorted[k] = h.tensors[i]
		h.index[h.tensors[i].Name] = k
	}
	h.tensors = sorted
	return h, nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// decodeMetadata reads the __metadata__ value: null or an object of strings.
func decodeMetadata(dec *json.Decoder) (map[string]string, error) {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidHeader, metadataKey, cleanJSONError(err))
	}
	if string(raw) == "null" {
		return nil, nil
	}
	inner := json.NewDecoder(bytes.NewReader(raw))
	tok, err := inner.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidHeader, metadataKey, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%w: %s is not a JSON object of strings", ErrInvalidHeader, metadataKey)
	}
	m := make(map[string]string)
	for inner.More() {
		tok, err := inner.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidHeader, metadataKey, err)
		}
		key, _ := tok.(string)
		var v any
		if err := inner.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: %s[%q]: %v", ErrInvalidHeader, metadataKey, key, cleanJSONError(err))
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%w: %s[%q] is %s, not a string", ErrInvalidHeader, metadataKey, key, jsonKind(v))
		}
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("%w: %s key %q appears twice", ErrDuplicate, metadataKey, key)
		}
		m[key] = s
	}
	return m, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// cleanJSONError shortens encoding/json's messages (which mention Go types).
func cleanJSONError(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of JSON"
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("field %q has the wrong JSON type (%s)", te.Field, te.Value)
		}
		return fmt.Sprintf("wrong JSON type (%s)", te.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// checkTensor validates one header entry and returns its info and relative offsets.
func checkTensor(name string, raw *rawTensor, dataLen int64) (TensorInfo, [2]uint64, error) {
	var sp [2]uint64
	info := TensorInfo{Name: name}
	if *raw == nil {
		return info, sp, fmt.Errorf("%w: tensor %q: entry is null, not an object", ErrInvalidHeader, name)
	}
	var dtName string
	var shape, offsets []json.RawMessage
	for _, f := range []struct {
		key string
		dst any
	}{{"dtype", &dtName}, {"shape", &shape}, {"data_offsets", &offsets}} {
		v, ok := (*raw)[f.key]
		if !ok {
			return info, sp, fmt.Errorf("%w: tensor %q: missing %q", ErrInvalidHeader, name, f.key)
		}
		if string(v) == "null" {
			return info, sp, fmt.Errorf("%w: tensor %q: %q is null", ErrInvalidHeader, name, f.key)
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return info, sp, fmt.Errorf("%w: tensor %q: %q: %s", ErrInvalidHeader, name, f.key, cleanJSONError(err))
		}
	}
	dt, err := ParseDType(dtName)
	if err != nil {
		return info, sp, fmt.Errorf("tensor %q: %w", name, err)
	}
	info.DType = dt

	nelem := uint64(1)
	overflow := false
	info.Shape = make([]int, len(shape))
	for i, r := range shape {
		d, err := parseUint(r)
		if err != nil {
			return info, sp, fmt.Errorf("%w: tensor %q: shape[%d] %s", ErrShape, name, i, err)
		}
		if d > math.MaxInt64 || d > uint64(math.MaxInt) {
			return info, sp, fmt.Errorf("%w: tensor %q: shape[%d] = %d is too large", ErrShape, name, i, d)
		}
		info.Shape[i] = int(d)
		hi, lo := bits.Mul64(nelem, d)
		if hi != 0 {
			overflow = true
		}
		nelem = lo
	}
	hi, nbits := bits.Mul64(nelem, uint64(dt.Bits()))
	if overflow || hi != 0 || nelem > math.MaxInt64 {
		return info, sp, fmt.Errorf("%w: tensor %q: element count of shape %v overflows", ErrShape, name, info.Shape)
	}
	if nbits%8 != 0 {
		return info, sp, fmt.Errorf("%w: tensor %q: %d elements of %v do not fill a whole number of bytes", ErrShape, name, nelem, dt)
	}
	nbytes := nbits / 8

	if len(offsets) != 2 {
		return info, sp, fmt.Errorf("%w: tensor %q: data_offsets has %d elements, want 2", ErrOffsets, name, len(offsets))
	}
	for i, r := range offsets {
		v, err := parseUint(r)
		if err != nil {
			return info, sp, fmt.Errorf("%w: tensor %q: data_offsets[%d] %s", ErrOffsets, name, i, err)
		}
		sp[i] = v
	}
	if sp[1] < sp[0] {
		return info, sp, fmt.Errorf("%w: tensor %q: data_offsets [%d, %d] end before they begin", ErrOffsets, name, sp[0], sp[1])
	}
	if sp[1] > uint64(dataLen) {
		return info, sp, fmt.Errorf("%w: tensor %q: data_offsets [%d, %d] run past the %d-byte data section", ErrOffsets, name, sp[0], sp[1], dataLen)
	}
	if sp[1]-sp[0] != nbytes {
		return info, sp, fmt.Errorf("%w: tensor %q: shape %v of %v needs %d bytes but data_offsets [%d, %d] span %d",
			ErrShape, name, info.Shape, dt, nbytes, sp[0], sp[1], sp[1]-sp[0])
	}
	return info, sp, nil
}

// parseUint accepts only a plain non-negative JSON integer, as the reference
// implementation's usize fields do (no sign, fraction or exponent).
func parseUint(r json.RawMessage) (uint64, error) {
	s := string(r)
	if len(s) > 1 && s[0] == '-' && isDigits(s[1:]) {
		return 0, fmt.Errorf("is negative (%s)", s)
	}
	if !isDigits(s) {
		return 0, fmt.Errorf("is not a non-negative integer (%s)", truncate(s, 40))
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("is out of range (%s)", truncate(s, 40))
	}
	return v, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
