package models

import (
	"fmt"
	"math"
	"strconv"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/hf/config"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/tensor"
)

// Encoder is a BERT-class bidirectional encoder: transformers' BertModel or
// RobertaModel. Embeddings are word + learned absolute position + token
// type, then LayerNorm; each block is post-LayerNorm (attention, add, norm;
// feed-forward, add, norm). Parameters are named as in BertModel's /
// RobertaModel's state dict ("embeddings.word_embeddings.weight",
// "encoder.layer.0.attention.self.query.weight", "pooler.dense.weight");
// checkpoints saved by a task model with a "bert." / "roberta." prefix load
// too, their heads left in Model.Unused.
type Encoder struct {
	nn.Base
	// Config is the parsed config.json.
	Config *config.Config
	// DType is the dtype the model computes in.
	DType dtype.DType
	// Pooler is BertPooler's dense layer (tanh(dense(h[:, 0]))), nil when
	// the checkpoint has none.
	Pooler *Linear

	roberta bool  // RoBERTa position ids
	padID   int64 // RoBERTa's padding_idx (pad_token_id)
	word    *tensor.Tensor
	pos     *tensor.Tensor
	types   *tensor.Tensor // nil when type_vocab_size is 0
	embNorm *Norm
	layers  []*encoderLayer
	act     string
}

type encoderLayer struct {
	nn.Base
	q, k, v, o *Linear
	attnNorm   *Norm
	inter, out *Linear
	outNorm    *Norm
	heads, hd  int
	act        string
}

// newEncoder reads a BertModel / RobertaModel from l.
func newEncoder(l *loader, c *config.Config) (*Encoder, error) {
	b := c.BERT
	if b == nil {
		b = c.RoBERTa
	}
	if b == nil {
		return nil, fmt.Errorf("%w: model_type %q is not an encoder", ErrUnsupported, c.ModelType)
	}
	if b.PositionEmbeddingType != "absolute" {
		return nil, fmt.Errorf("%w: %s with position_embedding_type %q (only \"absolute\")", ErrUnsupported, c.ModelType, b.PositionEmbeddingType)
	}
	if dec, ok := c.Raw["is_decoder"]; ok && string(dec) == "true" {
		return nil, fmt.Errorf("%w: %s with is_decoder (a causal BERT)", ErrUnsupported, c.ModelType)
	}
	switch c.Activation {
	case "gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "relu", "silu", "swish":
	default:
		return nil, fmt.Errorf("%w: activation %q", ErrUnsupported, c.Activation)
	}
	e := &Encoder{Config: c, DType: l.dt, roberta: c.RoBERTa != nil, act: c.Activation}
	if e.roberta {
		if c.PadTokenID == nil {
			return nil, fmt.Errorf("%w: roberta config without pad_token_id (RoBERTa's positions count from it)", ErrModel)
		}
		e.padID = int64(*c.PadTokenID)
		if e.padID < 0 || int(e.padID) >= c.VocabSize || int(e.padID)+2 > c.MaxPositions {
			return nil, fmt.Errorf("%w: roberta pad_token_id %d does not fit vocab_size %d and max_position_embeddings %d", ErrModel, e.padID, c.VocabSize, c.MaxPositions)
		}
	}
	h := c.HiddenSize
	e.word = l.tensor("embeddings.word_embeddings.weight", c.VocabSize, h)
	e.pos = l.tensor("embeddings.position_embeddings.weight", c.MaxPositions, h)
	if b.TypeVocabSize > 0 {
		e.types = l.tensor("embeddings.token_type_embeddings.weight", b.TypeVocabSize, h)
	}
	e.embNorm = newNorm(l, "embeddings.LayerNorm", h, LayerNorm, c.NormEps, true)
	var layers module
	for i := 0; i < c.NumLayers; i++ {
		ly := newEncoderLayer(l, c, i)
		layers.RegisterModule(strconv.Itoa(i), ly)
		e.layers = append(e.layers, ly)
	}
	if l.has("pooler.dense.weight") {
		e.Pooler = newLinear(l, "pooler.dense", h, h, true)
	}
	if l.err != nil {
		return nil, l.err
	}
	emb := &module{}
	emb.RegisterModule("word_embeddings", param(e.word))
	emb.RegisterModule("position_embeddings", param(e.pos))
	if e.types != nil {
		emb.RegisterModule("token_type_embeddings", param(e.types))
	}
	emb.RegisterModule("LayerNorm", e.embNorm)
	enc := &module{}
	enc.RegisterModule("layer", &layers)
	e.RegisterModule("embeddings", emb)
	e.RegisterModule("encoder", enc)
	if e.Pooler != nil {
		p := &module{}
		p.RegisterModule("dense", e.Pooler)
		e.RegisterModule("pooler", p)
	}
	return e, nil
}

