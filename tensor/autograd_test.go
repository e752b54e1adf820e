package tensor_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

func apply1(name string, a op.Attrs, in ...*tensor.Tensor) *tensor.Tensor {
	return tensor.Apply1(name, in, a)
}

func TestBackwardThroughViews(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	x := tensor.FromSlice(cpu, []float64{1, 2, 3, 4, 5, 6}, 2, 3).SetRequiresGrad(true)
	// y = x.T[1:, :] reshaped, then summed through Grad with a cotangent.
	xt := apply1("permute", op.Attrs{"dims": []int{1, 0}}, x)
	s := apply1("slice", op.Attrs{"dim": 0, "start": 1}, xt)
	y := apply1("reshape", op.Attrs{"shape": []int{4}}, s)
	ct := tensor.FromSlice(cpu, []float64{10, 20, 30, 40})
	g := tensor.Grad([]*tensor.Tensor{y}, []*tensor.Tensor{ct}, []*tensor.Tensor{x}, false)[0]
	want := []float64{0, 10, 30, 0, 20, 40}
	got := g.Float64s()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("grad = %v, want %v", got, want)
		}
	}
	if y.GradFn() != "reshape" || !x.IsLeaf() || y.IsLeaf() {
		t.Fatalf("graph metadata: gradfn %q", y.GradFn())
	}
}

func TestBackwardAccumulatesAndRetainGraph(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	x := tensor.FromSlice(cpu, []float32{1, 2}).SetRequiresGrad(true)
	y := apply1("expand", op.Attrs{"shape": []int{3, 2}}, x)
	ct := tensor.FromSlice(cpu, []float32{1, 1, 1, 1, 1, 1}, 3, 2)
	y.BackwardWith(tensor.BackwardOpts{Gradient: ct, RetainGraph: true})
	y.BackwardWith(tensor.BackwardOpts{Gradient: ct})
	if got := x.Grad().Float64s(); got[0] != 6 || got[1] != 6 {
		t.Fatalf("accumulated grad = %v, want [6 6]", got)
	}
	err := tensor.Catch(func() { y.BackwardWith(tensor.BackwardOpts{Gradient: ct}) })
	if err == nil || !strings.Contains(err.Error(), "second time") {
		t.Fatalf("third backward without retain: %v", err)
	}
}

func TestVersionCounterCheck(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	x := tensor.FromSlice(cpu, []float32{1, 2, 3}).SetRequiresGrad(true)
	y := apply1("convert", op.Attrs{"dtype": dtype.F64}, x)
	z := apply1("mul", nil, y, y) // saves y, and its VJP reads it
	// Modify y in place after mul saved it.
	tensor.NoGrad(func() {
		tensor.Apply("copy_", []*tensor.Tensor{y, tensor.FromSlice(cpu, []float64{0, 0, 0})}, nil)
	})
	ct := tensor.FromSlice(cpu, []float64{1, 1, 1})
	err := tensor.Catch(func() { z.BackwardWith(tensor.BackwardOpts{Gradient: ct}) })
	if err == nil || !strings.Contains(err.Error(), "modified by an inplace operation") || !strings.Contains(err.Error(), "of mul") {
		t.Fatalf("version check: %v", err)
	}
}

func TestNoGradIsPerGoroutine(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	x := tensor.FromSlice(cpu, []float32{1}).SetRequiresGrad(true)
	inside := make(chan struct{})
	release := make(chan struct{})
	var other *tensor.Tensor
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-inside // another goroutine is inside NoGrad right now
		other = apply1("copy", nil, x)
		close(release)
	}()
	var mine *tensor.Tensor
	tensor.NoGrad(func() {
		close(inside)
		<-release
		mine = apply1("copy", nil, x)
		if tensor.GradEnabled() {
			t.Error("GradEnabled inside NoGrad")
		}
		tensor.EnableGrad(func() {
			if !tensor.GradEnabled() {
				t.Error("EnableGrad inside NoGrad")
			}
		})
	})
	wg.Wait()
	if mine.RequiresGrad() {
		t.Error("op inside NoGrad recorded history")
	}
	if !other.RequiresGrad() {
		t.Error("NoGrad leaked into another goroutine")
	}
	if !tensor.GradEnabled() {
		t.Error("grad mode not restored")
	}
}

