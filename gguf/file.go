package gguf

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/gotpu/gotpu/internal/mmap"
)

// TensorInfo describes one tensor of a GGUF file.
//
// Dims is in GGUF (ggml) order, fastest-varying first: Dims[0] is ne[0], the
// innermost, contiguous dimension. Shape returns the same dimensions in
// row-major (PyTorch, NumPy) order, outermost first. A weight with Dims
// [4096, 11008] is therefore a PyTorch [11008, 4096] matrix: 11008 rows of
// 4096 contiguous elements, the layout of nn.Linear(4096, 11008).weight.
type TensorInfo struct {
	Name string
	Type Type
	// Dims are the dimensions in GGUF order (ne[0] first); empty for a scalar.
	Dims []int64
	// Offset is the data offset as stored: relative to the data section.
	Offset int64
	// Begin and End are the absolute byte range of the data in the file.
	Begin, End int64
}

// Shape returns the dimensions in row-major (PyTorch) order: Dims reversed.
// A scalar has shape [].
func (t TensorInfo) Shape() []int {
	s := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		s[len(s)-1-i] = int(d)
	}
	return s
}

// NumElements returns the number of elements (the product of Dims; 1 for a
// scalar).
func (t TensorInfo) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// NumBytes returns the size of the tensor's data in bytes.
func (t TensorInfo) NumBytes() int64 { return t.End - t.Begin }

// File is an open GGUF file. Opening reads and validates the header
// (metadata and tensor infos); tensor data is read, or paged in from the
// memory mapping, only when a tensor is asked for. A File is safe for
// concurrent use; Close must not race with other calls, and ends the
// validity of every slice returned by Bytes.
type File struct {
	path   string
	f      *os.File    // nil unless opened from a path
	r      io.ReaderAt // the file, or a reader over mapped
	mapped []byte      // whole-file mapping, or the buffer given to Parse
	unmap  func() error
	size   int64
	hdr    *header

	mu     sync.RWMutex
	closed bool
}

// Open opens the GGUF file at path, reads and validates its header, and
// memory-maps it (on Linux; elsewhere, or if mapping fails, tensors are read
// with ReadAt on demand).
//
// Memory-mapped data is only valid while the file is not truncated by
// another process: as with any mapping, touching pages past a truncation
// raises SIGBUS.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: open: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("gguf: stat %s: %w", path, err)
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%w: %s is a directory", ErrHeader, path)
	}
	var mapped []byte
	var unmap func() error
	if data, un, err := mmap.File(f, st.Size()); err == nil {
		mapped, unmap = data, un
	}
	var r io.ReaderAt = f
	if mapped != nil {
		r = bytesReaderAt(mapped)
	}
	h, err := parseHeader(r, st.Size(), mapped)
	if err != nil {
		if unmap != nil {
			unmap()
		}
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &File{path: path, f: f, r: f, mapped: mapped, unmap: unmap, size: st.Size(), hdr: h}, nil
}

