package serve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gotpu/gotpu/models"
	"github.com/gotpu/gotpu/models/sample"
)

// EngineOptions configure NewEngine. Zero fields take the defaults.
type EngineOptions struct {
	// MaxBatch is the most sequences running at once (default 32).
	MaxBatch int
	// BlockSize is the number of tokens per KV block (default 16).
	BlockSize int
	// NumBlocks is the number of KV blocks; 0 derives it from KVBytes.
	NumBlocks int
	// KVBytes is the KV cache's memory when NumBlocks is 0 (default 256
	// MiB, and never more than MaxBatch full contexts need).
	KVBytes int64
	// MaxQueue is the most requests waiting to run (default 1024); Submit
	// fails with ErrQueueFull beyond it.
	MaxQueue int
	// PrefillChunk is the most prompt tokens one step prefills (chunked
	// prefill; default 256), alongside one token of every decoding
	// sequence.
	PrefillChunk int
	// MaxContext caps the context length (default the model's positions).
	// The engine's ContextLength is also at most NumBlocks·BlockSize.
	MaxContext int
	// BatchBuckets, TokenBuckets and ContextBuckets are the padded sizes
	// of a step's groups (rows, tokens per prefill row, keys): a size
	// rounds up to the first bucket that holds it (past the last, to a
	// multiple of the last), so each shape compiles once. Defaults: powers
	// of two (from 1, 8 and 16).
	BatchBuckets, TokenBuckets, ContextBuckets []int
	// DisablePrefixCache turns automatic prefix caching off.
	DisablePrefixCache bool
}

// ErrClosed is the error of requests still running when Close ends them.
var ErrClosed = errors.New("serve: engine closed")

// Engine is the continuous-batching Generator over a models.CausalLM and
// a paged KV cache. One scheduler goroutine runs steps: at every step
// finished or cancelled sequences leave, waiting ones join (their
// prompts prefilled in chunks of at most PrefillChunk tokens per step
// beside the running decodes), blocks are allocated per sequence, full
// blocks are shared through the prefix cache, a shared block is copied
// before it is written, and when blocks run out the newest sequence is
// preempted (its blocks freed; it requeues first and later recomputes
// its prompt and tokens so far, losing nothing).
//
// Sampling is per request with models/sample: the draw of a step depends
// only on the seed and the number of tokens generated, so a seeded
// request gives the same tokens alone, batched or preempted. Logprobs are
// the log-softmax of the processed distribution: the logits after
// logit_bias, the constraint mask, the penalties and (when sampling)
// temperature, top-k, top-p and min-p — the distribution the token is
// drawn from (greedy: after the penalties).
type Engine struct {
	m      *models.CausalLM
	kv     *models.PagedKV
	o      EngineOptions
	ctxLen int
	vocab  int

	mu       sync.Mutex
	incoming []*seq
	draining bool
	closed   bool
	stats    Stats
	drained  chan struct{} // closed once draining and idle
	wakeCh   chan struct{}
	done     chan struct{} // closed when the scheduler returns

	// Scheduler state (its goroutine only).
	pool *blockPool
	// pending counts the hashes of full blocks that running sequences
	// are still prefilling: a waiting sequence whose next block is one
	// of them waits for it rather than computing it twice (n > 1).
	pending map[uint64]int
	waiting []*seq
	running []*seq
	order   uint64
	hits    int64
	looks   int64
	preempt int64
	genTok  int64
	prTok   int64
}

// seq is one request's state in the scheduler.
type seq struct {
	req       Request
	ctx       context.Context
	stop      func() bool
	events    chan Event
	cancelled atomic.Bool

	tokens   []int // prompt and generated tokens
	nPrompt  int
	maxNew   int
	computed int      // tokens whose keys and values are in the cache
	blocks   []int    // block table
	hashes   []uint64 // hashes of the leading full blocks registered
	pend     []uint64 // hashes of the blocks pendAt, ... it will register
	pendAt   int
	cached   int
	order    uint64
	sampler  *sample.Sampler
	work     []float32
	proc     []float32
	allow    []bool
	ended    bool // finished by next; step drops it from running
	// step plan
	n int
}

