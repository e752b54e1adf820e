package tokenizer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// readGGUFTokenizerKV reads general.architecture and the tokenizer.* keys of
// a GGUF file (versions 2 and 3, little-endian) into the Go types a GGUF
// reader produces (string, []string, []float32, []int32, uint32, bool, ...).
// A minimal test-only reader, so the parity tests can use real files; it
// stops after the key/value section and never reads tensor data.
func readGGUFTokenizerKV(path string) (map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &ggufKVReader{r: bufio.NewReaderSize(f, 1<<20)}
	var magic [4]byte
	r.read(magic[:])
	if r.err == nil && string(magic[:]) != "GGUF" {
		return nil, fmt.Errorf("%s: not a GGUF file", path)
	}
	version := r.u32()
	if r.err == nil && version != 2 && version != 3 {
		return nil, fmt.Errorf("%s: GGUF version %d", path, version)
	}
	r.u64() // tensor count
	n := r.u64()
	out := map[string]any{}
	for i := uint64(0); i < n && r.err == nil; i++ {
		key := r.str()
		v := r.value(r.u32())
		if key == GGUFKeyArchitecture || strings.HasPrefix(key, "tokenizer.") {
			out[key] = v
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("%s: %w", path, r.err)
	}
	return out, nil
}

type ggufKVReader struct {
	r   *bufio.Reader
	err error
	buf [8]byte
}

func (r *ggufKVReader) read(b []byte) {
	if r.err == nil {
		_, r.err = io.ReadFull(r.r, b)
	}
}

func (r *ggufKVReader) u32() uint32 {
	r.read(r.buf[:4])
	return binary.LittleEndian.Uint32(r.buf[:4])
}

func (r *ggufKVReader) u64() uint64 {
	r.read(r.buf[:8])
	return binary.LittleEndian.Uint64(r.buf[:8])
}

func (r *ggufKVReader) str() string {
	n := r.u64()
	if r.err != nil {
		return ""
	}
	if n > 1<<30 {
		r.err = fmt.Errorf("string of %d bytes", n)
		return ""
	}
	b := make([]byte, n)
	r.read(b)
	return string(b)
}

func (r *ggufKVReader) scalar(t uint32) any {
	switch t {
	case 0:
		r.read(r.buf[:1])
		return r.buf[0]
	case 1:
		r.read(r.buf[:1])
		return int8(r.buf[0])
	case 2:
		r.read(r.buf[:2])
		return binary.LittleEndian.Uint16(r.buf[:2])
	case 3:
		r.read(r.buf[:2])
		return int16(binary.LittleEndian.Uint16(r.buf[:2]))
	case 4:
		return r.u32()
	case 5:
		return int32(r.u32())
	case 6:
		return math.Float32frombits(r.u32())
	case 7:
		r.read(r.buf[:1])
		return r.buf[0] != 0
	case 8:
		return r.str()
	case 10:
		return r.u64()
	case 11:
		return int64(r.u64())
	case 12:
		return math.Float64frombits(r.u64())
	}
	if r.err == nil {
		r.err = fmt.Errorf("unknown GGUF value type %d", t)
	}
	return nil
}

func (r *ggufKVReader) value(t uint32) any {
	if t != 9 {
		return r.scalar(t)
	}
	et, n := r.u32(), r.u64()
	if r.err == nil && n > 1<<28 {
		r.err = errors.New("array too long")
	}
	if r.err != nil {
		return nil
	}
	switch et {
	case 8:
		a := make([]string, n)
		for i := range a {
			a[i] = r.str()
		}
		return a
	case 6:
		a := make([]float32, n)
		for i := range a {
			a[i] = math.Float32frombits(r.u32())
		}
		return a
	case 5:
		a := make([]int32, n)
		for i := range a {
			a[i] = int32(r.u32())
		}
		return a
	}
	a := make([]any, n)
	for i := range a {
		a[i] = r.scalar(et)
	}
	return a
}
