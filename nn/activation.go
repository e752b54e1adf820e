package nn

import (
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/tensor"
)

// Activation modules: parameter-free (except PReLU) wrappers of the
// elementwise functions with torch.nn's names and defaults.

// ReLU is max(0, x) (torch.nn.ReLU).
type ReLU struct{ Base }

// NewReLU returns a ReLU.
func NewReLU() *ReLU { return &ReLU{} }

// Forward applies the activation.
func (m *ReLU) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Relu() }

// ReLU6 is min(max(0, x), 6) (torch.nn.ReLU6).
type ReLU6 struct{ Base }

// NewReLU6 returns a ReLU6.
func NewReLU6() *ReLU6 { return &ReLU6{} }

// Forward applies the activation.
func (m *ReLU6) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Relu6() }

// GELU is x·Φ(x), or its tanh approximation when Approximate is "tanh"
// (torch.nn.GELU).
type GELU struct {
	Base
	Approximate string // "none" or "tanh"
}

// NewGELU returns a GELU; approximate is "none" (or "") or "tanh".
func NewGELU(approximate string) *GELU {
	if approximate == "" {
		approximate = "none"
	}
	if approximate != "none" && approximate != "tanh" {
		fail("GELU", nil, "approximate must be \"none\" or \"tanh\", got %q", approximate)
	}
	return &GELU{Approximate: approximate}
}

// Forward applies the activation.
func (m *GELU) Forward(x *tensor.Tensor) *tensor.Tensor {
	if m.Approximate == "tanh" {
		return x.GeluTanh()
	}
	return x.Gelu()
}

// SiLU is x·σ(x) (torch.nn.SiLU).
type SiLU struct{ Base }

// NewSiLU returns a SiLU.
func NewSiLU() *SiLU { return &SiLU{} }

// Forward applies the activation.
func (m *SiLU) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Silu() }

// Sigmoid is 1/(1+e⁻ˣ) (torch.nn.Sigmoid).
type Sigmoid struct{ Base }

// NewSigmoid returns a Sigmoid.
func NewSigmoid() *Sigmoid { return &Sigmoid{} }

// Forward applies the activation.
func (m *Sigmoid) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Sigmoid() }

// Tanh is tanh(x) (torch.nn.Tanh).
type Tanh struct{ Base }

// NewTanh returns a Tanh.
func NewTanh() *Tanh { return &Tanh{} }

// Forward applies the activation.
func (m *Tanh) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Tanh() }

// Softmax normalises exp(x) along Dim to sum to 1 (torch.nn.Softmax).
type Softmax struct {
	Base
	Dim int
}

// NewSoftmax returns a Softmax along dim (negative counts from the end).
func NewSoftmax(dim int) *Softmax { return &Softmax{Dim: dim} }

// Forward applies the activation.
func (m *Softmax) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Softmax(m.Dim) }

// LogSoftmax is log(softmax(x)) along Dim (torch.nn.LogSoftmax).
type LogSoftmax struct {
	Base
	Dim int
}

// NewLogSoftmax returns a LogSoftmax along dim.
func NewLogSoftmax(dim int) *LogSoftmax { return &LogSoftmax{Dim: dim} }

// Forward applies the activation.
func (m *LogSoftmax) Forward(x *tensor.Tensor) *tensor.Tensor { return x.LogSoftmax(m.Dim) }

// Softmin is softmax(-x) along Dim (torch.nn.Softmin).
type Softmin struct {
	Base
	Dim int
}

// NewSoftmin returns a Softmin along dim.
func NewSoftmin(dim int) *Softmin { return &Softmin{Dim: dim} }

// Forward applies the activation.
func (m *Softmin) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Neg().Softmax(m.Dim) }

// LeakyReLU is x for x >= 0, NegativeSlope·x otherwise (torch.nn.LeakyReLU).
type LeakyReLU struct {
	Base
	NegativeSlope float64
}

// NewLeakyReLU returns a LeakyReLU; torch's default slope is 0.01.
func NewLeakyReLU(negativeSlope float64) *LeakyReLU { return &LeakyReLU{NegativeSlope: negativeSlope} }

// Forward applies the activation.
func (m *LeakyReLU) Forward(x *tensor.Tensor) *tensor.Tensor { return x.LeakyRelu(m.NegativeSlope) }

// ELU is x for x > 0, Alpha·(eˣ-1) otherwise (torch.nn.ELU).
type ELU struct {
	Base
	Alpha float64
}

// NewELU returns an ELU; torch's default alpha is 1.
func NewELU(alpha float64) *ELU { return &ELU{Alpha: alpha} }

// Forward applies the activation.
func (m *ELU) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Elu(m.Alpha) }

// CELU is max(0, x) + min(0, Alpha·(e^(x/Alpha)-1)) (torch.nn.CELU).
type CELU struct {
	Base
	Alpha float64
}

// NewCELU returns a CELU; torch's default alpha is 1.
func NewCELU(alpha float64) *CELU {
	if alpha == 0 {
		fail("CELU", nil, "alpha cannot be 0")
	}
	return &CELU{Alpha: alpha}
}

// Forward applies the activation; at x = 0 the gradient is the negative
// branch's (1), as torch's.
func (m *CELU) Forward(x *tensor.Tensor) *tensor.Tensor {
	neg := x.DivScalar(m.Alpha).Expm1().MulScalar(m.Alpha)
	return tensor.Where(x.GtScalar(0), x, neg)
}

// SELU is scale·elu(x, alpha) with the self-normalising constants
// (torch.nn.SELU).
type SELU struct{ Base }

