package compile

import (
	"fmt"

	"github.com/gotpu/gotpu/tensor"
)

// Bounded declares that dimension Dim of input Input varies in size up to
// Max (see Bound).
type Bounded struct {
	Input, Dim, Max int
}

// Bound declares that dimension dim of input input varies up to max (a
// sequence length, a batch that may be short): the function is compiled
// once, at the bound, with the input padded and the padding masked, and
// outputs with that dimension are sliced back to the call's length.
// Reductions (sum, mean, max, softmax, logsumexp) and contractions (matmul,
// attention) over the dimension stay exact; an op that cannot (a gather
// along it, a reshape merging it with another dimension) makes the call
// fail with an error wrapping tensor.ErrBoundedDim. Every bounded dimension
// of a function must have the same size in a call.
func Bound(input, dim, max int) Option {
	return func(o *options) { o.bounds = append(o.bounds, Bounded{Input: input, Dim: dim, Max: max}) }
}

// pad returns the inputs the trace sees (padded to the bounds), the valid
// length (-1 without bounds), and an error for inputs that break them.
func (c *Function) pad(in []*tensor.Tensor) ([]*tensor.Tensor, int, error) {
	if len(c.opts.bounds) == 0 {
		return in, -1, nil
	}
	out := append([]*tensor.Tensor(nil), in...)
	length := -1
	for _, b := range c.opts.bounds {
		if b.Input < 0 || b.Input >= len(in) || in[b.Input] == nil {
			return nil, 0, fmt.Errorf("compile: %s: bound on input %d, but the call has %d inputs", c.opts.name, b.Input, len(in))
		}
		x := out[b.Input]
		if b.Dim < 0 || b.Dim >= x.Dim() {
			return nil, 0, fmt.Errorf("compile: %s: bound on dim %d of input %d of shape %v", c.opts.name, b.Dim, b.Input, x.Shape())
		}
		n := in[b.Input].Size(b.Dim)
		if n > b.Max {
			return nil, 0, fmt.Errorf("compile: %s: input %d has %d along bounded dim %d, above its bound %d", c.opts.name, b.Input, n, b.Dim, b.Max)
		}
		if length >= 0 && n != length {
			return nil, 0, fmt.Errorf("compile: %s: bounded dims have different sizes %d and %d in one call", c.opts.name, length, n)
		}
		length = n
		if n < b.Max {
			shape := x.Shape()
			shape[b.Dim] = b.Max
			var p *tensor.Tensor
			err := tensor.Catch(func() {
				p = tensor.Zeros(x.Device(), x.DType(), shape...)
				tensor.Apply("copy_", []*tensor.Tensor{p.Narrow(b.Dim, 0, n), x}, nil)
			})
			if err != nil {
				return nil, 0, fmt.Errorf("compile: %s: padding input %d: %w", c.opts.name, b.Input, err)
			}
			out[b.Input] = p
		}
	}
	return out, length, nil
}

// declareBounds tells the trace which dims of its inputs are padded.
func (c *Function) declareBounds(tr *tensor.Trace, length int) {
	for _, b := range c.opts.bounds {
		tr.Bound(b.Input, b.Dim, length)
	}
}

// unpad slices outputs' padded dims back to length.
func unpad(out []*tensor.Tensor, padded [][]int, length int) []*tensor.Tensor {
	if length < 0 {
		return out
	}
	for i, o := range out {
		for _, d := range padded[i] {
			o = o.Narrow(d, 0, length)
		}
		out[i] = o
	}
	return out
}
