// Package config parses Hugging Face config.json and generation_config.json
// files for the model families gotpu runs: GPT-2, Llama, Mistral, Qwen2,
// Qwen3, Gemma, Gemma 2, Gemma 3 (text), BERT and RoBERTa.
//
// Parse dispatches on model_type (or, when it is absent, on architectures)
// and returns a Config: the fields every model implementation needs, under
// common names and with transformers' defaults applied (Common), plus the
// family's own struct (exactly one of Config.GPT2, Config.Llama, ... is set)
// and every top-level field as found (Raw), so unknown fields are kept.
//
// Where transformers would silently default a dimension that fixes weight
// shapes (vocab_size, hidden_size, num_hidden_layers, num_attention_heads,
// intermediate_size; GPT-2's n_embd, n_layer, n_head), this package requires
// it and reports the missing field and model_type: a config without them is
// never what a checkpoint means. The exception is Gemma 3's nested
// text_config, which transformers writes with default values omitted.
package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Common holds the fields a model implementation needs, under one set of
// names for every family, with defaults applied as transformers applies them.
type Common struct {
	// ModelType is the family's model_type ("llama", "gemma3_text", ...).
	ModelType string
	// Architectures is the config's architectures list (may be empty).
	Architectures []string
	// VocabSize is the number of token embeddings.
	VocabSize int
	// HiddenSize is the model width (GPT-2: n_embd).
	HiddenSize int
	// NumLayers is the number of transformer blocks (num_hidden_layers, n_layer).
	NumLayers int
	// NumHeads is the number of attention (query) heads.
	NumHeads int
	// NumKVHeads is the number of key/value heads (NumHeads without GQA).
	NumKVHeads int
	// HeadDim is the size of one attention head.
	HeadDim int
	// IntermediateSize is the MLP hidden size (GPT-2: n_inner, default 4×n_embd).
	IntermediateSize int
	// MaxPositions is max_position_embeddings (GPT-2: n_positions).
	MaxPositions int
	// PositionEmbedding is "rope" for rotary models, else the absolute kind
	// ("absolute" for BERT and GPT-2's learned positions).
	PositionEmbedding string
	// RopeTheta is the rotary base (0 without RoPE).
	RopeTheta float64
	// RopeScaling is the parsed rope scaling, nil for plain RoPE.
	RopeScaling *RopeScaling
	// NormEps is the epsilon of the RMSNorm / LayerNorm layers.
	NormEps float64
	// Activation is the MLP activation as transformers names it ("silu",
	// "gelu", "gelu_new", "gelu_pytorch_tanh", ...), the one the model code uses.
	Activation string
	// TieWordEmbeddings reports whether the output projection shares the
	// input embedding matrix.
	TieWordEmbeddings bool
	// BOSTokenID and PadTokenID are nil when not set.
	BOSTokenID, PadTokenID *int
	// EOSTokenIDs lists the end-of-sequence ids (eos_token_id may be one id or a list).
	EOSTokenIDs []int
	// DType is torch_dtype (or transformers v5's dtype), "" when absent.
	DType string
}

// Config is a parsed config.json. Exactly one family pointer is non-nil.
type Config struct {
	Common
	GPT2    *GPT2
	Llama   *Llama
	Mistral *Mistral
	Qwen2   *Qwen2
	Qwen3   *Qwen3
	Gemma   *Gemma
	Gemma2  *Gemma2
	Gemma3  *Gemma3
	BERT    *BERT
	RoBERTa *BERT
	// Raw holds every top-level field of the file as found.
	Raw map[string]json.RawMessage
}

// Family returns the canonical family name: "gpt2", "llama", "mistral",
// "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "bert" or "roberta".
func (c *Config) Family() string {
	switch {
	case c.GPT2 != nil:
		return "gpt2"
	case c.Llama != nil:
		return "llama"
	case c.Mistral != nil:
		return "mistral"
	case c.Qwen2 != nil:
		return "qwen2"
	case c.Qwen3 != nil:
		return "qwen3"
	case c.Gemma != nil:
		return "gemma"
	case c.Gemma2 != nil:
		return "gemma2"
	case c.Gemma3 != nil:
		return "gemma3"
	case c.BERT != nil:
		return "bert"
	case c.RoBERTa != nil:
		return "roberta"
	}
	return ""
}

// Architecture returns the first entry of Architectures, or "".
func (c *Config) Architecture() string {
	if len(c.Architectures) > 0 {
		return c.Architectures[0]
	}
	return ""
}

// ModelTypes lists the model_type values Parse accepts.
func ModelTypes() []string {
	return []string{"bert", "gemma", "gemma2", "gemma3", "gemma3_text", "gpt2", "llama", "mistral", "qwen2", "qwen3", "roberta"}
}

// archPrefixes maps architecture class-name prefixes to model types.
var archPrefixes = []struct{ prefix, modelType string }{
	{"Gemma3ForConditionalGeneration", "gemma3"},
	{"Gemma3", "gemma3_text"},
	{"Gemma2", "gemma2"},
	{"Gemma", "gemma"},
	{"Qwen3", "qwen3"},
	{"Qwen2", "qwen2"},
	{"Mistral", "mistral"},
	{"Llama", "llama"},
	{"GPT2", "gpt2"},
	{"Bert", "bert"},
	{"Roberta", "roberta"},
}

// modelTypeForArch maps an architecture such as "LlamaForCausalLM" or
// "GPT2LMHeadModel" to its model_type, or "".
func modelTypeForArch(arch string) string {
	for _, p := range archPrefixes {
		rest, ok := strings.CutPrefix(arch, p.prefix)
		if !ok {
			continue
		}
		if p.prefix == "Gemma3ForConditionalGeneration" {
			return p.modelType
		}
		for _, suffix := range []string{"For", "Model", "LMHead", "DoubleHeads"} {
			if strings.HasPrefix(rest, suffix) {
				return p.modelType
			}
		}
	}
	return ""
}

