package device

import (
	"sync"
)

// CachingAllocator is a size-class caching allocator that backends can use to
// track and reuse memory, as PyTorch's CUDA caching allocator does: freed
// blocks stay reserved and serve later requests of the same class.
type CachingAllocator struct {
	// Raw allocates a block of exactly n bytes; RawFree releases one.
	Raw     func(n int) (Buffer, error)
	RawFree func(Buffer)
	// Limit caps reserved bytes (0: no limit); over it, cached blocks are
	// released first, then ErrOutOfMemory is returned.
	Limit int64
	// SoftLimit, when > 0, is the reserved size above which a cache miss
	// first calls Reclaim (which should free unreachable buffers, e.g. by
	// running the garbage collector so tensors' cleanups return their
	// blocks) and retries the cache. If reclaiming does not help, SoftLimit
	// grows by half, so a large working set does not collect on every
	// allocation.
	SoftLimit int64
	Reclaim   func()

	mu    sync.Mutex
	free  map[int][]Buffer
	stats MemStats
}

// roundSize returns the size class of n: 512-byte granularity for small
// blocks, then powers of two split into four steps.
func roundSize(n int) int {
	if n <= 0 {
		return 0
	}
	if n <= 1<<20 {
		return (n + 511) &^ 511
	}
	p := 1 << 20
	for p < n {
		p <<= 1
	}
	step := p / 8
	return (n + step - 1) / step * step
}

// Alloc returns a block of at least n bytes.
func (a *CachingAllocator) Alloc(n int) (Buffer, error) {
	size := roundSize(n)
	a.mu.Lock()
	if a.free == nil {
		a.free = map[int][]Buffer{}
	}
	if b := a.takeLocked(size); b != nil {
		a.mu.Unlock()
		return b, nil
	}
	if a.Reclaim != nil && a.SoftLimit > 0 && a.stats.Reserved+int64(size) > a.SoftLimit {
		a.mu.Unlock()
		a.Reclaim()
		a.mu.Lock()
		if b := a.takeLocked(size); b != nil {
			a.mu.Unlock()
			return b, nil
		}
		if a.stats.Reserved+int64(size) > a.SoftLimit {
			a.SoftLimit = (a.stats.Reserved + int64(size)) * 3 / 2
		}
	}
	if a.Limit > 0 && a.stats.Reserved+int64(size) > a.Limit {
		a.releaseLocked()
		if a.stats.Reserved+int64(size) > a.Limit {
			a.mu.Unlock()
			return nil, ErrOutOfMemory
		}
	}
	a.mu.Unlock()
	b, err := a.Raw(size)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.stats.Reserved += int64(size)
	a.account(int64(size))
	a.mu.Unlock()
	return b, nil
}

// takeLocked pops a cached block of the size class, or returns nil.
func (a *CachingAllocator) takeLocked(size int) Buffer {
	if a.free == nil {
		a.free = map[int][]Buffer{}
	}
	l := a.free[size]
	if len(l) == 0 {
		return nil
	}
	b := l[len(l)-1]
	a.free[size] = l[:len(l)-1]
	a.account(int64(size))
	return b
}

func (a *CachingAllocator) account(size int64) {
	a.stats.Allocated += size
	a.stats.NumAllocs++
	if a.stats.Allocated > a.stats.PeakAllocated {
		a.stats.PeakAllocated = a.stats.Allocated
	}
}

// Free returns b to the cache.
func (a *CachingAllocator) Free(b Buffer) {
	size := b.Size()
	a.mu.Lock()
	if a.free == nil {
		a.free = map[int][]Buffer{}
	}
	a.free[size] = append(a.free[size], b)
	a.stats.Allocated -= int64(size)
	a.stats.NumFrees++
	a.mu.Unlock()
}

// EmptyCache releases every cached (unused) block, as torch.cuda.empty_cache.
func (a *CachingAllocator) EmptyCache() {
	a.mu.Lock()
	a.releaseLocked()
	a.mu.Unlock()
}

func (a *CachingAllocator) releaseLocked() {
	for size, l := range a.free {
		for _, b := range l {
			if a.RawFree != nil {
				a.RawFree(b)
			}
			a.stats.Reserved -= int64(size)
		}
		delete(a.free, size)
	}
}

// Stats returns a snapshot of the allocator's counters.
func (a *CachingAllocator) Stats() MemStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// ResetPeak sets the peak to the current allocation.
func (a *CachingAllocator) ResetPeak() {
	a.mu.Lock()
	a.stats.PeakAllocated = a.stats.Allocated
	a.mu.Unlock()
}
