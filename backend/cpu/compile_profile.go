package cpu

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The step timer of compiled programs: with ProfileSteps(true), every run
// of a compiled CPU program adds each step's wall time (on the running
// goroutine, parallel work included) to a table keyed by what the step
// is — the op, its output dtype and shape, or the kind of fused step — so
// that a decode step's time can be split into its products, attention
// and small ops (`gotpu bench model --step-profile`). Off, it costs one
// atomic load per run.

// StepTime is the time compiled programs spent in one kind of step.
type StepTime struct {
	// Step names the step: "dot_general bf16[1 1 576]" for a kernel,
	// "sibling dot_general x3 bf16[1 1 576]" for a run of sibling
	// products (named by the first one's output), "fused f32[...]",
	// "rope bf16[...]", "copy f32[...]".
	Step  string
	Calls int64
	Total time.Duration
}

var (
	stepProfOn atomic.Bool
	stepProfMu sync.Mutex
	stepProf   map[string]*StepTime
	stepLabels sync.Map // *pstep (a step, or a run's first) -> string; cleared by ProfileSteps
)

// ProfileSteps clears the step timer's table and turns it on or off.
func ProfileSteps(on bool) {
	stepProfMu.Lock()
	stepProf = map[string]*StepTime{}
	stepProfMu.Unlock()
	stepLabels.Clear()
	stepProfOn.Store(on)
}

// StepTimes returns the step timer's table, largest total first.
func StepTimes() []StepTime {
	stepProfMu.Lock()
	defer stepProfMu.Unlock()
	out := make([]StepTime, 0, len(stepProf))
	for _, t := range stepProf {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b StepTime) int {
		if a.Total != b.Total {
			return cmp.Compare(b.Total, a.Total)
		}
		return strings.Compare(a.Step, b.Step)
	})
	return out
}

// addStepTime adds the time since t0 to the entry of steps ss (one step,
// or a run of sibling products) of plan p.
func addStepTime(p *plan, ss []pstep, t0 time.Time) {
	d := time.Since(t0)
	key := any(&ss[0])
	label, ok := stepLabels.Load(key)
	if !ok || (len(ss) > 1) != strings.HasPrefix(label.(string), "sibling ") {
		label = stepLabel(p, ss)
		stepLabels.Store(key, label)
	}
	l := label.(string)
	stepProfMu.Lock()
	t := stepProf[l]
	if t == nil {
		t = &StepTime{Step: l}
		stepProf[l] = t
	}
	t.Calls++
	t.Total += d
	stepProfMu.Unlock()
}

// stepLabel names steps ss for the table.
func stepLabel(p *plan, ss []pstep) string {
	s := &ss[0]
	out := func() string {
		if len(s.out) == 0 {
			return ""
		}
		v := p.vals[s.out[0]]
		return fmt.Sprintf(" %s%v", v.dt, v.layout.Shape)
	}
	switch s.kind {
	case stKernel:
		name := p.g.Nodes[s.node].Op.Name
		if len(ss) > 1 {
			return fmt.Sprintf("sibling %s x%d%s", name, len(ss), out())
		}
		return name + out()
	case stFused:
		return "fused" + out()
	case stRope:
		return "rope" + out()
	case stNormBF16:
		return "rms_norm (bf16 chain)" + out()
	case stGLUBF16:
		return "act*up (bf16 chain)" + out()
	case stCopy:
		return "copy" + out()
	case stConst:
		return "constant" + out()
	}
	return fmt.Sprintf("step kind %d", s.kind)
}
