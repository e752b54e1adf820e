package models

import (
	"fmt"
	"math"
	"strconv"

	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/hf/config"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/tensor"
)

// arch is what distinguishes the decoder families: one decoder
// implementation covers GPT-2, Llama, Mistral, Qwen2, Qwen3 and Gemma 1-3.
type arch struct {
	family      string
	norm        NormKind
	normBias    bool // LayerNorm with bias (GPT-2)
	sandwich    bool // Gemma 2/3: post-attention, pre- and post-feed-forward norms
	qkvBias     bool
	oBias       bool
	mlpBias     bool
	qkNorm      NormKind // RMSNorm (Qwen3) or RMSNormPlusOne (Gemma 3); -1 without
	embedScale  bool     // Gemma: embeddings times sqrt(hidden)
	learnedPos  bool     // GPT-2: wpe
	fusedConv1D bool     // GPT-2: c_attn / c_proj / c_fc / c_proj as Conv1D [in, out]
	gated       bool     // gate_proj·up_proj MLP
	attnScale   float64
	attnSoftcap float64
	finalCap    float64
	act         string
	window      []int // per layer; 0 = global attention
	ropeOf      []int // per layer: index into ropes
}

// CausalLM is a decoder-only language model (GPT-2, Llama, Mistral, Qwen2,
// Qwen3, Gemma 1-3), its parameters named as in transformers'
// *ForCausalLM state dicts.
type CausalLM struct {
	nn.Base
	// Config is the parsed config.json.
	Config *config.Config
	// DType is the dtype the model computes in.
	DType dtype.DType
	a     arch
	embed *tensor.Tensor // [vocab, hidden]; nil when embedQ holds it
	// embedQ is the token embedding kept in its GGUF blocks, row-major
	// (Options.KeepQuantized): a step decodes only the rows of its ids.
	embedQ *Quantized
	dev    device.Device  // where the weights are
	wpe    *tensor.Tensor // GPT-2 positions [n_positions, hidden]
	layers []*block
	norm   *Norm
	head   *Linear
	ropes  []*Rope
	// sqrtHidden is Gemma's embedding normaliser rounded to DType.
	sqrtHidden float64
	// Compiled runs every forward step as a compiled program (one per
	// input shape, replayed once stable) instead of op by op.
	Compiled                  bool
	compiledLast, compiledAll *compile.Function
	compiledPaged             *compile.Function // ForwardPaged's steps
	// embedMod registers embed under its state-dict name.
	embedMod *module
	// tp is the tensor-parallel group and shares (nil: not sharded).
	tp *tpState
}

type block struct {
	nn.Base
	a                  *arch
	idx                int
	inNorm, postNorm   *Norm // postNorm: Llama's post_attention_layernorm (pre-MLP) or Gemma's post-attention
	preFF, postFF      *Norm // Gemma 2/3
	q, k, v, o         *Linear
	qkv                *Linear // GPT-2 c_attn
	qNorm, kNorm       *Norm
	gate, up, down, fc *Linear
	heads, kvHeads, hd int
}

// module is a bare nn module grouping named children.
type module struct{ nn.Base }

// param is a module holding one parameter named "weight" (an embedding).
func param(w *tensor.Tensor) *module {
	m := &module{}
	m.RegisterParameter("weight", w)
	return m
}

