package cpu

import (
	"slices"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// TestStepProfile: with the step timer on, runs of a compiled program add
// one call per run to each of its steps' entries (a run of sibling
// products as one entry, named as such); off, nothing is added.
func TestStepProfile(t *testing.T) {
	be := testBackend(t)
	xwt := op.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{1}}
	params := []op.Meta{{Shape: []int{1, 64}, DType: dtype.BF16}, {Shape: []int{40, 64}, DType: dtype.BF16}, {Shape: []int{40, 64}, DType: dtype.BF16}}
	g, err := ir.Trace(params, func(b op.Builder, p []op.Value) []op.Value {
		y0 := op.Call1(b, "dot_general", xwt, p[0], p[1])
		y1 := op.Call1(b, "dot_general", xwt, p[0], p[2])
		return []op.Value{op.Call1(b, "neg", nil, op.Call1(b, "mul", nil, y0, y1))}
	})
	if err != nil {
		t.Fatal(err)
	}
	ins := inputsFor(params, 3, 0)
	ip, p := interpAndCompiled(t, be, g)
	want := runProg(t, be, ip, g, ins, device.RunOptions{})
	defer ProfileSteps(false)
	ProfileSteps(true)
	const runs = 3
	for range runs {
		got := runProg(t, be, p, g, ins, device.RunOptions{})
		if !slices.Equal(got[0], want[0]) {
			t.Fatal("the timed run's output differs")
		}
	}
	times := StepTimes()
	calls := map[string]int64{}
	for _, st := range times {
		calls[st.Step] = st.Calls
		if st.Total <= 0 {
			t.Errorf("%s: total %v", st.Step, st.Total)
		}
	}
	sib := "sibling dot_general x2 bf16[1 40]"
	if calls[sib] != runs {
		t.Errorf("%q: %d calls, want %d; table %+v", sib, calls[sib], runs, times)
	}
	if len(times) == 0 {
		t.Fatal("no steps timed")
	}
	ProfileSteps(false)
	runProg(t, be, p, g, ins, device.RunOptions{})
	if n := len(StepTimes()); n != 0 {
		t.Errorf("%d entries with the timer off", n)
	}
}
