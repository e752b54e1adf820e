package tensor_test

import (
	"math"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// End-to-end gradients of the linalg and nn groups through tensor.Grad for
// geometries and options the golden cases do not reach (dot_general with
// permuted batch and contracting axes, convolutions with asymmetric padding,
// groups and transposition together, padded windowed max, weighted and
// smoothed losses with ignored targets, batch_norm with running statistics),
// each checked against central finite differences in f64; and the
// conventions finite differences cannot check (ties, padding_idx, dropout's
// mask, reduced precision), checked directly.

type laGradCase struct {
	name   string
	shapes [][]int // f64 inputs that require grad
	fn     func(xs []*tensor.Tensor) *tensor.Tensor
}

// laValues are distinct, irregular values for input k.
func laValues(n, k int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Sin(1.3*float64(i)+0.7*float64(k)+0.1) + 0.05*float64(i%7)
	}
	return v
}

// laCheckFiniteDiff compares the gradients of sum(fn(xs) * w) for a fixed
// irregular w with central differences.
func laCheckFiniteDiff(t *testing.T, c laGradCase) {
	t.Helper()
	cpu := tensor.MustDevice("cpu")
	vals := make([][]float64, len(c.shapes))
	for k, s := range c.shapes {
		vals[k] = laValues(op.Numel(s), k)
	}
	build := func(vals [][]float64) []*tensor.Tensor {
		xs := make([]*tensor.Tensor, len(vals))
		for k, v := range vals {
			xs[k] = tensor.FromSlice(cpu, v, c.shapes[k]...)
		}
		return xs
	}
	xs := build(vals)
	for _, x := range xs {
		x.SetRequiresGrad(true)
	}
	var grads []*tensor.Tensor
	var w []float64
	if err := tensor.Catch(func() {
		out := c.fn(xs)
		w = laValues(out.Numel(), 99)
		wt := tensor.FromSlice(cpu, w, out.Shape()...)
		grads = tensor.Grad([]*tensor.Tensor{out}, []*tensor.Tensor{wt}, xs, false)
	}); err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	f := func(vals [][]float64) float64 {
		var s float64
		tensor.NoGrad(func() {
			o := c.fn(build(vals)).Float64s()
			for i := range o {
				s += o[i] * w[i]
			}
		})
		return s
	}
	const eps = 1e-6
	for k := range vals {
		var g []float64
		if grads[k] != nil {
			g = grads[k].Float64s()
		} else {
			g = make([]float64, len(vals[k]))
		}
		for j := range vals[k] {
			orig := vals[k][j]
			vals[k][j] = orig + eps
			hi := f(vals)
			vals[k][j] = orig - eps
			lo := f(vals)
			vals[k][j] = orig
			num := (hi - lo) / (2 * eps)
			if math.Abs(num-g[j]) > 1e-5+1e-4*math.Abs(num) {
				t.Errorf("%s: input %d element %d: analytical %v, numerical %v", c.name, k, j, g[j], num)
				return
			}
		}
	}
}

func laLong(v ...int64) *tensor.Tensor {
	return tensor.FromSlice(tensor.MustDevice("cpu"), v, len(v))
}

