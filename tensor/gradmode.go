package tensor

import (
	"sync"
	"sync/atomic"
)

// Grad mode is per goroutine, as PyTorch's is per thread: NoGrad(f) disables
// graph recording for the ops f runs on the calling goroutine only, never for
// other goroutines' work. Goroutines started inside f do not inherit it
// (like threads started inside torch.no_grad()).
//
// Go has no goroutine-local storage; the mode is kept in a map keyed by
// goroutine id, consulted only while at least one region is active, so ops
// pay nothing when no region exists anywhere in the process.

var (
	gradRegions atomic.Int64 // active NoGrad/EnableGrad regions process-wide
	gradModes   sync.Map     // goroutine id -> *[]bool (stack of enabled flags)
)

func withGradMode(enabled bool, f func()) {
	id := goid()
	v, _ := gradModes.LoadOrStore(id, new([]bool))
	stack := v.(*[]bool)
	*stack = append(*stack, enabled)
	gradRegions.Add(1)
	defer func() {
		*stack = (*stack)[:len(*stack)-1]
		if len(*stack) == 0 {
			gradModes.Delete(id)
		}
		gradRegions.Add(-1)
	}()
	f()
}

// NoGrad runs f with autograd recording disabled on the calling goroutine
// (torch.no_grad). Other goroutines are unaffected.
func NoGrad(f func()) { withGradMode(false, f) }

// EnableGrad runs f with recording enabled on the calling goroutine, also
// inside a NoGrad region (torch.enable_grad).
func EnableGrad(f func()) { withGradMode(true, f) }

// GradEnabled reports whether ops on the calling goroutine record autograd
// history.
func GradEnabled() bool {
	if gradRegions.Load() == 0 {
		return true
	}
	v, ok := gradModes.Load(goid())
	if !ok {
		return true
	}
	s := *v.(*[]bool)
	if len(s) == 0 {
		return true
	}
	return s[len(s)-1]
}
