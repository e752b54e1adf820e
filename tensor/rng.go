package tensor

import (
	"sync"

	"github.com/gotpu/gotpu/op"
)

// Generator is a counter-based random generator: a seed and an offset into
// the Philox stream. Every op that draws advances the offset by the number of
// counters it used, so every device and mode draws the same numbers for the
// same seed and call sequence.
type Generator struct {
	mu     sync.Mutex
	seed   uint64
	offset uint64
}

// NewGenerator returns a generator seeded with seed.
func NewGenerator(seed uint64) *Generator { return &Generator{seed: seed} }

// ManualSeed resets g to seed.
func (g *Generator) ManualSeed(seed uint64) {
	g.mu.Lock()
	g.seed, g.offset = seed, 0
	g.mu.Unlock()
}

// State returns the seed and current offset.
func (g *Generator) State() (seed, offset uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.seed, g.offset
}

// SetState restores a state returned by State.
func (g *Generator) SetState(seed, offset uint64) {
	g.mu.Lock()
	g.seed, g.offset = seed, offset
	g.mu.Unlock()
}

// take reserves n counters and returns the seed and the first counter.
// Inside a trace the draw is recorded, so that a replay of the trace
// draws again (see Replay).
func (g *Generator) take(n uint64) (seed, offset uint64) {
	g.mu.Lock()
	seed, offset = g.seed, g.offset
	// Round up to a multiple of 4: Philox yields 4 words per counter.
	g.offset += (n + 3) &^ 3
	g.mu.Unlock()
	if tracesActive.Load() > 0 {
		if tr := currentTrace(); tr != nil {
			tr.ctx.mu.Lock()
			tr.ctx.draws = append(tr.ctx.draws, rngDraw{g: g, n: n, seed: seed, offset: offset})
			tr.ctx.mu.Unlock()
		}
	}
	return
}

// rngDraw is one take from a generator inside a trace.
type rngDraw struct {
	g            *Generator
	n            uint64
	seed, offset uint64
}

var defaultGen = NewGenerator(0)

// DefaultGenerator returns the process-wide generator.
func DefaultGenerator() *Generator { return defaultGen }

// ManualSeed seeds the default generator (torch.manual_seed).
func ManualSeed(seed uint64) { defaultGen.ManualSeed(seed) }

// drawSeed fills the seed and offset attributes of a random op from the
// default generator, reserving one counter per output element (or the op's
// "counters" attribute if the shape rule needs more).
func drawSeed(a op.Attrs, out []op.Meta) op.Attrs {
	n := uint64(0)
	for _, m := range out {
		n += uint64(m.Numel())
	}
	if a.Has("counters") {
		n = uint64(a.Int("counters"))
	}
	seed, off := defaultGen.take(n)
	return a.With("seed", int64(seed)).With("offset", int64(off))
}

// WithGenerator returns attrs for a random op drawing from g.
func WithGenerator(g *Generator, a op.Attrs, numel int) op.Attrs {
	seed, off := g.take(uint64(numel))
	return a.With("seed", int64(seed)).With("offset", int64(off))
}
