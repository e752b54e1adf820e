package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func ip(v int) *int { return &v }

// TestRealConfigs parses the committed config.json of real published models
// and checks the common view against the values those models are known to have.
func TestRealConfigs(t *testing.T) {
	tests := []struct {
		dir    string
		family string
		want   Common
		check  func(t *testing.T, c *Config)
	}{
		{
			dir: "llama-2-7b", family: "llama",
			want: Common{ModelType: "llama", Architectures: []string{"LlamaForCausalLM"}, VocabSize: 32000, HiddenSize: 4096,
				NumLayers: 32, NumHeads: 32, NumKVHeads: 32, HeadDim: 128, IntermediateSize: 11008, MaxPositions: 4096,
				PositionEmbedding: "rope", RopeTheta: 10000, NormEps: 1e-5, Activation: "silu",
				BOSTokenID: ip(1), EOSTokenIDs: []int{2}, DType: "float16"},
			check: func(t *testing.T, c *Config) {
				if c.Llama.PretrainingTP != 1 || c.Llama.AttentionBias {
					t.Errorf("Llama = %+v", c.Llama)
				}
			},
		},
		{
			dir: "llama-3.1-8b", family: "llama",
			want: Common{ModelType: "llama", Architectures: []string{"LlamaForCausalLM"}, VocabSize: 128256, HiddenSize: 4096,
				NumLayers: 32, NumHeads: 32, NumKVHeads: 8, HeadDim: 128, IntermediateSize: 14336, MaxPositions: 131072,
				PositionEmbedding: "rope", RopeTheta: 500000, NormEps: 1e-5, Activation: "silu",
				BOSTokenID: ip(128000), EOSTokenIDs: []int{128001}, DType: "bfloat16"},
			check: func(t *testing.T, c *Config) {
				r := c.RopeScaling
				if r == nil || r.Type != RopeLlama3 || r.Factor != 8 || r.LowFreqFactor != 1 || r.HighFreqFactor != 4 || r.OriginalMaxPositionEmbeddings != 8192 {
					t.Errorf("RopeScaling = %+v", r)
				}
			},
		},
		{
			dir: "llama-3.1-8b-instruct", family: "llama",
			want: Common{ModelType: "llama", Architectures: []string{"LlamaForCausalLM"}, VocabSize: 128256, HiddenSize: 4096,
				NumLayers: 32, NumHeads: 32, NumKVHeads: 8, HeadDim: 128, IntermediateSize: 14336, MaxPositions: 131072,
				PositionEmbedding: "rope", RopeTheta: 500000, NormEps: 1e-5, Activation: "silu",
				BOSTokenID: ip(128000), EOSTokenIDs: []int{128001, 128008, 128009}, DType: "bfloat16"},
		},
		{
			dir: "mistral-7b-v0.1", family: "mistral",
			want: Common{ModelType: "mistral", Architectures: []string{"MistralForCausalLM"}, VocabSize: 32000, HiddenSize: 4096,
				NumLayers: 32, NumHeads: 32, NumKVHeads: 8, HeadDim: 128, IntermediateSize: 14336, MaxPositions: 32768,
				PositionEmbedding: "rope", RopeTheta: 10000, NormEps: 1e-5, Activation: "silu",
				BOSTokenID: ip(1), EOSTokenIDs: []int{2}, DType: "bfloat16"},
			check: func(t *testing.T, c *Config) {
				if c.Mistral.SlidingWindow == nil || *c.Mistral.SlidingWindow != 4096 {
					t.Errorf("SlidingWindow = %v", c.Mistral.SlidingWindow)
				}
			},
		},
		{
			dir: "qwen2-0.5b", family: "qwen2",
			want: Common{ModelType: "qwen2", Architectures: []string{"Qwen2ForCausalLM"}, VocabSize: 151936, HiddenSize: 896,
				NumLayers: 24, NumHeads: 14, NumKVHeads: 2, HeadDim: 64, IntermediateSize: 4864, MaxPositions: 131072,
				PositionEmbedding: "rope", RopeTheta: 1e6, NormEps: 1e-6, Activation: "silu", TieWordEmbeddings: true,
				BOSTokenID: ip(151643), EOSTokenIDs: []int{151643}, DType: "bfloat16"},
			check: func(t *testing.T, c *Config) {
				q := c.Qwen2
				if q.UseSlidingWindow || q.SlidingWindow != 0 || q.MaxWindowLayers != 24 || len(q.LayerTypes) != 24 || q.LayerTypes[23] != "full_attention" {
					t.Errorf("Qwen2 = %+v", q)
				}
			},
		},
		{
			dir: "qwen2.5-7b-instruct", family: "qwen2",
			want: Common{ModelType: "qwen2", Architectures: []string{"Qwen2ForCausalLM"}, VocabSize: 152064, HiddenSize: 3584,
				NumLayers: 28, NumHeads: 28, NumKVHeads: 4, HeadDim: 128, IntermediateSize: 18944, MaxPositions: 32768,
				PositionEmbedding: "rope", RopeTheta: 1e6, NormEps: 1e-6, Activation: "silu",
				BOSTokenID: ip(151643), EOSTokenIDs: []int{151645}, DType: "bfloat16"},
			check: func(t *testing.T, c *Config) {
				r := c.RopeScaling
				if r == nil || r.Type != RopeYaRN || r.Factor != 4 || r.OriginalMaxPositionEmbeddings != 32768 || r.BetaFast != 32 || r.BetaSlow != 1 || r.AttentionFactor != nil {
					t.Errorf("RopeScaling = %+v", r)
				}
			},
		},
		{
			dir: "qwen3-0.6b", family: "qwen3",
			want: Common{ModelType: "qwen3", Architectures: []string{"Qwen3ForCausalLM"}, VocabSize: 151936, HiddenSize: 1024,
				NumLayers: 28, NumHeads: 16, NumKVHeads: 8, HeadDim: 128, IntermediateSize: 3072, MaxPositions: 40960,
				PositionEmbedding: "rope", RopeTheta: 1e6, NormEps: 1e-6, Activation: "silu", TieWordEmbeddings: true,
				BOSTokenID: ip(151643), EOSTokenIDs: []int{151645}, DType: "bfloat16"},
		},
		{
			dir: "gemma-2b", family: "gemma",
			want: Common{ModelType: "gemma", Architectures: []string{"GemmaForCausalLM"}, VocabSize: 256000, HiddenSize: 2048,
				NumLayers: 18, NumHeads: 8, NumKVHeads: 1, HeadDim: 256, IntermediateSize: 16384, MaxPositions: 8192,
				PositionEmbedding: "rope", RopeTheta: 10000, NormEps: 1e-6, Activation: "gelu_pytorch_tanh", TieWordEmbeddings: true,
				BOSTokenID: ip(2), EOSTokenIDs: []int{1}, PadTokenID: ip(0), DType: "bfloat16"},
			check: func(t *testing.T, c *Config) {
				if c.Gemma.HiddenAct != "gelu" || c.Gemma.HiddenActivation != "" {
					t.Errorf("Gemma = %+v", c.Gemma)
				}
			},
		},
		{
			dir: "gemma-2-2b", family: "gemma2",
			want: Common{ModelType: "gemma2", Architectures: []string{"Gemma2ForCausalLM"}, VocabSize: 256000, HiddenSize: 2304,
				NumLayers: 26, NumHeads: 8, NumKVHeads: 4, HeadDim: 256, IntermediateSize: 9216, MaxPositions: 8192,
				PositionEmbedding: "rope", RopeTheta: 10000, NormEps: 1e-6, Activation: "gelu_pytorch_tanh", TieWordEmbeddings: true,
				BOSTokenID: ip(2), EOSTokenIDs: []int{1}, PadTokenID: ip(0), DType: "float32"},
			check: func(t *testing.T, c *Config) {
				g := c.Gemma2
				if g.QueryPreAttnScalar != 256 || g.SlidingWindow != 4096 || *g.FinalLogitSoftcapping != 30 || *g.AttnLogitSoftcapping != 50 {
					t.Errorf("Gemma2 = %+v", g)
				}
				if len(g.LayerTypes) != 26 || g.LayerTypes[0] != "sliding_attention" || g.LayerTypes[1] != "full_attention" {
					t.Errorf("LayerTypes = %v", g.LayerTypes)
				}
			},
		},
		{
			dir: "gemma-3-1b-it", family: "gemma3",
			want: Common{ModelType: "gemma3_text", Architectures: []string{"Gemma3ForCausalLM"}, VocabSize: 262144, HiddenSize: 1152,
				NumLayers: 26, NumHeads: 4, NumKVHeads: 1, HeadDim: 256, IntermediateSize: 6912, MaxPositions: 32768,
				PositionEmbedding: "rope", RopeTheta: 1e6, NormEps: 1e-6, Activation: "gelu_pytorch_tanh", TieWordEmbeddings: true,
				BOSTokenID: ip(2), EOSTokenIDs: []int{1, 106}, PadTokenID: ip(0), DType: "bfloat16"},
			check: func(t *testing.T, c *Config) {
				g := c.Gemma3
				if g.SlidingWindow != 512 || g.SlidingWindowPattern != 6 || g.RopeLocalBaseFreq != 10000 || g.FinalLogitSoftcapping != nil || g.AttnLogitSoftcapping != nil || g.Multimodal {
					t.Errorf("Gemma3 = %+v", g)
				}
				full := 0
				for i, lt := range g.LayerTypes {
					if lt == "full_attention" {
						full++
						if (i+1)%6 != 0 {
							t.Errorf("layer %d is full attention", i)
						}
					}
				}
				if full != 4 {
					t.Errorf("%d full-attention layers, want 4 of 26", full)
				}
			},
		},
		{
			dir: "gemma-3-4b-it", family: "gemma3",
			want: Common{ModelType: "gemma3", Architectures: []string{"Gemma3ForConditionalGeneration"}, VocabSize: 262208, HiddenSize: 2560,
				NumLayers: 34, NumHeads: 8, NumKVHeads: 4, HeadDim: 256, IntermediateSize: 10240, MaxPositions: 131072,
				PositionEmbedding: "rope", RopeTheta: 1e6, NormEps: 1e-6, Activation: "gelu_pytorch_tanh", TieWordEmbeddings: true,
				BOSTokenID: ip(2), EOSTokenIDs: []int{1, 106}, PadTokenID: ip(0), DType: "bfloat16"},
			check: func(t *testing.T, c *Config) {
				if !c.Gemma3.Multimodal || c.Gemma3.SlidingWindow != 1024 {
					t.Errorf("Gemma3 = %+v", c.Gemma3)
				}
				if r := c.RopeScaling; r == nil || r.Type != RopeLinear || r.Factor != 8 {
					t.Errorf("RopeScaling = %+v", r)
				}
			},
		},
		{
			dir: "bert-base-uncased", family: "bert",
			want: Common{ModelType: "bert", Architectures: []string{"BertForMaskedLM"}, VocabSize: 30522, HiddenSize: 768,
				NumLayers: 12, NumHeads: 12, NumKVHeads: 12, HeadDim: 64, IntermediateSize: 3072, MaxPositions: 512,
				PositionEmbedding: "absolute", NormEps: 1e-12, Activation: "gelu", TieWordEmbeddings: true, PadTokenID: ip(0)},
			check: func(t *testing.T, c *Config) {
				if c.BERT.TypeVocabSize != 2 || c.BERT.HiddenDropoutProb != 0.1 || c.BERT.ClassifierDropout != nil {
					t.Errorf("BERT = %+v", c.BERT)
				}
			},
		},
		{
			dir: "all-minilm-l6-v2", family: "bert",
			want: Common{ModelType: "bert", Architectures: []string{"BertModel"}, VocabSize: 30522, HiddenSize: 384,
				NumLayers: 6, NumHeads: 12, NumKVHeads: 12, HeadDim: 32, IntermediateSize: 1536, MaxPositions: 512,
				PositionEmbedding: "absolute", NormEps: 1e-12, Activation: "gelu", TieWordEmbeddings: true, PadTokenID: ip(0)},
		},
		{
			dir: "gpt2", family: "gpt2",
			want: Common{ModelType: "gpt2", Architectures: []string{"GPT2LMHeadModel"}, VocabSize: 50257, HiddenSize: 768,
				NumLayers: 12, NumHeads: 12, NumKVHeads: 12, HeadDim: 64, IntermediateSize: 3072, MaxPositions: 1024,
				PositionEmbedding: "absolute", NormEps: 1e-5, Activation: "gelu_new", TieWordEmbeddings: true,
				BOSTokenID: ip(50256), EOSTokenIDs: []int{50256}},
			check: func(t *testing.T, c *Config) {
				if c.GPT2.NInner != nil || c.GPT2.NPositions != 1024 || !c.GPT2.ScaleAttnWeights {
					t.Errorf("GPT2 = %+v", c.GPT2)
				}
				if _, ok := c.Raw["task_specific_params"]; !ok {
					t.Error("unknown field task_specific_params not kept in Raw")
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			c, err := Load(filepath.Join("testdata", tc.dir))
			if err != nil {
				t.Fatal(err)
			}
			if c.Family() != tc.family {
				t.Errorf("Family() = %q, want %q", c.Family(), tc.family)
			}
			got := c.Common
			got.RopeScaling = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Common mismatch\n got %s\nwant %s", dump(got), dump(tc.want))
			}
			if c.Architecture() != tc.want.Architectures[0] {
				t.Errorf("Architecture() = %q", c.Architecture())
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// minimal is a complete minimal config for a model type, for mutation tests.
func minimal(modelType string) map[string]any {
	switch modelType {
	case "gpt2":
		return map[string]any{"model_type": "gpt2", "vocab_size": 100, "n_embd": 64, "n_layer": 2, "n_head": 4}
	default:
		return map[string]any{"model_type": modelType, "vocab_size": 100, "hidden_size": 64, "intermediate_size": 128,
			"num_hidden_layers": 2, "num_attention_heads": 4}
	}
}

func with(m map[string]any, kv ...any) []byte {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == deleteKey {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	b, _ := json.Marshal(out)
	return b
}

var deleteKey = &struct{}{}

func TestDefaults(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want func(c *Config) bool
	}{
		{"llama kv heads default to heads", with(minimal("llama")), func(c *Config) bool { return c.NumKVHeads == 4 && c.HeadDim == 16 }},
		{"llama null kv heads", with(minimal("llama"), "num_key_value_heads", nil), func(c *Config) bool { return c.NumKVHeads == 4 }},
		{"llama defaults", with(minimal("llama")), func(c *Config) bool {
			return c.MaxPositions == 2048 && c.RopeTheta == 10000 && c.NormEps == 1e-6 && c.Activation == "silu" &&
				!c.TieWordEmbeddings && *c.BOSTokenID == 1 && reflect.DeepEqual(c.EOSTokenIDs, []int{2}) && c.PadTokenID == nil
		}},
		{"llama explicit head_dim", with(minimal("llama"), "head_dim", 32), func(c *Config) bool { return c.HeadDim == 32 }},
		{"llama explicit null bos", with(minimal("llama"), "bos_token_id", nil), func(c *Config) bool { return c.BOSTokenID == nil }},
		{"mistral kv default 8 (transformers' MistralConfig)", with(minimal("mistral"), "num_attention_heads", 32, "hidden_size", 256),
			func(c *Config) bool {
				return c.NumKVHeads == 8 && c.MaxPositions == 131072 && *c.Mistral.SlidingWindow == 4096
			}},
		{"mistral null sliding window", with(minimal("mistral"), "num_key_value_heads", 4, "sliding_window", nil),
			func(c *Config) bool { return c.Mistral.SlidingWindow == nil }},
		{"qwen3 head_dim default 128", with(minimal("qwen3"), "num_key_value_heads", 2), func(c *Config) bool { return c.HeadDim == 128 }},
		{"qwen2 sliding layers", with(minimal("qwen2"), "num_key_value_heads", 2, "use_sliding_window", true, "max_window_layers", 1),
			func(c *Config) bool {
				return reflect.DeepEqual(c.Qwen2.LayerTypes, []string{"full_attention", "sliding_attention"}) && c.Qwen2.SlidingWindow == 4096
			}},
		{"gemma activation default", with(minimal("gemma"), "num_key_value_heads", 1), func(c *Config) bool {
			return c.Activation == "gelu_pytorch_tanh" && c.HeadDim == 256 && c.TieWordEmbeddings && *c.PadTokenID == 0
		}},
		{"gemma hidden_activation wins", with(minimal("gemma"), "num_key_value_heads", 1, "hidden_activation", "gelu"),
			func(c *Config) bool { return c.Activation == "gelu" }},
		{"gemma2 softcapping null disables", with(minimal("gemma2"), "final_logit_softcapping", nil),
			func(c *Config) bool {
				return c.Gemma2.FinalLogitSoftcapping == nil && *c.Gemma2.AttnLogitSoftcapping == 50
			}},
		{"gemma3 nested without text_config", []byte(`{"model_type":"gemma3"}`), func(c *Config) bool {
			return c.VocabSize == 262208 && c.HiddenSize == 2304 && c.NumLayers == 26 && c.Gemma3.Multimodal
		}},
		{"gpt2 n_inner", with(minimal("gpt2"), "n_inner", 100), func(c *Config) bool { return c.IntermediateSize == 100 && c.HeadDim == 16 }},
		{"gpt2 common names via attribute_map", []byte(`{"model_type":"gpt2","vocab_size":10,"hidden_size":32,"num_hidden_layers":3,"num_attention_heads":2,"max_position_embeddings":77}`),
			func(c *Config) bool {
				return c.HiddenSize == 32 && c.NumLayers == 3 && c.NumHeads == 2 && c.MaxPositions == 77
			}},
		{"bert defaults", with(minimal("bert")), func(c *Config) bool {
			return c.MaxPositions == 512 && c.NormEps == 1e-12 && c.BERT.TypeVocabSize == 2 && c.PositionEmbedding == "absolute"
		}},
		{"roberta defaults (RobertaConfig: pad 1, bos 0, eos 2)", with(minimal("roberta")), func(c *Config) bool {
			return c.Family() == "roberta" && c.BERT == nil && c.RoBERTa.TypeVocabSize == 2 && c.MaxPositions == 512 &&
				*c.PadTokenID == 1 && *c.BOSTokenID == 0 && reflect.DeepEqual(c.EOSTokenIDs, []int{2}) && c.Activation == "gelu"
		}},
		{"dispatch by RoBERTa architecture", with(minimal("roberta"), "model_type", deleteKey, "architectures", []string{"RobertaModel"}),
			func(c *Config) bool { return c.Family() == "roberta" && c.ModelType == "roberta" }},
		{"dispatch by architecture", with(minimal("llama"), "model_type", deleteKey, "num_key_value_heads", 2, "architectures", []string{"MistralForCausalLM"}),
			func(c *Config) bool { return c.Family() == "mistral" && c.ModelType == "mistral" }},
		{"dispatch by GPT-2 architecture", with(minimal("gpt2"), "model_type", deleteKey, "architectures", []string{"GPT2LMHeadModel"}),
			func(c *Config) bool { return c.Family() == "gpt2" }},
		{"dispatch gemma3 causal arch", with(minimal("gemma3_text"), "model_type", deleteKey, "architectures", []string{"Gemma3ForCausalLM"}),
			func(c *Config) bool { return c.Family() == "gemma3" && c.ModelType == "gemma3_text" }},
		{"integral float accepted", with(minimal("llama"), "hidden_size", 64.0), func(c *Config) bool { return c.HiddenSize == 64 }},
		{"v5 rope_parameters", with(minimal("llama"), "rope_parameters", map[string]any{"rope_type": "linear", "factor": 2.0, "rope_theta": 5e5}),
			func(c *Config) bool {
				return c.RopeTheta == 5e5 && c.RopeScaling.Type == RopeLinear && c.RopeScaling.Factor == 2
			}},
		{"v5 rope_parameters default type", with(minimal("llama"), "rope_parameters", map[string]any{"rope_type": "default", "rope_theta": 1e4}),
			func(c *Config) bool { return c.RopeTheta == 1e4 && c.RopeScaling == nil }},
		{"v5 gemma3 per-layer rope_parameters", with(minimal("gemma3_text"), "rope_parameters", map[string]any{
			"full_attention":    map[string]any{"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
			"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": 1e4}}),
			func(c *Config) bool {
				return c.RopeTheta == 1e6 && c.RopeScaling.Factor == 8 && c.Gemma3.RopeLocalBaseFreq == 1e4
			}},
		{"dtype field (v5)", with(minimal("llama"), "dtype", "bfloat16"), func(c *Config) bool { return c.DType == "bfloat16" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(tc.data)
			if err != nil {
				t.Fatalf("Parse(%s): %v", tc.data, err)
			}
			if !tc.want(c) {
				t.Errorf("unexpected config for %s:\n%s", tc.data, dump(c.Common))
			}
		})
	}
}

// TestRoBERTaBase parses roberta-base's published configuration (written
// out here field by field): 514 positions (the first two are the padding
// offset), one token type, eps 1e-5.
func TestRoBERTaBase(t *testing.T) {
	data := []byte(`{
  "architectures": ["RobertaForMaskedLM"],
  "attention_probs_dropout_prob": 0.1,
  "bos_token_id": 0,
  "eos_token_id": 2,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 768,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "layer_norm_eps": 1e-05,
  "max_position_embeddings": 514,
  "model_type": "roberta",
  "num_attention_heads": 12,
  "num_hidden_layers": 12,
  "pad_token_id": 1,
  "type_vocab_size": 1,
  "vocab_size": 50265
}`)
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	want := Common{ModelType: "roberta", Architectures: []string{"RobertaForMaskedLM"}, VocabSize: 50265, HiddenSize: 768,
		NumLayers: 12, NumHeads: 12, NumKVHeads: 12, HeadDim: 64, IntermediateSize: 3072, MaxPositions: 514,
		PositionEmbedding: "absolute", NormEps: 1e-5, Activation: "gelu", TieWordEmbeddings: true,
		BOSTokenID: ip(0), EOSTokenIDs: []int{2}, PadTokenID: ip(1)}
	if !reflect.DeepEqual(c.Common, want) {
		t.Errorf("got\n%s\nwant\n%s", dump(c.Common), dump(want))
	}
	if c.Family() != "roberta" || c.RoBERTa == nil || c.RoBERTa.TypeVocabSize != 1 || c.BERT != nil {
		t.Errorf("family %q, RoBERTa %+v, BERT %+v", c.Family(), c.RoBERTa, c.BERT)
	}
	if !slices.Contains(ModelTypes(), "roberta") {
		t.Errorf("ModelTypes() = %v lacks roberta", ModelTypes())
	}
}

func TestRopeScaling(t *testing.T) {
	long := make([]float64, 8) // head_dim 16 -> 8 factors
	for i := range long {
		long[i] = 1 + float64(i)
	}
	tests := []struct {
		name    string
		scaling any
		want    *RopeScaling // compared on the typed fields (Raw ignored)
		err     error
		mention string
	}{
		{"linear", map[string]any{"type": "linear", "factor": 2.0}, &RopeScaling{Type: RopeLinear, Factor: 2, BetaFast: 32, BetaSlow: 1}, nil, ""},
		{"dynamic", map[string]any{"rope_type": "dynamic", "factor": 4.0}, &RopeScaling{Type: RopeDynamic, Factor: 4, BetaFast: 32, BetaSlow: 1}, nil, ""},
		{"yarn full", map[string]any{"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096, "beta_fast": 16.0, "beta_slow": 2.0, "attention_factor": 0.5, "truncate": false},
			&RopeScaling{Type: RopeYaRN, Factor: 32, OriginalMaxPositionEmbeddings: 4096, BetaFast: 16, BetaSlow: 2, AttentionFactor: fp(0.5), Truncate: bp(false)}, nil, ""},
		{"yarn default original", map[string]any{"rope_type": "yarn", "factor": 2.0},
			&RopeScaling{Type: RopeYaRN, Factor: 2, OriginalMaxPositionEmbeddings: 2048, BetaFast: 32, BetaSlow: 1}, nil, ""},
		{"llama3", map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
			&RopeScaling{Type: RopeLlama3, Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192, BetaFast: 32, BetaSlow: 1}, nil, ""},
		{"longrope", map[string]any{"rope_type": "longrope", "short_factor": long, "long_factor": long, "original_max_position_embeddings": 4096},
			&RopeScaling{Type: RopeLongRoPE, ShortFactor: long, LongFactor: long, OriginalMaxPositionEmbeddings: 4096, BetaFast: 32, BetaSlow: 1}, nil, ""},
		{"su is longrope", map[string]any{"type": "su", "short_factor": long, "long_factor": long},
			&RopeScaling{Type: RopeLongRoPE, ShortFactor: long, LongFactor: long, OriginalMaxPositionEmbeddings: 2048, BetaFast: 32, BetaSlow: 1}, nil, ""},
		{"default is no scaling", map[string]any{"rope_type": "default"}, nil, nil, ""},
		{"linear without factor", map[string]any{"rope_type": "linear"}, nil, ErrMissingField, `"rope_scaling.factor"`},
		{"llama3 missing low_freq_factor", map[string]any{"rope_type": "llama3", "factor": 8.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
			nil, ErrMissingField, `"rope_scaling.low_freq_factor" for rope type "llama3"`},
		{"llama3 inverted band", map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0, "original_max_position_embeddings": 8192},
			nil, ErrInvalidField, "high_freq_factor"},
		{"longrope missing long_factor", map[string]any{"rope_type": "longrope", "short_factor": long}, nil, ErrMissingField, "long_factor"},
		{"longrope wrong length", map[string]any{"rope_type": "longrope", "short_factor": long[:3], "long_factor": long}, nil, ErrInvalidField, "want head_dim/2 = 8"},
		{"no type", map[string]any{"factor": 2.0}, nil, ErrMissingField, "rope_scaling.rope_type"},
		{"unknown type", map[string]any{"rope_type": "ntk-by-parts", "factor": 2.0}, nil, ErrUnsupported, `"ntk-by-parts"`},
		{"negative factor", map[string]any{"rope_type": "linear", "factor": -2.0}, nil, ErrInvalidField, "positive"},
		{"factor not number", map[string]any{"rope_type": "linear", "factor": "2"}, nil, ErrInvalidField, "factor"},
		{"not an object", []int{1}, nil, ErrInvalidField, `"rope_scaling" must be a JSON object`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(with(minimal("llama"), "rope_scaling", tc.scaling))
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), `model_type "llama"`) {
					t.Fatalf("error = %v, want %v mentioning %q and the model type", err, tc.err, tc.mention)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := c.RopeScaling
			if got != nil {
				g := *got
				g.Raw = nil
				got = &g
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("RopeScaling = %s, want %s", dump(got), dump(tc.want))
			}
		})
	}
}

func fp(v float64) *float64 { return &v }
func bp(v bool) *bool       { return &v }

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name    string
		data    []byte
		err     error
		mention []string
	}{
		{"empty", []byte(""), ErrSyntax, []string{"not a JSON object"}},
		{"array", []byte("[1]"), ErrSyntax, []string{"not a JSON object"}},
		{"truncated", []byte(`{"model_type": "llama"`), ErrSyntax, nil},
		{"trailing garbage", []byte(`{"model_type": "llama"} x`), ErrSyntax, nil},
		{"no model type", []byte(`{"hidden_size": 4}`), ErrUnsupported, []string{"no model_type"}},
		{"unknown model type", []byte(`{"model_type": "llava", "architectures": ["LlamaForCausalLM"]}`), ErrUnsupported, []string{`"llava"`}},
		{"moe arch not a dense family", []byte(`{"architectures": ["Qwen3MoeForCausalLM"]}`), ErrUnsupported, []string{"Qwen3MoeForCausalLM"}},
		{"model_type not string", []byte(`{"model_type": 3}`), ErrInvalidField, []string{`"model_type"`}},
		{"architectures not list", []byte(`{"model_type": "llama", "architectures": "LlamaForCausalLM"}`), ErrInvalidField, []string{`"architectures"`}},
		{"llama missing hidden_size", with(minimal("llama"), "hidden_size", deleteKey), ErrMissingField, []string{`"hidden_size"`, `model_type "llama"`}},
		{"llama null vocab", with(minimal("llama"), "vocab_size", nil), ErrMissingField, []string{`"vocab_size"`}},
		{"qwen2 missing intermediate", with(minimal("qwen2"), "intermediate_size", deleteKey), ErrMissingField, []string{`"intermediate_size"`, `model_type "qwen2"`}},
		{"gemma2 missing layers", with(minimal("gemma2"), "num_hidden_layers", deleteKey), ErrMissingField, []string{`"num_hidden_layers"`, `"gemma2"`}},
		{"bert missing heads", with(minimal("bert"), "num_attention_heads", deleteKey), ErrMissingField, []string{`"num_attention_heads"`, `"bert"`}},
		{"gpt2 missing n_embd", with(minimal("gpt2"), "n_embd", deleteKey), ErrMissingField, []string{`"n_embd"`, `"gpt2"`}},
		{"hidden_size string", with(minimal("llama"), "hidden_size", "4096"), ErrInvalidField, []string{`"hidden_size"`, `"4096"`}},
		{"hidden_size fraction", with(minimal("llama"), "hidden_size", 64.5), ErrInvalidField, []string{"integer"}},
		{"hidden_size zero", with(minimal("llama"), "hidden_size", 0), ErrInvalidField, []string{"positive"}},
		{"negative max positions", with(minimal("llama"), "max_position_embeddings", -1), ErrInvalidField, []string{"negative"}},
		{"kv heads do not divide heads", with(minimal("llama"), "num_key_value_heads", 3), ErrInvalidField, []string{"multiple of num_key_value_heads"}},
		{"kv heads above heads", with(minimal("llama"), "num_key_value_heads", 8), ErrInvalidField, []string{"num_key_value_heads"}},
		{"qwen2 kv default 32 exceeds 4 heads", with(minimal("qwen2")), ErrInvalidField, []string{"num_key_value_heads (32)"}},
		{"zero norm eps", with(minimal("llama"), "rms_norm_eps", 0), ErrInvalidField, []string{"epsilon"}},
		{"tie not bool", with(minimal("llama"), "tie_word_embeddings", "yes"), ErrInvalidField, []string{"tie_word_embeddings"}},
		{"eos list with string", with(minimal("llama"), "eos_token_id", []any{1, "2"}), ErrInvalidField, []string{"eos_token_id"}},
		{"bert hidden not divisible", with(minimal("bert"), "hidden_size", 66), ErrInvalidField, []string{"multiple"}},
		{"gpt2 n_embd not divisible", with(minimal("gpt2"), "n_embd", 66), ErrInvalidField, []string{"divisible"}},
		{"gemma3 bad text_config", []byte(`{"model_type":"gemma3","text_config":[1]}`), ErrInvalidField, []string{"text_config"}},
		{"gemma3 nested bad field", []byte(`{"model_type":"gemma3","text_config":{"hidden_size":"x"}}`), ErrInvalidField, []string{`"text_config.hidden_size"`}},
		{"huge layer count", with(minimal("qwen2"), "num_key_value_heads", 2, "num_hidden_layers", 4e15), ErrInvalidField, []string{"implausibly large"}},
		{"layers above limit", with(minimal("gemma2"), "num_hidden_layers", 1<<17), ErrInvalidField, []string{`"num_hidden_layers" is implausibly large`}},
		{"gpt2 layers above limit", with(minimal("gpt2"), "n_layer", 1<<17), ErrInvalidField, []string{`"n_layer"`}},
		{"layer_types wrong length", with(minimal("gemma2"), "layer_types", []string{"full_attention"}), ErrInvalidField, []string{"layer_types", "1 entries for 2 layers"}},
		{"layer_types unknown", with(minimal("gemma3_text"), "layer_types", []string{"full_attention", "chunked"}), ErrInvalidField, []string{`"chunked"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.data)
			if !errors.Is(err, tc.err) {
				t.Fatalf("Parse(%s) error = %v, want %v", tc.data, err, tc.err)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %s", err, m)
				}
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(t.TempDir()); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(empty dir) = %v, want not-exist", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte("{"), 0o644)
	if _, err := Load(dir); !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), dir) {
		t.Errorf("Load(bad) = %v, want ErrSyntax naming the path", err)
	}
}

func TestGeneration(t *testing.T) {
	tests := []struct {
		dir  string
		want func(g *Generation) bool
	}{
		{"llama-3.1-8b-instruct", func(g *Generation) bool {
			return *g.BOSTokenID == 128000 && reflect.DeepEqual(g.EOSTokenIDs, []int{128001, 128008, 128009}) && g.DoSample &&
				g.Temperature == 0.6 && g.TopP == 0.9 && g.TopK == 50 && g.MaxLength == 20 && g.PadTokenID == nil
		}},
		{"llama-2-7b", func(g *Generation) bool { return g.MaxLength == 4096 && *g.PadTokenID == 0 }},
		{"qwen3-0.6b", func(g *Generation) bool {
			return g.TopK == 20 && g.TopP == 0.95 && reflect.DeepEqual(g.EOSTokenIDs, []int{151645, 151643}) && *g.PadTokenID == 151643
		}},
		{"gemma-2-2b", func(g *Generation) bool {
			return g.CacheImplementation == "hybrid" && !g.DoSample && g.Temperature == 1 && g.RepetitionPenalty == 1 && g.NumBeams == 1
		}},
		{"gemma-3-1b-it", func(g *Generation) bool { return g.TopK == 64 && reflect.DeepEqual(g.EOSTokenIDs, []int{1, 106}) }},
		{"gpt2", func(g *Generation) bool {
			return *g.BOSTokenID == 50256 && g.TransformersVersion == "4.26.0.dev0" && g.Raw["_from_model_config"] != nil
		}},
		{"mistral-7b-v0.1", func(g *Generation) bool { return reflect.DeepEqual(g.EOSTokenIDs, []int{2}) && g.MaxNewTokens == nil }},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			g, err := LoadGeneration(filepath.Join("testdata", tc.dir))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(g) {
				t.Errorf("unexpected generation config: %s", dump(g))
			}
		})
	}
	bad := []struct {
		data string
		err  error
	}{
		{`{"top_p": 1.5}`, ErrInvalidField},
		{`{"temperature": -1}`, ErrInvalidField},
		{`{"num_beams": 0}`, ErrInvalidField},
		{`{"max_new_tokens": -5}`, ErrInvalidField},
		{`{"eos_token_id": "x"}`, ErrInvalidField},
		{`{"do_sample": 1}`, ErrInvalidField},
		{`not json`, ErrSyntax},
	}
	for _, b := range bad {
		if _, err := ParseGeneration([]byte(b.data)); !errors.Is(err, b.err) {
			t.Errorf("ParseGeneration(%s) = %v, want %v", b.data, err, b.err)
		}
	}
}

// FuzzParse checks that no input makes Parse or ParseGeneration panic, that
// every error wraps a sentinel, and that accepted configs are self-consistent.
func FuzzParse(f *testing.F) {
	entries, _ := filepath.Glob("testdata/*/*.json")
	for _, e := range entries {
		if b, err := os.ReadFile(e); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrMissingField) && !errors.Is(err, ErrInvalidField) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error without a sentinel: %v", err)
			}
		} else {
			if c.Family() == "" || c.NumHeads <= 0 || c.NumKVHeads <= 0 || c.NumHeads%c.NumKVHeads != 0 || c.HeadDim <= 0 || c.VocabSize <= 0 || c.NumLayers <= 0 {
				t.Fatalf("accepted an inconsistent config: %s", dump(c.Common))
			}
		}
		if _, err := ParseGeneration(data); err != nil && !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrInvalidField) {
			t.Fatalf("generation error without a sentinel: %v", err)
		}
	})
}
