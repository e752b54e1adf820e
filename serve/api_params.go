package serve

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/gotpu/gotpu/models/sample"
)

// maxN bounds "n" (choices per prompt).
const maxN = 128

// genParams are the parsed generation fields of a request.
type genParams struct {
	maxTokens int // 0: up to the context length (or ServerOptions.MaxTokens)
	params    sample.Params
	seeded    bool
	bias      map[int]float32
	stops     []string
	n         int
	// schema, when set, constrains the output (response_format).
	schema []byte
	// ignoreEOS: the sequence does not end at an EOS token (ignore_eos).
	ignoreEOS bool
}

// parseStop reads "stop": a string or a list of strings.
func parseStop(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest("stop", "stop must be a string or a list of strings")
	}
	out := list[:0]
	for _, s := range list {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// parseSampling checks the shared fields and turns them into genParams.
func (s *Server) parseSampling(f *samplingFields, vocab int) (genParams, error) {
	g := genParams{params: s.defaults, n: 1, ignoreEOS: f.IgnoreEOS}
	p := &g.params
	if f.MaxTokens != nil && f.MaxCompletionTokens != nil && *f.MaxTokens != *f.MaxCompletionTokens {
		return g, badRequest("max_completion_tokens", "max_tokens (%d) and max_completion_tokens (%d) disagree", *f.MaxTokens, *f.MaxCompletionTokens)
	}
	for _, mt := range []struct {
		v    *int
		name string
	}{{f.MaxTokens, "max_tokens"}, {f.MaxCompletionTokens, "max_completion_tokens"}} {
		if mt.v != nil {
			if *mt.v < 1 {
				return g, badRequest(mt.name, "%s must be at least 1, got %d", mt.name, *mt.v)
			}
			g.maxTokens = *mt.v
		}
	}
	if v := f.Temperature; v != nil {
		if !finite(*v) || *v < 0 {
			return g, badRequest("temperature", "temperature must be a number ≥ 0 (0 is greedy), got %v", *v)
		}
		p.Temperature = *v
	}
	if v := f.TopP; v != nil {
		if !finite(*v) || *v <= 0 || *v > 1 {
			return g, badRequest("top_p", "top_p must be in (0, 1], got %v", *v)
		}
		p.TopP = *v
	}
	if v := f.TopK; v != nil {
		switch {
		case *v == -1 || *v == 0: // vLLM's -1 and 0 both mean off
			p.TopK = 0
		case *v < 0:
			return g, badRequest("top_k", "top_k must be ≥ 0 (0 or -1: off), got %d", *v)
		default:
			p.TopK = *v
		}
	}
	if v := f.MinP; v != nil {
		if !finite(*v) || *v < 0 || *v > 1 {
			return g, badRequest("min_p", "min_p must be in [0, 1], got %v", *v)
		}
		p.MinP = *v
	}
	if v := f.PresencePenalty; v != nil {
		if !finite(*v) || *v < -2 || *v > 2 {
			return g, badRequest("presence_penalty", "presence_penalty must be in [-2, 2], got %v", *v)
		}
		p.PresencePenalty = *v
	}
	if v := f.FrequencyPenalty; v != nil {
		if !finite(*v) || *v < -2 || *v > 2 {
			return g, badRequest("frequency_penalty", "frequency_penalty must be in [-2, 2], got %v", *v)
		}
		p.FrequencyPenalty = *v
	}
	if v := f.RepetitionPenalty; v != nil {
		if !finite(*v) || *v <= 0 {
			return g, badRequest("repetition_penalty", "repetition_penalty must be a number > 0 (1: off), got %v", *v)
		}
		p.RepetitionPenalty = *v
	}
	if f.Seed != nil {
		p.Seed = uint64(*f.Seed)
		g.seeded = true
	}
	if err := p.Validate(); err != nil {
		return g, badRequest("", "%v", err)
	}
	if f.N != nil {
		if *f.N < 1 || *f.N > maxN {
			return g, badRequest("n", "n must be in [1, %d], got %d", maxN, *f.N)
		}
		g.n = *f.N
	}
	if len(f.LogitBias) > 0 {
		g.bias = make(map[int]float32, len(f.LogitBias))
		for k, v := range f.LogitBias {
			id, err := strconv.Atoi(k)
			if err != nil || id < 0 || id >= vocab {
				return g, badRequest("logit_bias", "logit_bias key %q is not a token id in [0, %d)", k, vocab)
			}
			if !finite(v) || v < -100 || v > 100 {
				return g, badRequest("logit_bias", "logit_bias[%s] = %v is outside [-100, 100]", k, v)
			}
			g.bias[id] = float32(v)
		}
	}
	stops, err := parseStop(f.Stop)
	if err != nil {
		return g, err
	}
	g.stops = stops
	if rf := f.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", "text":
		case "json_object":
			g.schema = []byte(`{"type":"object"}`)
		case "json_schema":
			if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
				return g, badRequest("response_format.json_schema", "response_format json_schema needs json_schema.schema")
			}
			g.schema = rf.JSONSchema.Schema
		default:
			return g, badRequest("response_format.type", "response_format.type %q is not text, json_object or json_schema", rf.Type)
		}
		if g.schema != nil && s.o.NewConstraint == nil {
			return g, badRequest("response_format", "response_format %s needs constrained decoding, which this server does not have", rf.Type)
		}
	}
	if f.StreamOptions != nil && !f.Stream {
		return g, badRequest("stream_options", "stream_options is only allowed with stream: true")
	}
	return g, nil
}

// maxNew returns the max_tokens for a prompt of n tokens: the request's, or
// what the context has left (capped by ServerOptions.MaxTokens).
func (s *Server) maxNew(g genParams, promptLen int, param string) (int, error) {
	ctxLen := s.o.Generator.ContextLength()
	left := ctxLen - promptLen
	if left <= 0 {
		return 0, badRequest(param, "the prompt is %d tokens; the model's context is %d", promptLen, ctxLen)
	}
	if g.maxTokens > 0 {
		if g.maxTokens > left {
			return 0, badRequest("max_tokens", "max_tokens %d plus the prompt's %d tokens exceed the model's context of %d", g.maxTokens, promptLen, ctxLen)
		}
		return g.maxTokens, nil
	}
	if s.o.MaxTokens > 0 && s.o.MaxTokens < left {
		return s.o.MaxTokens, nil
	}
	return left, nil
}