func newCausalLM(l *loader, c *config.Config, a arch) (*CausalLM, error) {
	m := &CausalLM{Config: c, DType: l.dt, a: a}
	h, vocab := c.HiddenSize, c.VocabSize
	var layersMod module
	var embedW Weight // the embedding's blocks as loaded (KeepQuantized)
	if a.learnedPos {
		m.embed = l.tensor("transformer.wte.weight", vocab, h)
		m.wpe = l.tensor("transformer.wpe.weight", c.MaxPositions, h)
	} else if l.keepsQuantized("model.embed_tokens.weight") {
		// As llama.cpp's get_rows: the table stays in its blocks (a
		// 262144x640 Q8_0 table is 178 MB, 671 MB as f32) and a step
		// gathers its ids' rows and decodes them (embedQuantized).
		if q, ok := l.weight("model.embed_tokens.weight", vocab, h).(Quantized); ok {
			embedW = q
			rm := q.RowMajor() // q itself unless the device runs it as r16
			m.embedQ = &rm
		}
	} else {
		m.embed = l.tensor("model.embed_tokens.weight", vocab, h)
	}
	m.embedMod = &module{}
	switch {
	case m.embedQ != nil:
		// Blocks are not trained: a buffer, under the parameter's name.
		m.embedMod.RegisterBuffer("weight", m.embedQ.Blocks, true)
		m.dev = m.embedQ.Blocks.Device()
	case m.embed != nil:
		m.embedMod.RegisterParameter("weight", m.embed)
		m.dev = m.embed.Device()
	}
	for i := 0; i < c.NumLayers; i++ {
		b := newBlock(l, c, &m.a, i)
		layersMod.RegisterModule(strconv.Itoa(i), b)
		m.layers = append(m.layers, b)
	}
	if a.learnedPos {
		m.norm = newNorm(l, "transformer.ln_f", h, a.norm, c.NormEps, a.normBias)
	} else {
		m.norm = newNorm(l, "model.norm", h, a.norm, c.NormEps, a.normBias)
	}
	switch {
	case c.TieWordEmbeddings && embedW != nil:
		// llama.cpp multiplies the tied head with the embedding's blocks
		// (the lookup's own, unless the device runs them interleaved).
		m.head = &Linear{W: embedW}
	case c.TieWordEmbeddings:
		m.head = &Linear{W: Dense{W: m.embed}}
	default:
		m.head = newLinear(l, "lm_head", vocab, h, false)
	}
	if l.err != nil {
		return nil, l.err
	}
	// Parameter names as in transformers' state dict.
	body := &module{}
	if a.learnedPos {
		body.RegisterModule("wte", m.embedMod)
		body.RegisterModule("wpe", param(m.wpe))
		body.RegisterModule("h", &layersMod)
		body.RegisterModule("ln_f", m.norm)
		m.RegisterModule("transformer", body)
	} else {
		body.RegisterModule("embed_tokens", m.embedMod)
		body.RegisterModule("layers", &layersMod)
		body.RegisterModule("norm", m.norm)
		m.RegisterModule("model", body)
	}
	if !c.TieWordEmbeddings {
		m.RegisterModule("lm_head", m.head)
	}
	if a.embedScale {
		m.sqrtHidden = roundTo(l.dt, math.Sqrt(float64(h)))
	}
	return m, nil
}

// roundTo rounds v to dt's precision (transformers makes some constants
// tensors of the model's dtype).
func roundTo(dt dtype.DType, v float64) float64 {
	switch dt {
	case dtype.BF16:
		return float64(dtype.RoundBF16(float32(v)))
	case dtype.F16:
		return float64(dtype.RoundF16(float32(v)))
	case dtype.F32:
		return float64(float32(v))
	}
	return v
}

