package tensor

import "github.com/gotpu/gotpu/op"

// Elementwise ops. Most of their typed API is generated from the op table
// (elementwise_gen.go, see internal/gen/opapi); this file holds the
// wrappers with logic of their own.
//
// Unary ops: integer and bool inputs of ops that are only defined on floats
// (Exp, Sin, Sigmoid, ...) promote to the default float dtype as in
// PyTorch; activations that PyTorch defines only on floats (Gelu, Silu, ...)
// panic for integer inputs.
//
// Binary and ternary ops: inputs broadcast and promote as in PyTorch; the
// ...Scalar variants take a Go number that promotes like a Python scalar
// (t.AddScalar(2) keeps an integer t's dtype, t.MulScalar(2.5) turns it into
// the default float).

// PowScalar returns t ** v for a Go number v (torch.pow(t, v)). As in
// PyTorch, an integer tensor to a negative integer power panics.
func (t *Tensor) PowScalar(v any) *Tensor {
	if !t.dt.IsFloat() {
		neg := false
		switch x := v.(type) {
		case int:
			neg = x < 0
		case int64:
			neg = x < 0
		case int32:
			neg = x < 0
		}
		if neg {
			errorf("pow", []*Tensor{t}, "Integers to negative integer powers are not allowed (exponent %v)", v)
		}
	}
	return Apply1("pow", []*Tensor{t, Scalar(v)}, nil)
}

// LerpScalar returns t + weight*(end - t) (torch.lerp) for a number weight.
func (t *Tensor) LerpScalar(end *Tensor, weight float64) *Tensor {
	return Apply1("lerp", []*Tensor{t, end, nil}, op.Attrs{"weight": weight})
}
