package safetensors

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/gotpu/gotpu/internal/atomicfile"
	"github.com/gotpu/gotpu/internal/iox"
)

// Tensor is a named tensor with its raw little-endian, row-major data.
type Tensor struct {
	// Name is the header key (any UTF-8 string except "__metadata__").
	Name string
	// DType is the element type.
	DType DType
	// Shape is the list of dimensions; nil or empty for a scalar.
	Shape []int
	// Data holds exactly Bits×elements/8 bytes.
	Data []byte
}

// Write writes tensors and metadata (nil for none) to path as a safetensors
// file, atomically: the file is written to a temporary file in the same
// directory, synced, renamed over path, and the directory is synced, so path
// holds either its old content or the complete new file.
//
// The layout is the reference implementation's: tensors sorted by descending
// dtype alignment then by name, a compact JSON header with __metadata__ first
// (its keys sorted), padded with spaces to a multiple of 8 bytes.
func Write(path string, tensors []Tensor, metadata map[string]string) error {
	hdr, order, err := encodeHeader(tensors, metadata)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = atomicfile.Write(path, 0o644, func(w io.Writer) error {
		return writeBody(w, hdr, tensors, order)
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Encode writes tensors and metadata (nil for none) in safetensors format to
// w, with the same layout as Write, and returns the number of bytes written.
func Encode(w io.Writer, tensors []Tensor, metadata map[string]string) (int64, error) {
	hdr, order, err := encodeHeader(tensors, metadata)
	if err != nil {
		return 0, fmt.Errorf("encode: %w", err)
	}
	cw := &iox.CountWriter{W: w}
	if err := writeBody(cw, hdr, tensors, order); err != nil {
		return cw.N, fmt.Errorf("encode: %w", err)
	}
	return cw.N, nil
}

func writeBody(w io.Writer, hdr []byte, tensors []Tensor, order []int) error {
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(len(hdr)))
	if _, err := w.Write(prefix[:]); err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	for _, i := range order {
		if _, err := w.Write(tensors[i].Data); err != nil {
			return fmt.Errorf("writing tensor %q: %w", tensors[i].Name, err)
		}
	}
	return nil
}

// encodeHeader validates the tensors and returns the padded JSON header, the
// storage order (indices into tensors).
func encodeHeader(tensors []Tensor, metadata map[string]string) ([]byte, []int, error) {
	seen := make(map[string]bool, len(tensors))
	for _, t := range tensors {
		if err := checkWriteTensor(t); err != nil {
			return nil, nil, err
		}
		if seen[t.Name] {
			return nil, nil, fmt.Errorf("%w: tensor %q given twice", ErrDuplicate, t.Name)
		}
		seen[t.Name] = true
	}
	for k, v := range metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return nil, nil, fmt.Errorf("%w: %s entry %q is not valid UTF-8", ErrInvalidHeader, metadataKey, k)
		}
	}

	order := make([]int, len(tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		ta, tb := &tensors[a], &tensors[b]
		if ta.DType != tb.DType {
			return int(tb.DType) - int(ta.DType) // larger alignment first
		}
		switch {
		case ta.Name < tb.Name:
			return -1
		case ta.Name > tb.Name:
			return 1
		}
		return 0
	})

	buf := make([]byte, 0, 64+96*len(tensors))
	buf = append(buf, '{')
	first := true
	if metadata != nil {
		buf = appendJSONString(buf, metadataKey)
		buf = append(buf, ':', '{')
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, k)
			buf = append(buf, ':')
			buf = appendJSONString(buf, metadata[k])
		}
		buf = append(buf, '}')
		first = false
	}
	var offset int64
	for _, i := range order {
		t := &tensors[i]
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = appendJSONString(buf, t.Name)
		buf = append(buf, `:{"dtype":"`...)
		buf = append(buf, t.DType.String()...)
		buf = append(buf, `","shape":[`...)
		for j, d := range t.Shape {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, int64(d), 10)
		}
		buf = append(buf, `],"data_offsets":[`...)
		buf = strconv.AppendInt(buf, offset, 10)
		buf = append(buf, ',')
		if int64(len(t.Data)) > math.MaxInt64-offset {
			return nil, nil, fmt.Errorf("%w: total data size overflows", ErrOffsets)
		}
		offset += int64(len(t.Data))
		buf = strconv.AppendInt(buf, offset, 10)
		buf = append(buf, ']', '}')
	}
	buf = append(buf, '}')
	for len(buf)%8 != 0 {
		buf = append(buf, ' ')
	}
	if len(buf) > MaxHeaderSize {
		return nil, nil, fmt.Errorf("%w: header would be %d bytes", ErrHeaderTooLarge, len(buf))
	}
	return buf, order, nil
}

func checkWriteTensor(t Tensor) error {
	if t.Name == metadataKey {
		return fmt.Errorf("%w: a tensor cannot be named %s", ErrInvalidHeader, metadataKey)
	}
	if !utf8.ValidString(t.Name) {
		return fmt.Errorf("%w: tensor name %q is not valid UTF-8", ErrInvalidHeader, t.Name)
	}
	if !t.DType.Valid() {
		return fmt.Errorf("%w: tensor %q has dtype %v", ErrDType, t.Name, t.DType)
	}
	nelem := uint64(1)
	overflow := false
	for i, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("%w: tensor %q: shape[%d] = %d is negative", ErrShape, t.Name, i, d)
		}
		hi, lo := bits.Mul64(nelem, uint64(d))
		overflow = overflow || hi != 0
		nelem = lo
	}
	hi, nbits := bits.Mul64(nelem, uint64(t.DType.Bits()))
	if overflow || hi != 0 {
		return fmt.Errorf("%w: tensor %q: element count of shape %v overflows", ErrShape, t.Name, t.Shape)
	}
	if nbits%8 != 0 {
		return fmt.Errorf("%w: tensor %q: %d elements of %v do not fill a whole number of bytes", ErrShape, t.Name, nelem, t.DType)
	}
	if uint64(len(t.Data)) != nbits/8 {
		return fmt.Errorf("%w: tensor %q: shape %v of %v needs %d bytes, data has %d", ErrShape, t.Name, t.Shape, t.DType, nbits/8, len(t.Data))
	}
	return nil
}

// appendJSONString appends s as a JSON string escaped as serde_json does:
// only '"', '\\' and control characters are escaped, so headers are
// byte-identical to the reference writer's.
func appendJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			buf = append(buf, '\\', '"')
		case '\\':
			buf = append(buf, '\\', '\\')
		case '\b':
			buf = append(buf, '\\', 'b')
		case '\f':
			buf = append(buf, '\\', 'f')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			if c < 0x20 {
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				buf = append(buf, c)
			}
		}
	}
	return append(buf, '"')
}
