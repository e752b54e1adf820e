package cpu

import (
	"runtime"
	"testing"
	"time"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// TestLaunchExpectsWork: eager launches wake the pool's parked helpers
// (pool.Expect), so that a product after a run of small kernels finds them
// polling; every eighth launch does, so eight launches always do.
func TestLaunchExpectsWork(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs a helper: GOMAXPROCS 1")
	}
	be := testBackend(t)
	buf := func() device.Operand {
		return device.Operand{Buf: &Buf{b: make([]byte, 16)}, DType: dtype.F32, Layout: op.Contiguous([]int{4})}
	}
	l := &device.Launch{Op: op.MustLookup("add"), Attrs: op.Attrs{}, In: []device.Operand{buf(), buf()}, Out: []device.Operand{buf()}}
	checked := 0
	for round := 0; round < 5 && checked == 0; round++ {
		// Wait for the helpers to park (other tests' products may keep
		// them busy for a while).
		deadline := time.Now().Add(5 * time.Second)
		for !pool.Parked() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if !pool.Parked() {
			continue
		}
		w := pool.ExpectWakes()
		for range 8 {
			if err := be.Launch(0, l); err != nil {
				t.Fatal(err)
			}
		}
		if pool.ExpectWakes() == w {
			if pool.Parked() {
				t.Fatal("eight launches left the parked helpers parked")
			}
			continue // something else woke them first
		}
		checked++
	}
	if checked == 0 {
		t.Skip("the helpers never stayed parked long enough to check")
	}
}
