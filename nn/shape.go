package nn

import (
	"slices"

	"github.com/gotpu/gotpu/tensor"
)

// Flatten merges dims StartDim..EndDim into one (torch.nn.Flatten; defaults
// 1 and -1).
type Flatten struct {
	Base
	StartDim, EndDim int
}

// NewFlatten returns a Flatten over [startDim, endDim].
func NewFlatten(startDim, endDim int) *Flatten { return &Flatten{StartDim: startDim, EndDim: endDim} }

// Forward flattens x.
func (m *Flatten) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Flatten(m.StartDim, m.EndDim) }

// Unflatten splits dim Dim into Sizes (one may be -1) (torch.nn.Unflatten).
type Unflatten struct {
	Base
	Dim   int
	Sizes []int
}

// NewUnflatten returns an Unflatten of dim into sizes.
func NewUnflatten(dim int, sizes ...int) *Unflatten {
	if len(sizes) == 0 {
		fail("Unflatten", nil, "unflattened_size must be non-empty")
	}
	return &Unflatten{Dim: dim, Sizes: slices.Clone(sizes)}
}

// Forward unflattens x.
func (m *Unflatten) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Unflatten(m.Dim, m.Sizes...) }
