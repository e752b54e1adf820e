package nn

import (
	"errors"
	"fmt"
	"math"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	nninit "github.com/gotpu/gotpu/nn/init"
	"github.com/gotpu/gotpu/tensor"
)

// Layer is a module with a single-tensor forward pass; Sequential chains
// Layers. Every module of this package with one input and one output is a
// Layer.
type Layer interface {
	Forward(x *tensor.Tensor) *tensor.Tensor
}

// LayerFunc adapts a function to Layer, for parameter-free steps in a
// Sequential (it is not a Module, so it takes an index but adds no
// state-dict keys, like a torch module without parameters).
type LayerFunc func(x *tensor.Tensor) *tensor.Tensor

// Forward calls f(x).
func (f LayerFunc) Forward(x *tensor.Tensor) *tensor.Tensor { return f(x) }

// ErrInvalidArgument is wrapped by the panics of constructors and forward
// methods given invalid arguments (a bad size, an unknown mode, an input of
// the wrong rank); tensor.Catch turns those panics into errors.
var ErrInvalidArgument = errors.New("invalid argument")

// fail panics with a *tensor.Error naming the module, as tensor ops do for
// programming errors.
func fail(module string, in []*tensor.Tensor, format string, args ...any) {
	e := &tensor.Error{Op: "nn." + module, Msg: fmt.Sprintf(format, args...), Err: ErrInvalidArgument}
	for _, t := range in {
		if t == nil {
			continue
		}
		e.Shapes = append(e.Shapes, t.Shape())
		e.DTypes = append(e.DTypes, t.DType().String())
		e.Devices = append(e.Devices, t.Device().String())
	}
	panic(e)
}

// Option configures how a constructor creates parameters and buffers: their
// dtype (torch's dtype=) and the generator their initial values are drawn
// from.
type Option func(*options)

type options struct {
	dt  dtype.DType
	gen *tensor.Generator
}

// WithDType creates floating-point parameters and buffers in dt instead of
// the default dtype (tensor.DefaultDType()).
func WithDType(dt dtype.DType) Option { return func(o *options) { o.dt = dt } }

// WithGenerator draws initial values (and, for modules that draw at
// forward time such as Dropout, random masks) from g instead of the default
// generator.
func WithGenerator(g *tensor.Generator) Option { return func(o *options) { o.gen = g } }

func makeOptions(opts []Option) options {
	o := options{dt: tensor.DefaultDType()}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// empty returns a zero tensor of shape in the configured dtype, for a
// parameter to be initialised in place.
func (o options) empty(dev device.Device, shape ...int) *tensor.Tensor {
	return tensor.Zeros(dev, o.dt, shape...)
}

// uniform returns a tensor of shape filled with U(-bound, bound).
func (o options) uniform(dev device.Device, bound float64, shape ...int) *tensor.Tensor {
	return nninit.Uniform(o.empty(dev, shape...), -bound, bound, o.gen)
}

// kaimingDefault fills w as torch's Linear/Conv reset_parameters:
// kaiming_uniform_(w, a=√5), i.e. U(-1/√fan_in, 1/√fan_in).
func (o options) kaimingDefault(w *tensor.Tensor) *tensor.Tensor {
	return nninit.KaimingUniform(w, math.Sqrt(5), nninit.FanIn, "leaky_relu", o.gen)
}

// biasBound is torch's bound for a Linear/Conv bias: 1/√fan_in of the
// weight, 0 if fan_in is 0.
func biasBound(w *tensor.Tensor) float64 {
	fi, _ := nninit.Fans(w)
	if fi == 0 {
		return 0
	}
	return 1 / math.Sqrt(float64(fi))
}

// positive checks that every size is at least 1.
func positive(module string, what string, v ...int) {
	for _, x := range v {
		if x < 1 {
			fail(module, nil, "%s must be positive, got %v", what, v)
		}
	}
}

// nonNegative checks that every size is at least 0.
func nonNegative(module string, what string, v ...int) {
	for _, x := range v {
		if x < 0 {
			fail(module, nil, "%s must be non-negative, got %v", what, v)
		}
	}
}

// tuple expands a 1-element list to n elements (torch's _pair/_single);
// nil gives def repeated.
func tuple(module, what string, v []int, n, def int) []int {
	switch len(v) {
	case 0:
		out := make([]int, n)
		for i := range out {
			out[i] = def
		}
		return out
	case 1:
		out := make([]int, n)
		for i := range out {
			out[i] = v[0]
		}
		return out
	case n:
		return append([]int(nil), v...)
	}
	fail(module, nil, "%s must have 1 or %d elements, got %v", what, n, v)
	return nil
}
