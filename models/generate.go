package models

import (
	"context"
	"fmt"
	"time"

	"github.com/gotpu/gotpu/models/sample"

	"github.com/gotpu/gotpu/tensor"
)

// Chooser picks the next token of sequence seq from its last-position
// logits (host f32, vocab long), given the sequence's prompt and the tokens
// generated so far. Greedy is the simplest. logits is valid during the call
// only: Generate reads the next step's logits into the same memory.
type Chooser func(seq int, logits []float32, prompt, generated []int) (int, error)

// Greedy picks the highest logit, the lowest id among ties (torch.argmax).
func Greedy(_ int, logits []float32, _, _ []int) (int, error) {
	best := 0
	for i, v := range logits {
		if v > logits[best] || v != v && logits[best] == logits[best] {
			best = i
		}
	}
	return best, nil
}

// GenerateOptions are the options of Generate.
type GenerateOptions struct {
	// MaxNewTokens bounds the tokens generated per sequence (required, > 0).
	MaxNewTokens int
	// Choose picks each token; nil is Greedy.
	Choose Chooser
	// EOS ends a sequence when generated (the token is kept, as
	// transformers keeps it).
	EOS []int
	// PadID fills the left padding of shorter prompts (0 when unset).
	PadID int
	// OnToken, when set, is called with each new token of each sequence as
	// soon as it is chosen; an error stops generation and is returned.
	OnToken func(seq, token int) error
	// Stop, when set, is asked after each token whether sequence seq is
	// done (stop strings); a done sequence generates no more tokens.
	Stop func(seq int, generated []int) bool
	// CacheSize overrides the KV cache's number of slots (0: the longest
	// prompt plus MaxNewTokens).
	CacheSize int
}

// GenerateResult holds the generated tokens and timings.
type GenerateResult struct {
	// Tokens are each sequence's new tokens (the prompt excluded).
	Tokens [][]int
	// PrefillTokens is the number of prompt tokens processed (padding
	// included), Prefill the time it took, up to the first token.
	PrefillTokens int
	Prefill       time.Duration
	// DecodeSteps is the number of decode forwards, Decode their time.
	DecodeSteps int
	Decode      time.Duration
}

// Generate continues each prompt (token ids) with up to MaxNewTokens
// tokens: one forward over the left-padded prompts fills the KV cache
// (prefill), then one forward per token (decode). Positions of a padded
// sequence start at 0 on its first real token, as transformers' generate
// computes them from the attention mask. ctx cancels between steps.
func (m *CausalLM) Generate(ctx context.Context, prompts [][]int, o GenerateOptions) (*GenerateResult, error) {
	if len(prompts) == 0 {
		return nil, fmt.Errorf("%w: no prompts", ErrModel)
	}
	if o.MaxNewTokens <= 0 {
		return nil, fmt.Errorf("%w: MaxNewTokens must be positive, got %d", ErrModel, o.MaxNewTokens)
	}
	if m.tp != nil {
		// The collectives of this call's steps stop with ctx.
		m.tp.ctx = ctx
		defer func() { m.tp.ctx = nil }()
	}
	choose := o.Choose
	if choose == nil {
		choose = Greedy
	}
	b := len(prompts)
	long := 0
	for i, p := range prompts {
		if len(p) == 0 {
			return nil, fmt.Errorf("%w: prompt %d is empty", ErrModel, i)
		}
		for _, id := range p {
			if id < 0 || id >= m.Config.VocabSize {
				return nil, fmt.Errorf("%w: prompt %d has token id %d outside the vocabulary [0, %d)", ErrModel, i, id, m.Config.VocabSize)
			}
		}
		long = max(long, len(p))
	}
	size := o.CacheSize
	if size == 0 {
		size = long + o.MaxNewTokens
	}
	if size < long+o.MaxNewTokens {
		return nil, fmt.Errorf("%w: cache of %d slots cannot hold %d prompt and %d new tokens", ErrModel, size, long, o.MaxNewTokens)
	}
	if m.a.learnedPos && long+o.MaxNewTokens > m.Config.MaxPositions {
		return nil, fmt.Errorf("%w: %d tokens exceed the model's %d positions", ErrModel, long+o.MaxNewTokens, m.Config.MaxPositions)
	}
	dev := m.dev
	res := &GenerateResult{Tokens: make([][]int, b)}
	lp := leftPad(prompts, o.PadID)
	pad, ids, pos, slots := lp.pad, lp.ids, lp.pos, lp.slots
	var err error
	done := make([]bool, b)
	var logits [][]float32
	var flat []float32 // the step's logits, one buffer for every step
	start := time.Now()
	perr := tensor.Catch(func() {
		cache := m.NewCache(b, size)
		cache.SetPadding(dev, pad)
		step := Step{
			IDs:       tensor.FromSlice(dev, ids, b, long),
			Positions: tensor.FromSlice(dev, pos, b, long),
			Slots:     tensor.FromSlice(dev, slots, long),
			SeqLen:    long,
		}
		for n := 0; n < o.MaxNewTokens; n++ {
			if n > 0 {
				if cerr := ctx.Err(); cerr != nil {
					err = cerr
					return
				}
				next := make([]int64, b)
				np := make([]int64, b)
				for i := range prompts {
					next[i] = int64(o.PadID)
					if g := res.Tokens[i]; len(g) > 0 {
						next[i] = int64(g[len(g)-1])
					}
					np[i] = int64(len(prompts[i]) + n - 1)
				}
				step = Step{
					IDs:       tensor.FromSlice(dev, next, b, 1),
					Positions: tensor.FromSlice(dev, np, b, 1),
					Slots:     tensor.FromSlice(dev, []int64{int64(long + n - 1)}, 1),
					SeqLen:    long + n,
				}
			}
			lg, serr := m.stepLogits(step, cache, false)
			if serr != nil {
				err = serr
				return
			}
			flat = lg.CopyFloat32s(flat)
			v := len(flat) / b
			logits = logits[:0]
			for i := 0; i < b; i++ {
				logits = append(logits, flat[i*v:(i+1)*v])
			}
			if n == 0 {
				res.Prefill = time.Since(start)
				res.PrefillTokens = b * long
				start = time.Now()
			} else {
				res.DecodeSteps++
			}
			alive := false
			for i := range prompts {
				if done[i] {
					continue
				}
				tok, cerr := choose(i, logits[i], prompts[i], res.Tokens[i])
				if cerr != nil {
					err = cerr
					return
				}
				res.Tokens[i] = append(res.Tokens[i], tok)
				if o.OnToken != nil {
					if cerr := o.OnToken(i, tok); cerr != nil {
						err = cerr
						return
					}
				}
				for _, e := range o.EOS {
					if tok == e {
						done[i] = true
					}
				}
				if !done[i] && o.Stop != nil && o.Stop(i, res.Tokens[i]) {
					done[i] = true
				}
				alive = alive || !done[i]
			}
			if !alive {
				break
			}
		}
		res.Decode = time.Since(start)
	})
	if err == nil {
		err = perr
	}
	if err != nil {
		return res, err
	}
	return res, nil
}

