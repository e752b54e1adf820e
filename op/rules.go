package op

import (
	"fmt"

	"github.com/gotpu/gotpu/dtype"
)

// Shape and dtype rules shared by many ops.

// InferBroadcast is the rule of elementwise ops: the broadcast of the present
// inputs' shapes, with the dtype of input 0 (after promotion).
func InferBroadcast(name string) InferFunc {
	return func(in []Meta, a Attrs) ([]Meta, error) {
		return broadcastMeta(name, in, dtype.Invalid)
	}
}

// InferBroadcastTo is InferBroadcast with a fixed output dtype (bool for
// comparisons and predicates).
func InferBroadcastTo(name string, out dtype.DType) InferFunc {
	return func(in []Meta, a Attrs) ([]Meta, error) {
		return broadcastMeta(name, in, out)
	}
}

func broadcastMeta(name string, in []Meta, out dtype.DType) ([]Meta, error) {
	shapes := make([][]int, 0, len(in))
	dt := out
	for _, m := range in {
		if m.DType == dtype.Invalid {
			continue // absent optional input
		}
		shapes = append(shapes, m.Shape)
		if dt == dtype.Invalid {
			dt = m.DType
		}
	}
	s, err := BroadcastShapes(name, shapes...)
	if err != nil {
		return nil, err
	}
	return []Meta{{Shape: s, DType: dt}}, nil
}

// Call1 applies op name through b and returns its single output.
func Call1(b Builder, name string, a Attrs, in ...Value) Value {
	return b.Call(name, in, a)[0]
}

// ReduceAxes normalises a reduction's "dims" attribute for a tensor of rank r:
// empty means all axes; duplicates are an error.
func ReduceAxes(name string, dims []int, r int) ([]bool, error) {
	red := make([]bool, r)
	if len(dims) == 0 {
		for i := range red {
			red[i] = true
		}
		return red, nil
	}
	for _, d := range dims {
		ax, err := NormAxis(name, d, r)
		if err != nil {
			return nil, err
		}
		if r == 0 {
			continue
		}
		if red[ax] {
			return nil, fmt.Errorf("%s: dim %d appears multiple times in the list of dims", name, d)
		}
		red[ax] = true
	}
	return red, nil
}

// ReducedShape returns the shape after reducing the marked axes.
func ReducedShape(shape []int, red []bool, keepdim bool) []int {
	out := make([]int, 0, len(shape))
	for i, d := range shape {
		switch {
		case !red[i]:
			out = append(out, d)
		case keepdim:
			out = append(out, 1)
		}
	}
	return out
}