func TestLinalgNNGradFiniteDiff(t *testing.T) {
	a1 := func(name string, a op.Attrs) func(xs []*tensor.Tensor) *tensor.Tensor {
		return func(xs []*tensor.Tensor) *tensor.Tensor { return tensor.Apply1(name, xs, a) }
	}
	conv := func(a op.Attrs, bias bool) func(xs []*tensor.Tensor) *tensor.Tensor {
		return func(xs []*tensor.Tensor) *tensor.Tensor {
			in := []*tensor.Tensor{xs[0], xs[1], nil}
			if bias {
				in[2] = xs[2]
			}
			return tensor.Apply1("convolution", in, a)
		}
	}
	tgt := laLong(2, 0, -1, 3, 1, 2) // one ignored (-1) sample
	cases := []laGradCase{
		{"dot_general permuted batch and contraction", [][]int{{2, 3, 4, 5}, {5, 6, 4, 3}},
			a1("dot_general", op.Attrs{"lhs_batch": []int{1}, "rhs_batch": []int{3}, "lhs_contract": []int{3, 2}, "rhs_contract": []int{0, 2}})},
		{"dot_general outer product", [][]int{{3}, {2, 2}}, a1("dot_general", op.Attrs{})},
		{"conv1d asymmetric padding, stride, dilation, groups", [][]int{{2, 4, 11}, {6, 2, 3}, {6}},
			conv(op.Attrs{"stride": []int{3}, "padding": []int{1}, "padding_high": []int{2}, "dilation": []int{2}, "groups": 2}, true)},
		{"conv1d unread tail", [][]int{{1, 2, 8}, {3, 2, 3}}, conv(op.Attrs{"stride": []int{3}}, false)},
		{"conv_transpose1d groups, dilation, output_padding", [][]int{{2, 6, 4}, {6, 2, 3}, {6}},
			conv(op.Attrs{"transposed": true, "stride": []int{2}, "padding": []int{2}, "dilation": []int{2}, "output_padding": []int{1}, "groups": 3}, true)},
		{"conv_transpose2d asymmetric padding", [][]int{{1, 2, 3, 3}, {2, 2, 2, 3}},
			conv(op.Attrs{"transposed": true, "stride": []int{2, 1}, "padding": []int{1, 0}, "padding_high": []int{0, 2}, "output_padding": []int{1, 0}}, false)},
		{"conv3d depthwise", [][]int{{1, 2, 3, 4, 3}, {2, 1, 2, 2, 2}, {2}},
			conv(op.Attrs{"padding": []int{1, 0, 1}, "stride": []int{2, 1, 1}, "groups": 2}, true)},
		{"reduce_window max padded, strided, dilated", [][]int{{2, 7, 6}},
			a1("reduce_window", op.Attrs{"kind": "max", "window": []int{1, 3, 2}, "strides": []int{1, 2, 2}, "dilation": []int{1, 1, 2}, "padding_low": []int{0, 1, 2}, "padding_high": []int{0, 2, 0}})},
		{"reduce_window sum padded, strided, dilated", [][]int{{3, 7}},
			a1("reduce_window", op.Attrs{"kind": "sum", "window": []int{2, 3}, "strides": []int{1, 2}, "dilation": []int{2, 1}, "padding_low": []int{1, 2}, "padding_high": []int{0, 3}})},
		{"max_pool2d padded", [][]int{{2, 5, 6}}, a1("max_pool2d", op.Attrs{"kernel_size": []int{3}, "stride": []int{2}, "padding": []int{1}})},
		{"avg_pool2d ceil", [][]int{{1, 2, 5, 5}}, a1("avg_pool2d", op.Attrs{"kernel_size": []int{2}, "ceil_mode": true, "count_include_pad": false})},
		{"adaptive_avg_pool2d overlapping cells", [][]int{{2, 5, 7}}, a1("adaptive_avg_pool2d", op.Attrs{"output_size": []int{3, 4}})},
		{"adaptive_max_pool2d", [][]int{{1, 2, 5, 4}}, func(xs []*tensor.Tensor) *tensor.Tensor {
			return tensor.Apply("adaptive_max_pool2d", xs, op.Attrs{"output_size": []int{3, 3}})[0]
		}},
		{"layer_norm weight only", [][]int{{3, 2, 4}, {2, 4}}, func(xs []*tensor.Tensor) *tensor.Tensor {
			return tensor.Apply1("layer_norm", []*tensor.Tensor{xs[0], xs[1], nil}, op.Attrs{"normalized_shape": []int{2, 4}})
		}},
		{"layer_norm whole tensor", [][]int{{5}, {5}, {5}}, a1("layer_norm", op.Attrs{"normalized_shape": []int{5}, "eps": 0.1})},
		{"rms_norm", [][]int{{3, 4}, {4}}, a1("rms_norm", op.Attrs{"normalized_shape": []int{4}})},
		{"group_norm", [][]int{{2, 6, 3}, {6}, {6}}, a1("group_norm", op.Attrs{"num_groups": 3})},
		{"batch_norm training", [][]int{{4, 3, 2}, {3}, {3}}, func(xs []*tensor.Tensor) *tensor.Tensor {
			return tensor.Apply1("batch_norm", []*tensor.Tensor{xs[0], nil, nil, xs[1], xs[2]}, op.Attrs{"training": true})
		}},
		{"batch_norm running stats", [][]int{{4, 3, 2}, {3}, {3}, {3}, {3}}, func(xs []*tensor.Tensor) *tensor.Tensor {
			rv := tensor.Apply1("add", []*tensor.Tensor{tensor.Apply1("mul", []*tensor.Tensor{xs[2], xs[2]}, nil), tensor.Scalar(0.5)}, nil)
			return tensor.Apply1("batch_norm", []*tensor.Tensor{xs[0], xs[1], rv, xs[3], xs[4]}, op.Attrs{"eps": 1e-3})
		}},
		{"nll_loss weighted mean, ignore_index", [][]int{{6, 4}, {4}}, func(xs []*tensor.Tensor) *tensor.Tensor {
			return tensor.Apply1("nll_loss", []*tensor.Tensor{xs[0], tgt, xs[1]}, op.Attrs{"ignore_index": -1})
		}},
		{"nll_loss spatial none", [][]int{{2, 4, 3}}, func(xs []*tensor.Tensor) *tensor.Tensor {
			t2 := tensor.Apply1("reshape", []*tensor.Tensor{tgt}, op.Attrs{"shape": []int{2, 3}})
			return tensor.Apply1("nll_loss", []*tensor.Tensor{xs[0], t2, nil}, op.Attrs{"ignore_index": -1, "reduction": "none"})
		}},
	}
	for _, red := range []string{"none", "sum", "mean"} {
		cases = append(cases, laGradCase{"cross_entropy weighted, smoothed, ignore_index, " + red, [][]int{{6, 4}, {4}}, func(xs []*tensor.Tensor) *tensor.Tensor {
			return tensor.Apply1("cross_entropy", []*tensor.Tensor{xs[0], tgt, xs[1]}, op.Attrs{"ignore_index": -1, "label_smoothing": 0.2, "reduction": red})
		}})
		cases = append(cases, laGradCase{"cross_entropy probabilities weighted, smoothed, " + red, [][]int{{2, 3, 2}, {2, 3, 2}, {3}}, func(xs []*tensor.Tensor) *tensor.Tensor {
			return tensor.Apply1("cross_entropy", xs, op.Attrs{"label_smoothing": 0.1, "reduction": red})
		}})
	}
	cases = append(cases, laGradCase{"cross_entropy spatial unweighted mean", [][]int{{2, 4, 3}}, func(xs []*tensor.Tensor) *tensor.Tensor {
		t2 := tensor.Apply1("reshape", []*tensor.Tensor{tgt}, op.Attrs{"shape": []int{2, 3}})
		return tensor.Apply1("cross_entropy", []*tensor.Tensor{xs[0], t2, nil}, op.Attrs{"ignore_index": -1})
	}})
	cases = append(cases, laGradCase{"binary_cross_entropy weighted mean", [][]int{{2, 3}, {2, 3}, {3}}, func(xs []*tensor.Tensor) *tensor.Tensor {
		// Probabilities in (0, 1) from the raw values.
		p := tensor.Apply1("sigmoid", []*tensor.Tensor{xs[0]}, nil)
		return tensor.Apply1("binary_cross_entropy", []*tensor.Tensor{p, xs[1], xs[2]}, nil)
	}})
	for _, c := range cases {
		laCheckFiniteDiff(t, c)
	}
}

