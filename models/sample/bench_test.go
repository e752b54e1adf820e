package sample

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchLogits returns n logits: "flat" is N(0, 2²) noise (the worst case
// for top-p: the cut falls among thousands of near-equal tokens); "peaked"
// adds a few dominant tokens, closer to a trained model's output.
func benchLogits(n int, shape string) []float32 {
	r := rand.New(rand.NewPCG(uint64(n), 1))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 2)
	}
	if shape == "peaked" {
		for j := range 20 {
			x[r.IntN(n)] = float32(14 - j/2)
		}
	}
	return x
}

func BenchmarkNext(b *testing.B) {
	configs := []struct {
		name string
		p    Params
	}{
		{"greedy", Greedy()},
		{"plain", DefaultParams()},
		{"k50_p0.9_t0.7", Params{Temperature: 0.7, TopK: 50, TopP: 0.9, RepetitionPenalty: 1}},
		{"p0.9", Params{Temperature: 1, TopP: 0.9, RepetitionPenalty: 1}},
		{"k1000_p0.95", Params{Temperature: 1, TopK: 1000, TopP: 0.95, RepetitionPenalty: 1}},
		{"minp0.05", Params{Temperature: 1, TopP: 1, MinP: 0.05, RepetitionPenalty: 1}},
		{"all", Params{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.02, RepetitionPenalty: 1.1, PresencePenalty: 0.5, FrequencyPenalty: 0.3}},
	}
	for _, n := range []int{49152, 262144} {
		for _, shape := range []string{"flat", "peaked"} {
			x := benchLogits(n, shape)
			r := rand.New(rand.NewPCG(2, 2))
			prompt, gen := make([]int, 512), make([]int, 128)
			for i := range prompt {
				prompt[i] = r.IntN(n)
			}
			for i := range gen {
				gen[i] = r.IntN(n)
			}
			for _, c := range configs {
				b.Run(fmt.Sprintf("vocab=%d/%s/%s", n, shape, c.name), func(b *testing.B) {
					s, err := New(c.p)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := s.Next(x, prompt, gen); err != nil {
						b.Fatal(err)
					}
					b.ReportAllocs()
					b.SetBytes(int64(4 * n))
					c0 := cpuNanos()
					for b.Loop() {
						s.Next(x, prompt, gen)
					}
					if c := cpuNanos() - c0; c > 0 {
						b.ReportMetric(float64(c)/float64(b.N), "cpu-ns/op")
					}
				})
			}
		}
	}
}
