package serve

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Byte-level fake tokenizer: ids 0..255 are bytes, fakeEOS and fakeBOS are
// special tokens.
const (
	fakeEOS   = 256
	fakeBOS   = 257
	fakeVocab = 258
)

type fakeTokenizer struct{}

func (fakeTokenizer) Encode(text string, addSpecial bool) ([]int, error) {
	var ids []int
	if addSpecial {
		ids = append(ids, fakeBOS)
	}
	for i := 0; i < len(text); i++ {
		ids = append(ids, int(text[i]))
	}
	return ids, nil
}

func (fakeTokenizer) Decode(ids []int, skipSpecial bool) (string, error) {
	var b []byte
	for _, id := range ids {
		switch {
		case id < 256:
			b = append(b, byte(id))
		case id == fakeEOS && !skipSpecial:
			b = append(b, "<eos>"...)
		case id == fakeBOS && !skipSpecial:
			b = append(b, "<bos>"...)
		case id >= fakeVocab:
			return "", fmt.Errorf("fake: id %d out of range", id)
		}
	}
	// Like Hugging Face's byte-level decoders, invalid UTF-8 becomes U+FFFD.
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}

// fakeGen is a deterministic Generator: each request emits the bytes of
// reply(r) one token at a time, then EOS.
type fakeGen struct {
	mu        sync.Mutex
	reply     func(r Request) string
	ctxLen    int
	delay     time.Duration // between tokens
	lastOnEnd bool          // carry the last token on the Done event
	queueFull bool
	draining  bool
	cached    int
	submitted []Request
	cancelled int
	running   int
	generated int64
	accepted  []int // tokens the requests' Constraints accepted
}

func newFakeGen(reply string) *fakeGen {
	return &fakeGen{reply: func(Request) string { return reply }, ctxLen: 4096}
}

func (f *fakeGen) Submit(ctx context.Context, r Request) (<-chan Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.queueFull {
		return nil, ErrQueueFull
	}
	if f.draining {
		return nil, ErrDraining
	}
	if len(r.Prompt) == 0 || r.MaxTokens <= 0 {
		return nil, fmt.Errorf("fake: bad request %+v", r)
	}
	f.submitted = append(f.submitted, r)
	f.running++
	toks, _ := fakeTokenizer{}.Encode(f.reply(r), false)
	toks = append(toks, fakeEOS)
	ch := make(chan Event) // unbuffered: the consumer sets the pace
	go func() {
		defer close(ch)
		defer func() { f.mu.Lock(); f.running--; f.mu.Unlock() }()
		base := Event{PromptTokens: len(r.Prompt), CachedTokens: f.cached}
		send := func(ev Event) bool {
			select {
			case ch <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		cancelled := func() {
			f.mu.Lock()
			f.cancelled++
			f.mu.Unlock()
			ev := base
			ev.Token, ev.Done, ev.FinishReason = -1, true, "cancelled"
			ch <- ev
		}
		for i, tok := range toks {
			if f.delay > 0 {
				select {
				case <-time.After(f.delay):
				case <-ctx.Done():
				}
			}
			if ctx.Err() != nil {
				cancelled()
				return
			}
			if r.Constraint != nil {
				allow := make([]bool, fakeVocab)
				r.Constraint.Allowed(allow)
				if err := r.Constraint.Accept(tok); err != nil {
					ev := base
					ev.Token, ev.Done, ev.FinishReason, ev.Err = -1, true, "error", err
					ch <- ev
					return
				}
				f.mu.Lock()
				f.accepted = append(f.accepted, tok)
				f.mu.Unlock()
			}
			ev := base
			ev.Token = tok
			ev.CompletionTokens = i + 1
			if r.Logprobs {
				ev.Logprob = -float32(i+1) / 8
			}
			for k := 0; k < r.TopLogprobs; k++ {
				ev.Top = append(ev.Top, TokenLogprob{ID: (tok + k) % 256, Logprob: -float32(i+1)/8 - float32(k)})
			}
			f.mu.Lock()
			f.generated++
			f.mu.Unlock()
			last := i == len(toks)-1 || i+1 == r.MaxTokens
			if last {
				ev.Done = true
				ev.FinishReason = "length"
				if slices.Contains(r.EOS, tok) {
					ev.FinishReason = "stop"
				}
				if !f.lastOnEnd {
					// Send the token on its own, then an end with no token.
					ev.Done, ev.FinishReason = false, ""
					if !send(ev) {
						cancelled()
						return
					}
					end := base
					end.Token, end.CompletionTokens, end.Done = -1, i+1, true
					end.FinishReason = "length"
					if slices.Contains(r.EOS, tok) {
						end.FinishReason = "stop"
					}
					ch <- end
					return
				}
				ch <- ev
				return
			}
			if !send(ev) {
				cancelled()
				return
			}
		}
	}()
	return ch, nil
}

func (f *fakeGen) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Stats{Queued: 0, Running: f.running, KVBlocksUsed: 3, KVBlocksTotal: 64, PrefixHits: 2, PrefixLookups: 5,
		GeneratedTokens: f.generated, PromptTokens: 7}
}
func (f *fakeGen) VocabSize() int                  { return fakeVocab }
func (f *fakeGen) ContextLength() int              { return f.ctxLen }
func (f *fakeGen) Drain(ctx context.Context) error { return nil }
func (f *fakeGen) Close() error                    { return nil }

func (f *fakeGen) requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.submitted)
}

func (f *fakeGen) cancels() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cancelled
}

// fakeConstraint allows everything and counts what it accepted.
type fakeConstraint struct {
	schema string
	n      int
}

func (c *fakeConstraint) Allowed(allow []bool) bool {
	for i := range allow {
		allow[i] = true
	}
	return true
}
func (c *fakeConstraint) Accept(id int) error { c.n++; return nil }

// fakeEmbedder returns [len(text), 1, 0] for each text.
type fakeEmbedder struct{}

func (fakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1, 0.5}
	}
	return out, nil
}
func (fakeEmbedder) CountTokens(text string) (int, error) { return len(text) + 2, nil }
