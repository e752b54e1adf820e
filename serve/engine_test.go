package serve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/models"
	"github.com/gotpu/gotpu/models/sample"
)

// tinyLM loads a tiny random checkpoint of testdata/models.
func tinyLM(t testing.TB, variant string) *models.CausalLM {
	t.Helper()
	m, err := models.Load(filepath.Join("../testdata/models", variant), models.Options{DType: dtype.F32})
	if err != nil {
		t.Fatal(err)
	}
	return m.LM
}

// newEngine starts an engine and, at cleanup, closes it and checks that
// every block is free and the scheduler's goroutines are gone.
func newEngine(t *testing.T, m *models.CausalLM, o EngineOptions) *Engine {
	t.Helper()
	before := runtime.NumGoroutine()
	e, err := NewEngine(m, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Drain(context.Background()); err != nil {
			t.Errorf("Drain: %v", err)
		}
		st := e.Stats()
		if st.KVBlocksUsed != 0 || st.Running != 0 || st.Queued != 0 {
			t.Errorf("after every request ended: %+v", st)
		}
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if len(e.pending) != 0 { // the scheduler has returned
			t.Errorf("pending block hashes left: %v", e.pending)
		}
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			t.Errorf("%d goroutines after Close, %d before NewEngine", n, before)
		}
	})
	return e
}

// engineResult is one request's output.
type engineResult struct {
	tokens []int
	events []Event
	last   Event
}

// collect reads a stream to its end.
func collect(t testing.TB, ch <-chan Event) engineResult {
	t.Helper()
	var r engineResult
	for ev := range ch {
		r.events = append(r.events, ev)
		if ev.Token >= 0 {
			r.tokens = append(r.tokens, ev.Token)
		}
		if ev.Done {
			r.last = ev
		}
	}
	if !r.last.Done {
		t.Fatalf("stream closed without a Done event (%d events)", len(r.events))
	}
	return r
}

// runAll submits every request at once and returns their results.
func runAll(t *testing.T, e *Engine, reqs []Request) []engineResult {
	t.Helper()
	out := make([]engineResult, len(reqs))
	chans := make([]<-chan Event, len(reqs))
	for i, r := range reqs {
		ch, err := e.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		chans[i] = ch
	}
	var wg sync.WaitGroup
	for i := range chans {
		wg.Go(func() { out[i] = collect(t, chans[i]) })
	}
	wg.Wait()
	return out
}

// randomRequests makes n greedy requests with prompts of 1 to maxLen
// tokens.
func randomRequests(seed uint64, n, maxLen, vocab int) []Request {
	rng := rand.New(rand.NewPCG(seed, 7))
	reqs := make([]Request, n)
	for i := range reqs {
		p := make([]int, 1+rng.IntN(maxLen))
		for j := range p {
			p[j] = rng.IntN(vocab)
		}
		reqs[i] = Request{ID: fmt.Sprint(i), Prompt: p, MaxTokens: 4 + rng.IntN(16), Sampling: sample.Greedy()}
	}
	return reqs
}

// generateAlone is models.Generate's greedy continuation of one prompt.
func generateAlone(t *testing.T, m *models.CausalLM, r Request) []int {
	t.Helper()
	res, err := m.Generate(context.Background(), [][]int{r.Prompt}, models.GenerateOptions{MaxNewTokens: r.MaxTokens, EOS: r.EOS})
	if err != nil {
		t.Fatal(err)
	}
	return res.Tokens[0]
}

