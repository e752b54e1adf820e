package models

import (
	"fmt"
	"testing"
)

// BenchmarkPagedDecode times one compiled decode step of the paged cache
// (the serve engine's step) for SmolLM2-135M Q4_1 kept quantized: B
// sequences of ctx tokens already cached, one new token each, in one
// group. Run it with
//
//	go test -run XXX -bench PagedDecode -benchtime 20x ./models
//
// (tools/gguf/fetch.sh fetches the file). Attention reads B·ctx keys and
// values per layer: at long contexts and many sequences how it reads them
// (through the block tables, or gathered first) shows in the step time.
func BenchmarkPagedDecode(b *testing.B) {
	m, err := LoadGGUF(ggufFile(b, "SmolLM2-135M-Instruct.Q4_1.gguf"), Options{KeepQuantized: true})
	if err != nil {
		b.Fatal(err)
	}
	lm := m.LM
	lm.Compiled = true
	const bs = 16
	for _, c := range []struct{ batch, ctx int }{{8, 512}, {32, 256}, {32, 1024}} {
		b.Run(fmt.Sprintf("B%d/ctx%d", c.batch, c.ctx), func(b *testing.B) {
			per := (c.ctx + 1 + bs - 1) / bs
			kv, err := lm.NewPagedKV(c.batch*per, bs)
			if err != nil {
				b.Fatal(err)
			}
			seqs := make([]PagedSeq, c.batch)
			for i := range seqs {
				s := &seqs[i]
				for j := range per { // interleaved blocks, as a busy pool hands them out
					s.Blocks = append(s.Blocks, j*c.batch+i)
				}
				for j := range c.ctx {
					s.Tokens = append(s.Tokens, (17+7919*(i+j))%lm.Config.VocabSize)
				}
			}
			// Prefill every sequence (eagerly: one program fewer).
			lm.Compiled = false
			for i := range seqs {
				if _, err := lm.ForwardPaged(kv, []PagedGroup{{Seqs: seqs[i : i+1]}}, false); err != nil {
					b.Fatal(err)
				}
			}
			lm.Compiled = true
			step := make([]PagedSeq, c.batch)
			for i := range step {
				step[i] = PagedSeq{Tokens: []int{i + 1}, Start: c.ctx, Blocks: seqs[i].Blocks}
			}
			g := []PagedGroup{{Seqs: step}}
			for range 3 { // trace, compile, replay
				if _, err := lm.ForwardPaged(kv, g, false); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if _, err := lm.ForwardPaged(kv, g, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
