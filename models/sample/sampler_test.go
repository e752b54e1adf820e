package sample

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// refProcess is the full-sort definition of Process, written as directly
// as possible: every step over the whole vocabulary, top-k and top-p by
// sorting it.
func refProcess(p Params, logits []float32, prompt, generated []int) []float32 {
	v := len(logits)
	x := slices.Clone(logits)
	negInf := float32(math.Inf(-1))
	if p.RepetitionPenalty != 1 {
		seen := map[int]bool{}
		pen := float32(p.RepetitionPenalty)
		for _, id := range append(slices.Clone(prompt), generated...) {
			if id >= v || seen[id] {
				continue
			}
			seen[id] = true
			if x[id] < 0 {
				x[id] *= pen
			} else {
				x[id] /= pen
			}
		}
	}
	if p.PresencePenalty != 0 || p.FrequencyPenalty != 0 {
		counts := map[int]int{}
		for _, id := range generated {
			if id < v {
				counts[id]++
			}
		}
		for id, c := range counts {
			x[id] -= float32(float32(p.FrequencyPenalty) * float32(c))
			x[id] -= float32(p.PresencePenalty)
		}
	}
	if p.IsGreedy() {
		return x
	}
	if p.Temperature != 1 {
		for i := range x {
			x[i] /= float32(p.Temperature)
		}
	}
	if p.TopK > 0 && p.TopK < v {
		s := slices.Clone(x)
		slices.SortFunc(s, func(a, b float32) int { return -cmpF(a, b) })
		kth := s[p.TopK-1]
		for i := range x {
			if x[i] < kth {
				x[i] = negInf
			}
		}
	}
	probs := func() []float32 {
		m := slices.Max(x)
		e := make([]float64, v)
		sum := 0.0
		for i := range x {
			e[i] = expNeg(float64(x[i]) - float64(m))
			sum += e[i]
		}
		pr := make([]float32, v)
		for i := range e {
			pr[i] = float32(e[i] * (1 / sum))
		}
		return pr
	}
	if p.TopP < 1 {
		pr := probs()
		idx := make([]int, v)
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
		thr := float32(1 - p.TopP)
		var acc wideSum
		remove := make([]bool, v)
		for r, i := range idx {
			acc.add(pr[i])
			remove[i] = acc.float32() <= thr && r != v-1
		}
		for i := range x {
			if remove[i] {
				x[i] = negInf
			}
		}
	}
	if p.MinP > 0 {
		pr := probs()
		top := slices.Max(pr)
		cut := float32(float32(p.MinP) * top)
		for i := range x {
			if pr[i] < cut {
				x[i] = negInf
			}
		}
	}
	return x
}

func cmpF(a, b float32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// randomLogits draws n logits of one of several shapes: flat or peaked,
// with ties and -Inf entries.
func randomLogits(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	scale := []float64{0.5, 1, 3, 8}[r.IntN(4)]
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	switch r.IntN(4) {
	case 0: // quantized: many ties
		for i := range x {
			x[i] = float32(math.Round(float64(x[i])*2) / 2)
		}
	case 1: // peaked
		for range 1 + r.IntN(3) {
			x[r.IntN(n)] = float32(10 + r.Float64()*10)
		}
	case 2: // -Inf entries
		for range r.IntN(n/2 + 1) {
			x[r.IntN(n)] = float32(math.Inf(-1))
		}
	}
	if x[0] == float32(math.Inf(-1)) && slices.Max(x) == x[0] {
		x[0] = 0
	}
	return x
}

func randomParams(r *rand.Rand, n int) Params {
	p := DefaultParams()
	p.Seed = r.Uint64()
	if r.IntN(4) > 0 {
		p.Temperature = []float64{0.3, 0.7, 1, 1.5}[r.IntN(4)]
	}
	if r.IntN(2) == 0 {
		p.TopK = 1 + r.IntN(min(n, 600))
	}
	if r.IntN(3) > 0 {
		p.TopP = []float64{1e-6, 0.1, 0.5, 0.9, 0.95, 0.99, 0.9999}[r.IntN(7)]
	}
	if r.IntN(3) == 0 {
		p.MinP = []float64{0.01, 0.05, 0.2, 1}[r.IntN(4)]
	}
	if r.IntN(3) == 0 {
		p.RepetitionPenalty = []float64{0.7, 1.2, 2}[r.IntN(3)]
	}
	if r.IntN(3) == 0 {
		p.PresencePenalty = r.Float64()*4 - 2
		p.FrequencyPenalty = r.Float64()*4 - 2
	}
	return p
}

func randomIDs(r *rand.Rand, n, vocab int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = r.IntN(vocab + 2) // a few beyond the vocabulary: ignored
	}
	return ids
}

