package serve

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gotpu/gotpu/models/sample"
)

// tokenOut is one generated token as the API reports it in logprobs.
type tokenOut struct {
	id      int
	text    string
	logprob float32
	top     []TokenLogprob
}

// step is what one event of a choice's stream adds: final text (stop
// strings applied), the tokens behind it, and at the end the finish reason
// and counts.
type step struct {
	choice                     int
	text                       string
	tokens                     []tokenOut
	done                       bool
	finish                     string // "stop", "length" (with done)
	err                        error
	prompt, completion, cached int
}

// choiceSpec is one sequence to run.
type choiceSpec struct {
	index    int
	req      Request
	stops    []string
	logprobs bool
}

// detok turns a growing list of token ids into text pieces, decoding a
// window of recent tokens (as vLLM does) so each step costs O(window), and
// holding back pieces that end inside a UTF-8 character.
type detok struct {
	tok        Tokenizer
	ids        []int
	prefix     int // start of the decode window
	read       int // tokens already turned into text
	prefixText string
}

func (d *detok) add(id int) (string, error) {
	d.ids = append(d.ids, id)
	full, err := d.tok.Decode(d.ids[d.prefix:], true)
	if err != nil {
		return "", err
	}
	if strings.HasSuffix(full, "\uFFFD") || len(full) <= len(d.prefixText) || !strings.HasPrefix(full, d.prefixText) {
		if !strings.HasPrefix(full, d.prefixText) && !strings.HasSuffix(full, "\uFFFD") {
			// The window decodes differently with the new token (a decoder
			// that merges across tokens): fall back to the full text.
			return d.resync()
		}
		return "", nil
	}
	piece := full[len(d.prefixText):]
	d.prefix, d.read = d.read, len(d.ids)
	if d.prefixText, err = d.tok.Decode(d.ids[d.prefix:d.read], true); err != nil {
		return "", err
	}
	return piece, nil
}

// rest returns the text still held back (an incomplete character at the
// end), for when the sequence ends.
func (d *detok) rest() (string, error) {
	if d.read == len(d.ids) {
		return "", nil
	}
	full, err := d.tok.Decode(d.ids[d.prefix:], true)
	if err != nil {
		return "", err
	}
	before := d.prefixText
	d.prefix, d.read, d.prefixText = len(d.ids), len(d.ids), ""
	if !strings.HasPrefix(full, before) {
		return "", nil
	}
	return full[len(before):], nil
}

// resync is the slow path of add: it decodes everything.
func (d *detok) resync() (string, error) {
	before, err := d.tok.Decode(d.ids[:d.read], true)
	if err != nil {
		return "", err
	}
	full, err := d.tok.Decode(d.ids, true)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(full, before) || strings.HasSuffix(full, "\uFFFD") {
		return "", nil
	}
	d.prefix, d.read = d.read, len(d.ids)
	if d.prefixText, err = d.tok.Decode(d.ids[d.prefix:d.read], true); err != nil {
		return "", err
	}
	return full[len(before):], nil
}

// randomSeed draws a seed for requests that set none (OpenAI samples
// differently on every call).
func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// requests builds the engine Requests of one prompt: n choices, choice i
// seeded with seed+i (a random seed when the request sets none).
func (s *Server) requests(id string, prompt []int, g genParams, maxTokens, firstIndex int, logprobs bool, top int) ([]choiceSpec, error) {
	seed := g.params.Seed
	if !g.seeded {
		seed = randomSeed()
	}
	out := make([]choiceSpec, g.n)
	for i := range out {
		p := g.params
		p.Seed = seed + uint64(i)
		r := Request{ID: fmt.Sprintf("%s-%d", id, firstIndex+i), Prompt: prompt, MaxTokens: maxTokens,
			Sampling: p, LogitBias: g.bias, EOS: s.o.EOS, Logprobs: logprobs || top > 0, TopLogprobs: top}
		if g.schema != nil {
			c, err := s.o.NewConstraint(g.schema)
			if err != nil {
				return nil, badRequest("response_format", "the JSON schema cannot be used: %v", err)
			}
			r.Constraint = c
		}
		if g.ignoreEOS {
			r.EOS = nil
		}
		out[i] = choiceSpec{index: firstIndex + i, req: r, stops: g.stops, logprobs: r.Logprobs}
	}
	return out, nil
}

// running are the submitted choices of one HTTP request.
type running struct {
	cancel context.CancelFunc
	subs   []runningChoice
}

type runningChoice struct {
	spec   choiceSpec
	ch     <-chan Event
	cancel context.CancelFunc
	start  time.Time
}

// submit submits every choice under ctx. A failed Submit cancels the
// choices already submitted and is returned as an API error (429, 503, ...).
func (s *Server) submit(ctx context.Context, specs []choiceSpec) (*running, error) {
	ctx, cancel := context.WithCancel(ctx)
	rn := &running{cancel: cancel}
	for _, sp := range specs {
		cctx, ccancel := context.WithCancel(ctx)
		start := time.Now()
		ch, err := s.o.Generator.Submit(cctx, sp.req)
		if err != nil {
			ccancel()
			cancel()
			for _, su := range rn.subs {
				go drain(su.ch)
			}
			return nil, submitError(err)
		}
		rn.subs = append(rn.subs, runningChoice{sp, ch, ccancel, start})
	}
	return rn, nil
}

// wait consumes every choice, calling emit with each step from one
// goroutine per choice (emit must be safe for concurrent use), and returns
// when all have ended.
func (s *Server) wait(rn *running, emit func(step)) {
	defer rn.cancel()
	var wg sync.WaitGroup
	for _, su := range rn.subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer su.cancel()
			s.consume(su.spec, su.ch, su.cancel, su.start, emit)
		}()
	}
	wg.Wait()
}

