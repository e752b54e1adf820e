//go:build pjrt

package compile_test

import (
	"math"
	"os"
	"testing"

	"github.com/gotpu/gotpu/backend/pjrt"
	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/optim"
	"github.com/gotpu/gotpu/tensor"
)

// TestXLATrainingReplays: a compiled training loop (forward, Backward, the
// optimizer step and a learning-rate schedule, compile.TraceOnce) on XLA's
// CPU plugin traces as often as on cpu and replays the other steps, with
// one XLA executable for all of them (the optimizer's lr and step count are
// program inputs, not constants), and its parameters after the loop equal
// the cpu compiled loop's. Before the optimizer steps had a functional
// lowering on xla, every step traced a new program (issue #18 §6).
func TestXLATrainingReplays(t *testing.T) {
	if err := pjrt.Open("xla"); err != nil {
		if os.Getenv("GOTPU_PJRT_REQUIRE") == "1" {
			t.Fatal(err)
		}
		t.Skipf("no XLA CPU plugin: %v", err)
	}
	xla := tensor.MustDevice("xla")
	be, err := device.Lookup("xla")
	if err != nil {
		t.Fatal(err)
	}
	pb := be.(*pjrt.Backend)
	const steps = 10
	for _, optName := range []string{"adamw", "adam", "sgd"} {
		t.Run(optName, func(t *testing.T) {
			run := func(dev device.Device) (*mlp, compile.Stats, int) {
				tensor.ManualSeed(7)
				ref := newMLP(cpu, 20, 32, 5)
				m := ref
				if dev != cpu {
					m = newMLP(dev, 20, 32, 5)
					src := nn.Parameters(ref)
					tensor.NoGrad(func() {
						for i, p := range nn.Parameters(m) {
							p.CopyFrom(src[i].To(dev))
						}
					})
				}
				params := nn.Parameters(m)
				var opt optim.Optimizer
				switch optName {
				case "sgd":
					opt = optim.NewSGD([]*optim.Group{{Params: params, Options: map[string]float64{"momentum": 0.9, "weight_decay": 1e-3}}}, 0.05)
				case "adam":
					opt = optim.NewAdam(optim.Params(params), 1e-2)
				default:
					opt = optim.NewAdamW(optim.Params(params), 1e-2)
				}
				s := setup{model: m, opt: opt, sched: optim.NewCosineAnnealingLR(opt, steps, 0)}
				fn := compile.Fn(s.step, compile.TraceOnce(), compile.Name("xla-train-"+optName+"-"+dev.Type))
				var xlaCompiles int
				for i := range steps {
					x, y := batch(i)
					if _, err := fn.Call(x.To(dev), y.To(dev)); err != nil {
						t.Fatal(err)
					}
					s.sched.Step()
					if i == steps/2 {
						xlaCompiles = pb.ProgramCompiles()
					}
				}
				return m, fn.Stats(), pb.ProgramCompiles() - xlaCompiles
			}
			cm, cst, _ := run(cpu)
			xm, xst, late := run(xla)
			t.Logf("cpu: %d traces, %d replays; xla: %d traces, %d replays", cst.Traces, cst.Replays, xst.Traces, xst.Replays)
			if xst.Calls != steps || xst.Traces > cst.Traces || xst.Replays < steps-cst.Traces || xst.Replays < steps-3 {
				t.Fatalf("xla stats %+v, cpu %+v: want xla to trace no more than cpu and replay the rest", xst, cst)
			}
			if late != 0 {
				t.Errorf("xla compiled %d programs in the last %d steps, want 0 (the optimizer's scalars must be program inputs)", late, steps-steps/2-1)
			}
			wp, gp := nn.Parameters(cm), nn.Parameters(xm)
			for i := range wp {
				a, b := wp[i].Float32s(), gp[i].Float32s()
				for k := range a {
					if d := math.Abs(float64(a[k] - b[k])); d > 1e-4*math.Max(1, math.Abs(float64(a[k]))) || d != d {
						t.Fatalf("parameter %d[%d] after %d steps: xla %v, cpu %v", i, k, steps, b[k], a[k])
					}
				}
			}
		})
	}
}
