// Package pool is the CPU backend's persistent worker pool: the threads
// that every parallel kernel (GEMM, GEMV, convolution, attention, the
// quantized products, elementwise splits) shares.
package pool

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A parallel kernel's threads are the calling goroutine plus helpers that live for the life of the process, not
// goroutines spawned per call. A call is handed over through one atomic
// word per helper, which the helper polls for spin after its last
// call before it parks on a channel (costing nothing); the caller waits
// for the helpers by polling an atomic counter. Neither side sleeps in
// the OS between a model's back-to-back products: waking a parked thread
// costs tens of microseconds on a VM, as long as a decode step's whole
// matrix-vector product. Threads take work dynamically and never wait for
// one another to arrive, so a helper woken late only takes less of the
// work. One call uses the helpers at a time; a call that finds them busy
// (another goroutine's is running) runs on its caller alone, which keeps
// concurrent callers from oversubscribing the cores.

// ParallelMACs is the multiply-add count below which a product runs on
// its caller alone: sharing the work costs about a microsecond, about
// what 2^19 multiply-adds take on one core.
const ParallelMACs = 1 << 19

var helpers helperSet

// first is the first helper, the one Background offers jobs to.
var first atomic.Pointer[helper]

// helperSet is the set of helpers.
type helperSet struct {
	mu sync.Mutex // held by the GEMM that is using the helpers
	hs []*helper
	// list is hs as last published by grow, for readers without mu.
	list atomic.Pointer[[]*helper]
}

// snapshot returns the helpers started so far (read without mu: grow
// publishes each new slice through list).
func (h *helperSet) snapshot() []*helper {
	if l := h.list.Load(); l != nil {
		return *l
	}
	return nil
}

// grow starts helpers until there are n; the caller holds mu.
func (h *helperSet) grow(n int) {
	if len(h.hs) >= n {
		return
	}
	for len(h.hs) < n {
		g := &helper{wake: make(chan struct{}, 1)}
		g.stop = func() bool { return g.call.Load() != nil || g.bgStop.Load() }
		h.hs = append(h.hs, g)
		if len(h.hs) == 1 {
			first.Store(g)
		}
		go g.loop(len(h.hs))
	}
	hs := slices.Clone(h.hs)
	h.list.Store(&hs)
}

// The helpers for GOMAXPROCS at start-up are started with the package, not
// by the first product large enough to share: they are part of the
// process from the start (parked until used), so code that counts its
// goroutines around a piece of work (leak checks) does not see the pool
// appear in the middle of it.
func init() {
	helpers.mu.Lock()
	helpers.grow(runtime.GOMAXPROCS(0) - 1)
	helpers.mu.Unlock()
}

// helper is one pool thread's mailbox.
type helper struct {
	// call is the call offered to this helper, nil when none. The helper
	// takes it by swapping it for nil; a sharing caller that finds it
	// still there when its own work is done takes it back the same way.
	call atomic.Pointer[task]
	// parked is set by the helper before it blocks on wake, and cleared
	// by whoever wakes it.
	parked atomic.Bool
	wake   chan struct{}
	// bg is a background job offered to this helper (Background), taken
	// by swapping it for nil; it runs only while no call is offered.
	bg atomic.Pointer[BackgroundJob]
	// bgRunning is set while the helper may be running a background job
	// (from before it takes one until it returns), bgStop asks the job to
	// return (StopBackground).
	bgRunning, bgStop atomic.Bool
	// stop reports whether a call is waiting or StopBackground asks: a
	// background job's signal to return.
	stop func() bool
}

// task is one parallel run handed to the helpers.
type task struct {
	job func(tid, nw int)
	nw  int
	// running counts the helpers that have neither finished the call nor
	// been skipped.
	running atomic.Int32
}

