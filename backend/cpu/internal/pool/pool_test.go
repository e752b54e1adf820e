package pool

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunShare runs many short sharing jobs back to back (so
// that helpers lag and get skipped) interleaved with statically
// partitioned Run jobs, and checks that every unit of work is
// done exactly once and every static share runs.
func TestRunShare(t *testing.T) {
	// Helpers that poll between calls (the default) and helpers that park
	// at once, and calls that come after the helpers stopped polling.
	for _, d := range []time.Duration{time.Duration(spin.Load()), 0} {
		t.Run(fmt.Sprintf("spin=%v", d), func(t *testing.T) {
			defer spin.Store(spin.Load())
			spin.Store(int64(d))
			testRunShare(t)
			time.Sleep(2 * d)
			testRunShare(t)
		})
	}
}

func testRunShare(t *testing.T) {
	nw := max(2, runtime.GOMAXPROCS(0))
	for _, units := range []int{1, 3, 64} {
		for call := 0; call < 500; call++ {
			done := make([]atomic.Int32, units)
			var next atomic.Int64
			RunShare(nw, func(tid, n int) {
				if tid < 0 || tid >= n {
					t.Errorf("tid %d of %d", tid, n)
				}
				for {
					u := int(next.Add(1) - 1)
					if u >= units {
						return
					}
					done[u].Add(1)
				}
			})
			for u := range done {
				if got := done[u].Load(); got != 1 {
					t.Fatalf("units %d call %d: unit %d done %d times", units, call, u, got)
				}
			}
			if call%50 == 0 {
				// A static partition: every thread's share must run.
				var parts atomic.Int32
				var used atomic.Int32
				Run(nw, nil, func(tid, n int) {
					used.Store(int32(n))
					parts.Add(1)
				})
				if parts.Load() != used.Load() {
					t.Fatalf("Run ran %d of %d shares", parts.Load(), used.Load())
				}
			}
		}
	}
}

// stopJob runs until stop reports true, counting its polls.
type stopJob struct {
	started, stopped atomic.Bool
	polls            atomic.Int64
}

func (j *stopJob) RunBackground(stop func() bool) {
	j.started.Store(true)
	for !stop() {
		j.polls.Add(1)
	}
	j.stopped.Store(true)
}

// TestBackground checks that a background job runs on a helper that is
// polling, that the next call stops it and then runs in full, and that a
// parked helper is not offered one.
func TestBackground(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs a helper: GOMAXPROCS 1")
	}
	// A helper that the OS keeps off the CPU for longer than spin parks
	// when it runs again (a loaded machine: CI runs packages side by
	// side), so the rounds that need a polling helper keep it polling.
	defer spin.Store(spin.Load())
	spin.Store(int64(time.Hour))
	offered := 0
	for round := 0; round < 20; round++ {
		Run(2, nil, func(int, int) {}) // the helper now polls for spin
		j := &stopJob{}
		if !Background(j) {
			// The helper parked: this goroutine was off the CPU for
			// longer than spin (a loaded machine).
			continue
		}
		offered++
		deadline := time.Now().Add(5 * time.Second)
		for !j.started.Load() && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		if !j.started.Load() {
			t.Fatalf("round %d: the job did not start", round)
		}
		var parts atomic.Int32
		Run(2, nil, func(tid, n int) { parts.Add(1) })
		if !j.stopped.Load() {
			t.Fatalf("round %d: the call ran while the job had not stopped", round)
		}
		if parts.Load() != 2 {
			t.Fatalf("round %d: the call ran %d of 2 shares", round, parts.Load())
		}
	}
	if offered == 0 {
		t.Fatal("no round offered the job to a polling helper")
	}
	// StopBackground returns only once a running job has returned, and
	// drops one not yet taken.
	for round := 0; round < 20; round++ {
		Run(2, nil, func(int, int) {})
		j := &stopJob{}
		if !Background(j) {
			continue
		}
		if round%2 == 0 {
			deadline := time.Now().Add(5 * time.Second)
			for !j.started.Load() && time.Now().Before(deadline) {
				runtime.Gosched()
			}
		}
		StopBackground()
		if j.started.Load() && !j.stopped.Load() {
			t.Fatalf("round %d: StopBackground returned while the job ran", round)
		}
		time.Sleep(100 * time.Microsecond)
		if !j.started.Load() != !j.stopped.Load() {
			t.Fatalf("round %d: the job started after StopBackground (started %v, stopped %v)", round, j.started.Load(), j.stopped.Load())
		}
	}
	// A helper that parked is left alone.
	spin.Store(0)
	Run(2, nil, func(int, int) {})
	deadline := time.Now().Add(5 * time.Second)
	for g := first.Load(); !g.parked.Load() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if !first.Load().parked.Load() {
		t.Log("the helper did not park within 5s; the parked case was not checked")
		return
	}
	if Background(&stopJob{}) {
		t.Error("a parked helper was offered a job")
	}
}

// TestExpect checks that Expect wakes a parked helper, keeps it polling
// while it is called more often than spin, and lets it park again after.
func TestExpect(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs a helper: GOMAXPROCS 1")
	}
	defer spin.Store(spin.Load())
	waitParked := func(want bool, what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for first.Load().parked.Load() != want && time.Now().Before(deadline) {
			time.Sleep(100 * time.Microsecond)
		}
		if first.Load().parked.Load() != want {
			t.Fatalf("%s: the helper's parked flag stayed %v for 5s", what, !want)
		}
	}
	spin.Store(int64(time.Millisecond))
	Run(2, nil, func(int, int) {})
	waitParked(true, "after a call and spin")
	// A helper keeps polling while Expect comes more often than spin.
	spin.Store(int64(50 * time.Millisecond))
	Expect()
	waitParked(false, "after Expect")
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		Expect()
		time.Sleep(time.Millisecond)
		if first.Load().parked.Load() {
			t.Fatal("the helper parked while Expect was called every millisecond (spin 50ms)")
		}
	}
	// Without Expect it parks again.
	waitParked(true, "after Expect stopped")
}
