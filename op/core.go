package op

import (
	"fmt"
	"slices"

	"github.com/gotpu/gotpu/dtype"
)

// Core primitives every backend implements: copies and conversions.
func init() {
	Register(&Def{
		Name: "convert", Kind: Primitive, Group: "elementwise",
		Doc:    "Converts to another dtype as Tensor.to(dtype): floats to ints truncate toward zero, anything to bool is != 0.",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "dtype", Type: AttrDType}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			return []Meta{{Shape: in[0].Shape, DType: a.DType("dtype")}}, nil
		},
		// The runtime casts the gradient back to the input's dtype.
		VJP: func(b Builder, in, out, g []Value, a Attrs) []Value { return []Value{g[0]} },
	})
	Register(&Def{
		Name: "copy", Kind: Primitive, Group: "movement",
		Doc:    "Returns a contiguous copy (Tensor.clone / contiguous).",
		Inputs: []string{"input"},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			return []Meta{{Shape: in[0].Shape, DType: in[0].DType}}, nil
		},
		VJP: func(b Builder, in, out, g []Value, a Attrs) []Value { return []Value{g[0]} },
	})
	Register(&Def{
		Name: "copy_", Kind: Primitive, Group: "movement",
		Doc:     "Copies src (broadcast, converted) into self in place (Tensor.copy_).",
		Inputs:  []string{"self", "src"},
		Inplace: []int{0},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if _, err := BroadcastShapes("copy_", in[0].Shape, in[1].Shape); err != nil {
				return nil, err
			}
			s, _ := BroadcastShapes("copy_", in[0].Shape, in[1].Shape)
			if !slices.Equal(s, in[0].Shape) {
				return nil, fmt.Errorf("copy_: source of shape %v does not broadcast to destination %v", in[1].Shape, in[0].Shape)
			}
			return nil, nil
		},
		// self is overwritten entirely: its old value gets no gradient.
		VJP: func(b Builder, in, out, g []Value, a Attrs) []Value {
			return []Value{nil, SumToShape(b, g[0], b.Meta(in[1]).Shape)}
		},
	})
}

// CanCast reports whether a result of dtype from may be written into a tensor
// of dtype to by an in-place op (torch.can_cast): not float into int, not
// non-bool into bool.
func CanCast(from, to dtype.DType) bool {
	if from.Category() > to.Category() {
		return false
	}
	return true
}