// ForwardLogits runs one left-padded batch of sequences through the model
// without a cache to keep and returns the logits [B, T, vocab] as f32 on
// the host (all positions, padding included).
func (m *CausalLM) ForwardLogits(seqs [][]int, padID int) (logits []float32, t int, err error) {
	b := len(seqs)
	for _, s := range seqs {
		t = max(t, len(s))
	}
	for _, sq := range seqs {
		for _, id := range sq {
			if id < 0 || id >= m.Config.VocabSize {
				return nil, 0, fmt.Errorf("%w: token id %d outside the vocabulary [0, %d)", ErrModel, id, m.Config.VocabSize)
			}
		}
	}
	lp := leftPad(seqs, padID)
	pad, ids, pos, slots, maxPos := lp.pad, lp.ids, lp.pos, lp.slots, lp.maxPos
	perr := tensor.Catch(func() {
		dev := m.dev
		cache := m.NewCache(b, t)
		cache.SetPadding(dev, pad)
		lg, serr := m.stepLogits(Step{
			IDs:       tensor.FromSlice(dev, ids, b, t),
			Positions: tensor.FromSlice(dev, pos, b, t),
			Slots:     tensor.FromSlice(dev, slots, t),
			SeqLen:    maxPos + 1,
		}, cache, true)
		if serr != nil {
			err = serr
			return
		}
		logits = lg.Float32s()
	})
	if err == nil {
		err = perr
	}
	return logits, t, err
}

// Sampling returns a Chooser that samples each of n sequences with its
// own sample.Sampler: sequence i draws from seed p.Seed+i, so rows of a
// batch get different draws and a given seed gives the same tokens on
// every run, device and mode.
func Sampling(p sample.Params, n int) (Chooser, error) {
	samplers := make([]*sample.Sampler, n)
	for i := range samplers {
		q := p
		q.Seed = p.Seed + uint64(i)
		s, err := sample.New(q)
		if err != nil {
			return nil, err
		}
		samplers[i] = s
	}
	return func(seq int, logits []float32, prompt, generated []int) (int, error) {
		if seq < 0 || seq >= n {
			return 0, fmt.Errorf("%w: sequence %d of a chooser made for %d", ErrModel, seq, n)
		}
		return samplers[seq].Next(logits, prompt, generated)
	}, nil
}

// padded is a left-padded batch: ids and positions [B, T] flattened (a
// padding slot has the pad id and position 0, as transformers' generate
// gives it), the padding per row, the slots 0..T-1, and the largest
// position.
type padded struct {
	ids, pos, slots []int64
	pad             []int
	maxPos          int
}

// leftPad pads seqs on the left to the longest one's length.
func leftPad(seqs [][]int, padID int) padded {
	t := 0
	for _, s := range seqs {
		t = max(t, len(s))
	}
	b := len(seqs)
	p := padded{ids: make([]int64, b*t), pos: make([]int64, b*t), slots: make([]int64, t), pad: make([]int, b)}
	for i, s := range seqs {
		p.pad[i] = t - len(s)
		for j := 0; j < t; j++ {
			if j < p.pad[i] {
				p.ids[i*t+j] = int64(padID)
				continue
			}
			p.ids[i*t+j], p.pos[i*t+j] = int64(s[j-p.pad[i]]), int64(j-p.pad[i])
			p.maxPos = max(p.maxPos, j-p.pad[i])
		}
	}
	for j := range p.slots {
		p.slots[j] = int64(j)
	}
	return p
}
