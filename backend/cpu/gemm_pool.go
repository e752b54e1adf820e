package cpu

import (
	"runtime"
	"sync"
)

// The GEMM's persistent worker pool. A GEMM's threads are the calling
// goroutine plus helpers that live for the life of the process (parked on
// a channel between calls, costing nothing), not goroutines spawned per
// call; they take work dynamically and never wait for one another to
// arrive, so a helper woken late only takes less of the work. One GEMM uses the helpers at a time; a GEMM that finds them busy
// (another goroutine's GEMM is running) runs on its caller alone, which
// keeps concurrent callers from oversubscribing the cores.

// gemmParallelMACs is the multiply-add count below which a GEMM runs on
// its caller alone: waking a helper and sharing the work cost a few
// microseconds, about what 2^19 multiply-adds take on one core.
const gemmParallelMACs = 1 << 19

var gemmHelpers struct {
	mu      sync.Mutex // held by the GEMM that is using the helpers
	wake    []chan struct{}
	job     func(tid, nw int)
	nw      int
	running sync.WaitGroup
}

// gemmWorkers returns how many threads a GEMM of cost multiply-adds
// should use.
func gemmWorkers(cost int) int {
	if cost < gemmParallelMACs {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}

// gemmParallel runs job(tid, nw) for tid in [0, nw) at the same time, on
// the caller (tid 0) and nw-1 pool helpers, and returns when all are done.
// When the helpers are busy it runs job(0, 1) on the caller instead, so a
// job must accept any nw >= 1. prepare, if not nil, is called with the
// thread count actually used before any job starts.
func gemmParallel(nw int, prepare func(nw int), job func(tid, nw int)) {
	if nw <= 1 || !gemmHelpers.mu.TryLock() {
		if prepare != nil {
			prepare(1)
		}
		job(0, 1)
		return
	}
	if prepare != nil {
		prepare(nw)
	}
	defer gemmHelpers.mu.Unlock()
	h := &gemmHelpers
	for len(h.wake) < nw-1 {
		ch := make(chan struct{}, 1)
		h.wake = append(h.wake, ch)
		go gemmHelper(len(h.wake), ch)
	}
	h.job, h.nw = job, nw
	h.running.Add(nw - 1)
	for _, ch := range h.wake[:nw-1] {
		ch <- struct{}{}
	}
	job(0, nw)
	h.running.Wait()
	h.job = nil
}

func gemmHelper(tid int, wake chan struct{}) {
	h := &gemmHelpers
	for range wake {
		h.job(tid, h.nw)
		h.running.Done()
	}
}
