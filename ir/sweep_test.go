package ir

import (
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// TestLowerSweep traces every composite op that accepts [3,4] inputs of a
// given dtype with default attributes and checks that its decomposition
// traces, lowers to primitives and views only, verifies, and equals a trace
// made with Decompose(true).
func TestLowerSweep(t *testing.T) {
	composites := 0
	for _, d := range op.All() {
		if d.Kind == op.Composite {
			composites++
		}
	}
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16, dtype.I32, dtype.Bool} {
		tried := 0
		for _, d := range op.All() {
			if d.Kind != op.Composite {
				continue
			}
			params := make([]op.Meta, len(d.Inputs)) // one entry for a variadic list
			for i := range params {
				params[i] = meta(dt, 3, 4)
			}
			fn := func(b op.Builder, p []op.Value) []op.Value { return b.Call(d.Name, p, nil) }
			g, err := Trace(params, fn)
			if err != nil {
				continue // needs attributes, other shapes or dtypes
			}
			tried++
			l, err := Lower(g)
			if err != nil {
				t.Errorf("%s(%s): Lower: %v", d.Name, dt, err)
				continue
			}
			if err := l.Verify(); err != nil {
				t.Errorf("%s(%s): lowered graph: %v", d.Name, dt, err)
				continue
			}
			for _, nd := range l.Nodes {
				if !nd.IsConst() && nd.Op.Kind == op.Composite {
					t.Errorf("%s(%s): composite %s left after Lower", d.Name, dt, nd.Op.Name)
				}
			}
			dg, err := Trace(params, fn, Decompose(true))
			if err != nil {
				t.Errorf("%s(%s): Decompose(true) trace: %v", d.Name, dt, err)
			} else if dg.Fingerprint() != l.Fingerprint() {
				t.Errorf("%s(%s): Decompose(true) trace differs from Lower", d.Name, dt)
			}
		}
		t.Logf("%s: lowered %d of %d composite ops (the others need attributes or other inputs)", dt, tried, composites)
		if dt == dtype.F32 && tried < 20 {
			t.Errorf("only %d composites traced; the sweep is not exercising the table", tried)
		}
	}
}
