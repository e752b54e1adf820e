package cpu

import (
	"bytes"
	"os"
	"runtime"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// TestCompilePrefetch: in a compiled program with a step between two
// products, the step offers the second product's weights (and nothing
// else) to the pool helper for prefetching, and the outputs keep the bits
// of the op-by-op run.
func TestCompilePrefetch(t *testing.T) {
	if !prefetchOn || runtime.GOMAXPROCS(0) < 2 {
		t.Skipf("weight prefetch is off here (GOTPU_PREFETCH=%q, GOMAXPROCS %d)", os.Getenv("GOTPU_PREFETCH"), runtime.GOMAXPROCS(0))
	}
	be := testBackend(t)
	const k, n1, n2 = 256, 512, 384
	xwt := op.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{1}}
	params := []op.Meta{fm(1, k), fm(n1, k), fm(n2, k)}
	g, err := ir.Trace(params, func(b op.Builder, p []op.Value) []op.Value {
		y1 := op.Call1(b, "dot_general", xwt, p[0], p[1])
		x2 := op.Call1(b, "add", nil, p[0], p[0])
		y2 := op.Call1(b, "dot_general", xwt, x2, p[2])
		return []op.Value{y1, y2}
	})
	if err != nil {
		t.Fatal(err)
	}
	ins := inputsFor(params, 5, 0)
	ip, prog := interpAndCompiled(t, be, g)
	want := runProg(t, be, ip, g, ins, device.RunOptions{})
	before := prefetchOffered.Load()
	got := runProg(t, be, prog, g, ins, device.RunOptions{})
	if off := prefetchOffered.Load() - before; off != n2*k*4 {
		t.Errorf("offered %d bytes for prefetching, want the second weight's %d", off, n2*k*4)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("output %d differs from the op-by-op run", i)
		}
	}
}
