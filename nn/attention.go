package nn

import (
	"math"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	nninit "github.com/gotpu/gotpu/nn/init"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// MultiheadAttentionOpts are torch.nn.MultiheadAttention's optional
// arguments; the zero value is torch's default.
type MultiheadAttentionOpts struct {
	Dropout float64 // dropout on the attention weights in training
	NoBias  bool    // bias=False: no in_proj_bias and no out_proj.bias
	// AddBiasKV appends learnt bias_k and bias_v to the key and value
	// sequences.
	AddBiasKV bool
	// AddZeroAttn appends a zero key and value to every head.
	AddZeroAttn bool
	// KDim and VDim are the key and value feature sizes (0: EmbedDim); when
	// either differs from EmbedDim the projections are separate
	// q_proj_weight, k_proj_weight and v_proj_weight.
	KDim, VDim int
	// BatchFirst takes and returns [N, L, E] instead of [L, N, E].
	BatchFirst bool
}

// MultiheadAttention is torch.nn.MultiheadAttention: parameters
// in_proj_weight [3E, E] (or q/k/v_proj_weight), in_proj_bias [3E],
// bias_k, bias_v [1, 1, E] and the out_proj Linear, named and initialised as
// in torch (xavier_uniform_ projections, zero biases, xavier_normal_
// bias_k/bias_v).
type MultiheadAttention struct {
	Base
	EmbedDim, NumHeads, HeadDim, KDim, VDim int
	Dropout                                 float64
	BatchFirst, AddZeroAttn                 bool
	InProjWeight                            *tensor.Tensor // nil with separate projections
	QProjWeight, KProjWeight, VProjWeight   *tensor.Tensor // nil with the packed projection
	InProjBias, BiasK, BiasV                *tensor.Tensor
	OutProj                                 *Linear
	gen                                     *tensor.Generator
}

// NewMultiheadAttention returns a MultiheadAttention with embedDim split
// into numHeads heads.
func NewMultiheadAttention(dev device.Device, embedDim, numHeads int, mo MultiheadAttentionOpts, opts ...Option) *MultiheadAttention {
	positive("MultiheadAttention", "embed_dim and num_heads", embedDim, numHeads)
	if embedDim%numHeads != 0 {
		fail("MultiheadAttention", nil, "embed_dim must be divisible by num_heads")
	}
	if !(mo.Dropout >= 0 && mo.Dropout <= 1) {
		fail("MultiheadAttention", nil, "dropout must be in [0, 1], got %v", mo.Dropout)
	}
	nonNegative("MultiheadAttention", "kdim and vdim", mo.KDim, mo.VDim)
	o := makeOptions(opts)
	m := &MultiheadAttention{EmbedDim: embedDim, NumHeads: numHeads, HeadDim: embedDim / numHeads,
		KDim: mo.KDim, VDim: mo.VDim, Dropout: mo.Dropout, BatchFirst: mo.BatchFirst, AddZeroAttn: mo.AddZeroAttn, gen: o.gen}
	if m.KDim == 0 {
		m.KDim = embedDim
	}
	if m.VDim == 0 {
		m.VDim = embedDim
	}
	e := embedDim
	if m.KDim == e && m.VDim == e {
		m.InProjWeight = m.RegisterParameter("in_proj_weight", nninit.XavierUniform(o.empty(dev, 3*e, e), 1, o.gen))
		m.RegisterParameter("q_proj_weight", nil)
		m.RegisterParameter("k_proj_weight", nil)
		m.RegisterParameter("v_proj_weight", nil)
	} else {
		m.QProjWeight = m.RegisterParameter("q_proj_weight", nninit.XavierUniform(o.empty(dev, e, e), 1, o.gen))
		m.KProjWeight = m.RegisterParameter("k_proj_weight", nninit.XavierUniform(o.empty(dev, e, m.KDim), 1, o.gen))
		m.VProjWeight = m.RegisterParameter("v_proj_weight", nninit.XavierUniform(o.empty(dev, e, m.VDim), 1, o.gen))
		m.RegisterParameter("in_proj_weight", nil)
	}
	if mo.NoBias {
		m.RegisterParameter("in_proj_bias", nil)
	} else {
		m.InProjBias = m.RegisterParameter("in_proj_bias", o.empty(dev, 3*e))
	}
	m.OutProj = NewLinear(dev, e, e, !mo.NoBias, opts...)
	if m.OutProj.Bias != nil {
		nninit.Zeros(m.OutProj.Bias)
	}
	m.RegisterModule("out_proj", m.OutProj)
	if mo.AddBiasKV {
		m.BiasK = m.RegisterParameter("bias_k", nninit.XavierNormal(o.empty(dev, 1, 1, e), 1, o.gen))
		m.BiasV = m.RegisterParameter("bias_v", nninit.XavierNormal(o.empty(dev, 1, 1, e), 1, o.gen))
	} else {
		m.RegisterParameter("bias_k", nil)
		m.RegisterParameter("bias_v", nil)
	}
	return m
}

// AttentionOpts are the optional arguments of MultiheadAttention.Attend.
type AttentionOpts struct {
	// KeyPaddingMask [N, S] (or [S] unbatched): bool (true: ignore that key)
	// or float (added to the scores).
	KeyPaddingMask *tensor.Tensor
	// AttnMask [L, S] or [N·NumHeads, L, S]: bool (true: not allowed to
	// attend) or float (added to the scores).
	AttnMask *tensor.Tensor
	// IsCausal masks every key after the query's position (the mask of
	// nn.Transformer.generate_square_subsequent_mask), added to AttnMask.
	IsCausal bool
	// NeedWeights returns the attention weights (torch's default is true;
	// here false, which skips materialising them).
	NeedWeights bool
	// NoAverageWeights returns per-head weights [N, NumHeads, L, S] instead
	// of their mean over heads [N, L, S] (average_attn_weights=False).
	NoAverageWeights bool
}

// Forward is self-attention of x without masks: Attend(x, x, x).
func (m *MultiheadAttention) Forward(x *tensor.Tensor) *tensor.Tensor {
	out, _ := m.Attend(x, x, x, AttentionOpts{})
	return out
}

// Attend attends from query [L, N, E] to key [S, N, KDim] and value [S, N,
// VDim] ([N, L, E] etc. with BatchFirst; [L, E] etc. unbatched) and returns
// the output, shaped as query, and with NeedWeights the attention weights
// ([N, L, S], or [N, NumHeads, L, S] with NoAverageWeights; without N when
// unbatched), after dropout as in torch.
func (m *MultiheadAttention) Attend(query, key, value *tensor.Tensor, ao AttentionOpts) (out, weights *tensor.Tensor) {
	in := []*tensor.Tensor{query, key, value}
	batched := query.Dim() == 3
	if !batched && query.Dim() != 2 || key.Dim() != query.Dim() || value.Dim() != query.Dim() {
		fail("MultiheadAttention", in, "query, key and value must all be 3-D (batched) or 2-D (unbatched)")
	}
	if query.Size(-1) != m.EmbedDim || key.Size(-1) != m.KDim || value.Size(-1) != m.VDim {
		fail("MultiheadAttention", in, "expected feature sizes %d, %d, %d", m.EmbedDim, m.KDim, m.VDim)
	}
	// Work in [N, L, E].
	q, k, v := query, key, value
	if !batched {
		q, k, v = q.Unsqueeze(0), k.Unsqueeze(0), v.Unsqueeze(0)
	} else if !m.BatchFirst {
		q, k, v = q.Transpose(0, 1), k.Transpose(0, 1), v.Transpose(0, 1)
	}
	n, l, s := q.Size(0), q.Size(1), k.Size(1)
	if k.Size(0) != n || v.Size(0) != n || v.Size(1) != s {
		fail("MultiheadAttention", in, "key and value must have the same batch and sequence sizes as each other and batch size as query")
	}
	q, k, v = m.project(query, key, value, q, k, v)
	mask := m.additiveMask(ao, batched, n, l, s, q.DType(), q.Device())
	if m.BiasK != nil {
		k = tensor.Cat([]*tensor.Tensor{k, m.BiasK.Expand(n, 1, m.EmbedDim)}, 1)
		v = tensor.Cat([]*tensor.Tensor{v, m.BiasV.Expand(n, 1, m.EmbedDim)}, 1)
		mask = padLastZero(mask)
		s++
	}
	h, hd := m.NumHeads, m.HeadDim
	heads := func(t *tensor.Tensor, len int) *tensor.Tensor {
		return t.Reshape(n, len, h, hd).Transpose(1, 2) // [N, H, len, hd]
	}
	qh, kh, vh := heads(q, l), heads(k, s), heads(v, s)
	if m.AddZeroAttn {
		z := tensor.Zeros(kh.Device(), kh.DType(), n, h, 1, hd)
		kh = tensor.Cat([]*tensor.Tensor{kh, z}, 2)
		vh = tensor.Cat([]*tensor.Tensor{vh, z}, 2)
		mask = padLastZero(mask)
		s++
	}
	p := 0.0
	if m.Training() {
		p = m.Dropout
	}
	var ctx *tensor.Tensor
	if ao.NeedWeights {
		scores := tensor.Matmul(qh.DivScalar(math.Sqrt(float64(hd))), kh.Transpose(-2, -1))
		if mask != nil {
			scores = scores.Add(mask)
		}
		weights = scores.Softmax(-1)
		if p > 0 {
			weights = tensor.DropoutGen(m.gen, weights, p, true)
		}
		ctx = tensor.Matmul(weights, vh)
	} else {
		ctx = tensor.ScaledDotProductAttention(qh, kh, vh, tensor.SDPAOpts{Mask: mask, DropoutP: p, Generator: m.gen})
	}
	out = m.OutProj.Forward(ctx.Transpose(1, 2).Reshape(n, l, m.EmbedDim))
	if !batched {
		out = out.Squeeze(0)
	} else if !m.BatchFirst {
		out = out.Transpose(0, 1)
	}
	if weights != nil {
		if !ao.NoAverageWeights {
			weights = weights.Sum([]int{1}, false).DivScalar(float64(h))
		}
		if !batched {
			weights = weights.Squeeze(0)
		}
	}
	return out, weights
}

// project applies the input projections to q, k, v ([N, *, *]); the
// originals decide whether the packed self-attention path applies.
func (m *MultiheadAttention) project(query, key, value, q, k, v *tensor.Tensor) (pq, pk, pv *tensor.Tensor) {
	e := m.EmbedDim
	var bq, bk, bv *tensor.Tensor
	if m.InProjBias != nil {
		bq, bk, bv = m.InProjBias.Narrow(0, 0, e), m.InProjBias.Narrow(0, e, e), m.InProjBias.Narrow(0, 2*e, e)
	}
	if m.InProjWeight == nil {
		return tensor.Linear(q, m.QProjWeight, bq), tensor.Linear(k, m.KProjWeight, bk), tensor.Linear(v, m.VProjWeight, bv)
	}
	w := m.InProjWeight
	if query == key && key == value {
		qkv := tensor.Linear(q, w, m.InProjBias).Chunk(3, -1)
		return qkv[0], qkv[1], qkv[2]
	}
	wq, wk, wv := w.Narrow(0, 0, e), w.Narrow(0, e, e), w.Narrow(0, 2*e, e)
	return tensor.Linear(q, wq, bq), tensor.Linear(k, wk, bk), tensor.Linear(v, wv, bv)
}

// additiveMask merges the attention mask, the key padding mask and the
// causal mask into one float mask broadcastable to [N, H, L, S] (0 attends,
// -inf does not), or nil.
func (m *MultiheadAttention) additiveMask(ao AttentionOpts, batched bool, n, l, s int, dt dtype.DType, dev device.Device) *tensor.Tensor {
	var mask *tensor.Tensor
	add := func(t *tensor.Tensor) {
		if mask == nil {
			mask = t
		} else {
			mask = mask.Add(t)
		}
	}
	toFloat := func(t *tensor.Tensor) *tensor.Tensor {
		if t.DType() == dtype.Bool {
			return tensor.Where(t, tensor.Full(t.Device(), dt, math.Inf(-1)), tensor.Zeros(t.Device(), dt))
		}
		if !t.DType().IsFloat() {
			fail("MultiheadAttention", []*tensor.Tensor{t}, "only bool and floating types of masks are supported")
		}
		return tensor.Apply1("convert", []*tensor.Tensor{t}, op.Attrs{"dtype": dt})
	}
	if am := ao.AttnMask; am != nil {
		switch {
		case am.Dim() == 2 && am.Size(0) == l && am.Size(1) == s:
			add(toFloat(am).Reshape(1, 1, l, s))
		case am.Dim() == 3 && am.Size(0) == n*m.NumHeads && am.Size(1) == l && am.Size(2) == s:
			add(toFloat(am).Reshape(n, m.NumHeads, l, s))
		default:
			fail("MultiheadAttention", []*tensor.Tensor{am}, "attn_mask should be [%d, %d] or [%d, %d, %d]", l, s, n*m.NumHeads, l, s)
		}
	}
	if kp := ao.KeyPaddingMask; kp != nil {
		ok := batched && kp.Dim() == 2 && kp.Size(0) == n && kp.Size(1) == s || !batched && kp.Dim() == 1 && kp.Size(0) == s
		if !ok {
			fail("MultiheadAttention", []*tensor.Tensor{kp}, "key_padding_mask should be [%d, %d] (or [%d] unbatched)", n, s, s)
		}
		add(toFloat(kp).Reshape(n, 1, 1, s))
	}
	if ao.IsCausal {
		add(tensor.Full(dev, dt, math.Inf(-1), l, s).Triu(1).Reshape(1, 1, l, s))
	}
	return mask
}

// padLastZero appends a zero column to the key dim of a mask (nil stays nil).
func padLastZero(mask *tensor.Tensor) *tensor.Tensor {
	if mask == nil {
		return nil
	}
	return tensor.Pad(mask, []int{0, 1}, "constant", 0)
}
