package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// The GEMM's persistent worker pool. A GEMM's threads are the calling
// goroutine plus helpers that live for the life of the process (polling for
// gemmSpin after a call, then parked on a channel, costing nothing), not
// goroutines spawned per call; they take work dynamically and never wait for one another to
// arrive, so a helper woken late only takes less of the work. One GEMM uses the helpers at a time; a GEMM that finds them busy
// (another goroutine's GEMM is running) runs on its caller alone, which
// keeps concurrent callers from oversubscribing the cores.

// gemmParallelMACs is the multiply-add count below which a GEMM runs on
// its caller alone: waking a helper and sharing the work cost a few
// microseconds, about what 2^19 multiply-adds take on one core.
const gemmParallelMACs = 1 << 19

var gemmHelpers struct {
	mu   sync.Mutex // held by the GEMM that is using the helpers
	wake []chan *gemmCall
}

// gemmCall is one parallel run handed to the helpers.
type gemmCall struct {
	job func(tid, nw int)
	nw  int
	// claim, when not nil (gemmParallelShare), is each helper's state for
	// this call: gemmPending until the helper claims it (gemmClaimed) or
	// the caller, done with its own share, skips it (gemmSkipped).
	claim []atomic.Int32
	wg    sync.WaitGroup
}

// Helper states of a gemmCall.
const (
	gemmPending int32 = iota
	gemmClaimed
	gemmSkipped
)

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
	gemmRun(nw, prepare, job, false)
}

// gemmParallelShare is gemmParallel for a job whose threads take all of
// their work from a shared counter, so that whichever threads run, the
// caller's job(0, nw) returns only when no work is left to take: a
// helper that has not started by then (the OS has not run it yet, on a
// loaded machine often for hundreds of microseconds) is skipped rather
// than waited for. Helpers that did start are waited for.
func gemmParallelShare(nw int, job func(tid, nw int)) {
	gemmRun(nw, nil, job, true)
}

func gemmRun(nw int, prepare func(nw int), job func(tid, nw int), share bool) {
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
		// Room for a few calls: a helper the OS runs late may still hold
		// skipped ones.
		ch := make(chan *gemmCall, 8)
		h.wake = append(h.wake, ch)
		go gemmHelper(len(h.wake), ch)
	}
	c := &gemmCall{job: job, nw: nw}
	if share {
		c.claim = make([]atomic.Int32, nw-1)
	}
	c.wg.Add(nw - 1)
	for i, ch := range h.wake[:nw-1] {
		select {
		case ch <- c:
		default:
			// The helper is that far behind: a sharing job goes on
			// without it; any other waits for it to take the call.
			if share {
				c.claim[i].Store(gemmSkipped)
				c.wg.Done()
				continue
			}
			ch <- c
		}
	}
	job(0, nw)
	if share {
		for i := range c.claim {
			if c.claim[i].CompareAndSwap(gemmPending, gemmSkipped) {
				c.wg.Done()
			}
		}
	}
	c.wg.Wait()
}

func gemmHelper(tid int, wake chan *gemmCall) {
	for {
		c := gemmSpinRecv(wake)
		if c == nil {
			var ok bool
			if c, ok = <-wake; !ok {
				return
			}
		}
		if c.claim != nil && !c.claim[tid-1].CompareAndSwap(gemmPending, gemmClaimed) {
			continue // skipped: the caller has done the work and counted it
		}
		c.job(tid, c.nw)
		c.wg.Done()
	}
}

// gemmSpin is how long a helper that finished a call keeps polling for the
// next one before it parks on its channel. Waking a parked goroutine costs
// the caller a futex call and the helper an OS reschedule — tens of
// microseconds on a VM, as long as a decode step's whole matrix-vector
// product — while a model's products come microseconds apart: a helper
// that is still polling takes the next call at once. Between polls it
// yields its P (runtime.Gosched), so other goroutines are not starved.
var gemmSpin atomic.Int64 // nanoseconds

func init() { gemmSpin.Store(int64(200 * time.Microsecond)) }

// gemmSpinRecv polls wake for up to gemmSpin; nil when nothing came.
func gemmSpinRecv(wake chan *gemmCall) *gemmCall {
	spin := time.Duration(gemmSpin.Load())
	if spin <= 0 {
		return nil
	}
	start := time.Now()
	for i := 0; ; i++ {
		select {
		case c, ok := <-wake:
			if !ok {
				return nil
			}
			return c
		default:
		}
		if i%64 == 63 {
			if time.Since(start) > spin {
				return nil
			}
			runtime.Gosched()
		}
	}
}