// TestFastPathsMatchFullSort checks Process against refProcess, exactly
// (same -Inf set, bit-identical values), on random inputs through every
// selection path.
func TestFastPathsMatchFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 2, 7, 64, 1000, 3000, 20000}
	iters := 60
	if testing.Short() {
		iters = 15
	}
	forcePaths(t, func(t *testing.T) {
		for _, n := range sizes {
			for it := range iters {
				x := randomLogits(r, n)
				p := randomParams(r, n)
				prompt, gen := randomIDs(r, r.IntN(20), n), randomIDs(r, r.IntN(20), n)
				s, err := New(p)
				if err != nil {
					t.Fatal(err)
				}
				got, err := s.Process(nil, x, prompt, gen)
				if err != nil {
					t.Fatalf("n=%d it=%d %+v: %v", n, it, p, err)
				}
				want := refProcess(p, x, prompt, gen)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("n=%d it=%d %+v: token %d = %v, full sort %v", n, it, p, i, got[i], want[i])
					}
				}
			}
		}
	})
}

// TestTopPTies pins the tie rule: among tokens tied at the cut, lower ids
// are removed first (stable ascending sort), and the largest logit with the
// highest id is the one min_tokens_to_keep protects.
func TestTopPTies(t *testing.T) {
	negInf := float32(math.Inf(-1))
	cases := []struct {
		name   string
		logits []float32
		topP   float64
		want   []bool // kept
	}{
		{"equal4 half", []float32{1, 1, 1, 1}, 0.5, []bool{false, false, true, true}},
		{"equal4 tiny", []float32{1, 1, 1, 1}, 1e-9, []bool{false, false, false, true}},
		{"equal10 0.35", []float32{2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, 0.35, []bool{false, false, false, false, false, false, true, true, true, true}},
		// p = 0.00656 for each 0: the first (lowest id) sums to ≤ 0.01.
		{"tie below max", []float32{0, 5, 0, 0, negInf, 0}, 0.99, []bool{false, true, true, true, false, true}},
		{"all kept", []float32{3, 1, 2}, 1 - 1e-12, []bool{true, true, true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := DefaultParams()
			p.TopP = c.topP
			forcePaths(t, func(t *testing.T) {
				s, _ := New(p)
				got, err := s.Process(nil, c.logits, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				for i, k := range c.want {
					if kept := got[i] != negInf; kept != k {
						t.Errorf("token %d kept=%v, want %v (got %v)", i, kept, k, got)
					}
				}
			})
		})
	}
}

func TestGreedyIsArgmax(t *testing.T) {
	negInf := float32(math.Inf(-1))
	cases := []struct {
		logits []float32
		want   int
	}{
		{[]float32{0}, 0},
		{[]float32{1, 3, 3, 2}, 1},
		{[]float32{negInf, negInf, -5}, 2},
		{[]float32{-1e30, -1e30}, 0},
		{[]float32{0, float32(math.Copysign(0, -1)), 0}, 0},
	}
	s, _ := New(Greedy())
	for _, c := range cases {
		got, err := s.Next(c.logits, nil, nil)
		if err != nil || got != c.want {
			t.Errorf("Next(%v) = %d, %v; want %d", c.logits, got, err, c.want)
		}
	}
	// With penalties: argmax of the penalized logits; TopK and friends are
	// ignored.
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		n := 1 + r.IntN(500)
		x := randomLogits(r, n)
		p := randomParams(r, n)
		p.Temperature = 0
		prompt, gen := randomIDs(r, 10, n), randomIDs(r, 10, n)
		s, _ := New(p)
		got, err := s.Next(x, prompt, gen)
		if err != nil {
			t.Fatal(err)
		}
		want := refProcess(p, x, prompt, gen)
		best := 0
		for i, v := range want {
			if v > want[best] {
				best = i
			}
		}
		if got != best {
			t.Fatalf("greedy %d, argmax %d", got, best)
		}
	}
}

// TestPinnedStream pins a token stream. The draws and weights are plain
// float64 arithmetic with no fused operations, so the stream must be the
// same on every architecture; a failure here on some platform means that
// promise broke there.
func TestPinnedStream(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	x := make([]float32, 5000)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 1.5)
	}
	p := Params{Temperature: 0.9, TopP: 0.97, MinP: 0.01, RepetitionPenalty: 1.05, PresencePenalty: 0.2, Seed: 2026}
	s, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int{1, 2, 3}
	var gen []int
	for range 40 {
		tok, err := s.Next(x, prompt, gen)
		if err != nil {
			t.Fatal(err)
		}
		gen = append(gen, tok)
	}
	want := []int{4238, 4221, 4221, 2821, 4221, 4221, 4844, 4221, 2425, 1882, 2430, 4629, 2336, 2180,
		4221, 1212, 1882, 2303, 4221, 4141, 4221, 4221, 4221, 1197, 2959, 3170, 4221, 4872, 4629, 4221,
		3677, 3264, 2957, 3887, 4221, 1050, 4221, 4066, 4693, 4221}
	if !slices.Equal(gen, want) {
		t.Errorf("stream changed:\n got %v\nwant %v", gen, want)
	}
}

