package ir

import (
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Small programs written against op.Builder, traced by the tests.

func meta(dt dtype.DType, shape ...int) op.Meta { return op.Meta{Shape: shape, DType: dt} }

type program struct {
	name   string
	params []op.Meta
	fn     func(b op.Builder, p []op.Value) []op.Value
}

// mlp is linear -> gelu -> linear.
var mlp = program{
	name:   "mlp",
	params: []op.Meta{meta(dtype.F32, 4, 8), meta(dtype.F32, 16, 8), meta(dtype.F32, 16), meta(dtype.F32, 3, 16), meta(dtype.F32, 3)},
	fn: func(b op.Builder, p []op.Value) []op.Value {
		h := op.Call1(b, "linear", nil, p[0], p[1], p[2])
		h = op.Call1(b, "gelu", nil, h)
		return []op.Value{op.Call1(b, "linear", nil, h, p[3], p[4])}
	},
}

var layerNorm = program{
	name:   "layer_norm",
	params: []op.Meta{meta(dtype.F32, 2, 5), meta(dtype.F32, 5), meta(dtype.F32, 5)},
	fn: func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "layer_norm", op.Attrs{"normalized_shape": []int{5}, "eps": 1e-5}, p[0], p[1], p[2])}
	},
}

var softmax = program{
	name:   "softmax",
	params: []op.Meta{meta(dtype.F32, 3, 4)},
	fn: func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "softmax", op.Attrs{"dim": 1}, p[0])}
	},
}

// matmulPromote: a batched matmul broadcasting [2,1,3,4] @ [5,4,6], then
// Go scalars and an integer tensor that promote: y*2 stays f32, y + i
// converts the i32 tensor, i/2 is true division (int -> default float), and
// a bf16 tensor times a Go float stays bf16.
var matmulPromote = program{
	name:   "matmul_promote",
	params: []op.Meta{meta(dtype.F32, 2, 1, 3, 4), meta(dtype.F32, 5, 4, 6), meta(dtype.I32, 6), meta(dtype.BF16, 6)},
	fn: func(b op.Builder, p []op.Value) []op.Value {
		y := op.Call1(b, "matmul", nil, p[0], p[1])
		y = op.Call1(b, "mul", nil, y, b.Scalar(2, y))
		y = op.Call1(b, "add", nil, y, p[2])
		q := op.Call1(b, "div", nil, p[2], b.Scalar(2, p[2]))
		h := op.Call1(b, "mul", nil, p[3], b.Scalar(0.5, p[3]))
		return []op.Value{op.Call1(b, "sub", nil, y, q), h}
	},
}

var programs = []program{mlp, layerNorm, softmax, matmulPromote}

func (p program) trace(opts ...Option) (*Graph, error) { return Trace(p.params, p.fn, opts...) }
