package cpu

import (
	"math/rand"
	"sync"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

var levelDevices sync.Mutex

// levelDevice returns a device whose kernels are level's: a CPU backend of
// its own registered as "cpulevel-<level>" on first use, so that tests
// run a level through the tensor API beside the process's without
// changing anything the process's device runs.
func levelDevice(level string) device.Device {
	levelBackend(level)
	return tensor.MustDevice("cpulevel-" + level)
}

// levelBackend returns levelDevice's backend (compiled programs made on it
// run level's kernels).
func levelBackend(level string) *Backend {
	name := "cpulevel-" + level
	levelDevices.Lock()
	defer levelDevices.Unlock()
	be, err := device.Lookup(name)
	if err != nil {
		be = newBackendAt(name, ksetFor(level))
		device.Register(be)
	}
	return be.(*Backend)
}

// TestKernelTables checks the level tables: one per level, made once, each
// with its level's rank, and the process's table among them; and that a
// call runs its own table's kernels: a decode-shaped attention (one query
// row) takes the row path, which needs avx2, on each level device of
// avx2 and above and never on the generic one, whatever the process's
// level. It logs the levels this CPU cannot run (logUnsupported), which
// every level-parametric test of this package leaves out.
func TestKernelTables(t *testing.T) {
	logUnsupported(t)
	for i, l := range allLevels {
		ks := ksetFor(l)
		if ks != ksetFor(l) || ks.level != l || ks.rank != i || !ks.atLeast(l) || (i > 0 && !ks.atLeast(allLevels[i-1])) {
			t.Fatalf("table of %s: %+v", l, ks)
		}
		if i+1 < len(allLevels) && ks.atLeast(allLevels[i+1]) {
			t.Errorf("table of %s includes %s", l, allLevels[i+1])
		}
	}
	if ksetFor("bogus") != ksetFor(LevelGeneric) {
		t.Error("an unknown level does not give the generic table")
	}
	if procKS != ksetFor(CPULevel()) {
		t.Errorf("the process's table is not its level's (%s)", CPULevel())
	}
	if got := (&Call{}).kernels(); got != procKS {
		t.Error("a call without a table does not run the process's")
	}
	r := rand.New(rand.NewSource(5))
	in := []*tensor.Tensor{sdpaRand(r, 1, 2, 1, 64), sdpaRand(r, 1, 2, 40, 64), sdpaRand(r, 1, 2, 40, 64), nil}
	for _, l := range levels() {
		before := sdpaRowRuns.Load()
		sdpaDirect(t, ksetFor(l), in, op.Attrs{})
		if rows, want := sdpaRowRuns.Load()-before, gemvAsmF32 != nil && l != LevelGeneric; (rows > 0) != want {
			t.Errorf("level %s (process %s): the row path ran %d times, want it to run: %v", l, CPULevel(), rows, want)
		}
	}
}
