package ir

import (
	"errors"
	"fmt"
)

// Sentinel errors, for errors.Is.
var (
	// ErrUnknownOp: the op name is not in the op table.
	ErrUnknownOp = errors.New("unknown op")
	// ErrArity: wrong number of inputs, or a required input is absent.
	ErrArity = errors.New("wrong inputs")
	// ErrAttr: attributes do not normalize against the op's schema.
	ErrAttr = errors.New("bad attributes")
	// ErrShape: the op's shape and dtype rule (Infer or ViewFn) rejected its
	// inputs, or a decomposition disagreed with it.
	ErrShape = errors.New("shape rule failed")
	// ErrDType: the op does not support the (promoted) input dtype.
	ErrDType = errors.New("dtype not supported")
	// ErrInplace: an in-place op was traced; graphs are functional.
	ErrInplace = errors.New("in-place op in a functional graph")
	// ErrForeignValue: a value passed to a Tracer is not one of its own.
	ErrForeignValue = errors.New("value does not belong to this trace")
	// ErrInvalid: Verify found the graph malformed.
	ErrInvalid = errors.New("invalid graph")
)

// TraceError is what a Tracer panics with on a bad call (as the eager
// runtime panics on a programming error) and what Trace returns. Path names
// the op, inside the composites being decomposed ("layer_norm > mean").
type TraceError struct {
	Path string
	Err  error
}

func (e *TraceError) Error() string { return fmt.Sprintf("ir: trace %s: %v", e.Path, e.Err) }

// Unwrap returns the cause, which wraps one of the sentinel errors.
func (e *TraceError) Unwrap() error { return e.Err }