// NewEngine returns an Engine running m and starts its scheduler.
func NewEngine(m *models.CausalLM, o EngineOptions) (*Engine, error) {
	if m == nil {
		return nil, fmt.Errorf("serve: NewEngine: nil model")
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 32
	}
	if o.BlockSize <= 0 {
		o.BlockSize = 16
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = 1024
	}
	if o.PrefillChunk <= 0 {
		o.PrefillChunk = 256
	}
	ctxLen := m.Config.MaxPositions
	if ctxLen <= 0 {
		ctxLen = 2048
	}
	if o.MaxContext > 0 {
		ctxLen = min(ctxLen, o.MaxContext)
	}
	if o.NumBlocks <= 0 {
		kvb := o.KVBytes
		if kvb <= 0 {
			kvb = 256 << 20
		}
		o.NumBlocks = int(kvb / m.BlockBytes(o.BlockSize))
		o.NumBlocks = min(o.NumBlocks, o.MaxBatch*ceilDiv(ctxLen, o.BlockSize))
		if o.NumBlocks < 1 {
			return nil, fmt.Errorf("serve: KV memory %d bytes holds no block of %d bytes", kvb, m.BlockBytes(o.BlockSize))
		}
	}
	ctxLen = min(ctxLen, o.NumBlocks*o.BlockSize)
	if o.BatchBuckets == nil {
		o.BatchBuckets = powers(1, o.MaxBatch)
	}
	if o.TokenBuckets == nil {
		o.TokenBuckets = powers(8, o.PrefillChunk)
	}
	if o.ContextBuckets == nil {
		o.ContextBuckets = powers(16, ctxLen)
	}
	for _, b := range [][]int{o.BatchBuckets, o.TokenBuckets, o.ContextBuckets} {
		if len(b) == 0 || !slices.IsSorted(b) || b[0] <= 0 {
			return nil, fmt.Errorf("serve: buckets %v must be positive and ascending", b)
		}
	}
	kv, err := m.NewPagedKV(o.NumBlocks, o.BlockSize)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	e := &Engine{m: m, kv: kv, o: o, ctxLen: ctxLen, vocab: m.Config.VocabSize,
		drained: make(chan struct{}), wakeCh: make(chan struct{}, 1), done: make(chan struct{}),
		pool: newBlockPool(o.NumBlocks), pending: map[uint64]int{}}
	e.stats.KVBlocksTotal = o.NumBlocks
	go e.loop()
	return e, nil
}

// powers returns lo, 2lo, 4lo, ... up to the first one >= hi.
func powers(lo, hi int) []int {
	out := []int{lo}
	for out[len(out)-1] < hi {
		out = append(out, out[len(out)-1]*2)
	}
	return out
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// roundUp rounds n up to the first bucket that holds it, past the last to
// a multiple of the last.
func roundUp(n int, buckets []int) int {
	for _, b := range buckets {
		if b >= n {
			return b
		}
	}
	last := buckets[len(buckets)-1]
	return ceilDiv(n, last) * last
}

// VocabSize is the model's vocabulary size.
func (e *Engine) VocabSize() int { return e.vocab }

// ContextLength is the longest sequence (prompt and generated tokens) the
// engine runs.
func (e *Engine) ContextLength() int { return e.ctxLen }

// Stats returns the current counters.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stats
	s.Queued += len(e.incoming)
	return s
}

// Submit queues r and returns its event stream (see Generator). The
// stream is buffered for every event the request can produce, so a slow
// reader never stalls the other requests.
func (e *Engine) Submit(ctx context.Context, r Request) (<-chan Event, error) {
	if err := e.validate(r); err != nil {
		return nil, err
	}
	s := &seq{req: r, ctx: ctx, tokens: slices.Clone(r.Prompt), nPrompt: len(r.Prompt)}
	s.maxNew = min(r.MaxTokens, e.ctxLen-len(r.Prompt))
	sm, err := sample.New(r.Sampling)
	if err != nil {
		return nil, fmt.Errorf("serve: request %s: %w", r.ID, err)
	}
	s.sampler = sm
	ch := make(chan Event, s.maxNew+1)
	s.events = ch
	s.stop = context.AfterFunc(ctx, func() {
		s.cancelled.Store(true)
		e.wake()
	})
	e.mu.Lock()
	switch {
	case e.draining || e.closed:
		err = ErrDraining
	case len(e.incoming)+e.stats.Queued >= e.o.MaxQueue:
		err = ErrQueueFull
	default:
		e.incoming = append(e.incoming, s)
	}
	e.mu.Unlock()
	if err != nil {
		s.stop()
		return nil, err
	}
	e.wake()
	return ch, nil
}

