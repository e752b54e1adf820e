package op

import "fmt"

// Layout places a tensor's elements in a flat storage: element (i0, i1, ...)
// lives at Offset + sum(ik * Strides[k]), in elements (not bytes).
type Layout struct {
	Shape   []int
	Strides []int
	Offset  int
}

// Contiguous returns the row-major layout of shape.
func Contiguous(shape []int) Layout {
	return Layout{Shape: shape, Strides: ContiguousStrides(shape)}
}

// ContiguousStrides returns row-major strides for shape.
func ContiguousStrides(shape []int) []int {
	st := make([]int, len(shape))
	FillContiguousStrides(st, shape)
	return st
}

// FillContiguousStrides writes shape's row-major strides into st (of the
// same length), for callers that place them in memory of their own.
func FillContiguousStrides(st, shape []int) {
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		if shape[i] > 1 {
			s *= shape[i]
		}
	}
}

// IsContiguous reports whether l is row-major with no gaps (size-1 and empty
// dimensions may have any stride, as in PyTorch).
func (l Layout) IsContiguous() bool {
	s := 1
	for i := len(l.Shape) - 1; i >= 0; i-- {
		if l.Shape[i] == 0 {
			return true
		}
		if l.Shape[i] != 1 && l.Strides[i] != s {
			return false
		}
		s *= l.Shape[i]
	}
	return true
}

// Numel returns the number of elements of shape.
func Numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Span returns the smallest and one past the largest element offset l
// touches (lo == hi for an empty tensor).
func (l Layout) Span() (lo, hi int) {
	lo, hi = l.Offset, l.Offset+1
	for i, d := range l.Shape {
		if d == 0 {
			return l.Offset, l.Offset
		}
		s := l.Strides[i] * (d - 1)
		if s < 0 {
			lo += s
		} else {
			hi += s
		}
	}
	return lo, hi
}

// NormAxis maps a possibly negative axis into [0, rank) and reports an error
// naming the op for an axis out of range. Rank-0 tensors accept axis 0 and -1
// as PyTorch does.
func NormAxis(opname string, axis, rank int) (int, error) {
	r := rank
	if r == 0 {
		r = 1
	}
	if axis < -r || axis >= r {
		return 0, fmt.Errorf("%s: dimension out of range (expected to be in range of [%d, %d], but got %d)", opname, -r, r-1, axis)
	}
	if axis < 0 {
		axis += r
	}
	return axis, nil
}

// BroadcastShapes returns the NumPy broadcast of shapes, or an error naming
// the op and the shapes.
func BroadcastShapes(opname string, shapes ...[]int) ([]int, error) {
	n := 0
	for _, s := range shapes {
		if len(s) > n {
			n = len(s)
		}
	}
	out := make([]int, n)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := n - len(s)
		for i, d := range s {
			o := out[off+i]
			switch {
			case o == d || d == 1:
			case o == 1:
				out[off+i] = d
			default:
				return nil, fmt.Errorf("%s: shapes %v are not broadcastable (dimension %d: %d vs %d)", opname, shapes, i-len(s), o, d)
			}
		}
	}
	return out, nil
}

// BroadcastTo returns the layout of l expanded to shape (stride 0 on
// broadcast dimensions); ok is false if l does not broadcast to shape.
func (l Layout) BroadcastTo(shape []int) (Layout, bool) {
	if len(shape) < len(l.Shape) {
		return Layout{}, false
	}
	off := len(shape) - len(l.Shape)
	st := make([]int, len(shape))
	for i := range shape {
		if i < off {
			continue
		}
		d := l.Shape[i-off]
		switch {
		case d == shape[i]:
			st[i] = l.Strides[i-off]
		case d == 1:
			st[i] = 0
		default:
			return Layout{}, false
		}
	}
	return Layout{Shape: append([]int(nil), shape...), Strides: st, Offset: l.Offset}, true
}
