//go:build pjrt

package compile_test

import (
	"testing"

	"github.com/gotpu/gotpu/backend/pjrt"
	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/optim"
	"github.com/gotpu/gotpu/tensor"
	"github.com/gotpu/gotpu/train"
)

// TestXLAWarmStart measures, on XLA's CPU plugin, the MNIST MLP training
// step's program: a cold compile against loading its serialized executable
// (what the compile cache's disk and remote tiers give a new process).
// Run: tools/pjrt/fetch.sh; go test -tags pjrt ./compile -run XLAWarmStart -v
func TestXLAWarmStart(t *testing.T) {
	if err := pjrt.Open("xla"); err != nil {
		t.Skipf("no XLA CPU plugin: %v", err)
	}
	dev := tensor.MustDevice("xla")
	tensor.ManualSeed(1)
	m := train.NewMLP(dev)
	opt := optim.NewSGD([]*optim.Group{{Params: nn.Parameters(m), Options: map[string]float64{"momentum": 0.9}}}, 0.01)
	step := func(in ...*tensor.Tensor) []*tensor.Tensor {
		opt.ZeroGrad()
		loss := tensor.CrossEntropy(m.Forward(in[0]), in[1], tensor.CrossEntropyOpts{})
		loss.Backward()
		opt.Step()
		return []*tensor.Tensor{loss}
	}
	_, xc, yc := newMNISTStep()
	x, y := xc.To(dev), yc.To(dev)
	fn := compile.Fn(step)
	for range 3 { // the optimizer's state appears on the first step
		if _, err := fn.Call(x, y); err != nil {
			t.Fatal(err)
		}
	}
	g, err := fn.Graph(x, y)
	if err != nil {
		t.Fatal(err)
	}
	be, _ := device.Lookup("xla")
	cold, warm, err := compile.Measure(t.Context(), tensor.ProgramRequest{Device: dev, Backend: be, Graph: g})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("MNIST step on xla (%d nodes): cold compile %v, load of the serialized program %v: warm start %.1fx", len(g.Nodes), cold, warm, float64(cold)/float64(warm))
}