func TestHooksAndRetainGrad(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	x := tensor.FromSlice(cpu, []float64{1, 2}).SetRequiresGrad(true)
	y := apply1("copy", nil, x).RetainGrad()
	calls := 0
	y.RegisterHook(func(g *tensor.Tensor) *tensor.Tensor {
		calls++
		return apply1("convert", op.Attrs{"dtype": dtype.F64}, apply1("expand", op.Attrs{"shape": []int{2}}, tensor.FromSlice(cpu, []float64{7}, []int{}...)))
	})
	y.BackwardWith(tensor.BackwardOpts{Gradient: tensor.FromSlice(cpu, []float64{1, 1})})
	if calls != 1 {
		t.Fatalf("hook called %d times", calls)
	}
	if g := x.Grad().Float64s(); g[0] != 7 || g[1] != 7 {
		t.Fatalf("hook did not replace the gradient: %v", g)
	}
	if y.Grad() == nil {
		t.Fatal("RetainGrad kept nothing")
	}
}

func TestRequiresGradOnlyFloats(t *testing.T) {
	err := tensor.Catch(func() { tensor.FromSlice(tensor.MustDevice("cpu"), []int64{1}).SetRequiresGrad(true) })
	if err == nil || !strings.Contains(err.Error(), "floating point") {
		t.Fatalf("int requires_grad: %v", err)
	}
}

// In-place ops on a non-leaf keep the values their own backward needs.
func TestInPlaceOnNonLeaf(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	x := tensor.FromSlice(cpu, []float64{1, 2, 3}).SetRequiresGrad(true)
	y := tensor.FromSlice(cpu, []float64{4, 5, 6}).SetRequiresGrad(true)
	h := x.MulScalar(1.0) // a non-leaf
	h.MulInPlace(y)       // h = x*y, the mul saved the old h
	h.AddInPlace(y)       // h = x*y + y
	loss := h.Sum(nil, false)
	loss.Backward()
	gx, gy := x.Grad().Float64s(), y.Grad().Float64s()
	for i := range gx {
		if gx[i] != []float64{4, 5, 6}[i] || gy[i] != []float64{2, 3, 4}[i] {
			t.Fatalf("grads %v %v", gx, gy)
		}
	}
}

// A hook on a leaf sees the leaf's total gradient once, as PyTorch's hooks
// on AccumulateGrad do, not each contribution separately: a clamping hook on
// x with y = 3x + 3x clamps 6 to 1 (not 3 and 3 to 1 each, summing to 2).
func TestLeafHookSeesTotalGradientOnce(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	x := tensor.FromSlice(cpu, []float64{1}).SetRequiresGrad(true)
	calls := 0
	x.RegisterHook(func(g *tensor.Tensor) *tensor.Tensor {
		calls++
		return g.Clamp(nil, 1.0)
	})
	x.MulScalar(3.0).Add(x.MulScalar(3.0)).Sum(nil, false).Backward()
	if calls != 1 {
		t.Errorf("leaf hook called %d times, want 1", calls)
	}
	if g := x.Grad().Float64s(); g[0] != 1 {
		t.Errorf("grad = %v, want [1] (the hook clamps the total 6)", g)
	}
}

// Version checks apply to what a VJP actually uses, as PyTorch checks the
// variables a node saved: an output a VJP needs (exp's result) modified in
// place is an error, not a silently wrong gradient; an input that no VJP
// reads (add's) may be modified freely.
func TestVersionCheckOnUse(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	x := tensor.FromSlice(cpu, []float64{0, 1}).SetRequiresGrad(true)
	y := x.Exp()
	y.AddInPlace(tensor.Scalar(1.0))
	err := tensor.Catch(func() { y.Sum(nil, false).Backward() })
	if err == nil || !strings.Contains(err.Error(), "modified by an inplace operation") || !strings.Contains(err.Error(), "output 0 of exp") {
		t.Errorf("backward through exp after its output changed in place: err %v, grad %v", err, x.Grad())
	}

	x2 := tensor.FromSlice(cpu, []float64{0, 1}).SetRequiresGrad(true)
	c := tensor.FromSlice(cpu, []float64{3, 4}).SetRequiresGrad(true)
	a := x2.MulScalar(2.0)
	b := a.Add(c)
	a.AddInPlace(tensor.Scalar(1.0))
	if err := tensor.Catch(func() { b.Sum(nil, false).Backward() }); err != nil {
		t.Fatalf("add does not use its inputs' values, but backward failed: %v", err)
	}
	if g := x2.Grad().Float64s(); g[0] != 2 || g[1] != 2 {
		t.Errorf("grad = %v, want [2 2]", g)
	}
}
