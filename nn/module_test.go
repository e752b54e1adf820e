package nn

import (
	"errors"
	"slices"
	"strings"
	"testing"

	_ "github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/tensor"
)

type leaf struct {
	Base
	W, B *tensor.Tensor
}

func newLeaf(n int) *leaf {
	cpu := tensor.MustDevice("cpu")
	l := &leaf{}
	l.W = l.RegisterParameter("weight", tensor.FromSlice(cpu, make([]float32, n)))
	l.B = l.RegisterParameter("bias", tensor.FromSlice(cpu, make([]float32, 1)))
	l.RegisterBuffer("running", tensor.FromSlice(cpu, make([]float32, 1)), true)
	l.RegisterBuffer("scratch", tensor.FromSlice(cpu, make([]float32, 1)), false)
	return l
}

type tree struct {
	Base
	A, B *leaf
}

func TestNamesFollowPyTorch(t *testing.T) {
	m := &tree{A: newLeaf(2), B: newLeaf(3)}
	m.RegisterModule("a", m.A)
	m.RegisterModule("b", m.B)
	var names []string
	for _, p := range NamedParameters(m) {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"a.weight", "a.bias", "b.weight", "b.bias"}) {
		t.Fatalf("named parameters %v", names)
	}
	names = nil
	for _, p := range StateDict(m) {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"a.weight", "a.bias", "a.running", "b.weight", "b.bias", "b.running"}) {
		t.Fatalf("state dict %v", names)
	}
	SetTraining(m, false)
	if m.A.Training() || m.Training() {
		t.Fatal("eval did not propagate")
	}
}

func TestLoadStateDict(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	m := newLeaf(2)
	sd := map[string]*tensor.Tensor{
		"weight":  tensor.FromSlice(cpu, []float64{1, 2}),
		"bias":    tensor.FromSlice(cpu, []float32{3}),
		"running": tensor.FromSlice(cpu, []float32{4}),
	}
	if err := LoadStateDict(m, sd, true); err != nil {
		t.Fatal(err)
	}
	if got := m.W.Float64s(); got[0] != 1 || got[1] != 2 || m.W.DType().String() != "f32" {
		t.Fatalf("weight %v %v", got, m.W.DType())
	}
	delete(sd, "bias")
	sd["extra"] = sd["running"]
	err := LoadStateDict(m, sd, true)
	if !errors.Is(err, ErrStateDict) || !strings.Contains(err.Error(), "bias") || !strings.Contains(err.Error(), "extra") {
		t.Fatalf("strict: %v", err)
	}
	if err := LoadStateDict(m, sd, false); err != nil {
		t.Fatalf("non-strict: %v", err)
	}
	sd["weight"] = tensor.FromSlice(cpu, []float32{1, 2, 3})
	if err := LoadStateDict(m, sd, false); err == nil || !strings.Contains(err.Error(), "weight") {
		t.Fatalf("shape mismatch: %v", err)
	}
}