func newBlock(l *loader, c *config.Config, a *arch, i int) *block {
	h := c.HiddenSize
	b := &block{a: a, idx: i, heads: c.NumHeads, kvHeads: c.NumKVHeads, hd: c.HeadDim}
	qd, kvd := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	if a.fusedConv1D {
		p := fmt.Sprintf("transformer.h.%d.", i)
		b.inNorm = newNorm(l, p+"ln_1", h, a.norm, c.NormEps, a.normBias)
		b.postNorm = newNorm(l, p+"ln_2", h, a.norm, c.NormEps, a.normBias)
		b.qkv = newConv1D(l, p+"attn.c_attn", 3*h, h)
		b.o = newConv1D(l, p+"attn.c_proj", h, h)
		b.fc = newConv1D(l, p+"mlp.c_fc", c.IntermediateSize, h)
		b.down = newConv1D(l, p+"mlp.c_proj", h, c.IntermediateSize)
		attn, mlp := &module{}, &module{}
		attn.RegisterModule("c_attn", b.qkv)
		attn.RegisterModule("c_proj", b.o)
		mlp.RegisterModule("c_fc", b.fc)
		mlp.RegisterModule("c_proj", b.down)
		b.RegisterModule("ln_1", b.inNorm)
		b.RegisterModule("attn", attn)
		b.RegisterModule("ln_2", b.postNorm)
		b.RegisterModule("mlp", mlp)
		return b
	}
	p := fmt.Sprintf("model.layers.%d.", i)
	b.inNorm = newNorm(l, p+"input_layernorm", h, a.norm, c.NormEps, false)
	b.postNorm = newNorm(l, p+"post_attention_layernorm", h, a.norm, c.NormEps, false)
	b.q = newLinear(l, p+"self_attn.q_proj", qd, h, a.qkvBias)
	b.k = newLinear(l, p+"self_attn.k_proj", kvd, h, a.qkvBias)
	b.v = newLinear(l, p+"self_attn.v_proj", kvd, h, a.qkvBias)
	b.o = newLinear(l, p+"self_attn.o_proj", h, qd, a.oBias)
	attn, mlp := &module{}, &module{}
	attn.RegisterModule("q_proj", b.q)
	attn.RegisterModule("k_proj", b.k)
	attn.RegisterModule("v_proj", b.v)
	attn.RegisterModule("o_proj", b.o)
	if a.qkNorm >= 0 {
		b.qNorm = newNorm(l, p+"self_attn.q_norm", c.HeadDim, a.qkNorm, c.NormEps, false)
		b.kNorm = newNorm(l, p+"self_attn.k_norm", c.HeadDim, a.qkNorm, c.NormEps, false)
		attn.RegisterModule("q_norm", b.qNorm)
		attn.RegisterModule("k_norm", b.kNorm)
	}
	b.gate = newLinear(l, p+"mlp.gate_proj", c.IntermediateSize, h, a.mlpBias)
	b.up = newLinear(l, p+"mlp.up_proj", c.IntermediateSize, h, a.mlpBias)
	b.down = newLinear(l, p+"mlp.down_proj", h, c.IntermediateSize, a.mlpBias)
	mlp.RegisterModule("gate_proj", b.gate)
	mlp.RegisterModule("up_proj", b.up)
	mlp.RegisterModule("down_proj", b.down)
	b.RegisterModule("input_layernorm", b.inNorm)
	b.RegisterModule("self_attn", attn)
	b.RegisterModule("post_attention_layernorm", b.postNorm)
	b.RegisterModule("mlp", mlp)
	if a.sandwich {
		b.preFF = newNorm(l, p+"pre_feedforward_layernorm", h, a.norm, c.NormEps, false)
		b.postFF = newNorm(l, p+"post_feedforward_layernorm", h, a.norm, c.NormEps, false)
		b.RegisterModule("pre_feedforward_layernorm", b.preFF)
		b.RegisterModule("post_feedforward_layernorm", b.postFF)
	}
	return b
}

// newConv1D reads a GPT-2 Conv1D (weight [in, out], bias [out]).
func newConv1D(l *loader, prefix string, out, in int) *Linear {
	w := l.tensor(prefix+".weight", in, out)
	bias := l.tensor(prefix+".bias", out)
	m := &Linear{Bias: bias}
	if w != nil {
		m.W = conv1D{w: w}
		m.RegisterParameter("weight", w)
	}
	if bias != nil {
		m.RegisterParameter("bias", bias)
	}
	return m
}

// conv1D is GPT-2's transposed weight layout [in, out]: y = x·W + b.
type conv1D struct{ w *tensor.Tensor }

func (c conv1D) Dims() (int, int)      { return c.w.Size(1), c.w.Size(0) }
func (c conv1D) DType() dtype.DType    { return c.w.DType() }
func (c conv1D) Dense() *tensor.Tensor { return c.w.Transpose(0, 1) }
func (c conv1D) Linear(x, b *tensor.Tensor) *tensor.Tensor {
	// x·W with W [in, out] as stored (transformers' Conv1D is addmm(b, x,
	// W)): the product reads W in place, where a transposed view would be
	// copied into a contiguous Wᵀ by a compiled program at every step.
	y := tensor.Matmul(x, c.w)
	if b != nil {
		y = y.Add(b)
	}
	return y
}

// Step is the input of one forward pass over a KV cache.
type Step struct {
	// IDs are the token ids [B, T] (i64).
	IDs *tensor.Tensor
	// Positions are the position ids [B, T] (i64) for RoPE or learned
	// positions.
	Positions *tensor.Tensor
	// Slots are the cache slots [T] (i64) the T tokens are written to; a
	// token attends to every valid slot up to its own.
	Slots *tensor.Tensor
	// SeqLen is one more than the largest position (dynamic RoPE and
	// LongRoPE depend on it).
	SeqLen int
	// invFreq, when set, are the ropes' inverse frequencies (compiled
	// steps pass them as inputs so that a replay reads the current ones).
	invFreq []*tensor.Tensor
}

