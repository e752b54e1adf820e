package tensor

import (
	"slices"

	"github.com/gotpu/gotpu/op"
)

// Layout implements op.LayoutReader: VJPs that address storage directly
// (as_strided) read their input's strided geometry through it.
func (b *eagerBuilder) Layout(v op.Value) (op.Layout, bool) {
	t, ok := v.(*Tensor)
	if !ok || t.st == nil {
		return op.Layout{}, false
	}
	return op.Layout{Shape: slices.Clone(t.l.Shape), Strides: slices.Clone(t.l.Strides), Offset: t.l.Offset}, true
}

var _ op.LayoutReader = (*eagerBuilder)(nil)