func TestZeroSampler(t *testing.T) {
	var s Sampler
	if _, err := s.Next([]float32{0, 1}, nil, nil); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("zero Sampler: %v, want ErrInvalidParams", err)
	}
	var np *Sampler
	if _, err := np.Process(nil, []float32{0, 1}, nil, nil); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("nil Sampler: %v, want ErrInvalidParams", err)
	}
}

func TestSeeds(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x := randomLogits(r, 5000)
	for i := range x {
		x[i] = float32(r.NormFloat64()) // flat: many candidates
	}
	gen := make([]int, 64)
	run := func(seed uint64) []int {
		p := DefaultParams()
		p.Seed, p.TopP = seed, 0.95
		s, err := New(p)
		if err != nil {
			t.Fatal(err)
		}
		var toks []int
		for n := range gen {
			tok, err := s.Next(x, nil, gen[:n])
			if err != nil {
				t.Fatal(err)
			}
			toks = append(toks, tok)
		}
		return toks
	}
	a, b, c := run(42), run(42), run(43)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different tokens:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 42 and 43 gave the same %d tokens", len(a))
	}
}

// TestUniform pins the draw to SplitMix64's published output for seed 0
// (0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f) and checks
// its range.
func TestUniform(t *testing.T) {
	for i, z := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		if got, want := uniform(0, uint64(i)), float64(z>>11)*0x1p-53; got != want {
			t.Errorf("uniform(0, %d) = %v, want %v", i, got, want)
		}
	}
	for step := range uint64(100000) {
		if u := uniform(12345, step); !(u >= 0 && u < 1) {
			t.Fatalf("uniform(12345, %d) = %v outside [0, 1)", step, u)
		}
	}
}