// NewSELU returns a SELU.
func NewSELU() *SELU { return &SELU{} }

// Forward applies the activation.
func (m *SELU) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Selu() }

// Mish is x·tanh(softplus(x)) (torch.nn.Mish).
type Mish struct{ Base }

// NewMish returns a Mish.
func NewMish() *Mish { return &Mish{} }

// Forward applies the activation.
func (m *Mish) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Mish() }

// Softplus is log(1+e^(Beta·x))/Beta, linear above Threshold
// (torch.nn.Softplus).
type Softplus struct {
	Base
	Beta, Threshold float64
}

// NewSoftplus returns a Softplus; torch's defaults are beta 1, threshold 20.
func NewSoftplus(beta, threshold float64) *Softplus {
	return &Softplus{Beta: beta, Threshold: threshold}
}

// Forward applies the activation.
func (m *Softplus) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Softplus(m.Beta, m.Threshold) }

// Hardswish is x·relu6(x+3)/6 (torch.nn.Hardswish).
type Hardswish struct{ Base }

// NewHardswish returns a Hardswish.
func NewHardswish() *Hardswish { return &Hardswish{} }

// Forward applies the activation.
func (m *Hardswish) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Hardswish() }

// Hardsigmoid is relu6(x+3)/6 (torch.nn.Hardsigmoid).
type Hardsigmoid struct{ Base }

// NewHardsigmoid returns a Hardsigmoid.
func NewHardsigmoid() *Hardsigmoid { return &Hardsigmoid{} }

// Forward applies the activation.
func (m *Hardsigmoid) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Hardsigmoid() }

// Hardtanh clamps x to [MinVal, MaxVal] (torch.nn.Hardtanh).
type Hardtanh struct {
	Base
	MinVal, MaxVal float64
}

// NewHardtanh returns a Hardtanh; torch's defaults are -1 and 1.
func NewHardtanh(minVal, maxVal float64) *Hardtanh {
	if maxVal < minVal {
		fail("Hardtanh", nil, "max_val %v must be at least min_val %v", maxVal, minVal)
	}
	return &Hardtanh{MinVal: minVal, MaxVal: maxVal}
}

// Forward applies the activation.
func (m *Hardtanh) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Hardtanh(m.MinVal, m.MaxVal) }

// Softsign is x/(1+|x|) (torch.nn.Softsign).
type Softsign struct{ Base }

// NewSoftsign returns a Softsign.
func NewSoftsign() *Softsign { return &Softsign{} }

// Forward applies the activation.
func (m *Softsign) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Div(x.Abs().AddScalar(1)) }

// Tanhshrink is x - tanh(x) (torch.nn.Tanhshrink).
type Tanhshrink struct{ Base }

// NewTanhshrink returns a Tanhshrink.
func NewTanhshrink() *Tanhshrink { return &Tanhshrink{} }

// Forward applies the activation.
func (m *Tanhshrink) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Sub(x.Tanh()) }

// LogSigmoid is log(σ(x)) = -softplus(-x) (torch.nn.LogSigmoid).
type LogSigmoid struct{ Base }

// NewLogSigmoid returns a LogSigmoid.
func NewLogSigmoid() *LogSigmoid { return &LogSigmoid{} }

// Forward applies the activation.
func (m *LogSigmoid) Forward(x *tensor.Tensor) *tensor.Tensor {
	return x.Neg().Softplus(1, 20).Neg()
}

// GLU splits x in halves a, b along Dim and returns a·σ(b) (torch.nn.GLU).
type GLU struct {
	Base
	Dim int
}

// NewGLU returns a GLU along dim (torch's default -1).
func NewGLU(dim int) *GLU { return &GLU{Dim: dim} }

// Forward applies the activation; x.Size(Dim) must be even.
func (m *GLU) Forward(x *tensor.Tensor) *tensor.Tensor {
	if x.Dim() == 0 || x.Size(m.Dim)%2 != 0 {
		fail("GLU", []*tensor.Tensor{x}, "halving dimension %d must be even", m.Dim)
	}
	h := x.Chunk(2, m.Dim)
	return h[0].Mul(h[1].Sigmoid())
}

// PReLU is x for x >= 0, a·x otherwise, with a learnt slope Weight: one
// shared value or one per channel (dim 1) (torch.nn.PReLU).
type PReLU struct {
	Base
	NumParameters int
	Weight        *tensor.Tensor
}

// NewPReLU returns a PReLU with numParameters slopes (1 or the channel
// count) starting at init (torch's defaults: 1 and 0.25).
func NewPReLU(dev device.Device, numParameters int, init float64, opts ...Option) *PReLU {
	positive("PReLU", "num_parameters", numParameters)
	o := makeOptions(opts)
	m := &PReLU{NumParameters: numParameters}
	m.Weight = m.RegisterParameter("weight", tensor.Full(dev, o.dt, init, numParameters))
	return m
}

// Forward applies the activation.
func (m *PReLU) Forward(x *tensor.Tensor) *tensor.Tensor {
	w := m.Weight
	if m.NumParameters > 1 {
		ch := 0
		if x.Dim() >= 2 {
			ch = 1
		}
		if x.Dim() == 0 || x.Size(ch) != m.NumParameters {
			fail("PReLU", []*tensor.Tensor{x, w}, "expected %d channels in dim %d", m.NumParameters, ch)
		}
		shape := make([]int, x.Dim()-ch)
		for i := range shape {
			shape[i] = 1
		}
		shape[0] = m.NumParameters
		w = w.Reshape(shape...)
	}
	return tensor.Where(x.GtScalar(0), x, x.Mul(w))
}