// laGrad returns d sum(out * cot) / d x for out = fn(x).
func laGrad(t *testing.T, x, cot *tensor.Tensor, fn func(x *tensor.Tensor) *tensor.Tensor) []float64 {
	t.Helper()
	var g []*tensor.Tensor
	if err := tensor.Catch(func() {
		x.SetRequiresGrad(true)
		out := fn(x)
		g = tensor.Grad([]*tensor.Tensor{out}, []*tensor.Tensor{cot}, []*tensor.Tensor{x}, false)
	}); err != nil {
		t.Fatal(err)
	}
	return g[0].Float64s()
}

func laEqual(t *testing.T, name string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", name, got, want)
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("%s: got %v, want %v", name, got, want)
		}
	}
}

// Ties in a window: the first maximum in scan order gets the whole gradient,
// for reduce_window, max_pool2d and max_pool2d_with_indices alike.
func TestMaxWindowTiesGoToFirst(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	vals := []float64{1, 3, 3, 0, 3, 2, 3, 1, 5, 5, 5, 5, 0, 0, 0, 0}
	cot := tensor.FromSlice(cpu, []float64{1, 10, 100, 1000}, 1, 2, 2)
	want := []float64{0, 1, 10, 0, 0, 0, 0, 0, 100, 0, 1000, 0, 0, 0, 0, 0}
	for _, name := range []string{"max_pool2d", "max_pool2d_with_indices", "reduce_window"} {
		x := tensor.FromSlice(cpu, vals, 1, 4, 4)
		g := laGrad(t, x, cot, func(x *tensor.Tensor) *tensor.Tensor {
			if name == "reduce_window" {
				return tensor.Apply1(name, []*tensor.Tensor{x}, op.Attrs{"kind": "max", "window": []int{1, 2, 2}, "strides": []int{1, 2, 2}})
			}
			return tensor.Apply(name, []*tensor.Tensor{x}, op.Attrs{"kernel_size": []int{2}})[0]
		})
		laEqual(t, name, g, want)
	}
	// A padded window whose real elements are all -inf: the first real
	// element gets the gradient, not the padding (PyTorch's scan).
	ninf := math.Inf(-1)
	x := tensor.FromSlice(cpu, []float64{ninf, ninf, ninf}, 3)
	g := laGrad(t, x, tensor.FromSlice(cpu, []float64{1, 2}, 2), func(x *tensor.Tensor) *tensor.Tensor {
		return tensor.Apply1("reduce_window", []*tensor.Tensor{x}, op.Attrs{"kind": "max", "window": []int{2}, "strides": []int{2}, "padding_low": []int{1}})
	})
	laEqual(t, "reduce_window padded -inf", g, []float64{1, 2, 0})
}

