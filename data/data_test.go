package data

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

func sumCollate(ex []int) ([]int, error) { return slices.Clone(ex), nil }

func TestLoaderBatching(t *testing.T) {
	ds := Slice[int]{0, 1, 2, 3, 4, 5, 6}
	tests := []struct {
		name string
		o    LoaderOptions
		want [][]int
	}{
		{"plain", LoaderOptions{BatchSize: 3}, [][]int{{0, 1, 2}, {3, 4, 5}, {6}}},
		{"drop last", LoaderOptions{BatchSize: 3, DropLast: true}, [][]int{{0, 1, 2}, {3, 4, 5}}},
		{"prefetch", LoaderOptions{BatchSize: 2, Prefetch: 2}, [][]int{{0, 1}, {2, 3}, {4, 5}, {6}}},
	}
	for _, tt := range tests {
		l := NewLoader(ds, sumCollate, tt.o)
		var got [][]int
		for b, err := range l.Batches(context.Background(), 0) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, b)
		}
		if len(got) != len(tt.want) || l.Len() != len(tt.want) {
			t.Fatalf("%s: got %v (Len %d), want %v", tt.name, got, l.Len(), tt.want)
		}
		for i := range got {
			if !slices.Equal(got[i], tt.want[i]) {
				t.Fatalf("%s: got %v, want %v", tt.name, got, tt.want)
			}
		}
	}
}

func TestShuffleSeeded(t *testing.T) {
	ds := make(Slice[int], 100)
	for i := range ds {
		ds[i] = i
	}
	a := NewLoader(ds, sumCollate, LoaderOptions{Shuffle: true, Seed: 7})
	b := NewLoader(ds, sumCollate, LoaderOptions{Shuffle: true, Seed: 7, Prefetch: 3, BatchSize: 10})
	if !slices.Equal(a.Order(3), b.Order(3)) {
		t.Fatal("same seed and epoch gave different orders")
	}
	if slices.Equal(a.Order(0), a.Order(1)) {
		t.Fatal("epochs share an order")
	}
	p := a.Order(0)
	s := slices.Clone(p)
	slices.Sort(s)
	for i := range s {
		if s[i] != i {
			t.Fatal("order is not a permutation")
		}
	}
	var seen []int
	for batch, err := range b.Batches(context.Background(), 3) {
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, batch...)
	}
	if !slices.Equal(seen, a.Order(3)) {
		t.Fatal("prefetching loader changed the order")
	}
}

func TestLoaderStopsAndCancels(t *testing.T) {
	ds := make(Slice[int], 1000)
	l := NewLoader(ds, sumCollate, LoaderOptions{BatchSize: 1, Prefetch: 4})
	n := 0
	for range l.Batches(context.Background(), 0) {
		n++
		if n == 3 {
			break // must not leak or deadlock the producer
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Many times: the producer sees the cancellation and closes its
	// channel, and which of that and ctx.Done the consumer sees first is
	// up to the scheduler (it once ended the loop without the error).
	for range 200 {
		var gotErr error
		for _, err := range l.Batches(ctx, 0) {
			if err != nil {
				gotErr = err
				break
			}
		}
		if !errors.Is(gotErr, context.Canceled) {
			t.Fatalf("cancelled loader: %v", gotErr)
		}
	}
	bad := NewLoader(ds, func([]int) (int, error) { return 0, errors.New("boom") }, LoaderOptions{BatchSize: 10, Prefetch: 2})
	for _, err := range bad.Batches(context.Background(), 0) {
		if err == nil || err.Error() != "data: collating batch 0 of epoch 0: boom" {
			t.Fatalf("collate error: %v", err)
		}
	}
}

// Breaking out of a prefetching loop stops the producer before Batches
// returns: no example is collated after the loop ends.
func TestLoaderBreakStopsProducer(t *testing.T) {
	ds := make(Slice[int], 1000)
	var calls atomic.Int64
	slow := func(ex []int) (int, error) {
		calls.Add(1)
		time.Sleep(time.Millisecond)
		return len(ex), nil
	}
	l := NewLoader(ds, slow, LoaderOptions{BatchSize: 1, Prefetch: 8})
	for range 20 {
		n := 0
		for range l.Batches(context.Background(), 0) {
			if n++; n == 2 {
				break
			}
		}
		before := calls.Load()
		time.Sleep(20 * time.Millisecond)
		if after := calls.Load(); after != before {
			t.Fatalf("%d batches collated after the loop ended", after-before)
		}
	}
}
