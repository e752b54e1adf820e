package tensor

import (
	"errors"
	"fmt"
	"strings"
)

// Error is the panic value of a programming error in a tensor op (shape, dtype
// or device mismatch, bad axis, index out of range), and the error that Catch
// returns for it.
type Error struct {
	Op      string   // the op the user called, and any inner op, "embedding > index_select"
	Shapes  [][]int  // input shapes
	DTypes  []string // input dtypes
	Devices []string // input devices
	Site    string   // caller file:line, when known
	Msg     string
	Err     error // wrapped cause, if any
}

func (e *Error) Error() string {
	var sb strings.Builder
	sb.WriteString(e.Op)
	sb.WriteString(": ")
	// Shape rules name their op already ("matmul: mat1 and mat2 ..."); say
	// it once.
	last := e.Op
	if i := strings.LastIndex(last, " > "); i >= 0 {
		last = last[i+3:]
	}
	sb.WriteString(strings.TrimPrefix(e.Msg, last+": "))
	if len(e.Shapes) > 0 {
		fmt.Fprintf(&sb, " (inputs:")
		for i := range e.Shapes {
			if i > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, " %s%v", e.DTypes[i], e.Shapes[i])
			if i < len(e.Devices) && e.Devices[i] != "" {
				fmt.Fprintf(&sb, " on %s", e.Devices[i])
			}
		}
		sb.WriteString(")")
	}
	if e.Site != "" {
		fmt.Fprintf(&sb, " at %s", e.Site)
	}
	return sb.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Catch runs f and returns the *Error of a tensor programming-error panic as
// an error (other panics propagate). Use it at a server's request boundary.
func Catch(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			var te *Error
			if e, ok := r.(error); ok && errors.As(e, &te) {
				err = e
				return
			}
			panic(r)
		}
	}()
	f()
	return nil
}

// errorf panics with an *Error for op.
func errorf(opname string, in []*Tensor, format string, args ...any) {
	panic(newError(opname, in, fmt.Sprintf(format, args...)))
}

func newError(opname string, in []*Tensor, msg string) *Error {
	e := &Error{Op: opname, Msg: msg}
	for _, t := range in {
		if t == nil {
			e.Shapes = append(e.Shapes, nil)
			e.DTypes = append(e.DTypes, "none")
			e.Devices = append(e.Devices, "")
			continue
		}
		e.Shapes = append(e.Shapes, t.l.Shape)
		e.DTypes = append(e.DTypes, t.dt.String())
		if t.st == nil { // a wrapped Go scalar not yet placed on a device
			e.Devices = append(e.Devices, "")
			continue
		}
		e.Devices = append(e.Devices, t.st.dev.String())
	}
	return e
}
