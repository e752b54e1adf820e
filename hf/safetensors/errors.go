package safetensors

import "errors"

// ErrFormat is the parent of every error that says a file or index is not a
// valid safetensors file (as opposed to an I/O error): every more specific
// format sentinel below wraps it, so errors.Is(err, ErrFormat) reports any of them.
var ErrFormat = errors.New("safetensors: invalid format")

// Specific format errors. Each wraps ErrFormat; errors returned by this package
// name the file and tensor and wrap exactly one of these.
var (
	// ErrInvalidHeader: the 8-byte length prefix or the JSON header is malformed
	// (too short, not UTF-8, not a JSON object, a tensor entry missing a field, ...).
	ErrInvalidHeader = wrapFormat("invalid header")
	// ErrHeaderTooLarge: the header length exceeds MaxHeaderSize.
	ErrHeaderTooLarge = wrapFormat("header too large")
	// ErrDType: a dtype name is unknown, or an operation does not support the dtype.
	ErrDType = wrapFormat("invalid dtype")
	// ErrShape: a dimension is negative or not an integer, the element count
	// overflows, or the byte length does not match dtype size × element count.
	ErrShape = wrapFormat("invalid shape")
	// ErrOffsets: data offsets are reversed, out of the data section, overlap,
	// leave gaps, or do not cover the data section exactly.
	ErrOffsets = wrapFormat("invalid data offsets")
	// ErrDuplicate: the same tensor name (or __metadata__ key) appears twice.
	ErrDuplicate = wrapFormat("duplicate name")
	// ErrIndex: a sharded-checkpoint index is malformed or inconsistent with its shards.
	ErrIndex = wrapFormat("invalid index")
)

// Errors that are not about the format.
var (
	// ErrNotFound: no tensor of the requested name.
	ErrNotFound = errors.New("safetensors: tensor not found")
	// ErrClosed: the File or Sharded view was used after Close.
	ErrClosed = errors.New("safetensors: file closed")
)

type formatError struct{ msg string }

func (e *formatError) Error() string { return "safetensors: " + e.msg }
func (e *formatError) Unwrap() error { return ErrFormat }

func wrapFormat(msg string) error { return &formatError{msg: msg} }