func TestEngineGreedyBatchedEqualsAlone(t *testing.T) {
	for _, compiled := range []bool{false, true} {
		t.Run(fmt.Sprintf("compiled=%v", compiled), func(t *testing.T) {
			m := tinyLM(t, "llama")
			m.Compiled = compiled
			n := 32
			if compiled && testing.Short() {
				n = 8
			}
			reqs := randomRequests(1, n, 40, m.Config.VocabSize)
			e := newEngine(t, m, EngineOptions{BlockSize: 4, PrefillChunk: 24})
			batched := runAll(t, e, reqs)
			for i, r := range reqs {
				want := generateAlone(t, m, r)
				alone := runAll(t, e, []Request{r})[0]
				if !slices.Equal(batched[i].tokens, want) || !slices.Equal(alone.tokens, want) {
					t.Errorf("request %d (prompt %d tokens): batched %v, alone %v, Generate %v", i, len(r.Prompt), batched[i].tokens, alone.tokens, want)
				}
				if l := batched[i].last; l.FinishReason != "length" || l.CompletionTokens != r.MaxTokens || l.PromptTokens != len(r.Prompt) {
					t.Errorf("request %d: last event %+v", i, l)
				}
			}
			st := e.Stats()
			t.Logf("stats %+v; compile %+v", st, m.CompileStats())
			if st.GeneratedTokens == 0 || st.PromptTokens == 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestEnginePreemption(t *testing.T) {
	m := tinyLM(t, "llama")
	reqs := randomRequests(2, 12, 20, m.Config.VocabSize)
	for i := range reqs {
		reqs[i].MaxTokens = 16
	}
	// 14 blocks of 4 tokens: two or three sequences fit at a time.
	e := newEngine(t, m, EngineOptions{BlockSize: 4, NumBlocks: 14, PrefillChunk: 16})
	got := runAll(t, e, reqs)
	for i, r := range reqs {
		if want := generateAlone(t, m, r); !slices.Equal(got[i].tokens, want) {
			t.Errorf("request %d: %v, alone %v", i, got[i].tokens, want)
		}
	}
	if st := e.Stats(); st.Preemptions == 0 {
		t.Errorf("no preemption under a budget of 14 blocks: %+v", st)
	} else {
		t.Logf("stats %+v", st)
	}
}

func TestEnginePrefixCache(t *testing.T) {
	m := tinyLM(t, "llama")
	rng := rand.New(rand.NewPCG(3, 3))
	prompt := make([]int, 38)
	for i := range prompt {
		prompt[i] = rng.IntN(m.Config.VocabSize)
	}
	e := newEngine(t, m, EngineOptions{BlockSize: 4})
	r := Request{Prompt: prompt, MaxTokens: 10, Sampling: sample.Greedy()}
	first := runAll(t, e, []Request{r})[0]
	second := runAll(t, e, []Request{r})[0]
	if !slices.Equal(first.tokens, second.tokens) {
		t.Errorf("repeated prompt: %v, first %v", second.tokens, first.tokens)
	}
	if first.last.CachedTokens != 0 || second.last.CachedTokens != 36 {
		t.Errorf("cached tokens %d then %d, want 0 then 36", first.last.CachedTokens, second.last.CachedTokens)
	}
	// The whole prompt plus generated tokens cached: the last prompt
	// token runs again in a copy of the shared block (copy-on-write), for
	// two identical requests at once.
	long := append(slices.Clone(prompt), first.tokens[:2]...) // 40 tokens: 10 full blocks
	r2 := Request{Prompt: long, MaxTokens: 6, Sampling: sample.Greedy()}
	want := generateAlone(t, m, r2)
	both := runAll(t, e, []Request{r2, r2})
	for i, b := range both {
		if !slices.Equal(b.tokens, want) {
			t.Errorf("shared prompt %d: %v, alone %v", i, b.tokens, want)
		}
		if b.last.CachedTokens != 39 {
			t.Errorf("shared prompt %d: cached %d, want 39", i, b.last.CachedTokens)
		}
	}
	// Two new identical prompts at once (the API's n > 1): the second
	// waits for the first's prefill and takes its 7 full blocks.
	fresh := make([]int, 30)
	for i := range fresh {
		fresh[i] = rng.IntN(m.Config.VocabSize)
	}
	r3 := Request{Prompt: fresh, MaxTokens: 5, Sampling: sample.Greedy()}
	want = generateAlone(t, m, r3)
	pair := runAll(t, e, []Request{r3, r3})
	if !slices.Equal(pair[0].tokens, want) || !slices.Equal(pair[1].tokens, want) {
		t.Errorf("n=2: %v and %v, alone %v", pair[0].tokens, pair[1].tokens, want)
	}
	if c0, c1 := pair[0].last.CachedTokens, pair[1].last.CachedTokens; c0 != 0 || c1 != 28 {
		t.Errorf("n=2: cached %d and %d tokens, want 0 and 28", c0, c1)
	}
	st := e.Stats()
	if st.PrefixHits != 4 || st.PrefixLookups != 6 {
		t.Errorf("prefix hits %d of %d lookups, want 4 of 6", st.PrefixHits, st.PrefixLookups)
	}
}

func TestEngineCancel(t *testing.T) {
	m := tinyLM(t, "llama")
	e := newEngine(t, m, EngineOptions{BlockSize: 4, MaxBatch: 2})
	reqs := randomRequests(4, 4, 20, m.Config.VocabSize)
	var chans []<-chan Event
	var cancels []context.CancelFunc
	for _, r := range reqs {
		r.MaxTokens = 200
		ctx, cancel := context.WithCancel(context.Background())
		ch, err := e.Submit(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		chans, cancels = append(chans, ch), append(cancels, cancel)
	}
	// Two run, two wait; cancel one of each once the first has 3 tokens.
	for range 3 {
		<-chans[0]
	}
	cancels[0]()
	cancels[3]()
	for _, i := range []int{0, 3} {
		r := collect(t, chans[i])
		if r.last.FinishReason != "cancelled" || !errors.Is(r.last.Err, context.Canceled) {
			t.Errorf("request %d: last event %+v", i, r.last)
		}
	}
	cancels[1]()
	cancels[2]()
	for _, i := range []int{1, 2} {
		collect(t, chans[i])
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.Stats().KVBlocksUsed != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := e.Stats(); st.KVBlocksUsed != 0 {
		t.Errorf("after cancelling everything: %+v", st)
	}
}

func TestEngineSampling(t *testing.T) {
	m := tinyLM(t, "gemma3")
	e := newEngine(t, m, EngineOptions{BlockSize: 4})
	p := sample.DefaultParams()
	p.Temperature, p.TopK, p.Seed = 0.9, 40, 11
	reqs := randomRequests(5, 6, 12, m.Config.VocabSize)
	for i := range reqs {
		reqs[i].Sampling = p
		reqs[i].Logprobs, reqs[i].TopLogprobs = true, 3
	}
	batched := runAll(t, e, reqs)
	for i, r := range reqs {
		alone := runAll(t, e, []Request{r})[0]
		if !slices.Equal(alone.tokens, batched[i].tokens) {
			t.Errorf("seeded request %d: batched %v, alone %v", i, batched[i].tokens, alone.tokens)
		}
		for j, ev := range alone.events {
			if ev.Token < 0 {
				continue
			}
			inTop := slices.IndexFunc(ev.Top, func(tl TokenLogprob) bool { return tl.ID == ev.Token })
			if len(ev.Top) != 3 || ev.Logprob > 0 || ev.Logprob > ev.Top[0].Logprob || ev.Top[0].Logprob < ev.Top[1].Logprob ||
				inTop >= 0 && ev.Top[inTop].Logprob != ev.Logprob || inTop < 0 && ev.Logprob > ev.Top[2].Logprob ||
				math.Abs(float64(batched[i].events[j].Logprob-ev.Logprob)) > 1e-5 {
				t.Errorf("request %d token %d: logprob %v top %v (batched %v)", i, j, ev.Logprob, ev.Top, batched[i].events[j].Logprob)
				break
			}
		}
	}
	// logit_bias forces a token; a constraint allowing only even ids holds.
	r := reqs[0]
	r.Sampling, r.Logprobs, r.TopLogprobs = sample.Greedy(), false, 0
	r.LogitBias = map[int]float32{7: 1000}
	if got := runAll(t, e, []Request{r})[0].tokens; slices.ContainsFunc(got, func(id int) bool { return id != 7 }) {
		t.Errorf("logit_bias {7: 1000}: %v", got)
	}
	r.LogitBias = nil
	c := &evenOnly{left: 5}
	r.Constraint, r.EOS, r.MaxTokens = c, []int{1}, 20
	got := runAll(t, e, []Request{r})[0]
	if len(got.tokens) != 6 || got.tokens[5] != 1 || got.last.FinishReason != "stop" || slices.ContainsFunc(got.tokens[:5], func(id int) bool { return id%2 != 0 }) {
		t.Errorf("even-only constraint of 5 tokens then EOS 1: %v (%s)", got.tokens, got.last.FinishReason)
	}
}

// evenOnly allows even token ids for left tokens, then is satisfied.
type evenOnly struct{ left int }

func (c *evenOnly) Allowed(allow []bool) bool {
	if c.left == 0 {
		return false
	}
	for i := range allow {
		allow[i] = i%2 == 0
	}
	return true
}

func (c *evenOnly) Accept(id int) error {
	if id%2 != 0 {
		return fmt.Errorf("odd token %d", id)
	}
	c.left--
	return nil
}

func TestEngineStopsAndErrors(t *testing.T) {
	m := tinyLM(t, "llama")
	e := newEngine(t, m, EngineOptions{BlockSize: 4, NumBlocks: 8, MaxQueue: 2})
	r := randomRequests(6, 1, 10, m.Config.VocabSize)[0]
	want := generateAlone(t, m, r)
	r.EOS = []int{want[2]}
	got := runAll(t, e, []Request{r})[0]
	if n := slices.Index(want, want[2]) + 1; !slices.Equal(got.tokens, want[:n]) || got.last.FinishReason != "stop" {
		t.Errorf("EOS %d: %v (%s), want %v", want[2], got.tokens, got.last.FinishReason, want[:n])
	}
	// The context is 8 blocks of 4: 32 tokens.
	if e.ContextLength() != 32 || e.VocabSize() != m.Config.VocabSize {
		t.Errorf("context %d vocab %d", e.ContextLength(), e.VocabSize())
	}
	r.EOS, r.MaxTokens = nil, 1000
	got = runAll(t, e, []Request{r})[0]
	if len(r.Prompt)+len(got.tokens) != 32 || got.last.FinishReason != "length" {
		t.Errorf("context-bound request: %d+%d tokens (%s)", len(r.Prompt), len(got.tokens), got.last.FinishReason)
	}
	for _, tc := range []struct {
		r    Request
		want string
	}{
		{Request{MaxTokens: 1, Sampling: sample.Greedy()}, "empty prompt"},
		{Request{Prompt: []int{1}, Sampling: sample.Greedy()}, "max tokens"},
		{Request{Prompt: []int{-1}, MaxTokens: 1, Sampling: sample.Greedy()}, "vocabulary"},
		{Request{Prompt: make([]int, 32), MaxTokens: 1, Sampling: sample.Greedy()}, "no room"},
		{Request{Prompt: []int{1}, MaxTokens: 1}, "invalid parameters"},
		{Request{Prompt: []int{1}, MaxTokens: 1, Sampling: sample.Greedy(), LogitBias: map[int]float32{1 << 20: 1}}, "logit_bias"},
	} {
		if _, err := e.Submit(context.Background(), tc.r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.r, err, tc.want)
		}
	}
}

func TestEngineQueueAndClose(t *testing.T) {
	m := tinyLM(t, "llama")
	e, err := NewEngine(m, EngineOptions{BlockSize: 4, MaxQueue: 1, MaxBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := randomRequests(8, 1, 10, m.Config.VocabSize)[0]
	r.MaxTokens = 100
	var chans []<-chan Event
	var full bool
	for range 10 {
		ch, err := e.Submit(context.Background(), r)
		if errors.Is(err, ErrQueueFull) {
			full = true
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	if !full {
		t.Error("a queue of 1 never filled")
	}
	e.Close()
	for _, ch := range chans {
		if r := collect(t, ch); r.last.FinishReason != "error" && r.last.FinishReason != "length" {
			t.Errorf("after Close: %+v", r.last)
		}
	}
	if _, err := e.Submit(context.Background(), r); !errors.Is(err, ErrDraining) {
		t.Errorf("Submit after Close: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := e.Drain(ctx); err != nil {
		t.Errorf("Drain after Close: %v", err)
	}
}

func TestEngineDrain(t *testing.T) {
	m := tinyLM(t, "llama")
	e := newEngine(t, m, EngineOptions{BlockSize: 4})
	r := randomRequests(9, 1, 10, m.Config.VocabSize)[0]
	r.MaxTokens = 400
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := e.Submit(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	<-ch
	short, stop := context.WithTimeout(context.Background(), time.Millisecond)
	defer stop()
	if err := e.Drain(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Drain with a request running: %v", err)
	}
	if _, err := e.Submit(context.Background(), r); !errors.Is(err, ErrDraining) {
		t.Errorf("Submit while draining: %v", err)
	}
	cancel()
	collect(t, ch)
	if err := e.Drain(context.Background()); err != nil {
		t.Errorf("Drain: %v", err)
	}
}
