package gguf

import "errors"

// ErrFormat is the parent of every error that says a file is not a valid
// GGUF file (as opposed to an I/O error): each more specific format sentinel
// below wraps it, so errors.Is(err, ErrFormat) reports any of them.
var ErrFormat = errors.New("gguf: invalid format")

// Specific format errors. Each wraps ErrFormat; errors returned by Open name
// the file and the offending key or tensor and wrap exactly one of these.
var (
	// ErrHeader: the magic is not "GGUF", a count in the header exceeds what
	// the rest of the file could hold, or the file ends before the header
	// (metadata and tensor infos included) does.
	ErrHeader = wrapFormat("invalid header")
	// ErrVersion: the version is not 2 or 3 (version 1 and big-endian files
	// are recognised and named in the message, but not read).
	ErrVersion = wrapFormat("unsupported version")
	// ErrMetadata: a metadata key or value is malformed: unknown value type,
	// a string or array longer than the rest of the file, nesting too deep,
	// an empty key, or a general.alignment that is not a power-of-two uint32.
	ErrMetadata = wrapFormat("invalid metadata")
	// ErrTensorInfo: a tensor description is malformed: empty name, more than
	// MaxDims dimensions, unknown or retired ggml type, negative or
	// overflowing dimensions, or an innermost dimension that is not a
	// multiple of the type's block size.
	ErrTensorInfo = wrapFormat("invalid tensor info")
	// ErrOffsets: a tensor's data offset is not a multiple of the alignment,
	// its bytes run past the end of the file, or two tensors overlap.
	ErrOffsets = wrapFormat("invalid tensor data offsets")
	// ErrDuplicate: the same metadata key or tensor name appears twice.
	ErrDuplicate = wrapFormat("duplicate name")
)

// Errors that are not about the format.
var (
	// ErrNotFound: no tensor of the requested name.
	ErrNotFound = errors.New("gguf: tensor not found")
	// ErrKeyNotFound: no metadata value under the requested key.
	ErrKeyNotFound = errors.New("gguf: metadata key not found")
	// ErrValueType: a typed metadata accessor found a value of another type
	// (or an integer out of the requested range); the message names the key
	// and the value's actual type.
	ErrValueType = errors.New("gguf: metadata value has another type")
	// ErrUnsupported: Dequantize does not implement the tensor's type.
	ErrUnsupported = errors.New("gguf: unsupported tensor type")
	// ErrClosed: the File was used after Close.
	ErrClosed = errors.New("gguf: file closed")
)

type formatError struct{ msg string }

func (e *formatError) Error() string { return "gguf: " + e.msg }
func (e *formatError) Unwrap() error { return ErrFormat }

func wrapFormat(msg string) error { return &formatError{msg: msg} }
