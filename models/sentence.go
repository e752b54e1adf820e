package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gotpu/gotpu/hf/config"
)

// PoolingMode is one of sentence-transformers' Pooling modes.
type PoolingMode string

// Pooling modes, named as sentence-transformers' pooling_mode values.
const (
	// PoolCLS takes the first token's state ([CLS]).
	PoolCLS PoolingMode = "cls"
	// PoolMax takes the elementwise maximum over the real tokens.
	PoolMax PoolingMode = "max"
	// PoolMean averages the real tokens' states.
	PoolMean PoolingMode = "mean"
	// PoolMeanSqrtLen sums the real tokens' states and divides by the
	// square root of their count.
	PoolMeanSqrtLen PoolingMode = "mean_sqrt_len_tokens"
	// PoolWeightedMean averages with weights 1, 2, ... by position.
	PoolWeightedMean PoolingMode = "weightedmean"
	// PoolLastToken takes the last real token's state.
	PoolLastToken PoolingMode = "lasttoken"
)

// poolingModes lists the modes in the order sentence-transformers
// concatenates them when a legacy config enables several.
var poolingModes = []struct {
	key  string
	mode PoolingMode
}{
	{"pooling_mode_cls_token", PoolCLS},
	{"pooling_mode_max_tokens", PoolMax},
	{"pooling_mode_mean_tokens", PoolMean},
	{"pooling_mode_mean_sqrt_len_tokens", PoolMeanSqrtLen},
	{"pooling_mode_weightedmean_tokens", PoolWeightedMean},
	{"pooling_mode_lasttoken", PoolLastToken},
}

func knownMode(mode PoolingMode) bool {
	for _, m := range poolingModes {
		if m.mode == mode {
			return true
		}
	}
	return false
}

func legacyKey(key string) bool {
	for _, m := range poolingModes {
		if m.key == key {
			return true
		}
	}
	return false
}

// SentenceConfig is how Embed turns an encoder's token states into one
// vector per text, read from a sentence-transformers model directory:
// modules.json (a Transformer, a Pooling and optionally a Normalize
// module), the Pooling module's config.json (e.g. 1_Pooling/config.json),
// sentence_bert_config.json (max_seq_length, do_lower_case) and
// tokenizer_config.json (model_max_length, truncation_side).
//
// Without modules.json the directory is a plain transformers model and the
// configuration is sentence-transformers' default for one: mean pooling, no
// normalization, max_seq_length the tokenizer's model_max_length capped at
// the model's positions.
type SentenceConfig struct {
	// FromModules reports whether modules.json was present (false: the
	// default mean pooling).
	FromModules bool
	// Pooling lists the pooling modes; their results are concatenated in
	// this order (usually one mode).
	Pooling []PoolingMode
	// Normalize L2-normalizes the pooled vector (a Normalize module).
	Normalize bool
	// MaxSeqLength is the number of tokens, special tokens included, a text
	// is truncated to.
	MaxSeqLength int
	// DoLowerCase lowercases texts before tokenizing.
	DoLowerCase bool
	// TruncateLeft drops tokens from the start (tokenizer_config.json's
	// truncation_side "left") instead of the end.
	TruncateLeft bool
}

// Dim returns the size of the embeddings for a model of the given width.
func (s *SentenceConfig) Dim(hidden int) int { return len(s.Pooling) * hidden }

// maxTokens is the longest input the encoder's position table allows.
func maxTokens(c *config.Config) int {
	if c.RoBERTa != nil && c.PadTokenID != nil {
		return c.MaxPositions - *c.PadTokenID - 1
	}
	return c.MaxPositions
}

// DefaultSentenceConfig is sentence-transformers' configuration for a model
// directory without modules.json: mean pooling over the real tokens, no
// normalization, inputs truncated to the model's positions.
func DefaultSentenceConfig(c *config.Config) *SentenceConfig {
	return &SentenceConfig{Pooling: []PoolingMode{PoolMean}, MaxSeqLength: maxTokens(c)}
}

// stModule is one entry of modules.json.
type stModule struct {
	Idx  int    `json:"idx"`
	Name string `json:"name"`
	Path string `json:"path"`
	Type string `json:"type"`
}

// readJSON decodes dir/name into v; ok is false when the file is absent.
func readJSON(dir, name string, v any) (ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrModel, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%w: %s: %v", ErrModel, filepath.Join(dir, name), err)
	}
	return true, nil
}

