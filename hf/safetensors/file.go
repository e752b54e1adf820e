package safetensors

import (
	"fmt"
	"io"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/gotpu/gotpu/internal/mmap"
)

// Reader is the read interface shared by a single file (*File) and a
// sharded checkpoint (*Sharded).
type Reader interface {
	// Names returns every tensor name, sorted.
	Names() []string
	// Info returns the description of the named tensor; the error wraps
	// ErrNotFound when there is no such tensor.
	Info(name string) (TensorInfo, error)
	// Bytes returns the raw little-endian data of the named tensor.
	Bytes(name string) ([]byte, error)
	// Metadata returns a copy of the file's (or index's) string metadata.
	Metadata() map[string]string
	// Close releases the underlying files and mappings.
	Close() error
}

// File is an open safetensors file. Opening reads and validates only the
// header; tensor data is read (or paged in from the memory mapping) when a
// tensor is asked for. A File is safe for concurrent use; Close must not race
// with other calls, and ends the validity of every slice returned by Bytes.
type File struct {
	path      string
	f         *os.File    // nil for an in-memory file
	r         io.ReaderAt // the file, or a reader over buf
	mapped    []byte      // whole-file memory mapping, or the in-memory buffer
	unmap     func() error
	size      int64
	dataStart int64
	hdr       *header

	mu     sync.RWMutex
	closed bool
}

var _ Reader = (*File)(nil)

// Open opens the safetensors file at path, reads and validates its header,
// and memory-maps it (on Linux; elsewhere, or if mapping fails, tensors are
// read with ReadAt on demand).
//
// Memory-mapped data is only valid while the file is not truncated by another
// process: as with any mapping, touching pages past a truncation raises SIGBUS.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: open: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("safetensors: stat %s: %w", path, err)
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%w: %s is a directory (use OpenDir)", ErrInvalidHeader, path)
	}
	sf, err := newFile(f, st.Size(), path)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sf.f = f
	if data, unmap, err := mmap.File(f, st.Size()); err == nil {
		sf.mapped, sf.unmap = data, unmap
	}
	return sf, nil
}

// OpenReaderAt parses a safetensors file of the given size read through r.
// Only the header is read now; Bytes reads tensors with ReadAt into new slices.
// name is used in error messages and TensorInfo.File.
func OpenReaderAt(r io.ReaderAt, size int64, name string) (*File, error) {
	sf, err := newFile(r, size, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return sf, nil
}

// Parse parses a whole safetensors file held in memory. Bytes returns
// sub-slices of data (no copy); data must not be modified while in use.
func Parse(data []byte) (*File, error) {
	sf, err := newFile(bytesReaderAt(data), int64(len(data)), "")
	if err != nil {
		return nil, err
	}
	sf.mapped = data
	return sf, nil
}

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// readAtFull fills p from r at off; io.EOF together with a full read is
// success, as the io.ReaderAt contract allows.
func readAtFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

func newFile(r io.ReaderAt, size int64, path string) (*File, error) {
	var prefix [8]byte
	if size >= 8 {
		if err := readAtFull(r, prefix[:], 0); err != nil {
			return nil, fmt.Errorf("reading header length: %w", err)
		}
	}
	n, err := readPrefix(prefix[:], size)
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, n)
	if err := readAtFull(r, hdr, 8); err != nil {
		return nil, fmt.Errorf("reading %d-byte header: %w", n, err)
	}
	base := ""
	if path != "" {
		base = filepath.Base(path)
	}
	h, err := parseHeader(hdr, 8+n, size-8-n, base)
	if err != nil {
		return nil, err
	}
	return &File{path: path, r: r, size: size, dataStart: 8 + n, hdr: h}, nil
}

// Path returns the path the file was opened from ("" for Parse).
func (f *File) Path() string { return f.path }

// Size returns the total size of the file in bytes.
func (f *File) Size() int64 { return f.size }

// DataOffset returns the absolute offset of the data section (8 + header length).
func (f *File) DataOffset() int64 { return f.dataStart }

// Mapped reports whether Bytes returns zero-copy views of a memory mapping
// (or of the buffer given to Parse) rather than fresh copies.
func (f *File) Mapped() bool { return f.mapped != nil }

// Len returns the number of tensors.
func (f *File) Len() int { return len(f.hdr.tensors) }

// Names returns every tensor name, sorted.
func (f *File) Names() []string {
	names := make([]string, len(f.hdr.tensors))
	for i, t := range f.hdr.tensors {
		names[i] = t.Name
	}
	slices.Sort(names)
	return names
}

// Tensors returns the description of every tensor in storage (data offset)
// order, the order in which reading them is sequential.
func (f *File) Tensors() []TensorInfo {
	out := make([]TensorInfo, len(f.hdr.tensors))
	for i, t := range f.hdr.tensors {
		t.Shape = slices.Clone(t.Shape)
		out[i] = t
	}
	return out
}