func drain(ch <-chan Event) {
	for range ch {
	}
}

// consume reads one choice's events until the end, detokenizing and
// applying the stop strings; a completed stop string cancels the request.
func (s *Server) consume(sp choiceSpec, ch <-chan Event, cancel context.CancelFunc, start time.Time, emit func(step)) {
	stop, err := sample.NewStop(sp.req.EOS, sp.stops)
	if err != nil { // stop strings were checked when parsing
		drain(ch)
		emit(step{choice: sp.index, done: true, err: err})
		return
	}
	d := &detok{tok: s.o.Tokenizer}
	last := start
	first := true
	var counts step
	for ev := range ch {
		st := step{choice: sp.index}
		counts.prompt, counts.completion, counts.cached = ev.PromptTokens, ev.CompletionTokens, ev.CachedTokens
		if !ev.Done || ev.Token >= 0 {
			now := time.Now()
			if first {
				s.metrics.ttft.Observe(now.Sub(start).Seconds())
				first = false
			} else {
				s.metrics.itl.Observe(now.Sub(last).Seconds())
			}
			last = now
			if !stop.IsEOS(ev.Token) {
				piece, err := d.add(ev.Token)
				if err != nil {
					cancel()
					drain(ch)
					emit(step{choice: sp.index, done: true, err: fmt.Errorf("decoding token %d: %w", ev.Token, err)})
					return
				}
				if sp.logprobs {
					t := tokenOut{id: ev.Token, logprob: ev.Logprob, top: ev.Top}
					t.text, _ = s.o.Tokenizer.Decode([]int{ev.Token}, false)
					st.tokens = append(st.tokens, t)
				}
				var stopped bool
				st.text, stopped = stop.Push(piece)
				if stopped {
					cancel()
					go drain(ch)
					st.done, st.finish = true, "stop"
					st.prompt, st.completion, st.cached = counts.prompt, counts.completion, counts.cached
					emit(st)
					return
				}
			}
		}
		if ev.Done {
			st.done = true
			st.prompt, st.completion, st.cached = counts.prompt, counts.completion, counts.cached
			switch ev.FinishReason {
			case "stop", "length":
				st.finish = ev.FinishReason
				rest, err := d.rest()
				if err != nil {
					st.err = err
					break
				}
				text, stopped := stop.Push(rest)
				st.text += text
				if stopped {
					st.finish = "stop"
				} else {
					st.text += stop.Flush()
				}
			case "cancelled":
				st.finish = "stop"
				st.err = context.Canceled
			default:
				st.err = ev.Err
				if st.err == nil {
					st.err = fmt.Errorf("generation ended with reason %q", ev.FinishReason)
				}
			}
			emit(st)
			drain(ch)
			return
		}
		if st.text != "" || len(st.tokens) > 0 {
			emit(st)
		}
	}
	// The channel closed without a Done event.
	emit(step{choice: sp.index, done: true, err: errors.New("the generator closed the stream without a final event"),
		prompt: counts.prompt, completion: counts.completion, cached: counts.cached})
}

// result gathers one choice's steps (non-streaming responses).
type result struct {
	text                       strings.Builder
	tokens                     []tokenOut
	finish                     string
	err                        error
	prompt, completion, cached int
}

// collect runs specs and gathers their whole outputs, indexed by
// choice - base.
func (s *Server) collect(ctx context.Context, specs []choiceSpec, base int) ([]*result, error) {
	res := make([]*result, len(specs))
	for i := range res {
		res[i] = &result{}
	}
	rn, err := s.submit(ctx, specs)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	s.wait(rn, func(st step) {
		mu.Lock()
		defer mu.Unlock()
		r := res[st.choice-base]
		r.text.WriteString(st.text)
		r.tokens = append(r.tokens, st.tokens...)
		if st.done {
			r.finish, r.err = st.finish, st.err
			r.prompt, r.completion, r.cached = st.prompt, st.completion, st.cached
		}
	})
	for _, r := range res {
		if r.err != nil {
			if errors.Is(r.err, context.Canceled) {
				if ctx.Err() != nil {
					return nil, clientGone()
				}
				continue
			}
			return nil, internalError(fmt.Errorf("generation failed: %w", r.err))
		}
	}
	return res, nil
}

// usageOf sums the counts of the choices of one prompt: the prompt counts
// once, completions add up; cached tokens are the first choice's.
func usageOf(rs []*result, promptLen int) usage {
	u := usage{PromptTokens: promptLen}
	for i, r := range rs {
		u.CompletionTokens += r.completion
		if i == 0 {
			u.PromptTokensDetails = &promptTokenDetails{CachedTokens: min(r.cached, promptLen)}
		}
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// tokenBytes returns the UTF-8 bytes of a token's text as ints (the
// "bytes" of OpenAI's logprobs).
func tokenBytes(s string) []int {
	out := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = int(s[i])
	}
	return out
}

// topText decodes the alternatives of a token.
func (s *Server) topText(top []TokenLogprob, n int) []struct {
	text    string
	logprob float32
} {
	top = slices.Clone(top)
	if len(top) > n {
		top = top[:n]
	}
	out := make([]struct {
		text    string
		logprob float32
	}, len(top))
	for i, t := range top {
		out[i].text, _ = s.o.Tokenizer.Decode([]int{t.ID}, false)
		out[i].logprob = t.Logprob
	}
	return out
}
