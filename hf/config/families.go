package config

import (
	"encoding/json"
	"fmt"
)

// GPT2 holds GPT-2's own config fields (transformers' GPT2Config names).
type GPT2 struct {
	NPositions, NEmbd, NLayer, NHead int
	// NInner is the MLP size as written (nil means 4×n_embd).
	NInner                     *int
	ActivationFunction         string
	LayerNormEpsilon           float64
	ResidPdrop                 float64
	EmbdPdrop                  float64
	AttnPdrop                  float64
	ScaleAttnWeights           bool
	ScaleAttnByInverseLayerIdx bool
	ReorderAndUpcastAttn       bool
}

// Llama holds Llama's own fields beyond Common.
type Llama struct {
	AttentionBias    bool
	MLPBias          bool
	PretrainingTP    int
	AttentionDropout float64
}

// Mistral holds Mistral's own fields beyond Common.
type Mistral struct {
	// SlidingWindow is the attention window (nil when disabled with null).
	SlidingWindow    *int
	AttentionDropout float64
}

// Qwen2 holds Qwen2's own fields beyond Common. Qwen2 always has biases on
// the q, k and v projections (and none on o).
type Qwen2 struct {
	UseSlidingWindow bool
	// SlidingWindow is the window size, 0 when use_sliding_window is false.
	SlidingWindow   int
	MaxWindowLayers int
	// LayerTypes is "full_attention" or "sliding_attention" per layer, as
	// written or derived as transformers does from the fields above.
	LayerTypes       []string
	AttentionDropout float64
}

// Qwen3 holds Qwen3's own fields beyond Common (Qwen3 adds q/k RMSNorm).
type Qwen3 struct {
	AttentionBias    bool
	UseSlidingWindow bool
	// SlidingWindow is the window size, 0 when use_sliding_window is false.
	SlidingWindow    int
	MaxWindowLayers  int
	LayerTypes       []string
	AttentionDropout float64
}

// Gemma holds Gemma's own fields beyond Common.
type Gemma struct {
	// HiddenAct and HiddenActivation are the fields as written; the model
	// uses hidden_activation, defaulting to gelu_pytorch_tanh (Common.Activation).
	HiddenAct, HiddenActivation string
	AttentionBias               bool
}

// Gemma2 holds Gemma 2's own fields beyond Common.
type Gemma2 struct {
	QueryPreAttnScalar float64
	SlidingWindow      int
	// FinalLogitSoftcapping and AttnLogitSoftcapping are nil when disabled.
	FinalLogitSoftcapping *float64
	AttnLogitSoftcapping  *float64
	LayerTypes            []string
	AttentionBias         bool
}

// Gemma3 holds Gemma 3's text-model fields beyond Common.
type Gemma3 struct {
	QueryPreAttnScalar    float64
	SlidingWindow         int
	SlidingWindowPattern  int
	LayerTypes            []string
	RopeLocalBaseFreq     float64
	FinalLogitSoftcapping *float64
	AttnLogitSoftcapping  *float64
	AttentionBias         bool
	// Multimodal reports a model_type "gemma3" config whose text model was
	// read from text_config (the vision tower is not parsed).
	Multimodal bool
}

// BERT holds the own fields of BERT and RoBERTa beyond Common (RoBERTa's
// config is BERT's with other token defaults: pad 1, bos 0, eos 2).
type BERT struct {
	TypeVocabSize             int
	PositionEmbeddingType     string
	HiddenDropoutProb         float64
	AttentionProbsDropoutProb float64
	ClassifierDropout         *float64
	InitializerRange          float64
}