// padding_idx rows get no gradient; others get the sum of their lookups.
func TestEmbeddingPaddingIdxGrad(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	w := tensor.FromSlice(cpu, laValues(8, 0), 4, 2)
	idx := tensor.FromSlice(cpu, []int64{3, 1, 3, 0, 1, 3}, 2, 3)
	cot := tensor.FromSlice(cpu, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 2, 3, 2)
	g := laGrad(t, w, cot, func(w *tensor.Tensor) *tensor.Tensor {
		return tensor.Apply1("embedding", []*tensor.Tensor{w, idx}, op.Attrs{"padding_idx": -1}) // row 3
	})
	laEqual(t, "embedding", g, []float64{7, 8, 3 + 9, 4 + 10, 0, 0, 0, 0})
}

// dropout's gradient reuses the forward's mask: grad * x == cot * out.
func TestDropoutGradReusesMask(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	x := tensor.FromSlice(cpu, laValues(64, 0), 8, 8)
	cot := tensor.FromSlice(cpu, laValues(64, 1), 8, 8)
	var out *tensor.Tensor
	g := laGrad(t, x, cot, func(x *tensor.Tensor) *tensor.Tensor {
		out = tensor.Apply1("dropout", []*tensor.Tensor{x}, op.Attrs{"p": 0.4})
		return out
	})
	ov, xv, cv := out.Float64s(), x.Float64s(), cot.Float64s()
	kept := 0
	for i := range g {
		if ov[i] != 0 {
			kept++
		}
		if math.Abs(g[i]*xv[i]-cv[i]*ov[i]) > 1e-12 {
			t.Fatalf("element %d: grad %v, x %v, cot %v, out %v", i, g[i], xv[i], cv[i], ov[i])
		}
	}
	if kept == 0 || kept == 64 {
		t.Fatalf("kept %d of 64: mask not random", kept)
	}
}