// OpenReaderAt parses a GGUF file of the given size read through r. Only
// the header is read now; Bytes reads tensors with ReadAt into new slices.
// name is used in error messages.
func OpenReaderAt(r io.ReaderAt, size int64, name string) (*File, error) {
	h, err := parseHeader(r, size, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &File{path: name, r: r, size: size, hdr: h}, nil
}

// Parse parses a whole GGUF file held in memory. Bytes returns sub-slices
// of data (no copy); data must not be modified while in use.
func Parse(data []byte) (*File, error) {
	h, err := parseHeader(bytesReaderAt(data), int64(len(data)), data)
	if err != nil {
		return nil, err
	}
	return &File{r: bytesReaderAt(data), mapped: data, size: int64(len(data)), hdr: h}, nil
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

// Path returns the path (or name) the file was opened with; "" for Parse.
func (f *File) Path() string { return f.path }

// Version returns the GGUF version, 2 or 3.
func (f *File) Version() uint32 { return f.hdr.version }

// Size returns the total size of the file in bytes.
func (f *File) Size() int64 { return f.size }

// Alignment returns the data alignment: general.alignment, or 32.
func (f *File) Alignment() int64 { return f.hdr.alignment }

// DataOffset returns the absolute offset of the data section, to which
// every TensorInfo.Offset is relative.
func (f *File) DataOffset() int64 { return f.hdr.dataStart }

// Mapped reports whether Bytes returns zero-copy views of a memory mapping
// (or of the buffer given to Parse) rather than fresh copies.
func (f *File) Mapped() bool { return f.mapped != nil }

// Metadata returns the file's key–value metadata (shared and read-only).
func (f *File) Metadata() *Metadata { return f.hdr.meta }

// Architecture returns general.architecture ("llama", "gemma3", ...), the
// prefix of the model's hyperparameter keys, or "" when absent or not a
// string.
func (f *File) Architecture() string {
	s, _ := f.hdr.meta.String("general.architecture")
	return s
}

// Len returns the number of tensors.
func (f *File) Len() int { return len(f.hdr.tensors) }

// Tensors returns the description of every tensor in file (header) order.
func (f *File) Tensors() []TensorInfo {
	out := make([]TensorInfo, len(f.hdr.tensors))
	for i, t := range f.hdr.tensors {
		t.Dims = slices.Clone(t.Dims)
		out[i] = t
	}
	return out
}

// Names returns every tensor name, sorted.
func (f *File) Names() []string {
	names := make([]string, len(f.hdr.tensors))
	for i, t := range f.hdr.tensors {
		names[i] = t.Name
	}
	slices.Sort(names)
	return names
}

// Has reports whether the file holds a tensor of that name.
func (f *File) Has(name string) bool {
	_, ok := f.hdr.index[name]
	return ok
}

// Info returns the description of the named tensor, or an error wrapping
// ErrNotFound.
func (f *File) Info(name string) (TensorInfo, error) {
	i, ok := f.hdr.index[name]
	if !ok {
		return TensorInfo{}, f.notFound(name)
	}
	t := f.hdr.tensors[i]
	t.Dims = slices.Clone(t.Dims)
	return t, nil
}

func (f *File) notFound(name string) error {
	return fmt.Errorf("%w: %q in %s", ErrNotFound, name, f.displayName())
}

// Bytes returns the raw data of the named tensor, in its ggml encoding.
// When the file is memory-mapped (see Mapped) the slice is a zero-copy,
// read-only view: writing to it crashes the program, and it is invalid after
// Close. Otherwise it is a fresh copy.
func (f *File) Bytes(name string) ([]byte, error) {
	i, ok := f.hdr.index[name]
	if !ok {
		return nil, f.notFound(name)
	}
	t := f.hdr.tensors[i]
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil, ErrClosed
	}
	if f.mapped != nil {
		return f.mapped[t.Begin:t.End:t.End], nil
	}
	if t.End-t.Begin > math.MaxInt {
		return nil, fmt.Errorf("gguf: tensor %q: %d bytes do not fit in memory", name, t.End-t.Begin)
	}
	buf := make([]byte, t.End-t.Begin)
	if err := readAtFull(f.r, buf, t.Begin); err != nil {
		return nil, fmt.Errorf("gguf: reading tensor %q from %s: %w", name, f.displayName(), err)
	}
	return buf, nil
}

// Release says that the named tensor's bytes are no longer needed for now:
// when the file is memory-mapped, their whole pages leave the process's
// resident memory (the view Bytes returned stays valid; reading it again
// faults the pages back in from the file). A model loader calls it after
// copying a tensor out, so that loading does not hold the file's pages and
// the loaded weights at once. Elsewhere, and for an unknown name, it does
// nothing.
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

// Section returns a reader over the named tensor's raw bytes that reads the
// file directly (no mapping), for streaming a large tensor in chunks.
func (f *File) Section(name string) (*io.SectionReader, error) {
	i, ok := f.hdr.index[name]
	if !ok {
		return nil, f.notFound(name)
	}
	t := f.hdr.tensors[i]
	return io.NewSectionReader(f.r, t.Begin, t.End-t.Begin), nil
}

// Float32 dequantizes the named tensor to float32 and returns it with its
// shape in row-major (PyTorch) order: data[i*shape[1]+j] is element [i, j]
// of a 2-D tensor, i.e. the GGUF dims reversed (see TensorInfo). Every type
// Dequantize supports can be read; large tensors are dequantized on all
// CPUs.
func (f *File) Float32(name string) (data []float32, shape []int, err error) {
	t, err := f.Info(name)
	if err != nil {
		return nil, nil, err
	}
	n := t.NumElements()
	if n > math.MaxInt {
		return nil, nil, fmt.Errorf("gguf: tensor %q: %d elements do not fit in memory", name, n)
	}
	if !t.Type.CanDequantize() {
		return nil, nil, fmt.Errorf("%w: tensor %q is %v", ErrUnsupported, name, t.Type)
	}
	data = make([]float32, n)
	if err := f.Float32Into(name, data); err != nil {
		return nil, nil, err
	}
	return data, t.Shape(), nil
}

// Float32Into dequantizes the named tensor into dst, which must hold exactly
// NumElements values (in row-major PyTorch order, as Float32 returns them).
// Use it to reuse one buffer across tensors.
func (f *File) Float32Into(name string, dst []float32) error {
	t, err := f.Info(name)
	if err != nil {
		return err
	}
	if int64(len(dst)) != t.NumElements() {
		return fmt.Errorf("gguf: Float32Into %q: destination holds %d values, the tensor %d", name, len(dst), t.NumElements())
	}
	if !t.Type.CanDequantize() {
		return fmt.Errorf("%w: tensor %q is %v", ErrUnsupported, name, t.Type)
	}
	raw, err := f.Bytes(name)
	if err != nil {
		return err
	}
	f.mu.RLock() // the mapping must outlive the dequantization
	defer f.mu.RUnlock()
	if f.closed {
		return ErrClosed
	}
	if err := dequantizeParallel(t.Type, raw, dst); err != nil {
		return fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	return nil
}

// dequantizeParallel splits a large tensor into whole-block chunks, one per
// CPU; small tensors are dequantized on the calling goroutine.
func dequantizeParallel(typ Type, raw []byte, dst []float32) error {
	const minChunk = 1 << 18 // elements; smaller chunks are not worth a goroutine
	n := len(dst)
	workers := min(runtime.GOMAXPROCS(0), n/minChunk)
	if workers <= 1 {
		return Dequantize(typ, raw, n, dst)
	}
	bs, ts := typ.BlockSize(), typ.TypeSize()
	blocks := n / bs
	per := (blocks + workers - 1) / workers
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		b0, b1 := w*per, min((w+1)*per, blocks)
		if b0 >= b1 {
			break
		}
		wg.Go(func() {
			errs[w] = Dequantize(typ, raw[b0*ts:b1*ts], (b1-b0)*bs, dst[b0*bs:b1*bs])
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
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
		return fmt.Errorf("gguf: close %s: %w", f.displayName(), err)
	}
	return nil
}

func (f *File) displayName() string {
	if f.path == "" {
		return "<memory>"
	}
	return f.path
}