func newEncoderLayer(l *loader, c *config.Config, i int) *encoderLayer {
	h, inner := c.HiddenSize, c.IntermediateSize
	p := fmt.Sprintf("encoder.layer.%d.", i)
	ly := &encoderLayer{heads: c.NumHeads, hd: c.HeadDim, act: c.Activation}
	ly.q = newLinear(l, p+"attention.self.query", h, h, true)
	ly.k = newLinear(l, p+"attention.self.key", h, h, true)
	ly.v = newLinear(l, p+"attention.self.value", h, h, true)
	ly.o = newLinear(l, p+"attention.output.dense", h, h, true)
	ly.attnNorm = newNorm(l, p+"attention.output.LayerNorm", h, LayerNorm, c.NormEps, true)
	ly.inter = newLinear(l, p+"intermediate.dense", inner, h, true)
	ly.out = newLinear(l, p+"output.dense", h, inner, true)
	ly.outNorm = newNorm(l, p+"output.LayerNorm", h, LayerNorm, c.NormEps, true)
	self, attnOut, attn, interMod, outMod := &module{}, &module{}, &module{}, &module{}, &module{}
	self.RegisterModule("query", ly.q)
	self.RegisterModule("key", ly.k)
	self.RegisterModule("value", ly.v)
	attnOut.RegisterModule("dense", ly.o)
	attnOut.RegisterModule("LayerNorm", ly.attnNorm)
	attn.RegisterModule("self", self)
	attn.RegisterModule("output", attnOut)
	interMod.RegisterModule("dense", ly.inter)
	outMod.RegisterModule("dense", ly.out)
	outMod.RegisterModule("LayerNorm", ly.outNorm)
	ly.RegisterModule("attention", attn)
	ly.RegisterModule("intermediate", interMod)
	ly.RegisterModule("output", outMod)
	return ly
}

// encoderPanic reports bad Forward arguments as the tensor package reports
// programming errors, so tensor.Catch turns them into errors.
func encoderPanic(format string, args ...any) {
	panic(&tensor.Error{Op: "models.Encoder.Forward", Msg: fmt.Sprintf(format, args...)})
}

