package nn

import (
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/tensor"
)

// TransformerEncoderLayerOpts are torch.nn.TransformerEncoderLayer's
// optional arguments; the zero value is torch's default (feed-forward 2048,
// dropout 0.1, relu, eps 1e-5, sequence-first, post-norm).
type TransformerEncoderLayerOpts struct {
	DimFeedforward int     // 0 means 2048
	Dropout        float64 // 0 means 0.1 unless NoDropout
	NoDropout      bool    // dropout=0.0
	// Activation is "relu" (or "") or "gelu"; ActivationLayer, when set,
	// replaces it with any Layer (registered as "activation" when it is a
	// Module, as torch registers a module-valued activation).
	Activation      string
	ActivationLayer Layer
	LayerNormEps    float64 // 0 means 1e-5
	BatchFirst      bool
	NormFirst       bool
	NoBias          bool // bias=False (torch >= 2.1) for linears, norms and attention
}

// TransformerEncoderLayer is self-attention and a feed-forward block with
// residual connections and layer norms (torch.nn.TransformerEncoderLayer),
// with torch's submodule names: self_attn, linear1, dropout, linear2, norm1,
// norm2, dropout1, dropout2.
type TransformerEncoderLayer struct {
	Base
	SelfAttn                    *MultiheadAttention
	Linear1, Linear2            *Linear
	Dropout, Dropout1, Dropout2 *Dropout
	Norm1, Norm2                *LayerNorm
	Activation                  Layer
	NormFirst                   bool
}

// NewTransformerEncoderLayer returns a layer of width dModel with nhead
// attention heads.
func NewTransformerEncoderLayer(dev device.Device, dModel, nhead int, to TransformerEncoderLayerOpts, opts ...Option) *TransformerEncoderLayer {
	ff := to.DimFeedforward
	if ff == 0 {
		ff = 2048
	}
	p := to.Dropout
	if p == 0 && !to.NoDropout {
		p = 0.1
	}
	eps := to.LayerNormEps
	if eps == 0 {
		eps = 1e-5
	}
	m := &TransformerEncoderLayer{NormFirst: to.NormFirst}
	m.SelfAttn = NewMultiheadAttention(dev, dModel, nhead, MultiheadAttentionOpts{Dropout: p, BatchFirst: to.BatchFirst, NoBias: to.NoBias}, opts...)
	m.RegisterModule("self_attn", m.SelfAttn)
	m.Linear1 = NewLinear(dev, dModel, ff, !to.NoBias, opts...)
	m.RegisterModule("linear1", m.Linear1)
	m.Dropout = NewDropout(p, opts...)
	m.RegisterModule("dropout", m.Dropout)
	m.Linear2 = NewLinear(dev, ff, dModel, !to.NoBias, opts...)
	m.RegisterModule("linear2", m.Linear2)
	lo := LayerNormOpts{Eps: eps, NoBias: to.NoBias}
	m.Norm1 = NewLayerNorm(dev, []int{dModel}, lo, opts...)
	m.RegisterModule("norm1", m.Norm1)
	m.Norm2 = NewLayerNorm(dev, []int{dModel}, lo, opts...)
	m.RegisterModule("norm2", m.Norm2)
	m.Dropout1 = NewDropout(p, opts...)
	m.RegisterModule("dropout1", m.Dropout1)
	m.Dropout2 = NewDropout(p, opts...)
	m.RegisterModule("dropout2", m.Dropout2)
	switch {
	case to.ActivationLayer != nil:
		m.Activation = to.ActivationLayer
		if mod, ok := to.ActivationLayer.(Module); ok {
			m.RegisterModule("activation", mod)
		}
	case to.Activation == "" || to.Activation == "relu":
		m.Activation = NewReLU()
	case to.Activation == "gelu":
		m.Activation = NewGELU("none")
	default:
		fail("TransformerEncoderLayer", nil, "activation should be relu/gelu, not %s", to.Activation)
	}
	return m
}

// Forward runs the layer on src ([S, N, E], [N, S, E] with BatchFirst, or
// unbatched [S, E]) without masks.
func (m *TransformerEncoderLayer) Forward(src *tensor.Tensor) *tensor.Tensor {
	return m.ForwardMask(src, nil, nil, false)
}

// ForwardMask runs the layer with an attention mask ([S, S] or [N·nhead, S,
// S]), a key padding mask ([N, S]) and/or a causal mask; see AttentionOpts.
func (m *TransformerEncoderLayer) ForwardMask(src, srcMask, keyPaddingMask *tensor.Tensor, isCausal bool) *tensor.Tensor {
	ao := AttentionOpts{AttnMask: srcMask, KeyPaddingMask: keyPaddingMask, IsCausal: isCausal}
	sa := func(x *tensor.Tensor) *tensor.Tensor {
		out, _ := m.SelfAttn.Attend(x, x, x, ao)
		return m.Dropout1.Forward(out)
	}
	ff := func(x *tensor.Tensor) *tensor.Tensor {
		return m.Dropout2.Forward(m.Linear2.Forward(m.Dropout.Forward(m.Activation.Forward(m.Linear1.Forward(x)))))
	}
	x := src
	if m.NormFirst {
		x = x.Add(sa(m.Norm1.Forward(x)))
		return x.Add(ff(m.Norm2.Forward(x)))
	}
	x = m.Norm1.Forward(x.Add(sa(x)))
	return m.Norm2.Forward(x.Add(ff(x)))
}
