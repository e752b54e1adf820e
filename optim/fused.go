package optim

import (
	"slices"
	"sync/atomic"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// SGD and Adam/AdamW update each parameter with one in-place kernel
// (op/optim.go: sgd_step, adam_step) where the parameter's device has one,
// reading and writing every element once instead of running a dozen
// elementwise ops that each allocate a result. Their state tensors are then
// persistent buffers updated in place. Where the device has no such kernel
// (device.Backend.Supports), or the tensors do not fit it (dtype, shape or
// device differ), the step runs op by op as before; the two paths keep the
// same state layout and may alternate.

// forceFallback makes every optimizer take the op-by-op path (tests run
// both paths with it).
var forceFallback atomic.Bool

// fusedFor reports whether op name has a kernel for p's device and dtype
// and every other present tensor matches p's dtype, shape and device.
func fusedFor(name string, p *tensor.Tensor, others ...*tensor.Tensor) bool {
	if forceFallback.Load() {
		return false
	}
	d, ok := op.Lookup(name)
	if !ok {
		return false
	}
	dev := p.Device()
	shape := p.Shape()
	for _, t := range others {
		if t == nil {
			continue
		}
		if t.DType() != p.DType() || t.Device() != dev || !slices.Equal(t.Shape(), shape) {
			return false
		}
	}
	be, err := device.Lookup(dev.Type)
	if err != nil {
		return false
	}
	return be.Supports(d, p.DType())
}

// sgdFused runs one sgd_step on p with options o, creating the momentum
// buffer on the first step.
func (s *SGD) sgdFused(i int, o map[string]float64, p, grad *tensor.Tensor) bool {
	mom := o["momentum"]
	var buf *tensor.Tensor
	first := false
	if mom != 0 {
		var ok bool
		if buf, ok = s.state[i]["momentum_buffer"]; !ok {
			first = true
		}
	}
	if !fusedFor("sgd_step", p, grad, buf) {
		return false
	}
	if mom != 0 && first {
		buf = tensor.EmptyLike(p)
		s.state[i]["momentum_buffer"] = buf
	}
	tensor.Apply("sgd_step", []*tensor.Tensor{p, grad, buf}, op.Attrs{
		"lr": o["lr"], "momentum": mom, "dampening": o["dampening"], "weight_decay": o["weight_decay"],
		"nesterov": o["nesterov"] != 0, "first": first,
	})
	return true
}

// adamFused runs one adam_step on p with options o (state already
// initialised, step already counted).
func (a *Adam) adamFused(i int, o map[string]float64, p, grad *tensor.Tensor) bool {
	st := a.state[i]
	ams := o["amsgrad"] != 0
	var mx *tensor.Tensor
	if ams {
		mx = st["max_exp_avg_sq"]
	}
	if !fusedFor("adam_step", p, grad, st["exp_avg"], st["exp_avg_sq"], mx) {
		return false
	}
	tensor.Apply("adam_step", []*tensor.Tensor{p, grad, st["exp_avg"], st["exp_avg_sq"], mx}, op.Attrs{
		"lr": o["lr"], "beta1": o["betas0"], "beta2": o["betas1"], "eps": o["eps"], "weight_decay": o["weight_decay"],
		"step": int(a.steps[i]), "decoupled": a.decoupled, "amsgrad": ams,
	})
	return true
}