// Forward runs the encoder on token ids [B, T] (i64 or i32) and returns
// last_hidden_state [B, T, hidden] in the model's dtype.
//
// attentionMask [B, T] (any dtype; nonzero attends) marks the real tokens
// of right- or left-padded rows; nil attends everywhere. Hidden states at
// masked positions are computed as transformers computes them (their
// queries attend to the unmasked keys) and are meaningless to a pooler.
// tokenTypes [B, T] are the segment ids; nil is all zeros, as transformers
// defaults them.
//
// Positions are BERT's 0..T-1, or RoBERTa's: padding_idx + the running
// count of non-pad tokens for real tokens and padding_idx for pad tokens
// (transformers' create_position_ids_from_input_ids; pad tokens are the ids
// equal to pad_token_id, whatever the mask says).
//
// Bad shapes or ids panic with a *tensor.Error, as tensor ops do.
func (e *Encoder) Forward(ids, attentionMask, tokenTypes *tensor.Tensor) *tensor.Tensor {
	if ids == nil || ids.Dim() != 2 {
		var shape []int
		if ids != nil {
			shape = ids.Shape()
		}
		encoderPanic("ids must be [batch, seq], got %v", shape)
	}
	if !ids.DType().IsInt() {
		encoderPanic("ids must be integers, got %s", ids.DType())
	}
	b, t := ids.Size(0), ids.Size(1)
	if b == 0 || t == 0 {
		encoderPanic("empty input %v", ids.Shape())
	}
	dev := e.word.Device()
	ids = ids.To(dev).ToDType(dtype.I64)
	maxPos := e.Config.MaxPositions
	if e.roberta {
		maxPos -= int(e.padID) + 1
	}
	if t > maxPos {
		encoderPanic("%d tokens exceed the model's %d positions", t, maxPos)
	}
	for name, m := range map[string]*tensor.Tensor{"attentionMask": attentionMask, "tokenTypes": tokenTypes} {
		if m != nil && (m.Dim() != 2 || m.Size(0) != b || m.Size(1) != t) {
			encoderPanic("%s must be [%d, %d] like ids, got %v", name, b, t, m.Shape())
		}
	}
	x := tensor.Embedding(e.word, ids).Add(tensor.Embedding(e.pos, e.positions(ids)))
	switch {
	case tokenTypes != nil && e.types == nil:
		encoderPanic("tokenTypes given but the model has no token type embeddings")
	case tokenTypes != nil:
		x = x.Add(tensor.Embedding(e.types, tokenTypes.To(dev).ToDType(dtype.I64)))
	case e.types != nil:
		x = x.Add(e.types.Narrow(0, 0, 1))
	}
	x = e.embNorm.Forward(x)
	var mask *tensor.Tensor
	if attentionMask != nil {
		mask = attentionMask.To(dev).NeScalar(0).Reshape(b, 1, 1, t)
	}
	for _, ly := range e.layers {
		x = ly.forward(x, mask)
	}
	return x
}

// positions returns the position ids of ids [B, T] (i64 on the model's
// device): [1, T] for BERT, [B, T] for RoBERTa.
func (e *Encoder) positions(ids *tensor.Tensor) *tensor.Tensor {
	if e.roberta {
		real := ids.NeScalar(e.padID).ToDType(dtype.I64)
		return real.CumsumAs(1, dtype.I64).Mul(real).AddScalar(e.padID)
	}
	t := ids.Size(1)
	return tensor.Arange(e.word.Device(), 0, t, 1, dtype.I64).Reshape(1, t)
}

// PoolerOutput returns BertPooler's tanh(dense(hidden[:, 0])) [B, hidden],
// or nil when the checkpoint has no pooler.
func (e *Encoder) PoolerOutput(hidden *tensor.Tensor) *tensor.Tensor {
	if e.Pooler == nil {
		return nil
	}
	return e.Pooler.Forward(hidden.Select(1, 0)).Tanh()
}

func (ly *encoderLayer) forward(x, mask *tensor.Tensor) *tensor.Tensor {
	n, t := x.Size(0), x.Size(1)
	split := func(y *tensor.Tensor) *tensor.Tensor {
		return y.Reshape(n, t, ly.heads, ly.hd).Transpose(1, 2)
	}
	q, k, v := split(ly.q.Forward(x)), split(ly.k.Forward(x)), split(ly.v.Forward(x))
	ctx := tensor.ScaledDotProductAttention(q, k, v, tensor.SDPAOpts{Mask: mask, Scale: 1 / math.Sqrt(float64(ly.hd))})
	ctx = ctx.Transpose(1, 2).Reshape(n, t, ly.heads*ly.hd)
	x = ly.attnNorm.Forward(ly.o.Forward(ctx).Add(x))
	return ly.outNorm.Forward(ly.out.Forward(activation(ly.act, ly.inter.Forward(x))).Add(x))
}
