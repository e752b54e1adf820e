package config

import (
	"encoding/json"
	"fmt"
)

// Rope scaling types, as named by transformers' rope_type.
const (
	RopeLinear   = "linear"
	RopeDynamic  = "dynamic"
	RopeYaRN     = "yarn"
	RopeLlama3   = "llama3"
	RopeLongRoPE = "longrope"
)

// RopeScaling is a parsed rope_scaling (or transformers v5 rope_parameters)
// object. Only the fields of its Type are meaningful; Raw keeps every key.
type RopeScaling struct {
	// Type is one of RopeLinear, RopeDynamic, RopeYaRN, RopeLlama3, RopeLongRoPE
	// (from "rope_type", or the legacy "type"; "su" is read as longrope).
	Type string
	// Factor is the context extension factor (required for linear, dynamic,
	// yarn and llama3; optional for longrope).
	Factor float64
	// OriginalMaxPositionEmbeddings is the pre-extension context length
	// (required for llama3; for yarn and longrope it defaults to the model's
	// original_max_position_embeddings / max_position_embeddings).
	OriginalMaxPositionEmbeddings int
	// LowFreqFactor and HighFreqFactor are llama3's band limits.
	LowFreqFactor, HighFreqFactor float64
	// AttentionFactor scales attention (yarn, longrope); nil = computed from Factor.
	AttentionFactor *float64
	// BetaFast and BetaSlow bound yarn's ramp (defaults 32 and 1).
	BetaFast, BetaSlow float64
	// MScale and MScaleAllDim are yarn's optional DeepSeek-style scales.
	MScale, MScaleAllDim *float64
	// Truncate is yarn's optional truncation switch (nil = transformers' default, true).
	Truncate *bool
	// ShortFactor and LongFactor are longrope's per-frequency factors
	// (each head_dim/2 long).
	ShortFactor, LongFactor []float64
	// Raw holds every key of the object as found.
	Raw map[string]json.RawMessage
}

// parseRope parses a rope scaling object. It returns nil for the "default"
// type (plain RoPE). maxPos and origMax are the model's
// max_position_embeddings and top-level original_max_position_embeddings (0
// if absent); headDim validates longrope factor lengths.
func parseRope(raw map[string]json.RawMessage, ctx, key string, maxPos, origMax, headDim int) (*RopeScaling, error) {
	f := newFields(raw, ctx, key+".")
	typ := f.strOr("rope_type", "")
	if typ == "" {
		typ = f.strOr("type", "")
	}
	if f.err != nil {
		return nil, f.err
	}
	switch typ {
	case "":
		return nil, fmt.Errorf("%w: %q (%s)", ErrMissingField, key+".rope_type", ctx)
	case "default", "mrope":
		return nil, nil
	case "su":
		typ = RopeLongRoPE
	}
	r := &RopeScaling{Type: typ, Raw: raw, BetaFast: 32, BetaSlow: 1}
	require := func(k string) {
		if !f.has(k) && f.err == nil {
			f.err = fmt.Errorf("%w: %q for rope type %q (%s)", ErrMissingField, key+"."+k, typ, ctx)
		}
	}
	positive := func(k string, v float64) {
		if f.has(k) && v <= 0 && f.err == nil {
			f.fail(ErrInvalidField, k, "must be positive, got %g", v)
		}
	}
	switch typ {
	case RopeLinear, RopeDynamic:
		require("factor")
		r.Factor = f.floatOr("factor", 0)
		positive("factor", r.Factor)
		r.OriginalMaxPositionEmbeddings = f.intOr("original_max_position_embeddings", 0)
	case RopeYaRN:
		require("factor")
		r.Factor = f.floatOr("factor", 0)
		positive("factor", r.Factor)
		r.OriginalMaxPositionEmbeddings = f.intOr("original_max_position_embeddings", firstNonZero(origMax, maxPos))
		r.AttentionFactor = f.floatPtr("attention_factor")
		r.BetaFast = f.floatOr("beta_fast", 32)
		r.BetaSlow = f.floatOr("beta_slow", 1)
		r.MScale = f.floatPtr("mscale")
		r.MScaleAllDim = f.floatPtr("mscale_all_dim")
		if f.has("truncate") {
			b := f.boolOr("truncate", true)
			r.Truncate = &b
		}
	case RopeLlama3:
		for _, k := range []string{"factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"} {
			require(k)
		}
		r.Factor = f.floatOr("factor", 0)
		positive("factor", r.Factor)
		r.OriginalMaxPositionEmbeddings = f.intOr("original_max_position_embeddings", 0)
		r.LowFreqFactor = f.floatOr("low_freq_factor", 0)
		r.HighFreqFactor = f.floatOr("high_freq_factor", 0)
		if f.err == nil && r.HighFreqFactor <= r.LowFreqFactor {
			f.fail(ErrInvalidField, "high_freq_factor", "(%g) must exceed low_freq_factor (%g)", r.HighFreqFactor, r.LowFreqFactor)
		}
	case RopeLongRoPE:
		require("short_factor")
		require("long_factor")
		r.ShortFactor = f.floatList("short_factor")
		r.LongFactor = f.floatList("long_factor")
		r.Factor = f.floatOr("factor", 0)
		r.OriginalMaxPositionEmbeddings = f.intOr("original_max_position_embeddings", firstNonZero(origMax, maxPos))
		r.AttentionFactor = f.floatPtr("attention_factor")
		if f.err == nil && headDim > 0 {
			for _, k := range []string{"short_factor", "long_factor"} {
				n := len(r.ShortFactor)
				if k == "long_factor" {
					n = len(r.LongFactor)
				}
				if n != headDim/2 {
					f.fail(ErrInvalidField, k, "has %d entries, want head_dim/2 = %d", n, headDim/2)
				}
			}
		}
	default:
		return nil, fmt.Errorf("%w: rope type %q in %s (%s)", ErrUnsupported, typ, key, ctx)
	}
	if f.err != nil {
		return nil, f.err
	}
	return r, nil
}

func firstNonZero(vals ...int) int {
	for _, v := range vals {
		if v != 0 {
			return v
		}
	}
	return 0
}