// Info returns the description of the named tensor, or an error wrapping ErrNotFound.
func (f *File) Info(name string) (TensorInfo, error) {
	i, ok := f.hdr.index[name]
	if !ok {
		return TensorInfo{}, fmt.Errorf("%w: %q in %s", ErrNotFound, name, f.displayName())
	}
	t := f.hdr.tensors[i]
	t.Shape = slices.Clone(t.Shape)
	return t, nil
}

// Has reports whether the file holds a tensor of that name.
func (f *File) Has(name string) bool {
	_, ok := f.hdr.index[name]
	return ok
}

// Metadata returns a copy of the header's __metadata__ map (nil when the file has none).
func (f *File) Metadata() map[string]string { return maps.Clone(f.hdr.metadata) }

// Bytes returns the data of the named tensor. When the file is memory-mapped
// (see Mapped) the slice is a zero-copy, read-only view: writing to it crashes
// the program, and it is invalid after Close. Otherwise it is a fresh copy.
func (f *File) Bytes(name string) ([]byte, error) {
	i, ok := f.hdr.index[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q in %s", ErrNotFound, name, f.displayName())
	}
	return f.bytesAt(i)
}

func (f *File) bytesAt(i int) ([]byte, error) {
	t := f.hdr.tensors[i]
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil, ErrClosed
	}
	if f.mapped != nil {
		return f.mapped[t.Begin:t.End:t.End], nil
	}
	buf := make([]byte, t.End-t.Begin)
	if err := readAtFull(f.r, buf, t.Begin); err != nil {
		return nil, fmt.Errorf("safetensors: reading tensor %q from %s: %w", t.Name, f.displayName(), err)
	}
	return buf, nil
}

// Release says that the named tensor's bytes are no longer needed for now:
// when Open memory-mapped the file, their whole pages leave the process's
// resident memory (the view Bytes returned stays valid; reading it again
// faults the pages back in from the file). A model loader calls it after
// copying a tensor out, so that loading does not hold the file's pages and
// the loaded weights at once. For a file read through ReadAt or given to
// Parse, and for an unknown name, it does nothing.
func (f *File) Release(name string) {
	i, ok := f.hdr.index[name]
	if !ok {
		return
	}
	t := f.hdr.tensors[i]
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed || f.mapped == nil || f.unmap == nil {
		return
	}
	mmap.Release(f.mapped[t.Begin:t.End])
}

// ReadInto copies the named tensor's data into dst, which must be exactly
// NumBytes long; use it to fill memory you own (a device staging buffer).
func (f *File) ReadInto(name string, dst []byte) error {
	i, ok := f.hdr.index[name]
	if !ok {
		return fmt.Errorf("%w: %q in %s", ErrNotFound, name, f.displayName())
	}
	t := f.hdr.tensors[i]
	if int64(len(dst)) != t.End-t.Begin {
		return fmt.Errorf("safetensors: ReadInto %q: destination is %d bytes, tensor is %d", name, len(dst), t.End-t.Begin)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return ErrClosed
	}
	if f.mapped != nil {
		copy(dst, f.mapped[t.Begin:t.End])
		return nil
	}
	if err := readAtFull(f.r, dst, t.Begin); err != nil {
		return fmt.Errorf("safetensors: reading tensor %q from %s: %w", name, f.displayName(), err)
	}
	return nil
}

// Section returns a reader over the named tensor's bytes that reads the file
// directly (no mapping), for streaming a tensor in chunks.
func (f *File) Section(name string) (*io.SectionReader, error) {
	i, ok := f.hdr.index[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q in %s", ErrNotFound, name, f.displayName())
	}
	t := f.hdr.tensors[i]
	return io.NewSectionReader(f.r, t.Begin, t.End-t.Begin), nil
}

// All iterates over the tensors in storage order, yielding each description
// with its data (as Bytes returns it) or the error reading it.
func (f *File) All() iter.Seq2[Tensor, error] {
	return func(yield func(Tensor, error) bool) {
		for i, t := range f.hdr.tensors {
			data, err := f.bytesAt(i)
			if !yield(Tensor{Name: t.Name, DType: t.DType, Shape: slices.Clone(t.Shape), Data: data}, err) {
				return
			}
		}
	}
}

// Close unmaps and closes the file. It is safe to call more than once.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	var err error
	if f.unmap != nil {
		err = f.unmap()
	}
	f.mapped = nil
	if f.f != nil {
		if cerr := f.f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("safetensors: close %s: %w", f.displayName(), err)
	}
	return nil
}

func (f *File) displayName() string {
	if f.path == "" {
		return "<memory>"
	}
	return f.path
}
