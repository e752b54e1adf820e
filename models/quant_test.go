package models

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// keptQuantized counts a model's linear layers whose weight is kept
// quantized, and returns their encodings.
func keptQuantized(lm *CausalLM) map[string]int {
	out := map[string]int{}
	add := func(l *Linear) {
		if l == nil {
			return
		}
		if q, ok := l.W.(Quantized); ok {
			out[q.Block.Name]++
		}
	}
	for _, b := range lm.layers {
		for _, l := range []*Linear{b.q, b.k, b.v, b.o, b.qkv, b.gate, b.up, b.down, b.fc} {
			add(l)
		}
	}
	add(lm.head)
	return out
}

// keepStats compares the last-position logits of a kept-quantized model
// with the dequantized f32 model's: the largest difference, that over the
// spread (max - min) of the f32 logits, and whether the argmax agrees.
func keepStats(a, b []float32) (worst, rel float64, sameTop bool) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range a {
		worst = math.Max(worst, math.Abs(float64(a[i]-b[i])))
		lo, hi = math.Min(lo, float64(b[i])), math.Max(hi, float64(b[i]))
	}
	argmax := func(v []float32) int {
		best := 0
		for i, x := range v {
			if x > v[best] {
				best = i
			}
		}
		return best
	}
	return worst, worst / (hi - lo), argmax(a) == argmax(b)
}

// TestGGUFKeepQuantized runs the real SmolLM2 (Q4_1, tied Q8_0 head) and
// Gemma-3 (Q4_K/Q5_0/Q6_K/Q8_0) files with their linear weights kept in
// blocks against the same files dequantized to f32, in Strict and compiled
// modes. Every kept weight dequantizes to the f32 model's matrix bit for
// bit (checkKeptWeights: the loading, the llama row permutation and the
// tied head are exact), so the logits differ only by the products: the
// kept model multiplies as llama.cpp's CPU backend does (activations
// quantized to 8 bits per block, ggml's vec_dot arithmetic), which puts
// its last-position logits 0.6–1.3 (1.4–2.5% of the logits' spread) from
// the f32 model's on these prompts (bound: 5%, same argmax); the first 4
// greedy tokens agree (later ones part at near-ties, after 5–7 steps on
// these prompts).
func TestGGUFKeepQuantized(t *testing.T) {
	for _, tc := range []struct {
		name   string
		greedy int // greedy steps that must agree
	}{{"smollm2", 4}, {"gemma3", 4}} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.name != "smollm2" {
				t.Skip("-short: SmolLM2 only")
			}
			ref := readGGUFRef(t, tc.name)
			path := ggufFile(t, ref.File)
			cases := ref.Cases[:2]
			if testing.Short() {
				cases = cases[:1]
			}
			dev := device.Device{Type: "cpu"}
			f32, err := LoadGGUF(path, Options{Device: dev, DType: dtype.F32})
			if err != nil {
				t.Fatal(err)
			}
			keep, err := LoadGGUF(path, Options{Device: dev, DType: dtype.F32, KeepQuantized: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(keep.Unused) > 0 {
				t.Errorf("unused tensors: %v", keep.Unused)
			}
			kinds := keptQuantized(keep.LM)
			t.Logf("kept quantized: %v", kinds)
			if _, ok := keep.LM.head.W.(Quantized); !ok {
				t.Errorf("the tied head is %T, want the embedding's blocks (Quantized)", keep.LM.head.W)
			}
			checkKeptWeights(t, keep.LM, f32.LM)
			ms := []runMode{modes[0], modes[2]}
			if testing.Short() {
				ms = ms[:1]
			}
			for _, md := range ms {
				t.Run(md.name, func(t *testing.T) {
					old := tensor.SetMode(md.mode)
					defer tensor.SetMode(old)
					f32.LM.Compiled, keep.LM.Compiled = md.compiled, md.compiled
					for ci, c := range cases {
						want, tl, err := f32.LM.ForwardLogits([][]int{c.IDs}, 0)
						if err != nil {
							t.Fatal(err)
						}
						got, _, err := keep.LM.ForwardLogits([][]int{c.IDs}, 0)
						if err != nil {
							t.Fatal(err)
						}
						v := ref.VocabSize
						worst, rel, same := keepStats(got[(tl-1)*v:][:v], want[(tl-1)*v:][:v])
						t.Logf("case %d: last-position logits differ by at most %.3g (%.2f%% of the f32 spread), same argmax %v", ci, worst, 100*rel, same)
						if rel > 0.05 || !same {
							t.Errorf("case %d: kept-quantized logits differ by %.3g (%.2f%% of the spread), same argmax %v", ci, worst, 100*rel, same)
						}
						opts := GenerateOptions{MaxNewTokens: tc.greedy}
						rw, err := f32.LM.Generate(context.Background(), [][]int{c.IDs}, opts)
						if err != nil {
							t.Fatal(err)
						}
						rg, err := keep.LM.Generate(context.Background(), [][]int{c.IDs}, opts)
						if err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(rg.Tokens[0], rw.Tokens[0]) {
							t.Errorf("case %d: greedy %v, f32 model %v", ci, rg.Tokens[0], rw.Tokens[0])
						}
					}
				})
			}
		})
	}
}

// checkKeptWeights checks that every weight the kept model holds in blocks
// dequantizes (Quantized.Dense, ggml's reference) to the f32 model's
// matrix bit for bit.
func checkKeptWeights(t *testing.T, keep, f32 *CausalLM) {
	t.Helper()
	pairs := [][2]*Linear{{keep.head, f32.head}}
	for i, b := range keep.layers {
		fb := f32.layers[i]
		pairs = append(pairs, [2]*Linear{b.q, fb.q}, [2]*Linear{b.k, fb.k}, [2]*Linear{b.v, fb.v}, [2]*Linear{b.o, fb.o},
			[2]*Linear{b.gate, fb.gate}, [2]*Linear{b.up, fb.up}, [2]*Linear{b.down, fb.down})
	}
	n := 0
	for _, p := range pairs {
		if p[0] == nil {
			continue
		}
		q, ok := p[0].W.(Quantized)
		if !ok {
			continue
		}
		n++
		got, want := q.Dense().Float32s(), p[1].W.Dense().Float32s()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s weight %d: element %d is %g kept, %g in the f32 model", q.Block.Name, n, i, got[i], want[i])
			}
		}
	}
	if n == 0 {
		t.Fatal("no weight was kept quantized")
	}
}