// Forward runs the model on one step, writing keys and values into cache,
// and returns the final hidden states [B, T, hidden] (after the final norm).
func (m *CausalLM) Forward(s Step, cache *KVCache) *tensor.Tensor {
	a := &m.a
	x := m.embedTokens(s.IDs)
	if a.embedScale {
		x = x.MulScalar(m.sqrtHidden)
	}
	if m.wpe != nil {
		x = x.Add(tensor.Embedding(m.wpe, s.Positions))
	}
	cos := make([]*tensor.Tensor, len(m.ropes))
	sin := make([]*tensor.Tensor, len(m.ropes))
	for i, r := range m.ropes {
		inv := r.invFreq(s.SeqLen)
		if s.invFreq != nil {
			inv = s.invFreq[i]
		}
		cos[i], sin[i] = r.cosSin(s.Positions, inv, m.DType)
	}
	masks := map[int]*tensor.Tensor{}
	for i, b := range m.layers {
		w := a.window[i]
		mask, ok := masks[w]
		if !ok {
			mask = cache.mask(s.Slots, w)
			masks[w] = mask
		}
		var c, sn *tensor.Tensor
		if len(m.ropes) > 0 {
			c, sn = cos[a.ropeOf[i]], sin[a.ropeOf[i]]
		}
		x = b.forward(x, c, sn, mask, s.Slots, cache.K[i], cache.V[i])
	}
	return m.norm.Forward(x)
}

// Logits applies the output projection (and Gemma 2's final soft-capping)
// to hidden states.
func (m *CausalLM) Logits(hidden *tensor.Tensor) *tensor.Tensor {
	logits := m.head.Forward(hidden)
	if m.a.finalCap > 0 {
		logits = logits.DivScalar(m.a.finalCap).Tanh().MulScalar(m.a.finalCap)
	}
	return logits
}

func (b *block) forward(x, cos, sin, mask, slots, kc, vc *tensor.Tensor) *tensor.Tensor {
	return b.forwardWith(x, func(h *tensor.Tensor) *tensor.Tensor {
		return b.attention(h, cos, sin, mask, slots, kc, vc)
	})
}

// forwardWith is the block around an attention function of the normed
// hidden states (the dense cache's or the paged one's).
func (b *block) forwardWith(x *tensor.Tensor, attn func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
	if b.a.sandwich {
		r := x
		y := b.postNorm.Forward(attn(b.inNorm.Forward(x)))
		x = r.Add(y)
		return x.Add(b.postFF.Forward(b.mlp(b.preFF.Forward(x))))
	}
	x = x.Add(attn(b.inNorm.Forward(x)))
	return x.Add(b.mlp(b.postNorm.Forward(x)))
}

func (b *block) attention(x, cos, sin, mask, slots, kc, vc *tensor.Tensor) *tensor.Tensor {
	n, t := x.Size(0), x.Size(1)
	q, k, v := b.project(x, cos, sin)
	kc.IndexCopyInPlace(2, slots, k.ToDType(kc.DType()))
	vc.IndexCopyInPlace(2, slots, v.ToDType(vc.DType()))
	ctx := b.attend(q, kc, vc, mask)
	return b.o.Forward(ctx.Transpose(1, 2).Reshape(n, t, b.heads*b.hd))
}

// project returns the queries [B, heads, T, hd] and keys and values [B,
// kvHeads, T, hd] of x [B, T, hidden], normed and rotated.
func (b *block) project(x, cos, sin *tensor.Tensor) (q, k, v *tensor.Tensor) {
	n, t := x.Size(0), x.Size(1)
	if b.qkv != nil {
		qkv := b.qkv.Forward(x).Chunk(3, -1)
		q, k, v = qkv[0], qkv[1], qkv[2]
	} else {
		q, k, v = b.q.Forward(x), b.k.Forward(x), b.v.Forward(x)
	}
	q = q.Reshape(n, t, b.heads, b.hd)
	k = k.Reshape(n, t, b.kvHeads, b.hd)
	v = v.Reshape(n, t, b.kvHeads, b.hd)
	if b.qNorm != nil {
		q, k = b.qNorm.Forward(q), b.kNorm.Forward(k)
	}
	q, k, v = q.Transpose(1, 2), k.Transpose(1, 2), v.Transpose(1, 2)
	if cos != nil {
		q, k = applyRope(q, cos, sin), applyRope(k, cos, sin)
	}
	return q, k, v
}

