package cpu

import (
	"testing"

	"github.com/gotpu/gotpu/op"
)

// noKernel lists the primitives the CPU backend deliberately has no kernel
// for, with the reason. There are none: the CPU backend is the reference
// backend and runs every primitive.
var noKernel = map[*op.Def]string{}

// TestEveryPrimitiveHasAKernel checks that every primitive (every op that
// is not a view or a decomposition) has a CPU kernel unless it is listed
// in noKernel, and that the list names only primitives without one.
func TestEveryPrimitiveHasAKernel(t *testing.T) {
	kmu.RLock()
	defer kmu.RUnlock()
	for _, d := range op.All() {
		if d.Kind != op.Primitive {
			continue
		}
		_, has := kernels[d]
		if why, listed := noKernel[d]; listed {
			if has {
				t.Errorf("%s has a kernel but is listed in noKernel (%s)", d.Name, why)
			}
			continue
		}
		if !has {
			t.Errorf("primitive %s has no cpu kernel", d.Name)
		}
	}
	for d := range noKernel {
		if d.Kind != op.Primitive {
			t.Errorf("noKernel lists %s, a %s", d.Name, d.Kind)
		}
	}
	for d := range kernels {
		if r, ok := op.Lookup(d.Name); !ok || r != d {
			t.Errorf("kernel for %s, which is not the table's op", d.Name)
		}
	}
}
