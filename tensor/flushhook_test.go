package tensor_test

import (
	"sync/atomic"
	"testing"

	"github.com/gotpu/gotpu/tensor"
)

// TestFlushHooksIndependent: flush hooks have one owner each; removing one
// (twice, or out of order) leaves the others installed.
func TestFlushHooksIndependent(t *testing.T) {
	inMode(t, tensor.Fused)
	dev := tensor.MustDevice("cpu")
	var a, b atomic.Int32
	removeA := tensor.AddFlushHook(func(tensor.FlushStats) { a.Add(1) })
	removeB := tensor.AddFlushHook(func(tensor.FlushStats) { b.Add(1) })
	t.Cleanup(removeB)
	flush := func() { randT(dev, 1, 4, 4).Exp().Sum(nil, false).Item() }

	steps := []struct {
		name   string
		before func()
		da, db int32 // how many more calls each hook gets
	}{
		{"both", func() {}, 1, 1},
		{"A removed", removeA, 0, 1},
		{"A removed again", removeA, 0, 1},
	}
	for _, s := range steps {
		s.before()
		a0, b0 := a.Load(), b.Load()
		flush()
		if got := a.Load() - a0; (got > 0) != (s.da > 0) {
			t.Errorf("%s: hook A called %d times", s.name, got)
		}
		if got := b.Load() - b0; (got > 0) != (s.db > 0) {
			t.Errorf("%s: hook B called %d times", s.name, got)
		}
	}
}
