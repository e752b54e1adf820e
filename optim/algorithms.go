package optim

import (
	"math"

	opdef "github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// SGD is stochastic gradient descent with momentum, dampening, Nesterov
// momentum and L2 weight decay, as torch.optim.SGD.
type SGD struct{ *base }

// NewSGD returns an SGD optimizer; options: lr, momentum, dampening,
// weight_decay, nesterov (0 or 1).
func NewSGD(groups []*Group, lr float64) *SGD {
	return &SGD{newBase(groups, map[string]float64{"lr": lr, "momentum": 0, "dampening": 0, "weight_decay": 0, "nesterov": 0})}
}

// Step implements Optimizer.
func (o *SGD) Step() {
	o.each(func(i int, g *Group, p, grad *tensor.Tensor) {
		if o.sgdFused(i, g, p, grad) {
			o.steps[i]++
			return
		}
		tensor.NoReplay(opByOp)
		op := g.Options
		d := grad
		if wd := op["weight_decay"]; wd != 0 {
			d = add(d, p, wd)
		}
		if mom := op["momentum"]; mom != 0 {
			buf, ok := o.state[i]["momentum_buffer"]
			if !ok {
				buf = ap("copy", nil, d)
			} else {
				buf = add(scale(buf, mom), d, 1-op["dampening"])
			}
			o.state[i]["momentum_buffer"] = buf
			if op["nesterov"] != 0 {
				d = add(d, buf, mom)
			} else {
				d = buf
			}
		}
		update(p, add(p, d, -op["lr"]))
		o.steps[i]++
	})
}

// opByOp is why a compiled function whose optimizer updates a parameter
// op by op cannot be replayed: the update bakes the step's Go-side values
// (learning rate, bias corrections) into the program as constants.
const opByOp = "an optimizer updated a parameter op by op (no fused kernel): its per-step values are constants of the program"

// Adam is torch.optim.Adam (with amsgrad); AdamW decouples weight decay.
type Adam struct {
	*base
	decoupled bool
}

// NewAdam returns Adam; options: lr, betas0, betas1, eps, weight_decay, amsgrad (0/1).
func NewAdam(groups []*Group, lr float64) *Adam {
	return &Adam{base: newBase(groups, map[string]float64{"lr": lr, "betas0": 0.9, "betas1": 0.999, "eps": 1e-8, "weight_decay": 0, "amsgrad": 0})}
}

// NewAdamW returns AdamW (decoupled weight decay, default 0.01).
func NewAdamW(groups []*Group, lr float64) *Adam {
	return &Adam{base: newBase(groups, map[string]float64{"lr": lr, "betas0": 0.9, "betas1": 0.999, "eps": 1e-8, "weight_decay": 0.01, "amsgrad": 0}), decoupled: true}
}

// Step implements Optimizer.
func (o *Adam) Step() {
	o.each(func(i int, g *Group, p, grad *tensor.Tensor) {
		op := g.Options
		lr, b1, b2, eps, wd := op["lr"], op["betas0"], op["betas1"], op["eps"], op["weight_decay"]
		st := o.state[i]
		if _, ok := st["exp_avg"]; !ok {
			st["exp_avg"] = zerosLike(p)
			st["exp_avg_sq"] = zerosLike(p)
		}
		if _, ok := st["max_exp_avg_sq"]; !ok && op["amsgrad"] != 0 {
			st["max_exp_avg_sq"] = zerosLike(p)
		}
		o.steps[i]++
		if o.adamFused(i, g, p, grad) {
			return
		}
		tensor.NoReplay(opByOp)
		param := p
		if o.decoupled {
			param = scale(p, 1-lr*wd)
		} else if wd != 0 {
			grad = add(grad, p, wd)
		}
		st["exp_avg"] = add(scale(st["exp_avg"], b1), grad, 1-b1)
		st["exp_avg_sq"] = add(scale(st["exp_avg_sq"], b2), mul(grad, grad), 1-b2)
		bc1, bc2 := opdef.AdamBiasCorrections(b1, b2, int(o.steps[i]))
		bc2sqrt := math.Sqrt(bc2)
		sq := st["exp_avg_sq"]
		if op["amsgrad"] != 0 {
			st["max_exp_avg_sq"] = ap("maximum", nil, st["max_exp_avg_sq"], sq)
			sq = st["max_exp_avg_sq"]
		}
		denom := addScalar(scale(sqrt(sq), 1/bc2sqrt), eps)
		update(p, add(param, div(st["exp_avg"], denom), -lr/bc1))
	})
}

// RMSprop is torch.optim.RMSprop.
type RMSprop struct{ *base }

// NewRMSprop returns RMSprop; options: lr, alpha, eps, weight_decay, momentum, centered (0/1).
func NewRMSprop(groups []*Group, lr float64) *RMSprop {
	return &RMSprop{newBase(groups, map[string]float64{"lr": lr, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0, "momentum": 0, "centered": 0})}
}

// Step implements Optimizer.
func (o *RMSprop) Step() {
	o.each(func(i int, g *Group, p, grad *tensor.Tensor) {
		tensor.NoReplay(opByOp)
		op := g.Options
		st := o.state[i]
		if _, ok := st["square_avg"]; !ok {
			st["square_avg"] = zerosLike(p)
			if op["momentum"] > 0 {
				st["momentum_buffer"] = zerosLike(p)
			}
			if op["centered"] != 0 {
				st["grad_avg"] = zerosLike(p)
			}
		}
		o.steps[i]++
		if wd := op["weight_decay"]; wd != 0 {
			grad = add(grad, p, wd)
		}
		alpha := op["alpha"]
		st["square_avg"] = add(scale(st["square_avg"], alpha), mul(grad, grad), 1-alpha)
		var avg *tensor.Tensor
		if op["centered"] != 0 {
			st["grad_avg"] = add(scale(st["grad_avg"], alpha), grad, 1-alpha)
			avg = addScalar(sqrt(add(st["square_avg"], mul(st["grad_avg"], st["grad_avg"]), -1)), op["eps"])
		} else {
			avg = addScalar(sqrt(st["square_avg"]), op["eps"])
		}
		if op["momentum"] > 0 {
			st["momentum_buffer"] = ap("add", nil, scale(st["momentum_buffer"], op["momentum"]), div(grad, avg))
			update(p, add(p, st["momentum_buffer"], -op["lr"]))
		} else {
			update(p, add(p, div(grad, avg), -op["lr"]))
		}
	})
}

// Adagrad is torch.optim.Adagrad.
type Adagrad struct{ *base }

// NewAdagrad returns Adagrad; options: lr, lr_decay, weight_decay, eps,
// initial_accumulator_value.
func NewAdagrad(groups []*Group, lr float64) *Adagrad {
	return &Adagrad{newBase(groups, map[string]float64{"lr": lr, "lr_decay": 0, "weight_decay": 0, "eps": 1e-10, "initial_accumulator_value": 0})}
}

// Step implements Optimizer.
func (o *Adagrad) Step() {
	o.each(func(i int, g *Group, p, grad *tensor.Tensor) {
		tensor.NoReplay(opByOp)
		op := g.Options
		st := o.state[i]
		if _, ok := st["sum"]; !ok {
			st["sum"] = addScalar(zerosLike(p), op["initial_accumulator_value"])
		}
		o.steps[i]++
		if wd := op["weight_decay"]; wd != 0 {
			grad = add(grad, p, wd)
		}
		clr := op["lr"] / (1 + float64(o.steps[i]-1)*op["lr_decay"])
		st["sum"] = ap("add", nil, st["sum"], mul(grad, grad))
		std := addScalar(sqrt(st["sum"]), op["eps"])
		update(p, add(p, div(grad, std), -clr))
	})
}