func parseGPT2(c *Config, f *fields) error {
	g := &GPT2{}
	// GPT2Config's attribute_map lets the common names stand in for its own.
	alias := func(key, alt string, required bool, def int) int {
		if !f.present(key) && f.present(alt) {
			key = alt
		}
		if required {
			return f.intReq(key)
		}
		return f.intOr(key, def)
	}
	c.VocabSize = f.intReq("vocab_size")
	g.NEmbd = alias("n_embd", "hidden_size", true, 0)
	g.NLayer = alias("n_layer", "num_hidden_layers", true, 0)
	g.NHead = alias("n_head", "num_attention_heads", true, 0)
	g.NPositions = alias("n_positions", "max_position_embeddings", false, 1024)
	g.NInner = f.intPtr("n_inner")
	g.ActivationFunction = f.strOr("activation_function", "gelu_new")
	g.LayerNormEpsilon = f.floatOr("layer_norm_epsilon", 1e-5)
	g.ResidPdrop = f.floatOr("resid_pdrop", 0.1)
	g.EmbdPdrop = f.floatOr("embd_pdrop", 0.1)
	g.AttnPdrop = f.floatOr("attn_pdrop", 0.1)
	g.ScaleAttnWeights = f.boolOr("scale_attn_weights", true)
	g.ScaleAttnByInverseLayerIdx = f.boolOr("scale_attn_by_inverse_layer_idx", false)
	g.ReorderAndUpcastAttn = f.boolOr("reorder_and_upcast_attn", false)
	c.TieWordEmbeddings = f.boolOr("tie_word_embeddings", true)
	c.tokens(f, intp(50256), intp(50256), nil)
	if f.err == nil && g.NLayer > maxLayers {
		f.fail(ErrInvalidField, "n_layer", "is implausibly large (%d > %d)", g.NLayer, maxLayers)
	}
	if f.err != nil {
		return f.err
	}
	if g.NEmbd%g.NHead != 0 {
		return fmt.Errorf("%w: n_embd (%d) is not divisible by n_head (%d) (%s)", ErrInvalidField, g.NEmbd, g.NHead, f.ctx)
	}
	c.HiddenSize, c.NumLayers, c.NumHeads, c.NumKVHeads = g.NEmbd, g.NLayer, g.NHead, g.NHead
	c.HeadDim = g.NEmbd / g.NHead
	c.IntermediateSize = 4 * g.NEmbd
	if g.NInner != nil {
		c.IntermediateSize = *g.NInner
	}
	c.MaxPositions = g.NPositions
	c.PositionEmbedding = "absolute"
	c.NormEps = g.LayerNormEpsilon
	c.Activation = g.ActivationFunction
	c.GPT2 = g
	return nil
}

// llamaDefaults are the transformers defaults that differ between the
// Llama-like families.
type llamaDefaults struct {
	kvHeads    int // 0: num_attention_heads
	headDim    int // 0: hidden_size / num_attention_heads
	maxPos     int
	bos, eos   *int
	slidingWin int
}

var llamaLike = map[string]llamaDefaults{
	"llama":   {maxPos: 2048, bos: intp(1), eos: intp(2)},
	"mistral": {kvHeads: 8, maxPos: 4096 * 32, bos: intp(1), eos: intp(2), slidingWin: 4096},
	"qwen2":   {kvHeads: 32, maxPos: 32768, slidingWin: 4096},
	"qwen3":   {kvHeads: 32, headDim: 128, maxPos: 32768, slidingWin: 4096},
}

// decoderDims reads the dimensions shared by the rotary decoder families.
// nested=true means every field is optional (defaults from def*).
func decoderDims(c *Config, f *fields, nested bool, defVocab, defHidden, defInter, defLayers, defHeads, defKV, defHeadDim int) {
	req := func(key string, def int) int {
		if nested {
			return f.intOr(key, def)
		}
		return f.intReq(key)
	}
	c.VocabSize = req("vocab_size", defVocab)
	c.HiddenSize = req("hidden_size", defHidden)
	c.IntermediateSize = req("intermediate_size", defInter)
	c.NumLayers = req("num_hidden_layers", defLayers)
	c.NumHeads = req("num_attention_heads", defHeads)
	if f.err == nil && c.NumLayers > maxLayers {
		f.fail(ErrInvalidField, "num_hidden_layers", "is implausibly large (%d > %d)", c.NumLayers, maxLayers)
	}
	if f.err != nil {
		return
	}
	// An explicit null means "same as num_attention_heads" (transformers' None).
	if f.present("num_key_value_heads") && !f.has("num_key_value_heads") || defKV == 0 {
		defKV = c.NumHeads
	}
	c.NumKVHeads = f.intOr("num_key_value_heads", defKV)
	if f.present("head_dim") && !f.has("head_dim") || defHeadDim == 0 {
		defHeadDim = c.HiddenSize / c.NumHeads
	}
	c.HeadDim = f.intOr("head_dim", defHeadDim)
}

