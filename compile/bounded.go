package compile

import "github.com/gotpu/gotpu/tensor"

// pad returns the inputs the trace sees and the function that maps the
// program's outputs back (identity until bounded dims are declared).
func (c *Function) pad(in []*tensor.Tensor) ([]*tensor.Tensor, func([]*tensor.Tensor) []*tensor.Tensor, error) {
	return in, func(o []*tensor.Tensor) []*tensor.Tensor { return o }, nil
}
