package op

import (
	"slices"

	"github.com/gotpu/gotpu/dtype"
)

// Helpers for writing VJPs.

// SumToShape reduces a broadcast gradient g back to shape (the inverse of
// broadcasting): leading dimensions are summed away and dimensions that were
// 1 are summed with keepdim.
func SumToShape(b Builder, g Value, shape []int) Value {
	gs := b.Meta(g).Shape
	if slices.Equal(gs, shape) {
		return g
	}
	lead := len(gs) - len(shape)
	var dims []int
	for i := range gs {
		if i < lead {
			dims = append(dims, i)
			continue
		}
		if shape[i-lead] == 1 && gs[i] != 1 {
			dims = append(dims, i)
		}
	}
	if len(dims) > 0 {
		g = Call1(b, "sum", Attrs{"dims": dims, "keepdim": true}, g)
	}
	if !slices.Equal(b.Meta(g).Shape, shape) {
		g = Call1(b, "reshape", Attrs{"shape": slices.Clone(shape)}, g)
	}
	return g
}

// Zeros returns a zero tensor of shape and dtype on the builder's device.
func Zeros(b Builder, shape []int, dt dtype.DType) Value {
	return Call1(b, "full", Attrs{"shape": slices.Clone(shape), "value": 0.0, "dtype": dt})
}

// ScatterIntoZeros returns zeros of shape with g written into the view that
// view(zeros) selects: the VJP of every view op that selects a subset.
func ScatterIntoZeros(b Builder, g Value, shape []int, view func(z Value) Value) Value {
	z := Zeros(b, shape, b.Meta(g).DType)
	b.Call("copy_", []Value{view(z), g}, nil)
	return z
}

// invertPerm returns the inverse of permutation p.
func invertPerm(p []int) []int {
	inv := make([]int, len(p))
	for i, v := range p {
		inv[v] = i
	}
	return inv
}

// GradMask is implemented by Builders that know which inputs of the op being
// differentiated need a gradient (PyTorch's output_mask); a VJP may skip the
// work for the others and return nil for them.
type GradMask interface {
	NeedsGrad(i int) bool
}

// NeedsGrad reports whether input i of the op whose VJP runs on b needs a
// gradient: true unless b is a GradMask that says otherwise.
func NeedsGrad(b Builder, i int) bool {
	if m, ok := b.(GradMask); ok {
		return m.NeedsGrad(i)
	}
	return true
}
