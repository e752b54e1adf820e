package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// TestForwardPagedParity runs several sequences of different lengths
// through a paged cache in mixed steps (prefill chunks and single tokens
// in separate groups, padded rows, tokens and context, scattered blocks)
// and checks every position's logits against Forward on each sequence
// alone, for every decoder variant, Strict and compiled.
func TestForwardPagedParity(t *testing.T) {
	lens := []int{5, 11, 17}
	// Each step lists, per sequence, how many new tokens it runs (0: none).
	steps := [][]int{{3, 6, 1}, {2, 5, 8}, {0, 0, 8}}
	for _, v := range decoderVariants(t) {
		if !readReference(t, filepath.Join(refDir, v)).CacheEqualsRecomput {
			// Dynamic RoPE and LongRoPE change their frequencies with the
			// sequence length: cached keys keep the ones they were made
			// with, so no cached run equals a full forward.
			t.Logf("%s: cached keys keep their sequence-length-dependent RoPE; not compared", v)
			continue
		}
		for _, md := range []runMode{modes[0], modes[2]} {
			if testing.Short() && md.compiled && v != "llama" && v != "gemma3" && v != "gpt2" {
				continue
			}
			t.Run(v+"/"+md.name, func(t *testing.T) {
				old := tensor.SetMode(md.mode)
				defer tensor.SetMode(old)
				m, err := Load(filepath.Join(refDir, v), Options{DType: dtype.F32})
				if err != nil {
					t.Fatal(err)
				}
				lm := m.LM
				lm.Compiled = md.compiled
				rng := rand.New(rand.NewPCG(1, uint64(len(v))))
				seqs := make([][]int, len(lens))
				want := make([][]float32, len(lens))
				for i, n := range lens {
					for range n {
						seqs[i] = append(seqs[i], rng.IntN(lm.Config.VocabSize))
					}
					want[i], _, err = lm.ForwardLogits([][]int{seqs[i]}, 0)
					if err != nil {
						t.Fatal(err)
					}
				}
				const bs = 4
				kv, err := lm.NewPagedKV(16, bs)
				if err != nil {
					t.Fatal(err)
				}
				perm := rng.Perm(16)
				tables := [][]int{perm[0:2], perm[2:5], perm[5:10]}
				got := make([][]float32, len(lens))
				start := make([]int, len(lens))
				for si, st := range steps {
					var multi, single PagedGroup
					var order []int
					for i, n := range st {
						if n == 0 {
							continue
						}
						s := PagedSeq{Tokens: seqs[i][start[i] : start[i]+n], Start: start[i], Blocks: tables[i]}
						if n == 1 {
							single.Seqs = append(single.Seqs, s)
						} else {
							multi.Seqs = append(multi.Seqs, s)
						}
						start[i] += n
					}
					var groups []PagedGroup
					if len(multi.Seqs) > 0 {
						// Padded rows, tokens and context.
						multi.Batch, multi.Tokens, multi.Context = len(multi.Seqs)+1, 9, 20
						groups = append(groups, multi)
						for i, n := range st {
							if n > 1 {
								order = append(order, i)
							}
						}
					}
					if len(single.Seqs) > 0 {
						groups = append(groups, single)
						for i, n := range st {
							if n == 1 {
								order = append(order, i)
							}
						}
					}
					out, err := lm.ForwardPaged(kv, groups, true)
					if err != nil {
						t.Fatalf("step %d: %v", si, err)
					}
					for j, i := range order {
						got[i] = append(got[i], out[j]...)
					}
				}
				for i := range lens {
					compare(t, fmt.Sprintf("sequence %d (%d tokens)", i, lens[i]), got[i], want[i], tol{1e-5, 0}, nil)
				}
				if md.compiled {
					st := lm.CompileStats()
					t.Logf("compiled: %d calls, %d programs", st.Calls, st.Programs)
				}
			})
		}
	}
}