// Parse parses the content of a config.json.
func Parse(data []byte) (*Config, error) {
	raw, err := decodeObject(data, "config.json")
	if err != nil {
		return nil, err
	}
	top := newFields(raw, "config.json", "")
	modelType := top.strOr("model_type", "")
	archs := top.strList("architectures")
	if top.err != nil {
		return nil, top.err
	}
	if modelType == "" {
		for _, a := range archs {
			if modelType = modelTypeForArch(a); modelType != "" {
				break
			}
		}
		if modelType == "" {
			return nil, fmt.Errorf("%w: config.json has no model_type and no known architecture (architectures %q); supported model types: %s",
				ErrUnsupported, archs, strings.Join(ModelTypes(), ", "))
		}
	}
	ctx := fmt.Sprintf("model_type %q", modelType)
	c := &Config{Raw: raw}
	f := newFields(raw, ctx, "")
	switch modelType {
	case "gpt2":
		err = parseGPT2(c, f)
	case "llama", "mistral", "qwen2", "qwen3":
		err = parseLlamaLike(c, f, modelType)
	case "gemma", "gemma2", "gemma3_text":
		err = parseGemma(c, f, modelType, false)
	case "gemma3":
		err = parseGemma3Nested(c, raw, ctx)
	case "bert", "roberta":
		err = parseBERT(c, f, modelType)
	default:
		return nil, fmt.Errorf("%w: model_type %q (supported: %s)", ErrUnsupported, modelType, strings.Join(ModelTypes(), ", "))
	}
	if err != nil {
		return nil, err
	}
	c.ModelType = modelType
	c.Architectures = archs
	if err := c.validate(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// validate checks relations between the common dimensions.
func (c *Config) validate(ctx string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s (%s)", ErrInvalidField, fmt.Sprintf(format, args...), ctx)
	}
	switch {
	case c.NumKVHeads <= 0:
		return bad("num_key_value_heads must be positive, got %d", c.NumKVHeads)
	case c.NumKVHeads > c.NumHeads || c.NumHeads%c.NumKVHeads != 0:
		return bad("num_attention_heads (%d) must be a multiple of num_key_value_heads (%d)", c.NumHeads, c.NumKVHeads)
	case c.HeadDim <= 0:
		return bad("head_dim must be positive, got %d (hidden_size %d, %d heads)", c.HeadDim, c.HiddenSize, c.NumHeads)
	case c.IntermediateSize <= 0:
		return bad("intermediate_size must be positive, got %d", c.IntermediateSize)
	case c.NormEps <= 0:
		return bad("the norm epsilon must be positive, got %g", c.NormEps)
	case c.PositionEmbedding == "rope" && c.RopeTheta <= 0:
		return bad("rope_theta must be positive, got %g", c.RopeTheta)
	}
	return nil
}

// Load reads a config.json; path may be the file or the model directory.
func Load(path string) (*Config, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "config.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// tokens reads bos/eos/pad token ids into c.
func (c *Common) tokens(f *fields, bos, eos, pad *int) {
	c.BOSTokenID = f.intPtr("bos_token_id")
	if c.BOSTokenID == nil && !f.present("bos_token_id") {
		c.BOSTokenID = bos
	}
	c.EOSTokenIDs = f.intOrList("eos_token_id")
	if c.EOSTokenIDs == nil && !f.present("eos_token_id") && eos != nil {
		c.EOSTokenIDs = []int{*eos}
	}
	c.PadTokenID = f.intPtr("pad_token_id")
	if c.PadTokenID == nil && !f.present("pad_token_id") {
		c.PadTokenID = pad
	}
	c.DType = f.strOr("torch_dtype", "")
	if c.DType == "" {
		c.DType = f.strOr("dtype", "")
	}
}

// present reports whether key appears at all (an explicit null counts).
func (f *fields) present(key string) bool {
	_, ok := f.raw[key]
	return ok
}

func intp(v int) *int { return &v }

// rope reads rope_theta and rope_scaling, or transformers v5's rope_parameters.
func (c *Common) rope(f *fields, ctx string, defTheta float64, origMax int) error {
	c.PositionEmbedding = "rope"
	c.RopeTheta = f.floatOr("rope_theta", defTheta)
	if f.err != nil {
		return f.err
	}
	if params := f.object("rope_parameters"); params != nil {
		if full, ok := params["full_attention"]; ok { // per-layer-type form
			var m map[string]json.RawMessage
			if json.Unmarshal(full, &m) != nil {
				return fmt.Errorf("%w: \"rope_parameters.full_attention\" must be an object (%s)", ErrInvalidField, ctx)
			}
			params = m
		}
		pf := newFields(params, ctx, "rope_parameters.")
		if !f.has("rope_theta") {
			c.RopeTheta = pf.floatOr("rope_theta", defTheta)
		}
		if pf.err != nil {
			return pf.err
		}
		if pf.has("rope_type") || pf.has("type") {
			rs, err := parseRope(params, ctx, "rope_parameters", c.MaxPositions, origMax, c.HeadDim)
			if err != nil {
				return err
			}
			c.RopeScaling = rs
		}
	}
	if scaling := f.object("rope_scaling"); scaling != nil {
		rs, err := parseRope(scaling, ctx, "rope_scaling", c.MaxPositions, origMax, c.HeadDim)
		if err != nil {
			return err
		}
		c.RopeScaling = rs
	}
	return f.err
}
