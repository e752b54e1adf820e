package tensor

import (
	"fmt"
	"slices"
	"testing"

	_ "github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// AccumulateGrad adopts a leaf's first gradient instead of copying it only
// when nothing else can see its storage. These cases are the ways a
// gradient can be seen from elsewhere; each checks the values, that no leaf
// gradient shares storage with a tensor the user can still reach, that
// writing into every leaf gradient leaves those tensors unchanged (a wrong
// adoption is a silent aliasing bug), and how many gradients were copied.

// stealCase builds a graph, runs Backward and returns what to check.
type stealCase struct {
	name string
	run  func(dev devT) stealResult
}

type devT = device.Device

type stealResult struct {
	params  []*Tensor   // leaves whose Grad is checked
	want    [][]float64 // their expected gradients
	visible []*Tensor   // tensors the user still holds, which must not alias a grad
	copies  int         // gradients accumulateLeaf must copy (-1: any)
	// fusedViews is how many of the adoptable gradients are views of a
	// pending value in Fused mode, which are copied there (as values).
	fusedViews int
}

func f32s(dev devT, v []float64, shape ...int) *Tensor {
	return Apply1("convert", []*Tensor{FromSlice(dev, v, shape...)}, op.Attrs{"dtype": dtype.F32})
}

func leafOf(dev devT, v []float64, shape ...int) *Tensor {
	return f32s(dev, v, shape...).SetRequiresGrad(true)
}

func stealCases() []stealCase {
	c6 := []float64{1, -2, 3, -4, 5, -6}
	return []stealCase{
		{"fresh product", func(dev devT) stealResult {
			a := leafOf(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
			c := f32s(dev, c6, 2, 3)
			a.Mul(c).SumAll().Backward()
			return stealResult{params: []*Tensor{a}, want: [][]float64{c6}, visible: []*Tensor{c}, copies: 0}
		}},
		{"add hands one tensor to two leaves", func(dev devT) stealResult {
			a := leafOf(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
			b := leafOf(dev, []float64{6, 5, 4, 3, 2, 1}, 2, 3)
			c := f32s(dev, c6, 2, 3)
			a.Add(b).Mul(c).SumAll().Backward()
			return stealResult{params: []*Tensor{a, b}, want: [][]float64{c6, c6}, visible: []*Tensor{c}, copies: 2}
		}},
		{"same leaf twice through add", func(dev devT) stealResult {
			a := leafOf(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
			c := f32s(dev, c6, 2, 3)
			a.Add(a).Mul(c).SumAll().Backward()
			w := make([]float64, 6)
			for i := range w {
				w[i] = 2 * c6[i]
			}
			// The two contributions are summed into a new tensor.
			return stealResult{params: []*Tensor{a}, want: [][]float64{w}, visible: []*Tensor{c}, copies: 0}
		}},
		{"view op passes the gradient through", func(dev devT) stealResult {
			a := leafOf(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
			c := f32s(dev, c6, 6)
			a.Reshape(6).Mul(c).SumAll().Backward()
			return stealResult{params: []*Tensor{a}, want: [][]float64{c6}, visible: []*Tensor{c}, copies: 0, fusedViews: 1}
		}},
		{"user output gradient through a view", func(dev devT) stealResult {
			a := leafOf(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
			u := f32s(dev, c6, 6)
			a.Reshape(6).BackwardWith(BackwardOpts{Gradient: u})
			return stealResult{params: []*Tensor{a}, want: [][]float64{c6}, visible: []*Tensor{u}, copies: 1}
		}},
		{"user output gradient of a leaf", func(dev devT) stealResult {
			a := leafOf(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
			u := f32s(dev, c6, 2, 3)
			a.BackwardWith(BackwardOpts{Gradient: u})
			return stealResult{params: []*Tensor{a}, want: [][]float64{c6}, visible: []*Tensor{u}, copies: 1}
		}},
		{"forward tensor as output gradient", func(dev devT) stealResult {
			a := leafOf(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
			y := a.Reshape(6)
			z := f32s(dev, c6, 6).MulScalar(1.0) // a forward value the user keeps
			y.BackwardWith(BackwardOpts{Gradient: z})
			return stealResult{params: []*Tensor{a}, want: [][]float64{c6}, visible: []*Tensor{z}, copies: 1}
		}},
		{"hook on an intermediate keeps its gradient", func(dev devT) stealResult {
			a := leafOf(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
			c := f32s(dev, c6, 6)
			z := a.Mul(Ones(dev, dtype.F32, 2, 3)).Reshape(6)
			m := z.Mul(c)
			var kept *Tensor
			m.RegisterHook(func(g *Tensor) *Tensor { kept = g; return nil })
			// m's gradient passes unchanged through the add to z's
			// reshape view and on to a.
			m.Add(Zeros(dev, dtype.F32, 6)).Mul(Ones(dev, dtype.F32, 6)).SumAll().Backward()
			return stealResult{params: []*Tensor{a}, want: [][]float64{c6}, visible: []*Tensor{kept, c}, copies: -1}
		}},
		{"hook on a pass-through node keeps the leaf's gradient", func(dev devT) stealResult {
			a := leafOf(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
			c := f32s(dev, c6, 6)
			z := a.Reshape(6)
			var kept *Tensor
			z.RegisterHook(func(g *Tensor) *Tensor { kept = g; return nil })
			z.Mul(c).SumAll().Backward()
			return stealResult{params: []*Tensor{a}, want: [][]float64{c6}, visible: []*Tensor{kept, c}, copies: 1}
		}},
		{"leaf hook keeps the gradient", func(dev devT) stealResult {
			a := leafOf(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
			c := f32s(dev, c6, 2, 3)
			var kept *Tensor
			a.RegisterHook(func(g *Tensor) *Tensor { kept = g; return nil })
			a.Mul(c).SumAll().Backward()
			return stealResult{params: []*Tensor{a}, want: [][]float64{c6}, visible: []*Tensor{kept, c}, copies: 1}
		}},
		{"leaf hook returns a tensor the user keeps", func(dev devT) stealResult {
			a := leafOf(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
			c := f32s(dev, c6, 2, 3)
			var kept *Tensor
			a.RegisterHook(func(g *Tensor) *Tensor { kept = g.MulScalar(2.0); return kept })
			a.Mul(c).SumAll().Backward()
			w := make([]float64, 6)
			for i := range w {
				w[i] = 2 * c6[i]
			}
			return stealResult{params: []*Tensor{a}, want: [][]float64{w}, visible: []*Tensor{kept, c}, copies: 1}
		}},
		{"retain_grad on a pass-through view", func(dev devT) stealResult {
			a := leafOf(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
			c := f32s(dev, c6, 6)
			z := a.Reshape(6).RetainGrad()
			z.Mul(c).SumAll().Backward()
			return stealResult{params: []*Tensor{a}, want: [][]float64{c6}, visible: []*Tensor{z.Grad(), c}, copies: 1}
		}},
		{"gradients that are views of one tensor", func(dev devT) stealResult {
			a := leafOf(dev, []float64{1, 2, 3}, 3)
			b := leafOf(dev, []float64{4, 5, 6}, 3)
			c := f32s(dev, c6, 6)
			Cat([]*Tensor{a, b}, 0).Mul(c).SumAll().Backward()
			return stealResult{params: []*Tensor{a, b}, want: [][]float64{c6[:3], c6[3:]}, visible: []*Tensor{c}, copies: -1}
		}},
		{"gradient is a slice of a bigger tensor", func(dev devT) stealResult {
			a := leafOf(dev, []float64{1, 2, 3}, 3)
			b := leafOf(dev, []float64{4, 5, 6}, 3)
			k := f32s(dev, []float64{7, 8, 9}, 3)
			c := f32s(dev, c6, 6)
			// a's gradient is the head, b's the tail, of a concatenation's
			// six-element gradient, each the only view of its storage.
			Cat([]*Tensor{a, k}, 0).Mul(c).SumAll().Backward()
			Cat([]*Tensor{k, b}, 0).Mul(c).SumAll().Backward()
			return stealResult{params: []*Tensor{a, b}, want: [][]float64{c6[:3], c6[3:]}, visible: []*Tensor{c, k}, copies: 2}
		}},
		{"non-contiguous leaf", func(dev devT) stealResult {
			a := f32s(dev, []float64{1, 2, 3, 4, 5, 6}, 3, 2).Transpose(0, 1).Detach().SetRequiresGrad(true)
			c := f32s(dev, c6, 2, 3)
			a.Mul(c).SumAll().Backward()
			return stealResult{params: []*Tensor{a}, want: [][]float64{c6}, visible: []*Tensor{c}, copies: 1}
		}},
		{"permuted leaf with a size-1 axis", func(dev devT) stealResult {
			v := make([]float64, 24)
			for i := range v {
				v[i] = float64(i)
			}
			base := f32s(dev, v, 4, 1, 3, 2)
			a := Apply1("permute", []*Tensor{base}, op.Attrs{"dims": []int{3, 1, 0, 2}}).Detach().SetRequiresGrad(true)
			cv := make([]float64, 24)
			for i := range cv {
				cv[i] = float64(i%7) - 3
			}
			c := f32s(dev, cv, 2, 1, 4, 3)
			a.Mul(c).SumAll().Backward()
			return stealResult{params: []*Tensor{a}, want: [][]float64{cv}, visible: []*Tensor{c, base}, copies: 1}
		}},
		{"linear layer", func(dev devT) stealResult {
			x := f32s(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
			w := leafOf(dev, []float64{1, 0, -1, 2, 1, 0, 0, 1, 1, -1, 2, 0}, 4, 3)
			bias := leafOf(dev, []float64{0, 1, 2, 3}, 4)
			g := f32s(dev, []float64{1, 2, 3, 4, -1, -2, -3, -4}, 2, 4)
			Linear(x, w, bias).Mul(g).SumAll().Backward()
			// dW[o, i] = sum_b g[b, o] x[b, i]; db[o] = sum_b g[b, o]
			// (a [1, 4] sum reshaped to [4], a view in Fused mode).
			dw := []float64{1 - 4, 2 - 5, 3 - 6, 2 - 8, 4 - 10, 6 - 12, 3 - 12, 6 - 15, 9 - 18, 4 - 16, 8 - 20, 12 - 24}
			return stealResult{params: []*Tensor{w, bias}, want: [][]float64{dw, {0, 0, 0, 0}}, visible: []*Tensor{x, g}, copies: 0, fusedViews: 1}
		}},
	}
}

func TestLeafGradientAdoption(t *testing.T) {
	dev := MustDevice("cpu")
	for _, m := range []Mode{Strict, Fused} {
		for _, tc := range stealCases() {
			t.Run(fmt.Sprintf("%v/%s", m, tc.name), func(t *testing.T) {
				prev := SetMode(m)
				defer SetMode(prev)
				before := leafGradCopies.Load()
				r := tc.run(dev)
				copies := int(leafGradCopies.Load() - before)
				want := r.copies
				if m == Fused {
					want += r.fusedViews
				}
				if r.copies >= 0 && copies != want {
					t.Errorf("copied %d leaf gradients, want %d", copies, want)
				}
				checkAdopted(t, r)
			})
		}
	}
}

// checkAdopted checks r's gradients' values, that none shares storage with
// another or with a visible tensor, and that writing into each changes
// nothing else.
func checkAdopted(t *testing.T, r stealResult) {
	t.Helper()
	grads := make([]*Tensor, len(r.params))
	for i, p := range r.params {
		grads[i] = p.Grad()
		if grads[i] == nil {
			t.Fatalf("param %d has no grad", i)
		}
		if got := grads[i].Float64s(); !slices.Equal(got, r.want[i]) {
			t.Fatalf("param %d grad = %v, want %v", i, got, r.want[i])
		}
		if !slices.Equal(grads[i].Shape(), p.Shape()) {
			t.Fatalf("param %d grad shape %v, want %v", i, grads[i].Shape(), p.Shape())
		}
		// PyTorch's gradient layout contract: a dense parameter's
		// gradient has its strides (contiguous for a contiguous one).
		if pl := p.l; pl.IsContiguous() {
			if !grads[i].IsContiguous() {
				t.Errorf("param %d is contiguous, its grad is not (strides %v)", i, grads[i].Strides())
			}
		} else if denseNonOverlapping(pl) {
			for ax, n := range pl.Shape {
				if n > 1 && grads[i].l.Strides[ax] != pl.Strides[ax] {
					t.Errorf("param %d has strides %v, its grad %v", i, pl.Strides, grads[i].Strides())
					break
				}
			}
		}
	}
	others := slices.Clone(r.visible)
	var snap [][]float64
	for _, v := range others {
		if v == nil {
			t.Fatalf("a visible tensor is nil (hook not run?)")
		}
		snap = append(snap, v.Float64s())
	}
	for i, g := range grads {
		for _, v := range others {
			if g.SharesStorage(v) {
				t.Errorf("param %d grad shares storage with a tensor the user holds", i)
			}
		}
		for j, h := range grads {
			if i != j && g.SharesStorage(h) {
				t.Errorf("params %d and %d grads share storage", i, j)
			}
		}
	}
	for i, g := range grads {
		NoGrad(func() { g.AddInPlace(Full(g.Device(), g.DType(), 1000.0, g.Shape()...)) })
		for k, v := range others {
			if got := v.Float64s(); !slices.Equal(got, snap[k]) {
				t.Errorf("writing param %d's grad changed visible tensor %d: %v, was %v", i, k, got, snap[k])
			}
		}
		for j, h := range grads {
			if j == i {
				continue
			}
			if got := h.Float64s(); !slices.Equal(got, r.want[j]) {
				t.Errorf("writing param %d's grad changed param %d's: %v", i, j, got)
			}
		}
		NoGrad(func() { g.SubInPlace(Full(g.Device(), g.DType(), 1000.0, g.Shape()...)) })
	}
}

// TestLeafGradientAccumulation: a second Backward (over a retained graph, or
// a new one) adds into the gradient out of place, so the tensor the first
// Backward produced (adopted) keeps its values.
func TestLeafGradientAccumulation(t *testing.T) {
	dev := MustDevice("cpu")
	c6 := []float64{1, -2, 3, -4, 5, -6}
	for _, m := range []Mode{Strict, Fused} {
		for _, retain := range []bool{true, false} {
			t.Run(fmt.Sprintf("%v/retain=%v", m, retain), func(t *testing.T) {
				prev := SetMode(m)
				defer SetMode(prev)
				a := leafOf(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
				c := f32s(dev, c6, 2, 3)
				y := a.Mul(c).SumAll()
				y.BackwardWith(BackwardOpts{RetainGraph: retain})
				g1 := a.Grad()
				if !retain {
					y = a.Mul(c).SumAll()
				}
				y.Backward()
				g2 := a.Grad()
				if g1.SharesStorage(g2) {
					t.Fatalf("the second Backward wrote into the first gradient's storage")
				}
				if got := g1.Float64s(); !slices.Equal(got, c6) {
					t.Fatalf("first gradient changed to %v", got)
				}
				w := make([]float64, 6)
				for i := range w {
					w[i] = 2 * c6[i]
				}
				if got := g2.Float64s(); !slices.Equal(got, w) {
					t.Fatalf("accumulated gradient %v, want %v", got, w)
				}
			})
		}
	}
}

func TestDenseNonOverlapping(t *testing.T) {
	for _, tc := range []struct {
		l    op.Layout
		want bool
	}{
		{op.Contiguous([]int{2, 3}), true},
		{op.Layout{Shape: []int{3, 2}, Strides: []int{1, 3}}, true},
		{op.Layout{Shape: []int{3, 2}, Strides: []int{1, 4}}, false},
		{op.Layout{Shape: []int{3, 2}, Strides: []int{0, 1}}, false},
		{op.Layout{Shape: []int{2, 1, 3}, Strides: []int{1, 7, 2}}, true},
		{op.Layout{Shape: []int{2, 0}, Strides: []int{5, 5}}, true},
	} {
		if got := denseNonOverlapping(tc.l); got != tc.want {
			t.Errorf("denseNonOverlapping(%+v) = %v, want %v", tc.l, got, tc.want)
		}
	}
}

// TestDotGeneralGradLayout: the dot_general VJP computes a gradient whose
// plain product would come out transposed (linear's weight, an lhs
// contracted on its first axis) as the swapped product instead, so it is
// contiguous in the operand's own layout; its bits must be those of the
// plain product transposed (each element the same f32 FMA chain over the
// batch in order), at every precision and for f32, f64 and bf16.
func TestDotGeneralGradLayout(t *testing.T) {
	dev := MustDevice("cpu")
	g := NewGenerator(7)
	type shapes struct{ b, in, out int }
	for _, dt := range []dtype.DType{dtype.F32, dtype.F64, dtype.BF16} {
		for _, prec := range []string{"", op.PrecisionHighest, op.PrecisionHigh, op.PrecisionMedium} {
			if dt != dtype.F32 && prec != "" {
				continue
			}
			for _, s := range []shapes{{5, 3, 2}, {37, 29, 13}, {64, 784, 512}, {300, 40, 17}} {
				t.Run(fmt.Sprintf("%s/%q/%v", dt, prec, s), func(t *testing.T) {
					cvt := func(x *Tensor) *Tensor { return Apply1("convert", []*Tensor{x}, op.Attrs{"dtype": dt}) }
					x := cvt(RandnGen(g, dev, dtype.F32, s.b, s.in))
					w := cvt(RandnGen(g, dev, dtype.F32, s.out, s.in)).SetRequiresGrad(true)
					gy := cvt(RandnGen(g, dev, dtype.F32, s.b, s.out))
					dot := func(l, r *Tensor, lc, rc int) *Tensor {
						return DotGeneral(l, r, DotGeneralDims{LhsContract: []int{lc}, RhsContract: []int{rc}, Precision: prec})
					}
					// Linear: y = x Wᵀ; dW = (xᵀ g)ᵀ.
					DotGeneral(x, w, DotGeneralDims{LhsContract: []int{1}, RhsContract: []int{1}, Precision: prec}).BackwardWith(BackwardOpts{Gradient: gy})
					want := dot(x, gy, 0, 0).Transpose(0, 1).Contiguous()
					checkBits(t, "linear dW", w.Grad(), want)
					// An lhs contracted on its first axis: y = aᵀ b, [in, out]
					// from a [b, in] and b [b, out]; da = (b gᵀ)ᵀ.
					a := cvt(RandnGen(g, dev, dtype.F32, s.b, s.in)).SetRequiresGrad(true)
					g2 := cvt(RandnGen(g, dev, dtype.F32, s.in, s.out))
					dot(a, gy, 0, 0).BackwardWith(BackwardOpts{Gradient: g2})
					want = dot(g2, gy, 1, 1).Transpose(0, 1).Contiguous()
					checkBits(t, "aᵀb da", a.Grad(), want)
				})
			}
		}
	}
}

func checkBits(t *testing.T, what string, got, want *Tensor) {
	t.Helper()
	if !slices.Equal(got.Shape(), want.Shape()) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
	}
	if !got.IsContiguous() {
		t.Errorf("%s: gradient is not contiguous (strides %v)", what, got.Strides())
	}
	if gb, wb := got.Bytes(), want.Bytes(); !slices.Equal(gb, wb) {
		t.Fatalf("%s: bits differ from the plain product's", what)
	}
}
