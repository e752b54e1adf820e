package models

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/hf/chat"
	"github.com/gotpu/gotpu/hf/config"
	"github.com/gotpu/gotpu/hf/tokenizer"
)

// Options are Load's options; the zero value loads onto cpu in the
// checkpoint's dtype.
type Options struct {
	// Device is where the weights go (the zero value: cpu:0).
	Device device.Device
	// DType is the dtype to compute in: f32, bf16 or f16. Invalid (the
	// zero value) keeps the checkpoint's torch_dtype (f32 when unset).
	DType dtype.DType
	// KeepQuantized keeps a GGUF file's linear weights in their block
	// encodings (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K) as
	// Quantized weights multiplied by the linear_gguf op, instead of
	// dequantizing them to DType; the token embedding stays in its blocks
	// too, each step decoding the rows of its ids (dequantize_gguf), and a
	// tied output head multiplies with them (as llama.cpp does); norms,
	// biases and weights of other types are dequantized as usual. (A
	// tensor-parallel shard decodes its share of the embedding once.)
	// Only GGUF files hold quantized weights: Load rejects it.
	KeepQuantized bool
}

// Model is a model loaded from a Hugging Face directory: its config, its
// tokenizer when the directory has one, and the network.
type Model struct {
	// Path is the directory (or file) the model came from.
	Path string
	// Config is config.json.
	Config *config.Config
	// Generation is generation_config.json, nil when absent.
	Generation *config.Generation
	// Tokenizer is tokenizer.json, nil when absent.
	Tokenizer *tokenizer.Tokenizer
	// Chat is the chat template (tokenizer_config.json, chat_template.jinja,
	// ...), nil when the model has none.
	Chat *chat.Template
	// LM is the network of a causal language model (nil for encoders).
	LM *CausalLM
	// Encoder is the network of a BERT-class encoder (model_type bert or
	// roberta); nil for causal language models.
	Encoder *Encoder
	// Sentence says how Embed turns an encoder's token states into sentence
	// embeddings (sentence-transformers' modules); set by Load for encoders.
	Sentence *SentenceConfig
	// Unused lists checkpoint tensors no parameter took (transformers
	// warns about them too).
	Unused []string
}

