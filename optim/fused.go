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

// sgdFused runs one sgd_step on p with the options of group g, creating
// the momentum buffer on the first step.
func (s *SGD) sgdFused(i int, g *Group, p, grad *tensor.Tensor) bool {
	o := g.Options
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
	traced := replayedOptionsOf(o, "lr")
	tensor.ApplyReplayable("sgd_step", []*tensor.Tensor{p, grad, buf}, op.Attrs{
		"lr": o["lr"], "momentum": mom, "dampening": o["dampening"], "weight_decay": o["weight_decay"],
		"nesterov": o["nesterov"] != 0, "first": first,
	}, tensor.ReplayStep{
		Valid: func() bool {
			b, ok := s.state[i]["momentum_buffer"]
			return !first && (ok || mom == 0) && b == buf && traced.same(g.Options)
		},
		// A replay counts the step as Step does after this call.
		Dynamic: func() op.Attrs {
			s.steps[i]++
			return op.Attrs{"lr": g.Options["lr"]}
		},
	})
	return true
}

// replayedOptions is a copy of a group's options at a traced step, less the
// dynamic ones (read again at each replay).
type replayedOptions map[string]float64

func replayedOptionsOf(o map[string]float64, dynamic ...string) replayedOptions {
	r := replayedOptions{}
	for k, v := range o {
		if !slices.Contains(dynamic, k) {
			r[k] = v
		}
	}
	return r
}

// same reports whether o still has the traced values.
func (r replayedOptions) same(o map[string]float64) bool {
	for k, v := range r {
		if w, ok := o[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// adamFused runs one adam_step on p with the options of group g (state
// already initialised, step already counted).
func (a *Adam) adamFused(i int, g *Group, p, grad *tensor.Tensor) bool {
	o := g.Options
	st := a.state[i]
	ams := o["amsgrad"] != 0
	var mx *tensor.Tensor
	if ams {
		mx = st["max_exp_avg_sq"]
	}
	if !fusedFor("adam_step", p, grad, st["exp_avg"], st["exp_avg_sq"], mx) {
		return false
	}
	traced := replayedOptionsOf(o, "lr")
	ea, eas := st["exp_avg"], st["exp_avg_sq"]
	tensor.ApplyReplayable("adam_step", []*tensor.Tensor{p, grad, ea, eas, mx}, op.Attrs{
		"lr": o["lr"], "beta1": o["betas0"], "beta2": o["betas1"], "eps": o["eps"], "weight_decay": o["weight_decay"],
		"step": int(a.steps[i]), "decoupled": a.decoupled, "amsgrad": ams,
	}, tensor.ReplayStep{
		Valid: func() bool {
			s := a.state[i]
			return s["exp_avg"] == ea && s["exp_avg_sq"] == eas && s["max_exp_avg_sq"] == mx && traced.same(g.Options)
		},
		// A replay counts the step as Step does before this call.
		Dynamic: func() op.Attrs {
			a.steps[i]++
			return op.Attrs{"lr": g.Options["lr"], "step": int(a.steps[i])}
		},
	})
	return true
}