// TestForwardPagedBF16 runs a bf16 model's paged steps (its paged cache
// in bf16 on the CPU, read by the bf16 paged_attention kernel) against
// the same model's dense forward: the attention bits match (the paged
// kernel's chains are the dense kernel's), but batched products round
// their bf16 outputs where a one-sequence forward does not, so the bar is
// bf16's: the logits within a few bf16 ulps of their scale, and the same
// argmax wherever the dense top-2 margin is clear of that.
func TestForwardPagedBF16(t *testing.T) {
	m, err := Load(filepath.Join(refDir, "llama"), Options{DType: dtype.BF16})
	if err != nil {
		t.Fatal(err)
	}
	lm := m.LM
	if dt := lm.cacheDType(); dt != dtype.BF16 {
		t.Fatalf("a bf16 model's cache on the CPU is %s, want bf16", dt)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	lens := []int{6, 13}
	seqs := make([][]int, len(lens))
	want := make([][]float32, len(lens))
	for i, n := range lens {
		for range n {
			seqs[i] = append(seqs[i], rng.IntN(lm.Config.VocabSize))
		}
		if want[i], _, err = lm.ForwardLogits([][]int{seqs[i]}, 0); err != nil {
			t.Fatal(err)
		}
	}
	kv, err := lm.NewPagedKV(12, 4)
	if err != nil {
		t.Fatal(err)
	}
	if kv.K[0].DType() != dtype.BF16 {
		t.Fatalf("paged cache %s, want bf16", kv.K[0].DType())
	}
	tables := [][]int{{7, 2}, {0, 9, 4, 11}}
	got := make([][]float32, len(lens))
	// A prefill of all but the last two tokens of both sequences, then two
	// decode steps of both (paged attention's row path).
	g := PagedGroup{Batch: 2, Tokens: lens[1] - 2, Context: 16}
	for i := range lens {
		g.Seqs = append(g.Seqs, PagedSeq{Tokens: seqs[i][:lens[i]-2], Start: 0, Blocks: tables[i]})
	}
	out, err := lm.ForwardPaged(kv, []PagedGroup{g}, true)
	if err != nil {
		t.Fatal(err)
	}
	copy(got, out)
	for step := 2; step > 0; step-- {
		var d PagedGroup
		for i, n := range lens {
			d.Seqs = append(d.Seqs, PagedSeq{Tokens: seqs[i][n-step : n-step+1], Start: n - step, Blocks: tables[i]})
		}
		out, err := lm.ForwardPaged(kv, []PagedGroup{d}, true)
		if err != nil {
			t.Fatal(err)
		}
		for i := range lens {
			got[i] = append(got[i], out[i]...)
		}
	}
	vocab := lm.Config.VocabSize
	for i := range lens {
		var scale float64
		for _, v := range want[i] {
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		worst := compare(t, fmt.Sprintf("bf16 sequence %d", i), got[i], want[i], tol{atol: 4 * scale / 256, rtol: 0}, nil)
		t.Logf("bf16 sequence %d: largest difference %.4g against logits of scale %.3g", i, worst, scale)
		for p := 0; p < lens[i]; p++ {
			w, gr := want[i][p*vocab:(p+1)*vocab], got[i][p*vocab:(p+1)*vocab]
			best, second := -1, -1
			for j := range w {
				if best < 0 || w[j] > w[best] {
					best, second = j, best
				} else if second < 0 || w[j] > w[second] {
					second = j
				}
			}
			gb := 0
			for j := range gr {
				if gr[j] > gr[gb] {
					gb = j
				}
			}
			if gb != best && float64(w[best]-w[second]) > 4*scale/256 {
				t.Errorf("bf16 sequence %d position %d: paged argmax %d, dense %d (margin %.3f)", i, p, gb, best, w[best]-w[second])
			}
		}
	}
}

// TestForwardPagedErrors checks that bad steps are errors, not panics.
func TestForwardPagedErrors(t *testing.T) {
	lm := tinyModel(t, "llama")
	kv, err := lm.NewPagedKV(4, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		g    PagedGroup
		want string
	}{
		{PagedGroup{Seqs: []PagedSeq{{Tokens: []int{1, 2}, Blocks: nil}}}, "cannot hold"},
		{PagedGroup{Seqs: []PagedSeq{{Tokens: []int{1, 2}, Blocks: []int{4}}}}, "outside"},
		{PagedGroup{Seqs: []PagedSeq{{Tokens: []int{1, 1 << 20}, Blocks: []int{0}}}}, "vocabulary"},
		{PagedGroup{Seqs: []PagedSeq{{Tokens: []int{1, 2}, Blocks: []int{0}}}, Tokens: 1}, "padded"},
		{PagedGroup{}, "empty"},
	} {
		if _, err := lm.ForwardPaged(kv, []PagedGroup{tc.g}, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.g, err, tc.want)
		}
	}
	if _, err := lm.NewPagedKV(0, 4); err == nil {
		t.Error("NewPagedKV(0, 4) succeeded")
	}
	if err := kv.CopyBlocks([]int{0}, []int{4}); err == nil {
		t.Error("CopyBlocks into the padding block succeeded")
	}
}

// TestForwardPagedProgramLimit checks that past the compiled program
// limit a new step shape runs op by op with the same logits.
func TestForwardPagedProgramLimit(t *testing.T) {
	old := maxPagedPrograms
	maxPagedPrograms = 1
	defer func() { maxPagedPrograms = old }()
	lm := tinyModel(t, "llama")
	seq := []int{3, 1, 4, 1, 5, 9, 2, 6}
	want, _, err := lm.ForwardLogits([][]int{seq}, 0)
	if err != nil {
		t.Fatal(err)
	}
	lm.Compiled = true
	kv, err := lm.NewPagedKV(4, 4)
	if err != nil {
		t.Fatal(err)
	}
	var got []float32
	for _, r := range [][2]int{{0, 5}, {5, 8}} { // two shapes: the second is past the limit
		out, err := lm.ForwardPaged(kv, []PagedGroup{{Seqs: []PagedSeq{{Tokens: seq[r[0]:r[1]], Start: r[0], Blocks: []int{2, 0}}}}}, true)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, out[0]...)
	}
	compare(t, "logits", got, want, tol{1e-5, 0}, nil)
	if st := lm.CompileStats(); st.Programs != 1 {
		t.Errorf("%d programs, want 1", st.Programs)
	}
}
