package tensor_test

import (
	"math"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// gradsOf returns d sum(f(xs)) / d xs for f64 leaves built from vals.
func gradsOf(t *testing.T, f func(xs []*tensor.Tensor) *tensor.Tensor, vals ...[]float64) [][]float64 {
	t.Helper()
	cpu := tensor.MustDevice("cpu")
	xs := make([]*tensor.Tensor, len(vals))
	for i, v := range vals {
		xs[i] = tensor.FromSlice(cpu, v, len(v)).SetRequiresGrad(true)
	}
	var out [][]float64
	err := tensor.Catch(func() {
		y := f(xs)
		ones := apply1("full", op.Attrs{"shape": y.Shape(), "value": 1.0, "dtype": y.DType()})
		gs := tensor.Grad([]*tensor.Tensor{y}, []*tensor.Tensor{ones}, xs, false)
		for _, g := range gs {
			if g == nil {
				out = append(out, nil)
				continue
			}
			out = append(out, g.Float64s())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameFloats(got, want []float64, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		switch {
		case math.IsNaN(w):
			if !math.IsNaN(g) {
				return false
			}
		case math.IsInf(w, 0):
			if g != w {
				return false
			}
		case math.Abs(g-w) > tol*(1+math.Abs(w)):
			return false
		}
	}
	return true
}

// TestElementwiseGradConventions checks PyTorch's derivative conventions at
// ties, kinks, bounds and special values end to end through Backward.
func TestElementwiseGradConventions(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	un := func(f func(x *tensor.Tensor) *tensor.Tensor) func(xs []*tensor.Tensor) *tensor.Tensor {
		return func(xs []*tensor.Tensor) *tensor.Tensor { return f(xs[0]) }
	}
	bin := func(f func(x, y *tensor.Tensor) *tensor.Tensor) func(xs []*tensor.Tensor) *tensor.Tensor {
		return func(xs []*tensor.Tensor) *tensor.Tensor { return f(xs[0], xs[1]) }
	}
	tests := []struct {
		name string
		f    func(xs []*tensor.Tensor) *tensor.Tensor
		in   [][]float64
		want [][]float64
	}{
		{"relu is 0 at 0", un((*tensor.Tensor).Relu), [][]float64{{-1, 0, 2}}, [][]float64{{0, 0, 1}}},
		{"relu6 is 0 at both bounds", un((*tensor.Tensor).Relu6), [][]float64{{0, 3, 6, 7}}, [][]float64{{0, 1, 0, 0}}},
		{"hardtanh is 0 at the bounds", un(func(x *tensor.Tensor) *tensor.Tensor { return x.Hardtanh(-1, 1) }),
			[][]float64{{-2, -1, 0, 1, 2}}, [][]float64{{0, 0, 1, 0, 0}}},
		{"clamp passes at the bounds", un(func(x *tensor.Tensor) *tensor.Tensor { return x.Clamp(-1.0, 1.0) }),
			[][]float64{{-2, -1, 0, 1, 2, nan}}, [][]float64{{0, 1, 1, 1, 0, 0}}},
		{"abs is 0 at 0", un((*tensor.Tensor).Abs), [][]float64{{-3, 0, 2}}, [][]float64{{-1, 0, 1}}},
		{"sqrt is inf at 0", un((*tensor.Tensor).Sqrt), [][]float64{{0, 4}}, [][]float64{{inf, 0.25}}},
		{"floor, sign, trunc, round are zero", un(func(x *tensor.Tensor) *tensor.Tensor {
			return x.Floor().Add(x.Sign()).Add(x.Trunc()).Add(x.Round())
		}), [][]float64{{-1.5, 0.2, 2.5}}, [][]float64{{0, 0, 0}}},
		{"maximum splits ties", bin((*tensor.Tensor).Maximum), [][]float64{{1, 2, 3, nan}, {1, 3, 2, 0}},
			[][]float64{{0.5, 0, 1, 1}, {0.5, 1, 0, 1}}},
		{"minimum splits ties", bin((*tensor.Tensor).Minimum), [][]float64{{1, 2, 3}, {1, 3, 2}},
			[][]float64{{0.5, 1, 0}, {0.5, 0, 1}}},
		{"fmax gives ties and NaN other to input", bin((*tensor.Tensor).Fmax), [][]float64{{1, 2, 3, nan, 5}, {1, 3, 2, 4, nan}},
			[][]float64{{1, 0, 1, 0, 1}, {0, 1, 0, 1, 0}}},
		{"clamp_tensor routes to active bounds", func(xs []*tensor.Tensor) *tensor.Tensor { return xs[0].ClampTensor(xs[1], xs[2]) },
			[][]float64{{-5, 0, 5, 0}, {-1, -1, -1, 2}, {1, 1, 1, 1}},
			// last: min > max, the result is max: only max gets the gradient.
			[][]float64{{0, 1, 0, 0}, {1, 0, 0, 0}, {0, 0, 1, 1}}},
		{"pow masks base 0 and exponent 0", bin((*tensor.Tensor).Pow), [][]float64{{0, 2, 0, 3}, {2, 0, 0, 2}},
			[][]float64{{0, 0, 0, 6}, {0, math.Log(2), 0, 9 * math.Log(3)}}},
		{"div with rounding is zero", bin(func(x, y *tensor.Tensor) *tensor.Tensor { return x.DivMode(y, "floor") }),
			[][]float64{{5, -5}, {2, 3}}, [][]float64{{0, 0}, {0, 0}}},
		{"fmod and remainder pass grad to input", bin(func(x, y *tensor.Tensor) *tensor.Tensor { return x.Fmod(y).Add(x.Remainder(y)) }),
			[][]float64{{5, -5}, {3, 3}}, [][]float64{{2, 2}, {-1 - 1, 1 + 2}}},
		{"copysign", bin((*tensor.Tensor).Copysign), [][]float64{{2, -2, 0}, {-1, -1, 1}},
			[][]float64{{-1, 1, 0}, {0, 0, 0}}},
		{"softplus past threshold, no overflow", un(func(x *tensor.Tensor) *tensor.Tensor { return x.Softplus(1, 20) }),
			[][]float64{{0, 1000, -1000}}, [][]float64{{0.5, 1, 0}}},
		{"elu at 0 and large x", un(func(x *tensor.Tensor) *tensor.Tensor { return x.Elu(2) }),
			[][]float64{{0, 1000, -1}}, [][]float64{{2, 1, 2 * math.Exp(-1)}}},
		{"mish at large x", un((*tensor.Tensor).Mish), [][]float64{{1000, -1000}}, [][]float64{{1, 0}}},
		{"logit outside [0, 1]", un((*tensor.Tensor).Logit), [][]float64{{0.5, 0, 2}}, [][]float64{{4, inf, nan}}},
		{"logit with eps", un(func(x *tensor.Tensor) *tensor.Tensor { return x.LogitEps(0.1) }),
			[][]float64{{0.5, 0.05, 0.1}}, [][]float64{{4, 0, 1 / 0.09}}},
		{"hardswish pieces", un((*tensor.Tensor).Hardswish), [][]float64{{-4, -3, 0, 3, 4}}, [][]float64{{0, -0.5, 0.5, 1.5, 1}}},
		{"hardsigmoid is 0 at ±3", un((*tensor.Tensor).Hardsigmoid), [][]float64{{-3, 0, 3}}, [][]float64{{0, 1.0 / 6, 0}}},
		{"acosh and atanh at 1", un(func(x *tensor.Tensor) *tensor.Tensor { return x.Acosh().Add(x.Atanh()) }),
			[][]float64{{1}}, [][]float64{{inf}}},
		{"lerp with a weight tensor", func(xs []*tensor.Tensor) *tensor.Tensor { return xs[0].Lerp(xs[1], xs[2]) },
			[][]float64{{1, 2}, {3, 5}, {0.25, 0.75}}, [][]float64{{0.75, 0.25}, {0.25, 0.75}, {2, 3}}},
		{"chain sin(x)*y + exp(x)/y", bin(func(x, y *tensor.Tensor) *tensor.Tensor { return x.Sin().Mul(y).Add(x.Exp().Div(y)) }),
			[][]float64{{0.5, -1}, {2, 3}},
			[][]float64{{math.Cos(0.5)*2 + math.Exp(0.5)/2, math.Cos(-1)*3 + math.Exp(-1)/3},
				{math.Sin(0.5) - math.Exp(0.5)/4, math.Sin(-1) - math.Exp(-1)/9}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := gradsOf(t, tc.f, tc.in...)
			for i, w := range tc.want {
				g := got[i]
				if g == nil {
					g = make([]float64, len(w))
				}
				if !sameFloats(g, w, 1e-12) {
					t.Errorf("grad of input %d = %v, want %v", i, g, w)
				}
			}
		})
	}
}

// TestElementwiseGradBroadcastAndScalars checks that gradients of
// broadcasting ops are summed back to the input shapes, alpha scales the
// other operand's gradient, and Go scalars take no gradient.
func TestElementwiseGradBroadcastAndScalars(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	x := tensor.FromSlice(cpu, []float32{1, 2, 3, 4, 5, 6}, 2, 3).SetRequiresGrad(true)
	y := tensor.FromSlice(cpu, []float32{1, 2, 4}, 3).SetRequiresGrad(true)
	z := x.SubAlpha(y, 2.5).Mul(x.MulScalar(2.0)).AddScalar(1.0)
	ones := apply1("full", op.Attrs{"shape": []int{2, 3}, "value": 1.0, "dtype": dtype.F32})
	gs := tensor.Grad([]*tensor.Tensor{z}, []*tensor.Tensor{ones}, []*tensor.Tensor{x, y}, false)
	// z = (x - 2.5y) * 2x: dz/dx = 4x - 5y, dz/dy = -5x summed over rows.
	xv, yv := []float64{1, 2, 3, 4, 5, 6}, []float64{1, 2, 4}
	var wx []float64
	for i, v := range xv {
		wx = append(wx, 4*v-5*yv[i%3])
	}
	wy := []float64{-5 * (1 + 4), -5 * (2 + 5), -5 * (3 + 6)}
	if gs[0].DType() != dtype.F32 || !sameFloats(gs[0].Float64s(), wx, 1e-6) {
		t.Errorf("grad x = %v (%v), want %v", gs[0].Float64s(), gs[0].DType(), wx)
	}
	if !equalShape(gs[1].Shape(), []int{3}) || !sameFloats(gs[1].Float64s(), wy, 1e-6) {
		t.Errorf("grad y = %v %v, want %v", gs[1].Shape(), gs[1].Float64s(), wy)
	}
}

// TestElementwiseGradHalf checks that half-precision activations get
// gradients computed in f32 and returned in the input dtype.
func TestElementwiseGradHalf(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	vals := []float64{-3, -0.5, 0, 0.75, 2}
	for _, name := range []string{"gelu", "silu", "mish", "sigmoid", "tanh"} {
		for _, dt := range []dtype.DType{dtype.F16, dtype.BF16} {
			ref := tensor.FromSlice(cpu, vals, len(vals)).SetRequiresGrad(true)
			h := apply1("convert", op.Attrs{"dtype": dt}, tensor.FromSlice(cpu, vals, len(vals))).SetRequiresGrad(true)
			gr := tensor.Grad([]*tensor.Tensor{apply1(name, nil, ref)}, []*tensor.Tensor{tensor.FromSlice(cpu, []float64{1, 1, 1, 1, 1}, 5)}, []*tensor.Tensor{ref}, false)[0]
			ct := apply1("convert", op.Attrs{"dtype": dt}, tensor.FromSlice(cpu, []float64{1, 1, 1, 1, 1}, 5))
			gh := tensor.Grad([]*tensor.Tensor{apply1(name, nil, h)}, []*tensor.Tensor{ct}, []*tensor.Tensor{h}, false)[0]
			if gh.DType() != dt {
				t.Fatalf("%s %v: gradient dtype %v", name, dt, gh.DType())
			}
			if !sameFloats(gh.Float64s(), gr.Float64s(), 1e-2) {
				t.Errorf("%s %v: grad %v, f64 %v", name, dt, gh.Float64s(), gr.Float64s())
			}
		}
	}
}
