// Package data holds datasets and the DataLoader: batching, seeded
// shuffling, drop_last, and batches prepared ahead by goroutines, as
// torch.utils.data does.
package data

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
)

// Dataset is an indexable collection of examples (torch.utils.data.Dataset).
type Dataset[T any] interface {
	// Len returns the number of examples.
	Len() int
	// At returns example i, 0 <= i < Len().
	At(i int) T
}

// Slice is a Dataset over a Go slice.
type Slice[T any] []T

// Len implements Dataset.
func (s Slice[T]) Len() int { return len(s) }

// At implements Dataset.
func (s Slice[T]) At(i int) T { return s[i] }

// Subset is a view of a Dataset through a list of indices.
type Subset[T any] struct {
	D       Dataset[T]
	Indices []int
}

// Len implements Dataset.
func (s Subset[T]) Len() int { return len(s.Indices) }

// At implements Dataset.
func (s Subset[T]) At(i int) T { return s.D.At(s.Indices[i]) }

// LoaderOptions configure a Loader.
type LoaderOptions struct {
	BatchSize int    // examples per batch (default 1)
	Shuffle   bool   // visit examples in a new seeded order each epoch
	Seed      uint64 // shuffling seed; epoch e uses the stream (Seed, e)
	DropLast  bool   // drop a final batch smaller than BatchSize
	// Prefetch is how many batches background goroutines prepare ahead of
	// the consumer (0: collate on the consumer's goroutine).
	Prefetch int
}

// Loader iterates over a Dataset in batches; collate turns a slice of
// examples into a batch (tensors, usually).
type Loader[T, B any] struct {
	ds      Dataset[T]
	collate func([]T) (B, error)
	opts    LoaderOptions
}

// NewLoader returns a Loader over ds.
func NewLoader[T, B any](ds Dataset[T], collate func([]T) (B, error), o LoaderOptions) *Loader[T, B] {
	if o.BatchSize <= 0 {
		o.BatchSize = 1
	}
	return &Loader[T, B]{ds: ds, collate: collate, opts: o}
}

// Len returns the number of batches per epoch.
func (l *Loader[T, B]) Len() int {
	n, b := l.ds.Len(), l.opts.BatchSize
	if l.opts.DropLast {
		return n / b
	}
	return (n + b - 1) / b
}

// Order returns the example order of an epoch: a seeded permutation when
// shuffling, else 0..n-1. The same (seed, epoch) always gives the same order.
func (l *Loader[T, B]) Order(epoch int) []int {
	n := l.ds.Len()
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if l.opts.Shuffle {
		r := rand.New(rand.NewPCG(l.opts.Seed, uint64(epoch)))
		r.Shuffle(n, func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	}
	return idx
}

// Batches returns the epoch's batches in order. Iteration stops early, with
// the context's error, when ctx is cancelled; breaking out of the loop stops
// the prefetching goroutines.
func (l *Loader[T, B]) Batches(ctx context.Context, epoch int) iter.Seq2[B, error] {
	return func(yield func(B, error) bool) {
		order := l.Order(epoch)
		nb := l.Len()
		make1 := func(k int) (B, error) {
			lo := k * l.opts.BatchSize
			hi := min(lo+l.opts.BatchSize, len(order))
			ex := make([]T, 0, hi-lo)
			for _, i := range order[lo:hi] {
				ex = append(ex, l.ds.At(i))
			}
			b, err := l.collate(ex)
			if err != nil {
				err = fmt.Errorf("data: collating batch %d of epoch %d: %w", k, epoch, err)
			}
			return b, err
		}
		if l.opts.Prefetch <= 0 {
			for k := 0; k < nb; k++ {
				if err := ctx.Err(); err != nil {
					var zero B
					yield(zero, err)
					return
				}
				b, err := make1(k)
				if !yield(b, err) || err != nil {
					return
				}
			}
			return
		}
		type result struct {
			b   B
			err error
		}
		ctx, cancel := context.WithCancel(ctx)
		// One producer keeps order; Prefetch bounds how far it runs ahead.
		// It has stopped when Batches returns (no collate runs after the
		// loop ends).
		ch := make(chan result, l.opts.Prefetch)
		done := make(chan struct{})
		defer func() {
			cancel()
			<-done
		}()
		go func() {
			defer close(done)
			defer close(ch)
			for k := 0; k < nb; k++ {
				if ctx.Err() != nil {
					return
				}
				b, err := make1(k)
				select {
				case ch <- result{b, err}:
				case <-ctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}()
		for {
			select {
			case r, ok := <-ch:
				if !ok {
					// The producer also stops when the caller's context
					// is cancelled (ctx is only cancelled here by that):
					// the loop must still say so, whichever of the closed
					// channel and ctx.Done the select saw first.
					if err := ctx.Err(); err != nil {
						var zero B
						yield(zero, err)
					}
					return
				}
				if !yield(r.b, r.err) || r.err != nil {
					return
				}
			case <-ctx.Done():
				var zero B
				yield(zero, ctx.Err())
				return
			}
		}
	}
}