// attend is attention of queries q [B, heads, T, hd] over cached keys and
// values kc, vc [B, kvHeads, S, hd] (the cache's dtype) under mask [B, 1,
// T, S]; it returns [B, heads, T, hd] in q's dtype.
func (b *block) attend(q, kc, vc, mask *tensor.Tensor) *tensor.Tensor {
	a := b.a
	scale := a.attnScale
	dt := q.DType()
	if a.attnSoftcap > 0 {
		// Gemma 2's eager attention, in the model's dtype.
		kk, vv := kc.ToDType(dt), vc.ToDType(dt)
		if b.kvHeads != b.heads {
			rep := b.heads / b.kvHeads
			kk, vv = kk.RepeatInterleave(rep, 1), vv.RepeatInterleave(rep, 1)
		}
		s := tensor.Matmul(q, kk.Transpose(-2, -1)).MulScalar(scale)
		s = s.DivScalar(a.attnSoftcap).Tanh().MulScalar(a.attnSoftcap)
		s = s.MaskedFill(mask.LogicalNot(), math.Inf(-1))
		p := s.SoftmaxAs(-1, dtype.F32).ToDType(dt)
		return tensor.Matmul(p, vv)
	}
	// PyTorch's CPU attention kernels accumulate bf16/f16 inputs in f32
	// and round the output once; so does this (the cache holds the narrow
	// values widened to f32, or bf16 ones that the kernel widens: see
	// cacheDType).
	return tensor.ScaledDotProductAttention(q.ToDType(kc.DType()), kc, vc, tensor.SDPAOpts{Mask: mask, Scale: b.a.attnScale, EnableGQA: b.kvHeads != b.heads}).ToDType(dt)
}

// attendPaged is attend over keys and values kept in blocks kb, vb
// [blocks, BlockSize, kvHeads, hd], sequence i's blocks listed in row i
// of table [B, M]: paged_attention, which reads the blocks in place where
// the backend has a kernel for it. Gemma 2's soft-capped attention has no
// fused form: it gathers the blocks and runs attend.
func (b *block) attendPaged(q, kb, vb, table, mask *tensor.Tensor) *tensor.Tensor {
	if b.a.attnSoftcap > 0 {
		n, m := table.Size(0), table.Size(1)
		idx := table.Reshape(-1)
		gather := func(c *tensor.Tensor) *tensor.Tensor {
			return c.IndexSelect(0, idx).Reshape(n, m*c.Size(1), b.kvHeads, b.hd).Transpose(1, 2)
		}
		return b.attend(q, gather(kb), gather(vb), mask)
	}
	dt := q.DType()
	return tensor.PagedAttention(q.ToDType(kb.DType()), kb, vb, table, tensor.PagedAttentionOpts{Mask: mask, Scale: b.a.attnScale}).ToDType(dt)
}

func (b *block) mlp(x *tensor.Tensor) *tensor.Tensor {
	if b.a.gated {
		// Both products before the activation: adjacent, a compiled step
		// runs them as one (the sibling runs of backend/cpu).
		g, u := b.gate.Forward(x), b.up.Forward(x)
		return b.down.Forward(activation(b.a.act, g).Mul(u))
	}
	return b.down.Forward(activation(b.a.act, b.fc.Forward(x)))
}

// activation applies transformers' ACT2FN[name].
func activation(name string, x *tensor.Tensor) *tensor.Tensor {
	switch name {
	case "silu", "swish":
		return x.Silu()
	case "gelu":
		return x.Gelu()
	case "gelu_new", "gelu_pytorch_tanh", "gelu_fast":
		return x.GeluTanh()
	case "relu":
		return x.Relu()
	}
	panic(&tensor.Error{Op: "activation", Msg: "unsupported activation " + name})
}