func parseLlamaLike(c *Config, f *fields, modelType string) error {
	d := llamaLike[modelType]
	decoderDims(c, f, false, 0, 0, 0, 0, 0, d.kvHeads, d.headDim)
	if f.err != nil {
		return f.err
	}
	c.MaxPositions = f.intOr("max_position_embeddings", d.maxPos)
	c.Activation = f.strOr("hidden_act", "silu")
	c.NormEps = f.floatOr("rms_norm_eps", 1e-6)
	c.TieWordEmbeddings = f.boolOr("tie_word_embeddings", false)
	c.tokens(f, d.bos, d.eos, nil)
	if err := c.rope(f, f.ctx, 10000, f.intOr("original_max_position_embeddings", 0)); err != nil {
		return err
	}
	dropout := f.floatOr("attention_dropout", 0)
	switch modelType {
	case "llama":
		c.Llama = &Llama{
			AttentionBias:    f.boolOr("attention_bias", false),
			MLPBias:          f.boolOr("mlp_bias", false),
			PretrainingTP:    f.intOr("pretraining_tp", 1),
			AttentionDropout: dropout,
		}
	case "mistral":
		m := &Mistral{AttentionDropout: dropout}
		if !f.present("sliding_window") {
			m.SlidingWindow = intp(d.slidingWin)
		} else if f.has("sliding_window") {
			m.SlidingWindow = intp(f.intOr("sliding_window", d.slidingWin))
		}
		c.Mistral = m
	case "qwen2", "qwen3":
		use := f.boolOr("use_sliding_window", false)
		win := f.intOr("sliding_window", d.slidingWin)
		if !use {
			win = 0 // transformers sets sliding_window to None when it is off
		}
		maxWin := f.intOr("max_window_layers", 28)
		types := f.strList("layer_types")
		if types == nil {
			types = make([]string, c.NumLayers)
			for i := range types {
				types[i] = "full_attention"
				if use && i >= maxWin {
					types[i] = "sliding_attention"
				}
			}
		}
		if modelType == "qwen2" {
			c.Qwen2 = &Qwen2{UseSlidingWindow: use, SlidingWindow: win, MaxWindowLayers: maxWin, LayerTypes: types, AttentionDropout: dropout}
		} else {
			c.Qwen3 = &Qwen3{AttentionBias: f.boolOr("attention_bias", false), UseSlidingWindow: use, SlidingWindow: win,
				MaxWindowLayers: maxWin, LayerTypes: types, AttentionDropout: dropout}
		}
	}
	if f.err != nil {
		return f.err
	}
	return checkLayerTypes(c, f, c.layerTypes())
}

func (c *Config) layerTypes() []string {
	switch {
	case c.Qwen2 != nil:
		return c.Qwen2.LayerTypes
	case c.Qwen3 != nil:
		return c.Qwen3.LayerTypes
	case c.Gemma2 != nil:
		return c.Gemma2.LayerTypes
	case c.Gemma3 != nil:
		return c.Gemma3.LayerTypes
	}
	return nil
}

func checkLayerTypes(c *Config, f *fields, types []string) error {
	if types == nil {
		return nil
	}
	if len(types) != c.NumLayers {
		return fmt.Errorf("%w: %q has %d entries for %d layers (%s)", ErrInvalidField, f.prefix+"layer_types", len(types), c.NumLayers, f.ctx)
	}
	for i, t := range types {
		if t != "full_attention" && t != "sliding_attention" {
			return fmt.Errorf("%w: %q[%d] = %q (%s)", ErrInvalidField, f.prefix+"layer_types", i, t, f.ctx)
		}
	}
	return nil
}

