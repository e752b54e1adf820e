package nn

import (
	"github.com/gotpu/gotpu/tensor"
)

// Dropout zeroes each element with probability P in training mode and
// scales the others by 1/(1-P); in evaluation mode it returns its input
// (torch.nn.Dropout).
type Dropout struct {
	Base
	P   float64
	gen *tensor.Generator
}

// NewDropout returns a Dropout with probability p in [0, 1] (torch's default
// is 0.5). WithGenerator sets the generator masks are drawn from.
func NewDropout(p float64, opts ...Option) *Dropout {
	if !(p >= 0 && p <= 1) {
		fail("Dropout", nil, "dropout probability has to be between 0 and 1, but got %v", p)
	}
	o := makeOptions(opts)
	return &Dropout{P: p, gen: o.gen}
}

// Forward applies dropout in training mode and is the identity otherwise.
func (m *Dropout) Forward(x *tensor.Tensor) *tensor.Tensor {
	if !m.Training() || m.P == 0 {
		return x
	}
	return tensor.DropoutGen(m.gen, x, m.P, true)
}