func (e *Engine) validate(r Request) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("serve: request %s: "+format, append([]any{r.ID}, args...)...)
	}
	switch {
	case len(r.Prompt) == 0:
		return bad("empty prompt")
	case len(r.Prompt) >= e.ctxLen:
		return bad("prompt of %d tokens leaves no room in the context of %d", len(r.Prompt), e.ctxLen)
	case r.MaxTokens <= 0:
		return bad("max tokens %d must be positive", r.MaxTokens)
	case r.TopLogprobs < 0 || r.TopLogprobs > e.vocab:
		return bad("top_logprobs %d outside [0, %d]", r.TopLogprobs, e.vocab)
	}
	for _, id := range r.Prompt {
		if id < 0 || id >= e.vocab {
			return bad("prompt token id %d outside the vocabulary [0, %d)", id, e.vocab)
		}
	}
	for id, b := range r.LogitBias {
		if id < 0 || id >= e.vocab || math.IsNaN(float64(b)) {
			return bad("logit_bias %d: %v (ids in [0, %d), no NaN)", id, b, e.vocab)
		}
	}
	return nil
}

func (e *Engine) wake() {
	select {
	case e.wakeCh <- struct{}{}:
	default:
	}
}

// Drain stops accepting requests and waits until every accepted request
// has ended or ctx is done.
func (e *Engine) Drain(ctx context.Context) error {
	e.mu.Lock()
	e.draining = true
	e.mu.Unlock()
	e.wake()
	select {
	case <-e.drained:
		return nil
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends the requests still queued or running (FinishReason "error",
// ErrClosed), stops the scheduler and releases the KV cache.
func (e *Engine) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.wake()
	<-e.done
	return nil
}

// loop is the scheduler goroutine.
func (e *Engine) loop() {
	defer close(e.done)
	drainedClosed := false
	for {
		e.mu.Lock()
		in := e.incoming
		e.incoming = nil
		closed, draining := e.closed, e.draining
		e.mu.Unlock()
		e.waiting = append(e.waiting, in...)
		if closed {
			for _, s := range slices.Concat(e.running, e.waiting) {
				e.finish(s, Event{Token: -1, FinishReason: "error", Err: ErrClosed})
			}
			e.running, e.waiting = nil, nil
			e.publish()
			e.kv = nil
			return
		}
		e.dropCancelled()
		if len(e.running) == 0 && len(e.waiting) == 0 {
			e.publish()
			if draining && !drainedClosed {
				e.mu.Lock()
				idle := len(e.incoming) == 0
				e.mu.Unlock()
				if idle {
					close(e.drained)
					drainedClosed = true
				}
			}
			<-e.wakeCh
			continue
		}
		e.step()
		e.publish()
	}
}

// publish copies the scheduler's counters into the shared Stats.
func (e *Engine) publish() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stats.Queued = len(e.waiting)
	e.stats.Running = len(e.running)
	e.stats.KVBlocksUsed = e.pool.used
	e.stats.PrefixHits, e.stats.PrefixLookups = e.hits, e.looks
	e.stats.Preemptions = e.preempt
	e.stats.GeneratedTokens, e.stats.PromptTokens = e.genTok, e.prTok
}

// dropCancelled ends the sequences whose context is done and frees their
// blocks.
func (e *Engine) dropCancelled() {
	keep := func(list []*seq) []*seq {
		return slices.DeleteFunc(list, func(s *seq) bool {
			if !s.cancelled.Load() {
				return false
			}
			e.finish(s, Event{Token: -1, FinishReason: "cancelled", Err: s.ctx.Err()})
			return true
		})
	}
	e.running = keep(e.running)
	e.waiting = keep(e.waiting)
}

// finish frees s's blocks and sends its last event.
func (e *Engine) finish(s *seq, ev Event) {
	e.freeBlocks(s)
	if s.stop != nil {
		s.stop()
	}
	ev.Done = true
	e.usage(s, &ev)
	s.events <- ev
	close(s.events)
}

func (e *Engine) usage(s *seq, ev *Event) {
	ev.PromptTokens, ev.CompletionTokens, ev.CachedTokens = s.nPrompt, len(s.tokens)-s.nPrompt, s.cached
}

func (e *Engine) freeBlocks(s *seq) {
	for _, b := range s.blocks {
		e.pool.release(b)
	}
	e.unpend(s, math.MaxInt)
	s.blocks, s.hashes, s.computed = nil, nil, 0
}

// preemptNewest frees the blocks of the most recently admitted running
// sequence and requeues it first; it returns the sequence.
func (e *Engine) preemptNewest() *seq {
	i := len(e.running) - 1
	v := e.running[i]
	e.running = e.running[:i]
	e.freeBlocks(v)
	e.waiting = slices.Insert(e.waiting, 0, v)
	e.preempt++
	return v
}

// ensureBlocks gives s blocks for positions [s.computed, s.computed+n)
// and copies a shared or cached block before it is written. It returns how many of
// the n tokens it could place (fewer only when blocks ran out).
func (e *Engine) ensureBlocks(s *seq, n int) (int, error) {
	bs := e.o.BlockSize
	first := s.computed / bs
	if first < len(s.blocks) {
		b := s.blocks[first]
		if e.pool.ref[b] > 1 || e.pool.hashed[b] {
			// Shared, or the prefix cache's copy: write a private copy.
			nb, ok := e.pool.alloc()
			if !ok {
				return 0, nil
			}
			if err := e.kv.CopyBlocks([]int{b}, []int{nb}); err != nil {
				e.pool.release(nb)
				return 0, err
			}
			e.pool.release(b)
			s.blocks[first] = nb
		}
		s.hashes = s.hashes[:min(len(s.hashes), first)]
	}
	for len(s.blocks)*bs < s.computed+n {
		b, ok := e.pool.alloc()
		if !ok {
			return max(0, len(s.blocks)*bs-s.computed), nil
		}
		s.blocks = append(s.blocks, b)
	}
	return n, nil
}

// unpend drops s's pending hashes of blocks before index upTo.
func (e *Engine) unpend(s *seq, upTo int) {
	for len(s.pend) > 0 && s.pendAt < upTo {
		h := s.pend[0]
		if e.pending[h]--; e.pending[h] <= 0 {
			delete(e.pending, h)
		}
		s.pend, s.pendAt = s.pend[1:], s.pendAt+1
	}
	if len(s.pend) == 0 {
		s.pend = nil
	}
}

// pendBlocks records the hashes of s's full blocks past its cache hits,
// which its prefill will register; it reports false, recording nothing,
// when the first of them is being prefilled by a running sequence.
func (e *Engine) pendBlocks(s *seq) bool {
	if e.o.DisablePrefixCache {
		return true
	}
	bs := e.o.BlockSize
	var parent uint64
	if n := len(s.hashes); n > 0 {
		parent = s.hashes[n-1]
	}
	var chain []uint64
	for i := len(s.blocks); (i+1)*bs <= len(s.tokens); i++ {
		parent = blockHash(parent, s.tokens[i*bs:(i+1)*bs])
		chain = append(chain, parent)
	}
	if len(chain) > 0 && e.pending[chain[0]] > 0 {
		return false
	}
	for _, h := range chain {
		e.pending[h]++
	}
	s.pend, s.pendAt = chain, len(s.blocks)
	return true
}

// admit looks s's full blocks up in the prefix cache and takes the hits;
// it returns how many blocks it found.
func (e *Engine) admit(s *seq) int {
	if e.o.DisablePrefixCache {
		return 0
	}
	bs := e.o.BlockSize
	var parent uint64
	for i := 0; (i+1)*bs <= len(s.tokens); i++ {
		toks := s.tokens[i*bs : (i+1)*bs]
		h := blockHash(parent, toks)
		b, ok := e.pool.lookup(h, parent, toks)
		if !ok {
			break
		}
		e.pool.take(b)
		s.blocks = append(s.blocks, b)
		s.hashes = append(s.hashes, h)
		parent = h
	}
	// The last token is always run, for its logits.
	s.computed = min(len(s.blocks)*bs, len(s.tokens)-1)
	return len(s.blocks)
}

// step plans and runs one forward step and handles its results.
func (e *Engine) step() {
	bs := e.o.BlockSize
	// Decodes first, oldest first; when blocks run out the newest running
	// sequence is preempted (possibly the one being planned).
	for i := 0; i < len(e.running); i++ {
		s := e.running[i]
		s.n = 0
		if len(s.tokens)-s.computed != 1 {
			continue
		}
		for {
			n, err := e.ensureBlocks(s, 1)
			if err != nil {
				e.fail(err)
				return
			}
			if n == 1 {
				s.n = 1
				break
			}
			if v := e.preemptNewest(); v == s {
				break
			}
		}
	}
	// Prefill chunks of running sequences, then new ones, within the
	// token budget.
	budget := e.o.PrefillChunk
	for _, s := range e.running {
		if rem := len(s.tokens) - s.computed; rem > 1 && budget > 0 {
			n, err := e.ensureBlocks(s, min(rem, budget))
			if err != nil {
				e.fail(err)
				return
			}
			s.n = n
			budget -= n
		}
	}
	// Blocks the running prefills still need are spoken for.
	reserved := 0
	for _, r := range e.running {
		if len(r.tokens)-r.computed > 1 {
			reserved += ceilDiv(len(r.tokens), bs) - len(r.blocks)
		}
	}
	for len(e.waiting) > 0 && len(e.running) < e.o.MaxBatch && budget > 0 {
		s := e.waiting[0]
		hit := e.admit(s)
		need := ceilDiv(len(s.tokens), bs) - len(s.blocks) + reserved
		if len(e.running) > 0 {
			need++ // a block of headroom for the running decodes
		}
		if e.pool.available() < need || !e.pendBlocks(s) {
			// Not enough blocks, or its next block is being computed
			// by a running sequence (identical prompts): wait.
			e.freeBlocks(s)
			break
		}
		reserved += ceilDiv(len(s.tokens), bs) - len(s.blocks)
		e.waiting = e.waiting[1:]
		if s.order == 0 {
			// First admission (not a resumption after preemption).
			e.prTok += int64(s.nPrompt)
			e.looks++
			if hit > 0 {
				e.hits++
			}
			s.cached = min(s.computed, s.nPrompt)
		}
		e.order++
		s.order = e.order
		e.running = append(e.running, s)
		n, err := e.ensureBlocks(s, min(len(s.tokens)-s.computed, budget))
		if err != nil {
			e.fail(err)
			return
		}
		s.n = n
		budget -= n
	}
	var single, multi models.PagedGroup
	var singleSeqs, multiSeqs []*seq
	for _, s := range e.running {
		if s.n == 0 {
			continue
		}
		ps := models.PagedSeq{Tokens: s.tokens[s.computed : s.computed+s.n], Start: s.computed, Blocks: s.blocks}
		if s.n == 1 {
			single.Seqs = append(single.Seqs, ps)
			singleSeqs = append(singleSeqs, s)
			single.Context = max(single.Context, s.computed+1)
		} else {
			multi.Seqs = append(multi.Seqs, ps)
			multiSeqs = append(multiSeqs, s)
			multi.Tokens = max(multi.Tokens, s.n)
			multi.Context = max(multi.Context, s.computed+s.n)
		}
	}
	var groups []models.PagedGroup
	if len(multi.Seqs) > 0 {
		multi.Batch = roundUp(len(multi.Seqs), e.o.BatchBuckets)
		multi.Tokens = roundUp(multi.Tokens, e.o.TokenBuckets)
		multi.Context = roundUp(multi.Context, e.o.ContextBuckets)
		groups = append(groups, multi)
	}
	if len(single.Seqs) > 0 {
		single.Batch = roundUp(len(single.Seqs), e.o.BatchBuckets)
		single.Tokens = 1
		single.Context = roundUp(single.Context, e.o.ContextBuckets)
		groups = append(groups, single)
	}
	if len(groups) == 0 {
		// Every running prefill waits for blocks the others hold: free
		// the newest one's.
		if len(e.running) > 0 {
			e.preemptNewest()
		}
		return
	}
	out, err := e.m.ForwardPaged(e.kv, groups, false)
	if err != nil {
		e.fail(err)
		return
	}
	for i, s := range slices.Concat(multiSeqs, singleSeqs) {
		s.computed += s.n
		e.registerBlocks(s)
		if s.computed == len(s.tokens) {
			e.next(s, out[i])
		}
	}
	e.running = slices.DeleteFunc(e.running, func(s *seq) bool { return s.ended })
}

// registerBlocks enters s's newly full blocks into the prefix cache.
func (e *Engine) registerBlocks(s *seq) {
	if e.o.DisablePrefixCache {
		return
	}
	bs := e.o.BlockSize
	for i := len(s.hashes); (i+1)*bs <= s.computed; i++ {
		var parent uint64
		if i > 0 {
			parent = s.hashes[i-1]
		}
		toks := s.tokens[i*bs : (i+1)*bs]
		h := blockHash(parent, toks)
		e.pool.register(s.blocks[i], h, parent, toks)
		s.hashes = append(s.hashes, h)
	}
	e.unpend(s, len(s.hashes))
}

// fail ends every running sequence with err (a failed step leaves the
// cache's contents unknown).
func (e *Engine) fail(err error) {
	for _, s := range e.running {
		e.finish(s, Event{Token: -1, FinishReason: "error", Err: err})
	}
	e.running = nil
}

// next chooses s's next token from its last logits and sends it.
func (e *Engine) next(s *seq, logits []float32) {
	r := &s.req
	w := append(s.work[:0], logits...)
	s.work = w
	for id, b := range r.LogitBias {
		w[id] += b
	}
	onlyEOS := false
	if r.Constraint != nil {
		if s.allow == nil {
			s.allow = make([]bool, len(w))
		}
		clear(s.allow)
		if !r.Constraint.Allowed(s.allow) {
			onlyEOS = true
			clear(s.allow)
			for _, id := range r.EOS {
				if id >= 0 && id < len(w) {
					s.allow[id] = true
				}
			}
		}
		neg := float32(math.Inf(-1))
		any := false
		for i, ok := range s.allow {
			if !ok {
				w[i] = neg
			} else {
				any = true
			}
		}
		if !any {
			if onlyEOS {
				e.end(s, Event{Token: -1, FinishReason: "stop"})
				return
			}
			e.end(s, Event{Token: -1, FinishReason: "error", Err: fmt.Errorf("serve: request %s: the constraint allows no token", r.ID)})
			return
		}
	}
	gen := s.tokens[s.nPrompt:]
	tok, err := s.sampler.Next(w, r.Prompt, gen)
	if err != nil {
		e.end(s, Event{Token: -1, FinishReason: "error", Err: fmt.Errorf("serve: request %s: %w", r.ID, err)})
		return
	}
	ev := Event{Token: tok}
	if r.Logprobs || r.TopLogprobs > 0 {
		s.proc, err = s.sampler.Process(s.proc, w, r.Prompt, gen)
		if err != nil {
			e.end(s, Event{Token: -1, FinishReason: "error", Err: fmt.Errorf("serve: request %s: %w", r.ID, err)})
			return
		}
		logSoftmax(s.proc)
		ev.Logprob = s.proc[tok]
		if r.TopLogprobs > 0 {
			ev.Top = topK(s.proc, r.TopLogprobs)
		}
	}
	if r.Constraint != nil && !onlyEOS {
		if err := r.Constraint.Accept(tok); err != nil {
			e.end(s, Event{Token: -1, FinishReason: "error", Err: fmt.Errorf("serve: request %s: %w", r.ID, err)})
			return
		}
	}
	s.tokens = append(s.tokens, tok)
	e.genTok++
	switch {
	case slices.Contains(r.EOS, tok):
		ev.Done, ev.FinishReason = true, "stop"
	case len(s.tokens)-s.nPrompt >= s.maxNew:
		ev.Done, ev.FinishReason = true, "length"
	}
	if ev.Done {
		e.end(s, ev)
		return
	}
	e.usage(s, &ev)
	s.events <- ev
}

// end finishes a running sequence; step removes it from running.
func (e *Engine) end(s *seq, ev Event) {
	e.finish(s, ev)
	s.ended = true
}

// logSoftmax replaces x by its log-softmax (-Inf stays -Inf).
func logSoftmax(x []float32) {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	var sum float64
	for _, v := range x {
		if v > float32(math.Inf(-1)) {
			sum += math.Exp(float64(v - m))
		}
	}
	lse := float64(m) + math.Log(sum)
	for i, v := range x {
		x[i] = float32(float64(v) - lse)
	}
}

// topK returns the k largest entries of lp, largest first (lower ids
// first among ties).
func topK(lp []float32, k int) []TokenLogprob {
	out := make([]TokenLogprob, 0, k+1)
	for id, v := range lp {
		if len(out) == k && v <= out[k-1].Logprob {
			continue
		}
		i := len(out)
		for i > 0 && out[i-1].Logprob < v {
			i--
		}
		out = slices.Insert(out, i, TokenLogprob{ID: id, Logprob: v})
		if len(out) > k {
			out = out[:k]
		}
	}
	return out
}