// softcap reads an optional soft-capping value: absent gives def, null disables.
func softcap(f *fields, key string, def *float64) *float64 {
	if !f.present(key) {
		return def
	}
	return f.floatPtr(key)
}

func floatp(v float64) *float64 { return &v }

// parseGemma reads gemma, gemma2 and gemma3_text configs. nested marks a
// Gemma 3 text_config, whose omitted fields take transformers' defaults.
func parseGemma(c *Config, f *fields, modelType string, nested bool) error {
	switch modelType {
	case "gemma":
		decoderDims(c, f, nested, 256000, 3072, 24576, 28, 16, 16, 256)
		c.MaxPositions = f.intOr("max_position_embeddings", 8192)
	case "gemma2":
		decoderDims(c, f, nested, 256000, 2304, 9216, 26, 8, 4, 256)
		c.MaxPositions = f.intOr("max_position_embeddings", 8192)
	default:
		decoderDims(c, f, nested, 262208, 2304, 9216, 26, 8, 4, 256)
		c.MaxPositions = f.intOr("max_position_embeddings", 131072)
	}
	if f.err != nil {
		return f.err
	}
	c.NormEps = f.floatOr("rms_norm_eps", 1e-6)
	c.TieWordEmbeddings = f.boolOr("tie_word_embeddings", true)
	c.tokens(f, intp(2), intp(1), intp(0))
	c.Activation = f.strOr("hidden_activation", "gelu_pytorch_tanh")
	theta := 10000.0
	if modelType == "gemma3_text" {
		theta = 1e6
	}
	if err := c.rope(f, f.ctx, theta, 0); err != nil {
		return err
	}
	bias := f.boolOr("attention_bias", false)
	switch modelType {
	case "gemma":
		c.Gemma = &Gemma{HiddenAct: f.strOr("hidden_act", ""), HiddenActivation: f.strOr("hidden_activation", ""), AttentionBias: bias}
	case "gemma2":
		g := &Gemma2{
			QueryPreAttnScalar:    f.floatOr("query_pre_attn_scalar", 256),
			SlidingWindow:         f.intOr("sliding_window", 4096),
			FinalLogitSoftcapping: softcap(f, "final_logit_softcapping", floatp(30)),
			AttnLogitSoftcapping:  softcap(f, "attn_logit_softcapping", floatp(50)),
			LayerTypes:            f.strList("layer_types"),
			AttentionBias:         bias,
		}
		if g.LayerTypes == nil {
			g.LayerTypes = alternate(c.NumLayers, 2)
		}
		c.Gemma2 = g
	default:
		g := &Gemma3{
			QueryPreAttnScalar:    f.floatOr("query_pre_attn_scalar", 256),
			SlidingWindow:         f.intOr("sliding_window", 4096),
			SlidingWindowPattern:  f.intOr("sliding_window_pattern", 6),
			RopeLocalBaseFreq:     f.floatOr("rope_local_base_freq", 10000),
			FinalLogitSoftcapping: softcap(f, "final_logit_softcapping", nil),
			AttnLogitSoftcapping:  softcap(f, "attn_logit_softcapping", nil),
			LayerTypes:            f.strList("layer_types"),
			AttentionBias:         bias,
		}
		if params := f.object("rope_parameters"); params != nil {
			if sliding, ok := params["sliding_attention"]; ok {
				var m map[string]json.RawMessage
				if json.Unmarshal(sliding, &m) == nil {
					g.RopeLocalBaseFreq = newFields(m, f.ctx, "rope_parameters.sliding_attention.").floatOr("rope_theta", g.RopeLocalBaseFreq)
				}
			}
		}
		if g.SlidingWindowPattern <= 0 {
			return fmt.Errorf("%w: %q must be positive (%s)", ErrInvalidField, f.prefix+"sliding_window_pattern", f.ctx)
		}
		if g.LayerTypes == nil {
			g.LayerTypes = alternate(c.NumLayers, g.SlidingWindowPattern)
		}
		c.Gemma3 = g
	}
	if f.err != nil {
		return f.err
	}
	return checkLayerTypes(c, f, c.layerTypes())
}

