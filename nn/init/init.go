// Package nninit fills tensors in place with the initial values of
// torch.nn.init: the same distributions, bounds and fan computations as
// PyTorch 1.13, drawn from a gotpu Generator (nil: the default generator), so
// values differ from torch's RNG but the distributions match.
//
// The import path ends in "init", which Go reserves for functions, so the
// package is named nninit:
//
//	import nninit "github.com/gotpu/gotpu/nn/init"
//
//	nninit.KaimingUniform(w, math.Sqrt(5), nninit.FanIn, "leaky_relu", nil)
//
// Every function runs under tensor.NoGrad (so it may fill parameters that
// require grad), writes into t's storage (bumping its version) and returns t.
// Invalid arguments (an unknown nonlinearity or mode, a tensor with too few
// dimensions) are programming errors: the functions panic with a
// *tensor.Error, which tensor.Catch turns into an error wrapping
// ErrInvalidArgument.
package nninit

import (
	"errors"
	"fmt"
	"math"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// ErrInvalidArgument is wrapped by the panics of this package.
var ErrInvalidArgument = errors.New("invalid argument")

// Mode selects the fan that Kaiming initialisation preserves.
type Mode string

// The Kaiming modes.
const (
	FanIn  Mode = "fan_in"  // preserve the variance of activations in the forward pass
	FanOut Mode = "fan_out" // preserve the variance of gradients in the backward pass
)

func fail(fn string, t *tensor.Tensor, format string, args ...any) {
	e := &tensor.Error{Op: "nn.init." + fn, Msg: fmt.Sprintf(format, args...), Err: ErrInvalidArgument}
	if t != nil {
		e.Shapes = [][]int{t.Shape()}
		e.DTypes = []string{t.DType().String()}
		e.Devices = []string{t.Device().String()}
	}
	panic(e)
}

// fill copies src into t in place without recording gradients.
func fill(t, src *tensor.Tensor) *tensor.Tensor {
	tensor.NoGrad(func() {
		tensor.Apply("copy_", []*tensor.Tensor{t, src}, nil)
	})
	return t
}

// floatDT is the dtype random values are drawn in: t's own for floats.
func floatDT(fn string, t *tensor.Tensor) dtype.DType {
	if !t.DType().IsFloat() {
		fail(fn, t, "expected a floating-point tensor, got %s", t.DType())
	}
	return t.DType()
}

// Uniform fills t with values drawn from U(a, b) (torch.nn.init.uniform_).
func Uniform(t *tensor.Tensor, a, b float64, g *tensor.Generator) *tensor.Tensor {
	dt := floatDT("uniform_", t)
	if !(a <= b) {
		fail("uniform_", t, "expected a <= b, got a=%v b=%v", a, b)
	}
	return fill(t, tensor.UniformGen(g, t.Device(), a, b, dt, t.Shape()...))
}

// Normal fills t with values drawn from N(mean, std²) (torch.nn.init.normal_).
func Normal(t *tensor.Tensor, mean, std float64, g *tensor.Generator) *tensor.Tensor {
	dt := floatDT("normal_", t)
	if std < 0 || math.IsNaN(std) {
		fail("normal_", t, "expected std >= 0, got %v", std)
	}
	return fill(t, tensor.NormalGen(g, t.Device(), mean, std, dt, t.Shape()...))
}

// TruncNormal fills t with values drawn from N(mean, std²) truncated to
// [a, b] (torch.nn.init.trunc_normal_): like PyTorch it draws a uniform
// value between the CDFs of a and b and maps it through the inverse CDF,
// then clamps to [a, b] against rounding.
func TruncNormal(t *tensor.Tensor, mean, std, a, b float64, g *tensor.Generator) *tensor.Tensor {
	floatDT("trunc_normal_", t)
	if !(a < b) || !(std > 0) {
		fail("trunc_normal_", t, "expected a < b and std > 0, got a=%v b=%v std=%v", a, b, std)
	}
	cdf := func(x float64) float64 { return (1 + math.Erf(x/math.Sqrt2)) / 2 }
	l, u := cdf((a-mean)/std), cdf((b-mean)/std)
	var v *tensor.Tensor
	tensor.NoGrad(func() {
		// Draw in float64 so erfinv near ±1 keeps its tails; copy_ rounds
		// to t's dtype.
		x := tensor.UniformGen(g, t.Device(), 2*l-1, 2*u-1, dtype.F64, t.Shape()...)
		v = x.Erfinv().MulScalar(std*math.Sqrt2).AddScalar(mean).Clamp(a, b)
	})
	return fill(t, v)
}

// Constant fills t with val (torch.nn.init.constant_).
func Constant(t *tensor.Tensor, val float64) *tensor.Tensor {
	tensor.NoGrad(func() { t.FillInPlace(val) })
	return t
}

// Zeros fills t with zeros (torch.nn.init.zeros_).
func Zeros(t *tensor.Tensor) *tensor.Tensor { return Constant(t, 0) }

// Ones fills t with ones (torch.nn.init.ones_).
func Ones(t *tensor.Tensor) *tensor.Tensor { return Constant(t, 1) }

// Eye fills the 2-d t with the identity matrix (ones on the main diagonal,
// zeros elsewhere; torch.nn.init.eye_).
func Eye(t *tensor.Tensor) *tensor.Tensor {
	if t.Dim() != 2 {
		fail("eye_", t, "only tensors with 2 dimensions are supported")
	}
	return fill(t, tensor.Eye(t.Device(), t.Size(0), t.Size(1), t.DType()))
}

// Dirac fills the {3, 4, 5}-d t with the Dirac delta, preserving the
// identity of a convolution's inputs in each of groups groups
// (torch.nn.init.dirac_).
func Dirac(t *tensor.Tensor, groups int) *tensor.Tensor {
	d := t.Dim()
	if d < 3 || d > 5 {
		fail("dirac_", t, "only tensors with 3, 4, or 5 dimensions are supported")
	}
	shape := t.Shape()
	if groups < 1 || shape[0]%groups != 0 {
		fail("dirac_", t, "dim 0 must be divisible by groups=%d", groups)
	}
	outPerGroup := shape[0] / groups
	minDim := min(outPerGroup, shape[1])
	n := t.Numel()
	vals := make([]float64, n)
	strides := make([]int, d)
	s := 1
	for i := d - 1; i >= 0; i-- {
		strides[i] = s
		s *= shape[i]
	}
	for gi := 0; gi < groups; gi++ {
		for k := 0; k < minDim; k++ {
			off := (gi*outPerGroup+k)*strides[0] + k*strides[1]
			for j := 2; j < d; j++ {
				off += shape[j] / 2 * strides[j]
			}
			vals[off] = 1
		}
	}
	return fill(t, tensor.FromSlice(t.Device(), vals, shape...))
}

// Fans returns the fan-in and fan-out of a weight of at least two
// dimensions, as torch.nn.init._calculate_fan_in_and_fan_out: size(1) and
// size(0) times the receptive field (the product of the remaining sizes).
func Fans(t *tensor.Tensor) (fanIn, fanOut int) {
	return fans("fans", t)
}

func fans(fn string, t *tensor.Tensor) (fanIn, fanOut int) {
	if t.Dim() < 2 {
		fail(fn, t, "fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
	}
	shape := t.Shape()
	rf := 1
	for _, s := range shape[2:] {
		rf *= s
	}
	return shape[1] * rf, shape[0] * rf
}

// CalculateGain returns the recommended gain for a nonlinearity
// (torch.nn.init.calculate_gain): 1 for linear, conv*, conv_transpose* and
// sigmoid, 5/3 for tanh, √2 for relu, √(2/(1+slope²)) for leaky_relu
// (param: the negative slope, default 0.01) and 3/4 for selu.
func CalculateGain(nonlinearity string, param ...float64) float64 {
	switch nonlinearity {
	case "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid":
		return 1
	case "tanh":
		return 5.0 / 3
	case "relu":
		return math.Sqrt2
	case "leaky_relu":
		slope := 0.01
		if len(param) > 0 {
			slope = param[0]
		}
		return math.Sqrt(2 / (1 + slope*slope))
	case "selu":
		return 3.0 / 4
	}
	fail("calculate_gain", nil, "unsupported nonlinearity %q", nonlinearity)
	return 0
}

// XavierUniform fills t with U(-a, a), a = gain·√(6/(fan_in+fan_out))
// (Glorot; torch.nn.init.xavier_uniform_).
func XavierUniform(t *tensor.Tensor, gain float64, g *tensor.Generator) *tensor.Tensor {
	fi, fo := fans("xavier_uniform_", t)
	std := gain * math.Sqrt(2/float64(fi+fo))
	a := math.Sqrt(3) * std
	return Uniform(t, -a, a, g)
}

// XavierNormal fills t with N(0, std²), std = gain·√(2/(fan_in+fan_out))
// (torch.nn.init.xavier_normal_).
func XavierNormal(t *tensor.Tensor, gain float64, g *tensor.Generator) *tensor.Tensor {
	fi, fo := fans("xavier_normal_", t)
	return Normal(t, 0, gain*math.Sqrt(2/float64(fi+fo)), g)
}

func kaimingStd(fn string, t *tensor.Tensor, a float64, mode Mode, nonlinearity string) float64 {
	fi, fo := fans(fn, t)
	var fan int
	switch mode {
	case FanIn, "":
		fan = fi
	case FanOut:
		fan = fo
	default:
		fail(fn, t, "mode %q not supported, please use one of fan_in, fan_out", string(mode))
	}
	if nonlinearity == "" {
		nonlinearity = "leaky_relu"
	}
	return CalculateGain(nonlinearity, a) / math.Sqrt(float64(fan))
}

// KaimingUniform fills t with U(-bound, bound), bound = gain·√(3/fan) (He;
// torch.nn.init.kaiming_uniform_). a is the negative slope of a following
// leaky_relu, mode picks fan_in (the default when "") or fan_out, and
// nonlinearity defaults to "leaky_relu" when "". A tensor without elements
// is left as it is, as in PyTorch.
func KaimingUniform(t *tensor.Tensor, a float64, mode Mode, nonlinearity string, g *tensor.Generator) *tensor.Tensor {
	if t.Numel() == 0 {
		return t
	}
	bound := math.Sqrt(3) * kaimingStd("kaiming_uniform_", t, a, mode, nonlinearity)
	return Uniform(t, -bound, bound, g)
}

// KaimingNormal fills t with N(0, std²), std = gain/√fan
// (torch.nn.init.kaiming_normal_); arguments as KaimingUniform.
func KaimingNormal(t *tensor.Tensor, a float64, mode Mode, nonlinearity string, g *tensor.Generator) *tensor.Tensor {
	if t.Numel() == 0 {
		return t
	}
	return Normal(t, 0, kaimingStd("kaiming_normal_", t, a, mode, nonlinearity), g)
}

// Orthogonal fills t (at least 2-d; trailing dims are flattened) with a
// (semi-)orthogonal matrix times gain (torch.nn.init.orthogonal_): the Q of
// the QR decomposition of a standard-normal matrix, with R's diagonal made
// positive so Q is uniformly (Haar) distributed. QR runs on the host in
// float64 (modified Gram–Schmidt with one reorthogonalisation pass).
func Orthogonal(t *tensor.Tensor, gain float64, g *tensor.Generator) *tensor.Tensor {
	if t.Dim() < 2 {
		fail("orthogonal_", t, "only tensors with 2 or more dimensions are supported")
	}
	if t.Numel() == 0 {
		return t
	}
	floatDT("orthogonal_", t)
	rows := t.Size(0)
	cols := t.Numel() / rows
	// Orthonormalise the columns of a tall m×n matrix (m >= n).
	m, n := rows, cols
	if rows < cols {
		m, n = cols, rows
	}
	var a []float64
	tensor.NoGrad(func() {
		a = tensor.NormalGen(g, tensor.MustDevice("cpu"), 0, 1, dtype.F64, m, n).Float64s()
	})
	q := gramSchmidt(a, m, n)
	out := make([]float64, rows*cols)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			v := gain * q[i*n+j]
			if rows < cols { // transpose back: out is rows(=n) × cols(=m)
				out[j*cols+i] = v
			} else {
				out[i*cols+j] = v
			}
		}
	}
	return fill(t, tensor.FromSlice(t.Device(), out, t.Shape()...))
}

// gramSchmidt returns the m×n (m >= n, row-major) matrix whose columns are
// the orthonormalised columns of a, in order. A column that is (numerically)
// dependent on the previous ones is replaced by a unit vector orthogonal to
// them, which happens with probability zero for Gaussian input.
func gramSchmidt(a []float64, m, n int) []float64 {
	q := make([]float64, m*n)
	col := make([]float64, m)
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			col[i] = a[i*n+j]
		}
		for attempt := 0; ; attempt++ {
			for pass := 0; pass < 2; pass++ {
				for k := 0; k < j; k++ {
					dot := 0.0
					for i := 0; i < m; i++ {
						dot += q[i*n+k] * col[i]
					}
					for i := 0; i < m; i++ {
						col[i] -= dot * q[i*n+k]
					}
				}
			}
			norm := 0.0
			for i := 0; i < m; i++ {
				norm += col[i] * col[i]
			}
			norm = math.Sqrt(norm)
			if norm > 1e-10 || attempt >= m {
				for i := 0; i < m; i++ {
					q[i*n+j] = col[i] / norm
				}
				break
			}
			for i := range col {
				col[i] = 0
			}
			col[attempt] = 1
		}
	}
	return q
}
