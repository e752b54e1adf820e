package nn

import (
	"math"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/tensor"
)

// Identity returns its input (torch.nn.Identity).
type Identity struct{ Base }

// NewIdentity returns an Identity.
func NewIdentity() *Identity { return &Identity{} }

// Forward returns x itself.
func (m *Identity) Forward(x *tensor.Tensor) *tensor.Tensor { return x }

// Linear is y = x Wᵀ + b (torch.nn.Linear). Weight is [out, in], Bias [out]
// or nil; both start as U(-1/√in, 1/√in) (kaiming_uniform_ with a=√5, as
// torch).
type Linear struct {
	Base
	InFeatures, OutFeatures int
	Weight, Bias            *tensor.Tensor
}

// NewLinear returns a Linear on dev mapping in features to out, with a bias
// unless bias is false.
func NewLinear(dev device.Device, in, out int, bias bool, opts ...Option) *Linear {
	nonNegative("Linear", "in_features and out_features", in, out)
	o := makeOptions(opts)
	m := &Linear{InFeatures: in, OutFeatures: out}
	m.Weight = m.RegisterParameter("weight", o.kaimingDefault(o.empty(dev, out, in)))
	if bias {
		m.Bias = m.RegisterParameter("bias", o.uniform(dev, biasBound(m.Weight), out))
	} else {
		m.RegisterParameter("bias", nil)
	}
	return m
}

// Forward maps x [..., in] to [..., out].
func (m *Linear) Forward(x *tensor.Tensor) *tensor.Tensor {
	if x.Dim() == 0 || x.Size(-1) != m.InFeatures {
		fail("Linear", []*tensor.Tensor{x, m.Weight}, "expected input with last dimension %d", m.InFeatures)
	}
	return tensor.Linear(x, m.Weight, m.Bias)
}

// Bilinear is y = x1ᵀ A x2 + b (torch.nn.Bilinear): Weight is [out, in1,
// in2], Bias [out] or nil, both U(-1/√in1, 1/√in1).
type Bilinear struct {
	Base
	In1Features, In2Features, OutFeatures int
	Weight, Bias                          *tensor.Tensor
}

// NewBilinear returns a Bilinear on dev.
func NewBilinear(dev device.Device, in1, in2, out int, bias bool, opts ...Option) *Bilinear {
	nonNegative("Bilinear", "features", in1, in2, out)
	o := makeOptions(opts)
	m := &Bilinear{In1Features: in1, In2Features: in2, OutFeatures: out}
	bound := 0.0
	if in1 > 0 {
		bound = 1 / math.Sqrt(float64(in1))
	}
	m.Weight = m.RegisterParameter("weight", o.uniform(dev, bound, out, in1, in2))
	if bias {
		m.Bias = m.RegisterParameter("bias", o.uniform(dev, bound, out))
	} else {
		m.RegisterParameter("bias", nil)
	}
	return m
}

// Forward2 maps x1 [..., in1] and x2 [..., in2] (the same leading dims) to
// [..., out].
func (m *Bilinear) Forward2(x1, x2 *tensor.Tensor) *tensor.Tensor {
	if x1.Dim() == 0 || x1.Dim() != x2.Dim() || x1.Size(-1) != m.In1Features || x2.Size(-1) != m.In2Features {
		fail("Bilinear", []*tensor.Tensor{x1, x2, m.Weight}, "expected inputs [..., %d] and [..., %d] with the same leading dimensions", m.In1Features, m.In2Features)
	}
	lead := x1.Shape()[:x1.Dim()-1]
	for i, s := range lead {
		if x2.Size(i) != s {
			fail("Bilinear", []*tensor.Tensor{x1, x2}, "leading dimensions differ")
		}
	}
	n := 1
	for _, s := range lead {
		n *= s
	}
	a := x1.Reshape(n, m.In1Features)
	b := x2.Reshape(n, 1, m.In2Features)
	// t[n, o, j] = Σ_i x1[n, i] W[o, i, j]
	w := m.Weight.Permute(1, 0, 2).Reshape(m.In1Features, m.OutFeatures*m.In2Features)
	t := tensor.Matmul(a, w).Reshape(n, m.OutFeatures, m.In2Features)
	y := t.Mul(b).Sum([]int{-1}, false)
	if m.Bias != nil {
		y = y.Add(m.Bias)
	}
	return y.Reshape(append(append([]int(nil), lead...), m.OutFeatures)...)
}