// alternate returns transformers' default layer types: every pattern-th
// layer (1-based) is full attention, the others sliding.
func alternate(layers, pattern int) []string {
	out := make([]string, layers)
	for i := range out {
		out[i] = "sliding_attention"
		if (i+1)%pattern == 0 {
			out[i] = "full_attention"
		}
	}
	return out
}

// parseGemma3Nested reads a multimodal model_type "gemma3" config: the text
// model comes from text_config, token ids from the top level when present.
func parseGemma3Nested(c *Config, raw map[string]json.RawMessage, ctx string) error {
	top := newFields(raw, ctx, "")
	text := top.object("text_config")
	if top.err != nil {
		return top.err
	}
	if text == nil {
		text = map[string]json.RawMessage{}
	}
	tf := newFields(text, ctx, "text_config.")
	if err := parseGemma(c, tf, "gemma3_text", true); err != nil {
		return err
	}
	// Token ids and dtype written at the top level win over text_config's.
	if top.present("bos_token_id") {
		c.BOSTokenID = top.intPtr("bos_token_id")
	}
	if top.present("eos_token_id") {
		c.EOSTokenIDs = top.intOrList("eos_token_id")
	}
	if top.present("pad_token_id") {
		c.PadTokenID = top.intPtr("pad_token_id")
	}
	if dt := top.strOr("torch_dtype", top.strOr("dtype", "")); dt != "" {
		c.DType = dt
	}
	if top.err != nil {
		return top.err
	}
	c.Gemma3.Multimodal = true
	return nil
}

// parseBERT parses a BERT or RoBERTa config; the families differ in their
// default special tokens (BertConfig: pad 0; RobertaConfig: pad 1, bos 0,
// eos 2) and in RoBERTa's position ids (the model's concern).
func parseBERT(c *Config, f *fields, modelType string) error {
	c.VocabSize = f.intReq("vocab_size")
	c.HiddenSize = f.intReq("hidden_size")
	c.NumLayers = f.intReq("num_hidden_layers")
	c.NumHeads = f.intReq("num_attention_heads")
	c.IntermediateSize = f.intReq("intermediate_size")
	if f.err == nil && c.NumLayers > maxLayers {
		f.fail(ErrInvalidField, "num_hidden_layers", "is implausibly large (%d > %d)", c.NumLayers, maxLayers)
	}
	if f.err != nil {
		return f.err
	}
	if c.HiddenSize%c.NumHeads != 0 {
		return fmt.Errorf("%w: hidden_size (%d) is not a multiple of num_attention_heads (%d) (%s)", ErrInvalidField, c.HiddenSize, c.NumHeads, f.ctx)
	}
	c.NumKVHeads = c.NumHeads
	c.HeadDim = c.HiddenSize / c.NumHeads
	c.MaxPositions = f.intOr("max_position_embeddings", 512)
	c.Activation = f.strOr("hidden_act", "gelu")
	c.NormEps = f.floatOr("layer_norm_eps", 1e-12)
	c.TieWordEmbeddings = f.boolOr("tie_word_embeddings", true)
	if modelType == "roberta" {
		c.tokens(f, intp(0), intp(2), intp(1))
	} else {
		c.tokens(f, nil, nil, intp(0))
	}
	b := &BERT{
		TypeVocabSize:             f.intOr("type_vocab_size", 2),
		PositionEmbeddingType:     f.strOr("position_embedding_type", "absolute"),
		HiddenDropoutProb:         f.floatOr("hidden_dropout_prob", 0.1),
		AttentionProbsDropoutProb: f.floatOr("attention_probs_dropout_prob", 0.1),
		ClassifierDropout:         f.floatPtr("classifier_dropout"),
		InitializerRange:          f.floatOr("initializer_range", 0.02),
	}
	c.PositionEmbedding = b.PositionEmbeddingType
	if modelType == "roberta" {
		c.RoBERTa = b
	} else {
		c.BERT = b
	}
	return f.err
}
