package tensor

import (
	"slices"

	"github.com/gotpu/gotpu/op"
)

// In-place ops (PyTorch's trailing-underscore methods). Each computes the
// functional result and copies it into t with the copy_ primitive, which
// bumps the storage's version counter (so autograd refuses a tensor that was
// modified after it was saved). As in PyTorch the result dtype must be
// castable to t's dtype (no float result into an integer tensor, nothing
// but bool into a bool tensor), and the result must have t's shape (other
// operands broadcast to t, never t to them).

// inplace writes the functional result of the in-place op opname on t,
// which f computes, into t and returns t. In Fused mode, what f made is no
// output of the pending graph: only t receives the value (lazy_owned.go).
func (t *Tensor) inplace(opname string, f func() *Tensor) *Tensor {
	sc := beginOwnScope()
	defer sc.end()
	res := f()
	if t.st == nil {
		errorf(opname, []*Tensor{t}, "in-place op on a Go scalar")
	}
	if !op.CanCast(res.dt, t.dt) {
		errorf(opname, []*Tensor{t, res}, "result type %s can't be cast to the desired output type %s", res.dt, t.dt)
	}
	if !slices.Equal(res.l.Shape, t.l.Shape) {
		errorf(opname, []*Tensor{t, res}, "output with shape %v doesn't match the broadcast shape %v", t.l.Shape, res.l.Shape)
	}
	if t.RequiresGrad() && t.IsLeaf() && GradEnabled() {
		errorf(opname, []*Tensor{t}, "a leaf tensor that requires grad is being used in an in-place operation")
	}
	Apply("copy_", []*Tensor{t, res}, nil)
	sc.dropUnkept(map[*Storage]bool{t.st: true})
	sc.cutIfRepeated()
	return t
}

// AddInPlace adds other to t (Tensor.add_) and returns t.
func (t *Tensor) AddInPlace(other *Tensor) *Tensor {
	return t.inplace("add_", func() *Tensor { return t.Add(other) })
}

// AddAlphaInPlace adds alpha*other to t (Tensor.add_(other, alpha=alpha)) and returns t.
func (t *Tensor) AddAlphaInPlace(other *Tensor, alpha any) *Tensor {
	return t.inplace("add_", func() *Tensor { return t.AddAlpha(other, alpha) })
}

// SubInPlace subtracts other from t (Tensor.sub_) and returns t.
func (t *Tensor) SubInPlace(other *Tensor) *Tensor {
	return t.inplace("sub_", func() *Tensor { return t.Sub(other) })
}

// MulInPlace multiplies t by other (Tensor.mul_) and returns t.
func (t *Tensor) MulInPlace(other *Tensor) *Tensor {
	return t.inplace("mul_", func() *Tensor { return t.Mul(other) })
}

// DivInPlace divides t by other (Tensor.div_) and returns t; an integer t
// panics because the quotient is a float.
func (t *Tensor) DivInPlace(other *Tensor) *Tensor {
	return t.inplace("div_", func() *Tensor { return t.Div(other) })
}

// PowInPlace raises t to other (Tensor.pow_) and returns t.
func (t *Tensor) PowInPlace(other *Tensor) *Tensor {
	return t.inplace("pow_", func() *Tensor { return t.Pow(other) })
}

// ClampInPlace clamps t to [lo, hi] (Tensor.clamp_; nil bounds are absent) and returns t.
func (t *Tensor) ClampInPlace(lo, hi any) *Tensor {
	return t.inplace("clamp_", func() *Tensor { return t.Clamp(lo, hi) })
}

// NegInPlace negates t (Tensor.neg_) and returns t.
func (t *Tensor) NegInPlace() *Tensor {
	return t.inplace("neg_", func() *Tensor { return t.Neg() })
}

// AbsInPlace replaces t by |t| (Tensor.abs_) and returns t.
func (t *Tensor) AbsInPlace() *Tensor {
	return t.inplace("abs_", func() *Tensor { return t.Abs() })
}

// ExpInPlace replaces t by e**t (Tensor.exp_) and returns t.
func (t *Tensor) ExpInPlace() *Tensor {
	return t.inplace("exp_", func() *Tensor { return t.Exp() })
}

// SqrtInPlace replaces t by its square root (Tensor.sqrt_) and returns t.
func (t *Tensor) SqrtInPlace() *Tensor {
	return t.inplace("sqrt_", func() *Tensor { return t.Sqrt() })
}

// SigmoidInPlace replaces t by sigmoid(t) (Tensor.sigmoid_) and returns t.
func (t *Tensor) SigmoidInPlace() *Tensor {
	return t.inplace("sigmoid_", func() *Tensor { return t.Sigmoid() })
}

// TanhInPlace replaces t by tanh(t) (Tensor.tanh_) and returns t.
func (t *Tensor) TanhInPlace() *Tensor {
	return t.inplace("tanh_", func() *Tensor { return t.Tanh() })
}

// ReluInPlace replaces t by max(t, 0) (torch.relu_) and returns t.
func (t *Tensor) ReluInPlace() *Tensor {
	return t.inplace("relu_", func() *Tensor { return t.Relu() })
}

// LerpInPlace moves t toward end by weight (Tensor.lerp_) and returns t.
func (t *Tensor) LerpInPlace(end, weight *Tensor) *Tensor {
	return t.inplace("lerp_", func() *Tensor { return t.Lerp(end, weight) })
}

// AddcmulInPlace adds value*t1*t2 to t (Tensor.addcmul_) and returns t.
func (t *Tensor) AddcmulInPlace(t1, t2 *Tensor, value any) *Tensor {
	return t.inplace("addcmul_", func() *Tensor { return t.Addcmul(t1, t2, value) })
}

// AddcdivInPlace adds value*t1/t2 to t (Tensor.addcdiv_) and returns t.
func (t *Tensor) AddcdivInPlace(t1, t2 *Tensor, value any) *Tensor {
	return t.inplace("addcdiv_", func() *Tensor { return t.Addcdiv(t1, t2, value) })
}

// CopyFrom copies src into t in place (Tensor.copy_), converting to t's
// dtype and broadcasting src to t's shape, and returns t.
func (t *Tensor) CopyFrom(src *Tensor) *Tensor {
	if t.st == nil {
		errorf("copy_", []*Tensor{t}, "in-place op on a Go scalar")
	}
	return t.copyInto("copy_", src.Expand(t.l.Shape...))
}

// WithHostBytes runs f on the live memory of t when t is a contiguous tensor
// whose device keeps it in host memory (the CPU backend), after all work
// queued on t's device has finished, and reports whether it did. Nothing is
// copied: f sees t's elements as little-endian bytes and, when write is
// true, may change them (t's version counter is bumped, as by an in-place
// op). f must not keep the slice. Collectives (package dist) use it to move
// tensors in and out of shared memory without a copy; they fall back to
// Bytes and CopyFrom when it returns false.
func (t *Tensor) WithHostBytes(write bool, f func(b []byte)) bool {
	if t.st == nil || !t.l.IsContiguous() || t.st.freed.Load() {
		return false
	}
	t.ready("host_bytes")
	hb, ok := t.st.buf.(interface{ Bytes() []byte })
	if !ok {
		return false
	}
	if err := t.st.be.Sync(t.st.dev.Index); err != nil {
		panic(&Error{Op: "host_bytes", Msg: err.Error(), Err: err})
	}
	es := t.dt.Size()
	b := hb.Bytes()
	lo, n := t.l.Offset*es, t.Numel()*es
	if lo+n > len(b) {
		return false
	}
	f(b[lo : lo+n : lo+n])
	if write {
		t.st.version.Add(1)
	}
	return true
}
