package main

import (
	"github.com/spf13/pflag"

	"github.com/gotpu/gotpu/models"
	"github.com/gotpu/gotpu/models/sample"
)

// samplingFlags choose how generation picks tokens: greedy by default,
// sampling (package models/sample, transformers' processors in
// transformers' order) when --temperature is positive.
type samplingFlags struct {
	p     sample.Params
	stops []string
	fs    *pflag.FlagSet
}

func (f *samplingFlags) register(fs *pflag.FlagSet) {
	f.p = sample.Greedy()
	f.fs = fs
	fs.Float64Var(&f.p.Temperature, "temperature", 0, "sampling temperature (0: greedy decoding)")
	fs.IntVar(&f.p.TopK, "top-k", 0, "keep the k most likely tokens (0: off)")
	fs.Float64Var(&f.p.TopP, "top-p", 1, "keep the most likely tokens up to this probability mass (1: off)")
	fs.Float64Var(&f.p.MinP, "min-p", 0, "drop tokens less likely than min-p times the most likely (0: off)")
	fs.Float64Var(&f.p.RepetitionPenalty, "repetition-penalty", 1, "penalise tokens of the prompt and output (transformers' repetition_penalty; 1: off)")
	fs.Float64Var(&f.p.PresencePenalty, "presence-penalty", 0, "subtract from tokens already generated (OpenAI presence_penalty; 0: off)")
	fs.Float64Var(&f.p.FrequencyPenalty, "frequency-penalty", 0, "subtract per occurrence in the output (OpenAI frequency_penalty; 0: off)")
	fs.Uint64Var(&f.p.Seed, "seed", 0, "random seed: the same seed gives the same tokens on every run, device and mode")
	fs.StringArrayVar(&f.stops, "stop", nil, "stop when the output contains this text (repeatable; the text is not printed)")
}

// samplingFlagNames are the flags that choose the decoding.
var samplingFlagNames = []string{"temperature", "top-k", "top-p", "min-p", "repetition-penalty", "presence-penalty", "frequency-penalty"}

// chooser returns the token chooser for n sequences of model m: the flags'
// decoding, or — when no decoding flag is given and the model's
// generation_config.json sets do_sample — the model's own sampling
// defaults (temperature, top_k, top_p, min_p, repetition_penalty), as
// transformers' generate applies them.
func (f *samplingFlags) chooser(m *models.Model, n int) (models.Chooser, error) {
	p := f.p
	set := false
	for _, name := range samplingFlagNames {
		if fl := f.fs.Lookup(name); fl != nil && fl.Changed {
			set = true
		}
	}
	if g := m.Generation; !set && g != nil && g.DoSample {
		p.Temperature, p.TopK, p.TopP, p.RepetitionPenalty = g.Temperature, g.TopK, g.TopP, g.RepetitionPenalty
		if g.MinP != nil {
			p.MinP = *g.MinP
		}
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return models.Sampling(p, n)
}