// TestDistribution samples a small distribution many times (one draw per
// step index, fixed seed) and checks Pearson's chi-square against the
// processed softmax. The seed is fixed, so the test is deterministic; the
// bound is the 0.999 quantile.
func TestDistribution(t *testing.T) {
	logits := []float32{2, 1.5, 1, 0.5, 0, -0.5, -1, -1.5, -2, -8}
	cases := []struct {
		name string
		p    Params
		df   int
		crit float64 // chi-square 0.999 quantile for df
	}{
		{"plain", DefaultParams(), 9, 27.88},
		{"t0.7 k6", Params{Temperature: 0.7, TopK: 6, TopP: 1, RepetitionPenalty: 1, Seed: 7}, 5, 20.52},
		{"p0.8 minp0.1", Params{Temperature: 1.2, TopP: 0.8, MinP: 0.1, RepetitionPenalty: 1, Seed: 99}, 0, 0},
	}
	const draws = 40000
	gen := make([]int, draws)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(c.p)
			if err != nil {
				t.Fatal(err)
			}
			proc, err := s.Process(nil, logits, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			m := slices.Max(proc)
			want := make([]float64, len(proc))
			sum := 0.0
			for i, v := range proc {
				want[i] = math.Exp(float64(v - m))
				sum += want[i]
			}
			counts := make([]int, len(proc))
			for n := range draws {
				tok, err := s.Next(logits, nil, gen[:n])
				if err != nil {
					t.Fatal(err)
				}
				counts[tok]++
			}
			chi, df := 0.0, -1
			for i := range want {
				e := want[i] / sum * draws
				if e == 0 {
					if counts[i] != 0 {
						t.Errorf("token %d has probability 0 but was drawn %d times", i, counts[i])
					}
					continue
				}
				chi += (float64(counts[i]) - e) * (float64(counts[i]) - e) / e
				df++
			}
			if c.df != 0 && df != c.df {
				t.Fatalf("%d degrees of freedom, want %d", df, c.df)
			}
			crit := c.crit
			if crit == 0 {
				crit = map[int]float64{1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47, 5: 20.52}[df]
			}
			t.Logf("chi² = %.2f, df %d, counts %v", chi, df, counts)
			if chi > crit {
				t.Errorf("chi² = %.2f > %.2f (df %d): counts %v, probabilities %v", chi, crit, df, counts, want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := DefaultParams()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := Greedy().Validate(); err != nil {
		t.Fatal(err)
	}
	nan := math.NaN()
	for _, c := range []struct {
		name string
		mod  func(*Params)
	}{
		{"zero value", func(p *Params) { *p = Params{} }},
		{"negative temperature", func(p *Params) { p.Temperature = -0.5 }},
		{"NaN temperature", func(p *Params) { p.Temperature = nan }},
		{"Inf temperature", func(p *Params) { p.Temperature = math.Inf(1) }},
		{"negative top_k", func(p *Params) { p.TopK = -1 }},
		{"top_p 0", func(p *Params) { p.TopP = 0 }},
		{"top_p above 1", func(p *Params) { p.TopP = 1.01 }},
		{"top_p NaN", func(p *Params) { p.TopP = nan }},
		{"min_p negative", func(p *Params) { p.MinP = -0.1 }},
		{"min_p above 1", func(p *Params) { p.MinP = 1.5 }},
		{"repetition 0", func(p *Params) { p.RepetitionPenalty = 0 }},
		{"repetition negative", func(p *Params) { p.RepetitionPenalty = -1 }},
		{"presence 3", func(p *Params) { p.PresencePenalty = 3 }},
		{"frequency -2.5", func(p *Params) { p.FrequencyPenalty = -2.5 }},
		{"frequency NaN", func(p *Params) { p.FrequencyPenalty = nan }},
	} {
		p := ok
		c.mod(&p)
		err := p.Validate()
		if !errors.Is(err, ErrInvalidParams) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidParams", c.name, err)
			continue
		}
		if _, err2 := New(p); err2 == nil {
			t.Errorf("%s: New accepted it", c.name)
		}
		t.Logf("%s: %v", c.name, err)
	}
}

func TestBadInput(t *testing.T) {
	negInf := float32(math.Inf(-1))
	p := DefaultParams()
	p.RepetitionPenalty = 1.1
	tiny := DefaultParams()
	tiny.Temperature = 1e-40
	for _, c := range []struct {
		name      string
		p         Params
		logits    []float32
		prompt    []int
		generated []int
	}{
		{"empty", p, nil, nil, nil},
		{"NaN", p, []float32{0, float32(math.NaN())}, nil, nil},
		{"+Inf", p, []float32{0, float32(math.Inf(1))}, nil, nil},
		{"all -Inf", p, []float32{negInf, negInf}, nil, nil},
		{"all -Inf greedy", Greedy(), []float32{negInf}, nil, nil},
		{"negative prompt id", p, []float32{0, 1}, []int{-1}, nil},
		{"negative generated id", p, []float32{0, 1}, nil, []int{0, -3}},
		{"overflowing temperature", tiny, []float32{0, 1}, nil, nil},
	} {
		s, err := New(c.p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Next(c.logits, c.prompt, c.generated); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: Next error %v, want ErrInvalidInput", c.name, err)
		}
		if _, err := s.Process(nil, c.logits, c.prompt, c.generated); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: Process error %v, want ErrInvalidInput", c.name, err)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
	// Ids are not read when no penalty uses them.
	s, _ := New(DefaultParams())
	if _, err := s.Next([]float32{0, 1}, []int{-1}, []int{-2}); err != nil {
		t.Errorf("ids read without penalties: %v", err)
	}
}

// TestInputsUnchanged checks that Next leaves its arguments alone and that
// a Sampler can be reused across vocabulary sizes.
func TestInputsUnchanged(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	p := Params{Temperature: 0.8, TopK: 20, TopP: 0.9, MinP: 0.05, RepetitionPenalty: 1.3, PresencePenalty: 0.5, FrequencyPenalty: 0.5}
	s, _ := New(p)
	for _, n := range []int{3000, 10, 50000, 100} {
		x := randomLogits(r, n)
		x0 := slices.Clone(x)
		prompt, gen := randomIDs(r, 30, n), randomIDs(r, 30, n)
		p0, g0 := slices.Clone(prompt), slices.Clone(gen)
		if _, err := s.Next(x, prompt, gen); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(x, x0) || !slices.Equal(prompt, p0) || !slices.Equal(gen, g0) {
			t.Fatalf("n=%d: arguments modified", n)
		}
		got, _ := s.Process(nil, x, prompt, gen)
		want := refProcess(p, x, prompt, gen)
		if !slices.Equal(got, want) {
			t.Fatalf("n=%d: reused sampler differs from the reference", n)
		}
	}
}

func TestNoAllocations(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const n = 50000
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 2)
	}
	prompt, gen := randomIDs(r, 200, n), randomIDs(r, 50, n)
	for _, p := range []Params{
		Greedy(),
		{Temperature: 0.7, TopK: 50, TopP: 0.9, RepetitionPenalty: 1.1, PresencePenalty: 0.3, FrequencyPenalty: 0.2},
		{Temperature: 1, TopP: 0.95, MinP: 0.02, RepetitionPenalty: 1},
		{Temperature: 1, TopK: 5000, TopP: 1, RepetitionPenalty: 1},
	} {
		s, _ := New(p)
		dst := make([]float32, n)
		if _, err := s.Next(x, prompt, gen); err != nil {
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(20, func() { s.Next(x, prompt, gen) }); a != 0 {
			t.Errorf("%+v: Next allocates %v times per call", p, a)
		}
		if a := testing.AllocsPerRun(20, func() { s.Process(dst, x, prompt, gen) }); a != 0 {
			t.Errorf("%+v: Process allocates %v times per call", p, a)
		}
	}
}

func TestTopKSelection(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	defer func(k int) { topKHeapMax = k }(topKHeapMax)
	for it := range 300 {
		n := 2 + r.IntN(3000)
		x := randomLogits(r, n)
		if it%3 == 0 {
			x[r.IntN(n)] = float32(math.Copysign(0, -1))
			x[r.IntN(n)] = 0
		}
		k := 1 + r.IntN(n-1)
		sorted := slices.Clone(x)
		slices.SortFunc(sorted, func(a, b float32) int { return -cmpF(a, b) })
		kth := sorted[k-1]
		var want []int32
		for i, l := range x {
			if l >= kth && !math.IsInf(float64(l), -1) {
				want = append(want, int32(i))
			}
		}
		for _, heapMax := range []int{0, math.MaxInt} {
			topKHeapMax = heapMax
			var s Sampler
			if got := s.topK(x, k, nil); !slices.Equal(got, want) {
				t.Fatalf("heapMax %d, k=%d of %d: %d candidates, want %d", heapMax, k, n, len(got), len(want))
			}
		}
	}
}

func ExampleSampler_Next() {
	p := DefaultParams()
	p.Temperature, p.TopK, p.TopP, p.Seed = 0.7, 50, 0.9, 1234
	s, err := New(p)
	if err != nil {
		panic(err)
	}
	logits := []float32{0.1, 3.2, -1, 2.9, 0.5}
	var generated []int
	for range 5 {
		tok, err := s.Next(logits, []int{0}, generated)
		if err != nil {
			panic(err)
		}
		generated = append(generated, tok)
	}
	fmt.Println(generated)
	// Output: [3 1 1 1 3]
}
