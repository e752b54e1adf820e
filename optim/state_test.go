package optim

import (
	"errors"
	"slices"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// noFused is the cpu backend under another name without the optimizer
// kernels: a device that lacks them, registered through the public API.
type noFused struct{ device.Backend }

func (noFused) Name() string { return "nofused" }

func (b noFused) Supports(o *op.Def, dt dtype.DType) bool {
	if o.Name == "adam_step" || o.Name == "sgd_step" {
		return false
	}
	return b.Backend.Supports(o, dt)
}

func init() {
	cpu, err := device.Lookup("cpu")
	if err != nil {
		panic(err)
	}
	device.Register(noFused{cpu})
}

func TestStateDictIsASnapshot(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			withFallback(path.fallback, func() {
				p := tensor.FromSlice(cpu, []float32{1, 2, 3}).SetRequiresGrad(true)
				o := NewAdam(Params([]*tensor.Tensor{p}), 0.1)
				p.SetGrad(tensor.FromSlice(cpu, []float32{1, -1, 0.5}))
				o.Step()
				st, _ := o.StateDict()
				saved := st["0.exp_avg"].Float64s()
				o.Step()
				if got := st["0.exp_avg"].Float64s(); !slices.Equal(got, saved) {
					t.Fatalf("StateDict tensor changed by a later step: %v -> %v", saved, got)
				}
				if now := o.state[0]["exp_avg"].Float64s(); slices.Equal(now, saved) {
					t.Fatalf("state did not move: %v", now)
				}
			})
		})
	}
}

func TestLoadStateDictChecksAndConverts(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	p := tensor.FromSlice(cpu, []float32{1, 2, 3}).SetRequiresGrad(true)
	o := NewSGD([]*Group{{Params: []*tensor.Tensor{p}, Options: map[string]float64{"momentum": 0.9}}}, 0.1)
	meta := `{"param_groups":[{"lr":0.1,"momentum":0.9,"dampening":0,"weight_decay":0,"nesterov":0}],"group_sizes":[1],"steps":[1]}`

	bad := map[string]*tensor.Tensor{"0.momentum_buffer": tensor.FromSlice(cpu, []float32{1, 2})}
	if err := o.LoadStateDict(bad, meta); !errors.Is(err, ErrBadState) {
		t.Fatalf("wrong-shape state: err = %v, want ErrBadState", err)
	}
	if err := o.LoadStateDict(map[string]*tensor.Tensor{}, `{"param_groups":[{}],"group_sizes":[],"steps":[1]}`); err == nil {
		t.Fatal("meta without group sizes accepted")
	}

	// f64 state for f32 parameters is converted (torch.optim does the same),
	// and it is a private copy: changing the loaded tensor changes nothing.
	src := tensor.FromSlice(cpu, []float64{0.5, -0.5, 1})
	if err := o.LoadStateDict(map[string]*tensor.Tensor{"0.momentum_buffer": src}, meta); err != nil {
		t.Fatal(err)
	}
	buf := o.state[0]["momentum_buffer"]
	if buf.DType() != dtype.F32 || buf.SharesStorage(src) {
		t.Fatalf("loaded buffer is %s, shares storage %v", buf.DType(), buf.SharesStorage(src))
	}
	p.SetGrad(tensor.FromSlice(cpu, []float32{1, 1, 1}))
	o.Step()
	if got := src.Float64s(); !slices.Equal(got, []float64{0.5, -0.5, 1}) {
		t.Fatalf("the caller's tensor changed: %v", got)
	}
	// buf = 0.9*buf + g; p -= 0.1*buf.
	want := []float32{1 - 0.1*float32(0.9*0.5+1), 2 - 0.1*float32(0.9*-0.5+1), 3 - 0.1*float32(0.9*1+1)}
	got := p.Float64s()
	for i := range want {
		if d := got[i] - float64(want[i]); d > 1e-6 || d < -1e-6 {
			t.Fatalf("param after resumed step: %v, want %v", got, want)
		}
	}
}
