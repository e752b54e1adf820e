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
