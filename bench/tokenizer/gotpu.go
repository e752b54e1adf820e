package main

import (
	"fmt"

	"github.com/gotpu/gotpu/hf/tokenizer"
)

// gotpuEncoder adapts *tokenizer.Tokenizer to encoder.
type gotpuEncoder struct{ t *tokenizer.Tokenizer }

func (g gotpuEncoder) encodeBatch(texts []string) ([][]int, error) {
	encs, err := g.t.EncodeBatch(texts, false)
	if err != nil {
		return nil, fmt.Errorf("encode batch: %w", err)
	}
	out := make([][]int, len(encs))
	for i := range encs {
		out[i] = encs[i].IDs
	}
	return out, nil
}

// loadTokenizer opens a tokenizer.json with gotpu's hf/tokenizer, set up as
// the reference is: one goroutine, no truncation, no padding.
func loadTokenizer(path string) (encoder, error) {
	t, err := tokenizer.FromFile(path)
	if err != nil {
		return nil, err
	}
	if err := t.SetTruncation(nil); err != nil {
		return nil, fmt.Errorf("disable truncation: %w", err)
	}
	t.SetPadding(nil)
	t.SetParallelism(1)
	return gotpuEncoder{t}, nil
}