// Families lists the model_types Load supports: causal language models
// (Model.LM) and, for bert and roberta, encoders (Model.Encoder).
func Families() []string {
	return []string{"gpt2", "llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "gemma3", "bert", "roberta"}
}

// Load reads a model directory: config.json, the safetensors weights (one
// file or shards), and tokenizer.json, generation_config.json and the chat
// template when present. Weights are memory-mapped, copied straight to the
// device in the requested dtype, and the mappings released before Load
// returns. For an encoder, Load also reads the sentence-transformers files
// that say how Embed pools (see LoadSentenceConfig); a malformed or
// unsupported one is an error.
func Load(dir string, o Options) (*Model, error) {
	if o.KeepQuantized {
		return nil, fmt.Errorf("%w: keeping weights quantized needs a GGUF file; %s is a model directory", ErrUnsupported, dir)
	}
	cfg, err := config.Load(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	src, err := OpenSafetensors(dir)
	if err != nil {
		return nil, fmt.Errorf("models: weights of %s: %w", dir, err)
	}
	defer src.Close()
	m, err := FromSource(cfg, src, o)
	if err != nil {
		return nil, fmt.Errorf("models: %s: %w", dir, err)
	}
	m.Path = dir
	if g, err := config.LoadGeneration(filepath.Join(dir, "generation_config.json")); err == nil {
		m.Generation = g
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("models: %w", err)
	}
	tp := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(tp); err == nil {
		tok, err := tokenizer.FromFile(tp)
		if err != nil {
			return nil, fmt.Errorf("models: %w", err)
		}
		m.Tokenizer = tok
	}
	switch t, err := chat.LoadDir(dir); {
	case err == nil:
		m.Chat = t
	case !errors.Is(err, chat.ErrNoChatTemplate):
		return nil, fmt.Errorf("models: %w", err)
	}
	if m.Encoder != nil {
		sc, err := LoadSentenceConfig(dir, cfg)
		if err != nil {
			return nil, fmt.Errorf("models: %s: %w", dir, err)
		}
		m.Sentence = sc
	}
	return m, nil
}

// resolveDType picks the compute dtype from the options and the config.
func resolveDType(cfg *config.Config, want dtype.DType) (dtype.DType, error) {
	if want != dtype.Invalid {
		switch want {
		case dtype.F32, dtype.BF16, dtype.F16, dtype.F64:
			return want, nil
		}
		return 0, fmt.Errorf("%w: dtype %s (want f32, bf16, f16 or f64)", ErrUnsupported, want)
	}
	switch strings.ToLower(cfg.DType) {
	case "bfloat16":
		return dtype.BF16, nil
	case "float16":
		return dtype.F16, nil
	}
	return dtype.F32, nil
}

// FromSource builds the model described by cfg from the tensors of src.
// The source is only read during the call.
func FromSource(cfg *config.Config, src Source, o Options) (*Model, error) {
	dt, err := resolveDType(cfg, o.DType)
	if err != nil {
		return nil, err
	}
	dev := o.Device
	if dev.Type == "" {
		dev = device.Device{Type: "cpu"}
	}
	switch cfg.Family() {
	case "bert", "roberta":
		// BertModel's names, or a task model's under "bert." / "roberta.".
		l := newLoader(src, dev, dt, cfg.Family()+".")
		enc, err := newEncoder(l, cfg)
		if err != nil {
			return nil, err
		}
		releaseCached(dev)
		return &Model{Config: cfg, Encoder: enc, Unused: l.unused()}, nil
	}
	a, err := archOf(cfg)
	if err != nil {
		return nil, err
	}
	prefixes := []string{"model.", "transformer."}
	l := newLoader(src, dev, dt, prefixes...)
	lm, err := newCausalLM(l, cfg, a)
	if err != nil {
		return nil, err
	}
	if err := lm.initRopes(cfg); err != nil {
		return nil, err
	}
	releaseCached(dev)
	return &Model{Config: cfg, LM: lm, Unused: l.unused()}, nil
}

// archOf maps a config onto the decoder's switches.
func archOf(c *config.Config) (arch, error) {
	a := arch{family: c.Family(), norm: RMSNorm, gated: true, qkNorm: -1, act: c.Activation}
	a.window = make([]int, c.NumLayers)
	a.ropeOf = make([]int, c.NumLayers)
	layerWindows := func(types []string, w int) {
		for i, t := range types {
			if t == "sliding_attention" {
				a.window[i] = w
			}
		}
	}
	a.attnScale = 1 / math.Sqrt(float64(c.HeadDim))
	switch a.family {
	case "gpt2":
		g := c.GPT2
		if g.ReorderAndUpcastAttn {
			return a, fmt.Errorf("%w: gpt2 with reorder_and_upcast_attn", ErrUnsupported)
		}
		a.norm, a.normBias, a.gated, a.learnedPos, a.fusedConv1D = LayerNorm, true, false, true, true
		a.act = g.ActivationFunction
		if !g.ScaleAttnWeights {
			a.attnScale = 1
		}
		if g.ScaleAttnByInverseLayerIdx {
			return a, fmt.Errorf("%w: gpt2 with scale_attn_by_inverse_layer_idx", ErrUnsupported)
		}
	case "llama":
		a.qkvBias, a.oBias, a.mlpBias = c.Llama.AttentionBias, c.Llama.AttentionBias, c.Llama.MLPBias
	case "mistral":
		if w := c.Mistral.SlidingWindow; w != nil {
			for i := range a.window {
				a.window[i] = *w
			}
		}
	case "qwen2":
		a.qkvBias = true
		if c.Qwen2.UseSlidingWindow {
			layerWindows(c.Qwen2.LayerTypes, c.Qwen2.SlidingWindow)
		}
	case "qwen3":
		a.qkvBias, a.oBias = c.Qwen3.AttentionBias, c.Qwen3.AttentionBias
		a.qkNorm = RMSNorm
		if c.Qwen3.UseSlidingWindow {
			layerWindows(c.Qwen3.LayerTypes, c.Qwen3.SlidingWindow)
		}
	case "gemma":
		a.norm, a.embedScale = RMSNormPlusOne, true
		a.qkvBias, a.oBias = c.Gemma.AttentionBias, c.Gemma.AttentionBias
	case "gemma2":
		g := c.Gemma2
		a.norm, a.embedScale, a.sandwich = RMSNormPlusOne, true, true
		a.qkvBias, a.oBias = g.AttentionBias, g.AttentionBias
		a.attnScale = 1 / math.Sqrt(g.QueryPreAttnScalar)
		if g.AttnLogitSoftcapping != nil {
			a.attnSoftcap = *g.AttnLogitSoftcapping
		}
		if g.FinalLogitSoftcapping != nil {
			a.finalCap = *g.FinalLogitSoftcapping
		}
		layerWindows(g.LayerTypes, g.SlidingWindow)
	case "gemma3":
		g := c.Gemma3
		a.norm, a.embedScale, a.sandwich, a.qkNorm = RMSNormPlusOne, true, true, RMSNormPlusOne
		a.qkvBias, a.oBias = g.AttentionBias, g.AttentionBias
		a.attnScale = 1 / math.Sqrt(g.QueryPreAttnScalar)
		if g.AttnLogitSoftcapping != nil {
			a.attnSoftcap = *g.AttnLogitSoftcapping
		}
		if g.FinalLogitSoftcapping != nil {
			a.finalCap = *g.FinalLogitSoftcapping
		}
		layerWindows(g.LayerTypes, g.SlidingWindow)
		for i, t := range g.LayerTypes {
			if t == "sliding_attention" {
				a.ropeOf[i] = 1
			}
		}
	default:
		return a, fmt.Errorf("%w: model_type %q (architecture %q); supported: %s", ErrUnsupported, c.ModelType, c.Architecture(), strings.Join(Families(), ", "))
	}
	switch a.act {
	case "silu", "swish", "gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "relu":
	default:
		return a, fmt.Errorf("%w: activation %q", ErrUnsupported, a.act)
	}
	return a, nil
}

// initRopes builds the model's rotary embeddings: one, or Gemma 3's global
// and local pair.
func (m *CausalLM) initRopes(c *config.Config) error {
	if m.a.learnedPos {
		return nil
	}
	dev := m.dev
	r, err := newRope(dev, c.HeadDim, c.RopeTheta, c.RopeScaling, c.MaxPositions)
	if err != nil {
		return err
	}
	m.ropes = []*Rope{r}
	if c.Gemma3 != nil {
		local, err := newRope(dev, c.HeadDim, c.Gemma3.RopeLocalBaseFreq, nil, c.MaxPositions)
		if err != nil {
			return err
		}
		m.ropes = append(m.ropes, local)
	}
	return nil
}

// releaseCached returns the blocks the device's caching allocator kept
// from loading's transient buffers (conversions, permutations) to the
// system, so that a loaded model's resident memory is its weights.
func releaseCached(dev device.Device) {
	if be, err := device.Lookup(dev.Type); err == nil {
		if e, ok := be.(interface{ EmptyCache() }); ok {
			e.EmptyCache()
		}
	}
}
