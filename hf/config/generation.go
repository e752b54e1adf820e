package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Generation is a parsed generation_config.json, with transformers'
// GenerationConfig defaults for absent fields.
type Generation struct {
	// BOSTokenID, PadTokenID and DecoderStartTokenID are nil when not set.
	BOSTokenID, PadTokenID, DecoderStartTokenID *int
	// EOSTokenIDs lists the stop ids (eos_token_id may be one id or a list).
	EOSTokenIDs []int
	// DoSample selects sampling over greedy/beam decoding (default false).
	DoSample bool
	// Temperature (default 1), TopK (default 50), TopP (default 1).
	Temperature float64
	TopK        int
	TopP        float64
	// MinP is nil when unset.
	MinP *float64
	// RepetitionPenalty (default 1).
	RepetitionPenalty float64
	// MaxLength (default 20) bounds prompt + output; MaxNewTokens, when set,
	// bounds the output alone and takes precedence.
	MaxLength    int
	MaxNewTokens *int
	// NumBeams (default 1).
	NumBeams int
	// CacheImplementation is e.g. "hybrid" for Gemma 2/3, "" when unset.
	CacheImplementation string
	// TransformersVersion is the version that wrote the file.
	TransformersVersion string
	// Raw holds every field as found.
	Raw map[string]json.RawMessage
}

// ParseGeneration parses the content of a generation_config.json.
func ParseGeneration(data []byte) (*Generation, error) {
	raw, err := decodeObject(data, "generation_config.json")
	if err != nil {
		return nil, err
	}
	f := newFields(raw, "generation_config.json", "")
	g := &Generation{
		BOSTokenID:          f.intPtr("bos_token_id"),
		PadTokenID:          f.intPtr("pad_token_id"),
		DecoderStartTokenID: f.intPtr("decoder_start_token_id"),
		EOSTokenIDs:         f.intOrList("eos_token_id"),
		DoSample:            f.boolOr("do_sample", false),
		Temperature:         f.floatOr("temperature", 1),
		TopK:                f.intOr("top_k", 50),
		TopP:                f.floatOr("top_p", 1),
		MinP:                f.floatPtr("min_p"),
		RepetitionPenalty:   f.floatOr("repetition_penalty", 1),
		MaxLength:           f.intOr("max_length", 20),
		MaxNewTokens:        f.intPtr("max_new_tokens"),
		NumBeams:            f.intOr("num_beams", 1),
		CacheImplementation: f.strOr("cache_implementation", ""),
		TransformersVersion: f.strOr("transformers_version", ""),
		Raw:                 raw,
	}
	if f.err != nil {
		return nil, f.err
	}
	switch {
	case g.Temperature < 0:
		return nil, fmt.Errorf("%w: \"temperature\" must not be negative, got %g (generation_config.json)", ErrInvalidField, g.Temperature)
	case g.TopP < 0 || g.TopP > 1:
		return nil, fmt.Errorf("%w: \"top_p\" must be in [0, 1], got %g (generation_config.json)", ErrInvalidField, g.TopP)
	case g.MaxNewTokens != nil && *g.MaxNewTokens < 0:
		return nil, fmt.Errorf("%w: \"max_new_tokens\" must not be negative, got %d (generation_config.json)", ErrInvalidField, *g.MaxNewTokens)
	case g.NumBeams < 1:
		return nil, fmt.Errorf("%w: \"num_beams\" must be at least 1, got %d (generation_config.json)", ErrInvalidField, g.NumBeams)
	}
	return g, nil
}

// LoadGeneration reads a generation_config.json; path may be the file or
// the model directory.
func LoadGeneration(path string) (*Generation, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "generation_config.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	g, err := ParseGeneration(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return g, nil
}