// Reduced precision applies to the backward products too: the gradient of
// a "medium" f32 dot_general is the medium product of the cotangent and the
// other operand, bit for bit, and within bf16 accuracy of the exact one.
func TestDotGeneralGradPrecision(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	f32 := func(v []float64, s ...int) *tensor.Tensor {
		return tensor.Apply1("convert", []*tensor.Tensor{tensor.FromSlice(cpu, v, s...)}, op.Attrs{"dtype": dtype.F32})
	}
	y := f32(laValues(12, 1), 4, 3)
	cot := f32(laValues(6, 2), 2, 3)
	mm := func(p string) op.Attrs {
		return op.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{0}, "precision": p}
	}
	grad := func(p string) []float64 {
		return laGrad(t, f32(laValues(8, 0), 2, 4), cot, func(x *tensor.Tensor) *tensor.Tensor {
			return tensor.Apply1("dot_general", []*tensor.Tensor{x, y}, mm(p))
		})
	}
	medium := grad("medium")
	want := tensor.Apply1("dot_general", []*tensor.Tensor{cot, y}, op.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{1}, "precision": "medium"}).Float64s()
	laEqual(t, "medium", medium, want)
	exact := grad("highest")
	differs := false
	for i := range exact {
		if math.Abs(medium[i]-exact[i]) > 1e-2*(1+math.Abs(exact[i])) {
			t.Fatalf("element %d: medium %v, highest %v", i, medium[i], exact[i])
		}
		differs = differs || medium[i] != exact[i]
	}
	if !differs {
		t.Fatalf("medium gradient equals the highest-precision one: precision not passed through")
	}
}

// layer_norm's direct kernel records its own VJP: bf16 gradients are
// computed in f32 and agree with the f64 ones to bf16 accuracy.
func TestLayerNormGradBF16(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	v := laValues(24, 0)
	cot := laValues(24, 1)
	run := func(dt dtype.DType) []float64 {
		x := tensor.Apply1("convert", []*tensor.Tensor{tensor.FromSlice(cpu, v, 4, 6)}, op.Attrs{"dtype": dt})
		c := tensor.Apply1("convert", []*tensor.Tensor{tensor.FromSlice(cpu, cot, 4, 6)}, op.Attrs{"dtype": dt})
		return laGrad(t, x, c, func(x *tensor.Tensor) *tensor.Tensor {
			out := tensor.Apply1("layer_norm", []*tensor.Tensor{x, nil, nil}, op.Attrs{"normalized_shape": []int{6}})
			if out.GradFn() != "layer_norm" {
				t.Fatalf("layer_norm recorded %q, want its own node", out.GradFn())
			}
			return out
		})
	}
	ref, half := run(dtype.F64), run(dtype.BF16)
	for i := range ref {
		if math.Abs(half[i]-ref[i]) > 3e-2*(1+math.Abs(ref[i])) {
			t.Fatalf("element %d: bf16 %v, f64 %v", i, half[i], ref[i])
		}
	}
}

// VJPs skip the gradients of inputs that do not need one (op.NeedsGrad);
// the ones they compute are the same.
func TestGradMaskSkipsOnlyUnneeded(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	a := op.Attrs{"padding": []int{1}, "stride": []int{2}}
	run := func(wantX bool) []*tensor.Tensor {
		x := tensor.FromSlice(cpu, laValues(2*3*5*5, 0), 2, 3, 5, 5)
		w := tensor.FromSlice(cpu, laValues(4*3*3*3, 1), 4, 3, 3, 3)
		bias := tensor.FromSlice(cpu, laValues(4, 2), 4)
		w.SetRequiresGrad(true)
		x.SetRequiresGrad(wantX)
		out := tensor.Apply1("convolution", []*tensor.Tensor{x, w, bias}, a)
		lb := tensor.FromSlice(cpu, laValues(3, 4), 3)
		y := tensor.Apply1("layer_norm", []*tensor.Tensor{out, nil, lb}, op.Attrs{"normalized_shape": []int{3}})
		cot := tensor.FromSlice(cpu, laValues(y.Numel(), 3), y.Shape()...)
		if wantX {
			return tensor.Grad([]*tensor.Tensor{y}, []*tensor.Tensor{cot}, []*tensor.Tensor{w, x}, false)
		}
		return tensor.Grad([]*tensor.Tensor{y}, []*tensor.Tensor{cot}, []*tensor.Tensor{w}, false)
	}
	both, only := run(true), run(false)
	laEqual(t, "weight gradient", only[0].Float64s(), both[0].Float64s())
	if both[1] == nil {
		t.Fatal("no input gradient")
	}
}
