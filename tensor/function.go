package tensor

import (
	"fmt"

	"github.com/gotpu/gotpu/op"
)

// Function runs forward, a computation autograd does not look into, and
// records it as one node whose gradient is backward's
// (torch.autograd.Function): what a collective between processes, a call
// into another library or a hand-written fused kernel needs to take part
// in training.
//
// forward runs with gradients off and returns the outputs (at least one);
// they may alias the inputs (an identity forward). When gradients are
// enabled and an input requires grad, the outputs get a node named name;
// Backward later calls backward with one gradient per output (zeros for
// a float output nothing used, nil for a non-float one) and takes one per
// input: nil for an input that
// gets none, else a tensor of the input's shape (converted to its dtype).
// backward runs with gradients off too, on the goroutine running
// Backward; it may panic with an *Error, which Backward's caller sees.
// The gradients it receives and returns may be kept: Backward treats them
// as seen by user code.
func Function(name string, in []*Tensor, forward func() []*Tensor, backward func(grads []*Tensor) []*Tensor) []*Tensor {
	var out []*Tensor
	NoGrad(func() { out = forward() })
	if len(out) == 0 {
		panic(&Error{Op: name, Msg: "a Function's forward returned no outputs"})
	}
	if !GradEnabled() || !anyRequiresGrad(in) {
		return out
	}
	d := &op.Def{Name: name, VJP: func(_ op.Builder, _, _, g []op.Value, _ op.Attrs) []op.Value {
		gs := make([]*Tensor, len(g))
		for i, v := range g {
			if v != nil {
				gs[i] = v.(*Tensor)
			}
		}
		var r []*Tensor
		NoGrad(func() { r = backward(gs) })
		if len(r) != len(in) {
			panic(&Error{Op: name, Msg: fmt.Sprintf("a Function's backward returned %d gradients for %d inputs", len(r), len(in))})
		}
		res := make([]op.Value, len(r))
		for i, t := range r {
			if t != nil {
				res[i] = t
			}
		}
		return res
	}}
	// The outputs are new tensor objects, so that an identity forward's
	// output is not the input itself.
	for i, o := range out {
		if o == nil {
			panic(&Error{Op: name, Msg: fmt.Sprintf("a Function's forward returned a nil output %d", i)})
		}
		out[i] = o.Detach()
	}
	record(d, nil, in, out)
	// Its VJP is user code: what passes through it counts as seen by the
	// user (Backward does not free it early).
	for _, o := range out {
		if o.grad != nil && o.grad.node != nil {
			o.grad.node.custom = true
			break
		}
	}
	return out
}