// Workers returns how many threads a product of cost multiply-adds
// should use.
func Workers(cost int) int {
	if cost < ParallelMACs {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}

// Run runs job(tid, nw) for tid in [0, nw) at the same time, on
// the caller (tid 0) and nw-1 pool helpers, and returns when all are done.
// When the helpers are busy it runs job(0, 1) on the caller instead, so a
// job must accept any nw >= 1. prepare, if not nil, is called with the
// thread count actually used before any job starts.
func Run(nw int, prepare func(nw int), job func(tid, nw int)) {
	run(nw, prepare, job, false)
}

// RunShare is Run for a job whose threads take all of
// their work from a shared counter, so that whichever threads run, the
// caller's job(0, nw) returns only when no work is left to take: a
// helper that has not started by then (the OS has not run it yet, on a
// loaded machine often for hundreds of microseconds) is skipped rather
// than waited for. Helpers that did start are waited for.
func RunShare(nw int, job func(tid, nw int)) {
	run(nw, nil, job, true)
}

func run(nw int, prepare func(nw int), job func(tid, nw int), share bool) {
	if nw <= 1 || !helpers.mu.TryLock() {
		if prepare != nil {
			prepare(1)
		}
		job(0, 1)
		return
	}
	if prepare != nil {
		prepare(nw)
	}
	defer helpers.mu.Unlock()
	h := &helpers
	h.grow(nw - 1)
	c := &task{job: job, nw: nw}
	c.running.Store(int32(nw - 1))
	for _, g := range h.hs[:nw-1] {
		g.bg.Store(nil) // a background job not yet taken is dropped
		g.call.Store(c)
		// Sequentially consistent atomics: either the helper, about to
		// park, sees the call, or this load sees it parked.
		if g.parked.Load() && g.parked.CompareAndSwap(true, false) {
			select {
			case g.wake <- struct{}{}:
			default:
			}
		}
	}
	job(0, nw)
	if share {
		for _, g := range h.hs[:nw-1] {
			if g.call.CompareAndSwap(c, nil) {
				c.running.Add(-1) // not started: its work is done
			}
		}
	}
	for i := 1; c.running.Load() != 0; i++ {
		if i%yieldPolls == 0 {
			runtime.Gosched()
		}
	}
}

// Polling: an atomic load of an unchanged word costs a nanosecond or two.
// A polling thread reads the clock every clockPolls polls and gives its
// P to other goroutines every yieldPolls (a few tens of microseconds):
// often enough that spinning starves nobody, rarely enough that the
// scheduler's locks stay out of the hot path.
const (
	clockPolls = 1 << 10
	yieldPolls = 1 << 14
)

// loop is a helper's life: poll for a call, run it, and park after
// spin without one.
func (g *helper) loop(tid int) {
	idle := time.Now()
	for i := 1; ; i++ {
		if c := g.call.Load(); c != nil {
			if g.call.CompareAndSwap(c, nil) {
				c.job(tid, c.nw)
				c.running.Add(-1)
			}
			idle, i = time.Now(), 1
			continue
		}
		if g.bg.Load() != nil {
			// bgRunning goes up before the job is taken, so that
			// StopBackground, which drops the job and then reads it,
			// either finds the job gone or waits for it.
			g.bgRunning.Store(true)
			if b := g.bg.Swap(nil); b != nil {
				(*b).RunBackground(g.stop)
			}
			g.bgRunning.Store(false)
			idle, i = time.Now(), 1
			continue
		}
		if i%clockPolls != 0 {
			continue
		}
		if time.Since(idle) <= time.Duration(spin.Load()) || expectedRecently() {
			if i%yieldPolls == 0 {
				runtime.Gosched()
			}
			continue
		}
		g.parked.Store(true)
		if g.call.Load() == nil && g.bg.Load() == nil {
			<-g.wake
		}
		g.parked.Store(false)
		idle, i = time.Now(), 1
	}
}

// spin is how long a helper that finished a call keeps polling for the
// next one before it parks: a model's products come microseconds apart,
// and a helper that is still polling takes the next call at once.
var spin atomic.Int64 // nanoseconds

func init() { spin.Store(int64(200 * time.Microsecond)) }

// expected is when Expect was last called, in nanoseconds since start
// (0: never).
var expected atomic.Int64

// start is the origin of expected's clock.
var start = time.Now()

// Expect tells the pool that a parallel call is coming soon: code that
// is preparing work the helpers will share (a Fused-mode graph being
// recorded, which a flush then runs as one program) calls it as it goes.
// Helpers keep polling for spin after the latest Expect, as they do after
// a call, and parked ones are woken, so that the first product of the
// program finds them ready instead of paying a wake-up (tens of
// microseconds on a VM) while it runs. It costs a clock read and an
// atomic store, plus a wake when a helper is parked.
func Expect() {
	expected.Store(int64(time.Since(start)))
	for _, g := range helpers.snapshot() {
		if g.parked.Load() && g.parked.CompareAndSwap(true, false) {
			expectWakes.Add(1)
			select {
			case g.wake <- struct{}{}:
			default:
			}
		}
	}
}

// expectWakes counts the parked helpers Expect woke.
var expectWakes atomic.Uint64

// ExpectWakes returns how many parked helpers Expect has woken since the
// process started (for tests of its callers).
func ExpectWakes() uint64 { return expectWakes.Load() }

// Parked reports whether every helper is parked (for tests).
func Parked() bool {
	hs := helpers.snapshot()
	for _, g := range hs {
		if !g.parked.Load() {
			return false
		}
	}
	return len(hs) > 0
}

// expectedRecently reports whether Expect was called less than spin ago
// (an idle helper keeps polling then instead of parking).
func expectedRecently() bool {
	e := expected.Load()
	return e != 0 && time.Since(start)-time.Duration(e) <= time.Duration(spin.Load())
}

// A BackgroundJob is work a helper may do while it waits for calls:
// RunBackground must return soon (within a microsecond or so) once stop
// reports true, which it does as soon as a call is offered to the helper.
type BackgroundJob interface {
	RunBackground(stop func() bool)
}

// Background offers job to a pool helper that is polling for calls (not
// parked, not running one) and returns at once, reporting whether it did;
// a job offered before and not yet taken is replaced, and one not yet
// taken when the next call comes is dropped. The helper runs it
// until it ends or a call arrives, so a job costs the calls nothing but
// the moment it takes to notice: it is for work that only helps, such as
// bringing the next product's weights into the caches while the caller
// runs the small steps before it. Its effects must be safe to leave half
// done; a job that reads memory which may go away afterwards must be
// stopped with StopBackground first.
func Background(job BackgroundJob) bool {
	g := first.Load()
	if g == nil || g.parked.Load() || g.call.Load() != nil {
		return false
	}
	p := &job
	g.bg.Store(p)
	// Sequentially consistent atomics: either the helper, about to park,
	// sees the job, or this load sees it parked and the job is taken back
	// (unless the helper took it first).
	if g.parked.Load() && g.bg.CompareAndSwap(p, nil) {
		return false
	}
	return true
}

// StopBackground drops a background job not yet taken and waits for one
// that is running to return.
func StopBackground() {
	g := first.Load()
	if g == nil {
		return
	}
	g.bg.Store(nil)
	if !g.bgRunning.Load() {
		return
	}
	g.bgStop.Store(true)
	for i := 1; g.bgRunning.Load(); i++ {
		if i%yieldPolls == 0 {
			runtime.Gosched()
		}
	}
	g.bgStop.Store(false)
}
