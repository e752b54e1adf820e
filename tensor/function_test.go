package tensor_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/tensor"
)

// TestFunction: a Function's backward gives the inputs' gradients —
// through an identity forward, with an output nothing uses (a zero
// gradient reaches backward), an input backward leaves without a
// gradient, and a non-float output — and no node is recorded when no
// input requires grad; a backward returning the wrong number of
// gradients is an error Backward's caller sees.
func TestFunction(t *testing.T) {
	x := tensor.FromSlice(laDev, []float32{1, -2, 3}, 3).SetRequiresGrad(true)
	k := tensor.FromSlice(laDev, []float32{5, 6, 7}, 3).SetRequiresGrad(true)
	var seen []string
	out := tensor.Function("double_grad", []*tensor.Tensor{x, k}, func() []*tensor.Tensor {
		return []*tensor.Tensor{x, x.Mul(k), x.GtScalar(0)}
	}, func(g []*tensor.Tensor) []*tensor.Tensor {
		for _, gi := range g[:2] {
			seen = append(seen, fmt.Sprint(gi.Float32s()))
		}
		if g[2] != nil {
			t.Errorf("the bool output got a gradient")
		}
		// d/dx: 2·g0 (a made-up rule, to see it used) + g1·k; k gets none.
		return []*tensor.Tensor{g[0].MulScalar(2).Add(g[1].Mul(k)), nil}
	})
	if out[0] == x {
		t.Fatal("an identity forward returned the input object itself")
	}
	if n := out[0].GradFn(); n != "double_grad" {
		t.Fatalf("node %q", n)
	}
	out[0].Mul(out[0]).Sum(nil, false).Backward() // g0 = 2x, g1 unused (zeros)
	if got, want := fmt.Sprint(x.Grad().Float32s()), "[4 -8 12]"; got != want {
		t.Errorf("x.grad %s, want %s", got, want)
	}
	if k.Grad() != nil {
		t.Errorf("k got a gradient %v", k.Grad().Float32s())
	}
	if got := strings.Join(seen[:2], " "); got != "[2 -4 6] [0 0 0]" {
		t.Errorf("backward saw %v", seen)
	}

	plain := tensor.FromSlice(laDev, []float32{1}, 1)
	r := tensor.Function("none", []*tensor.Tensor{plain}, func() []*tensor.Tensor { return []*tensor.Tensor{plain.MulScalar(2)} },
		func(g []*tensor.Tensor) []*tensor.Tensor { panic("called") })
	if r[0].GradFn() != "" || r[0].RequiresGrad() {
		t.Errorf("recorded a node for inputs without grad")
	}

	y := tensor.FromSlice(laDev, []float32{1, 2}, 2).SetRequiresGrad(true)
	bad := tensor.Function("bad", []*tensor.Tensor{y}, func() []*tensor.Tensor { return []*tensor.Tensor{y.MulScalar(3)} },
		func(g []*tensor.Tensor) []*tensor.Tensor { return nil })
	err := tensor.Catch(func() { bad[0].Sum(nil, false).Backward() })
	if err == nil || !strings.Contains(err.Error(), "returned 0 gradients for 1 inputs") {
		t.Errorf("wrong gradient count: %v", err)
	}
}