// LoadSentenceConfig reads the sentence-transformers configuration of the
// model directory dir whose config.json is c (see SentenceConfig). Modules
// other than Transformer, Pooling and Normalize (Dense, LayerNorm, ...),
// unknown pooling modes and a Pooling dimension that is not the model's
// width are errors wrapping ErrUnsupported or ErrModel.
func LoadSentenceConfig(dir string, c *config.Config) (*SentenceConfig, error) {
	s := DefaultSentenceConfig(c)
	var tokCfg struct {
		ModelMaxLength *float64 `json:"model_max_length"`
		TruncationSide string   `json:"truncation_side"`
	}
	if _, err := readJSON(dir, "tokenizer_config.json", &tokCfg); err != nil {
		return nil, err
	}
	if m := tokCfg.ModelMaxLength; m != nil && *m > 0 && *m < float64(s.MaxSeqLength) {
		s.MaxSeqLength = int(*m)
	}
	s.TruncateLeft = tokCfg.TruncationSide == "left"

	var mods []stModule
	ok, err := readJSON(dir, "modules.json", &mods)
	if err != nil || !ok {
		return s, err
	}
	s.FromModules = true
	s.Pooling = nil
	slices.SortStableFunc(mods, func(a, b stModule) int { return a.Idx - b.Idx })
	stage := 0 // 0: want Transformer, 1: want Pooling, 2: Normalize allowed, 3: done
	for _, m := range mods {
		kind := m.Type[strings.LastIndex(m.Type, ".")+1:]
		where := fmt.Sprintf("modules.json: module %q (%s)", m.Name, m.Type)
		switch {
		case kind == "Transformer" && stage == 0:
			if m.Path != "" && m.Path != "." {
				return nil, fmt.Errorf("%w: %s: the transformer is in the subfolder %q; load that folder", ErrUnsupported, where, m.Path)
			}
			if err := s.readTransformer(dir); err != nil {
				return nil, err
			}
			stage = 1
		case kind == "Pooling" && stage == 1:
			if err := s.readPooling(dir, m.Path, c.HiddenSize); err != nil {
				return nil, err
			}
			stage = 2
		case kind == "Normalize" && stage == 2:
			var nc struct {
				In  string `json:"module_input_name"`
				Out string `json:"module_output_name"`
			}
			if m.Path != "" {
				if _, err := readJSON(filepath.Join(dir, m.Path), "config.json", &nc); err != nil {
					return nil, err
				}
			}
			if nc.In != "" && nc.In != "sentence_embedding" || nc.Out != "" && nc.Out != "sentence_embedding" {
				return nil, fmt.Errorf("%w: %s normalizes %q, not the sentence embedding", ErrUnsupported, where, nc.In)
			}
			s.Normalize = true
			stage = 3
		case kind == "Transformer" || kind == "Pooling" || kind == "Normalize":
			return nil, fmt.Errorf("%w: %s out of order (want Transformer, Pooling, then optionally Normalize)", ErrUnsupported, where)
		default:
			return nil, fmt.Errorf("%w: %s: gotpu runs Transformer, Pooling and Normalize modules only", ErrUnsupported, where)
		}
	}
	if stage < 2 {
		return nil, fmt.Errorf("%w: modules.json has no Transformer followed by a Pooling module", ErrUnsupported)
	}
	return s, nil
}

// readTransformer applies sentence_bert_config.json.
func (s *SentenceConfig) readTransformer(dir string) error {
	var sb struct {
		MaxSeqLength *int `json:"max_seq_length"`
		DoLowerCase  bool `json:"do_lower_case"`
	}
	if _, err := readJSON(dir, "sentence_bert_config.json", &sb); err != nil {
		return err
	}
	if sb.MaxSeqLength != nil {
		if *sb.MaxSeqLength <= 0 {
			return fmt.Errorf("%w: sentence_bert_config.json: max_seq_length %d", ErrModel, *sb.MaxSeqLength)
		}
		// sentence-transformers makes it the tokenizer's model_max_length.
		s.MaxSeqLength = *sb.MaxSeqLength
	}
	s.DoLowerCase = sb.DoLowerCase
	return nil
}

// readPooling reads a Pooling module's config.json: the legacy
// pooling_mode_* booleans or the newer pooling_mode (a name or a list).
func (s *SentenceConfig) readPooling(dir, path string, hidden int) error {
	name := filepath.Join(path, "config.json")
	var raw map[string]json.RawMessage
	ok, err := readJSON(dir, name, &raw)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s is missing (the Pooling module's configuration)", ErrModel, filepath.Join(dir, name))
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrModel, filepath.Join(dir, name), fmt.Sprintf(format, args...))
	}
	for _, key := range []string{"embedding_dimension", "word_embedding_dimension"} {
		if v, ok := raw[key]; ok {
			var d int
			if json.Unmarshal(v, &d) != nil {
				return bad("%s is not an integer", key)
			}
			if d != hidden {
				return bad("%s is %d but the model's hidden_size is %d", key, d, hidden)
			}
		}
	}
	if v, ok := raw["pooling_mode"]; ok {
		var one string
		var list []string
		switch {
		case json.Unmarshal(v, &one) == nil:
			list = []string{one}
		case json.Unmarshal(v, &list) == nil:
		default:
			return bad("pooling_mode must be a name or a list of names")
		}
		for _, p := range list {
			mode := PoolingMode(p)
			if !knownMode(mode) {
				return fmt.Errorf("%w: %s: pooling mode %q (known: cls, max, mean, mean_sqrt_len_tokens, weightedmean, lasttoken)", ErrUnsupported, filepath.Join(dir, name), p)
			}
			s.Pooling = append(s.Pooling, mode)
		}
	} else {
		for _, m := range poolingModes {
			v, ok := raw[m.key]
			if !ok {
				continue
			}
			var on bool
			if json.Unmarshal(v, &on) != nil {
				return bad("%s must be true or false", m.key)
			}
			if on {
				s.Pooling = append(s.Pooling, m.mode)
			}
		}
		for key := range raw {
			if strings.HasPrefix(key, "pooling_mode_") && !legacyKey(key) {
				var on bool
				if json.Unmarshal(raw[key], &on) == nil && on {
					return fmt.Errorf("%w: %s: pooling mode %q", ErrUnsupported, filepath.Join(dir, name), key)
				}
			}
		}
		if len(s.Pooling) == 0 {
			// sentence-transformers: no mode enabled means mean.
			s.Pooling = []PoolingMode{PoolMean}
		}
	}
	if len(s.Pooling) == 0 {
		return bad("pooling_mode is empty")
	}
	return nil
}
