package sample

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidParams is wrapped by every error Params.Validate returns.
var ErrInvalidParams = errors.New("sample: invalid parameters")

// ErrInvalidInput is wrapped by the errors of Sampler.Next and
// Sampler.Process for logits or token ids they cannot use: empty logits, a
// NaN or +Inf logit, a negative token id, every logit -Inf, or a temperature
// so small that a logit overflows to +Inf.
var ErrInvalidInput = errors.New("sample: invalid input")

// Params configures a Sampler. The zero value is not valid (TopP and
// RepetitionPenalty must be set); start from DefaultParams, which disables
// everything except plain sampling at temperature 1, or from Greedy.
//
// The names and meanings are those of transformers' GenerationConfig, except
// PresencePenalty and FrequencyPenalty, which come from the OpenAI API and
// vLLM. See the package documentation for the order in which they apply.
type Params struct {
	// Temperature divides the logits before sampling. 0 selects greedy
	// decoding (argmax after the penalties; TopK, TopP and MinP are then
	// ignored, as in transformers with do_sample=False). Must be ≥ 0.
	Temperature float64
	// TopK keeps the TopK highest logits (every token tied with the TopK-th
	// is kept too). 0 disables it; must be ≥ 0. Values above the vocabulary
	// size disable it as well.
	TopK int
	// TopP keeps the smallest set of most likely tokens whose probability
	// reaches TopP (exactly transformers' TopPLogitsWarper; see the package
	// documentation). Must be in (0, 1]; 1 disables it.
	TopP float64
	// MinP drops tokens whose probability is below MinP times the
	// probability of the most likely token. Must be in [0, 1]; 0 disables
	// it.
	MinP float64
	// RepetitionPenalty divides the positive logits, and multiplies the
	// negative ones, of every distinct token id that occurs in the prompt or
	// in the generated tokens (transformers' RepetitionPenaltyLogitsProcessor).
	// Must be > 0; 1 disables it, values below 1 favour repetition.
	RepetitionPenalty float64
	// PresencePenalty is subtracted from the logit of every token that occurs
	// at least once in the generated tokens (the prompt is not counted), as
	// in the OpenAI API and vLLM. Must be in [-2, 2]; 0 disables it.
	PresencePenalty float64
	// FrequencyPenalty times the number of times a token occurs in the
	// generated tokens is subtracted from its logit (the prompt is not
	// counted), as in the OpenAI API and vLLM. Must be in [-2, 2]; 0
	// disables it.
	FrequencyPenalty float64
	// Seed selects the random stream. The draw for a step depends only on
	// Seed and the number of tokens generated so far; see the package
	// documentation.
	Seed uint64
}

// DefaultParams returns the transformers defaults for sampling with every
// filter off: temperature 1, top_k 0, top_p 1, min_p 0, no penalties, seed 0.
// (transformers' own GenerationConfig default for top_k is 50; set TopK to
// match it when that is wanted.)
func DefaultParams() Params {
	return Params{Temperature: 1, TopP: 1, RepetitionPenalty: 1}
}

// Greedy returns Params for greedy decoding with no penalties.
func Greedy() Params {
	return Params{Temperature: 0, TopP: 1, RepetitionPenalty: 1}
}

// IsGreedy reports whether p selects greedy decoding (Temperature == 0).
func (p Params) IsGreedy() bool { return p.Temperature == 0 }

// Validate reports the first parameter that is out of range, wrapping
// ErrInvalidParams.
func (p Params) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidParams}, args...)...)
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !finite(p.Temperature):
		return bad("temperature %v is not a finite number", p.Temperature)
	case p.Temperature < 0:
		return bad("temperature %v is negative (0 selects greedy decoding)", p.Temperature)
	case p.TopK < 0:
		return bad("top_k %d is negative (0 disables it)", p.TopK)
	case math.IsNaN(p.TopP) || p.TopP <= 0 || p.TopP > 1:
		return bad("top_p %v is outside (0, 1] (1 disables it)", p.TopP)
	case math.IsNaN(p.MinP) || p.MinP < 0 || p.MinP > 1:
		return bad("min_p %v is outside [0, 1] (0 disables it)", p.MinP)
	case !finite(p.RepetitionPenalty) || p.RepetitionPenalty <= 0:
		return bad("repetition_penalty %v is not a finite number > 0 (1 disables it)", p.RepetitionPenalty)
	case math.IsNaN(p.PresencePenalty) || p.PresencePenalty < -2 || p.PresencePenalty > 2:
		return bad("presence_penalty %v is outside [-2, 2] (0 disables it)", p.PresencePenalty)
	case math.IsNaN(p.FrequencyPenalty) || p.FrequencyPenalty < -2 || p.FrequencyPenalty > 2:
		return bad("frequency_penalty %v is outside [-2, 2] (0 disables it)", p.FrequencyPenalty)
	}
	return nil
}
