package tensor_test

import (
	"math"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// End-to-end gradients of the index and shape groups through Backward, for
// the geometries the golden cases do not reach: overlapping as_strided
// windows over strided, offset and expanded inputs, boolean-mask index_put,
// broadcasting masked_scatter, indices smaller than src, and multi-output
// splits. Each case is checked against central finite differences in f64.

type indexGradCase struct {
	name   string
	inputs [][]float64
	shapes [][]int
	fn     func(cpu device.Device, xs []*tensor.Tensor) *tensor.Tensor
}

// checkFiniteDiff compares the gradients of sum(fn(xs) * w) (w fixed and
// irregular) with central differences.
func checkFiniteDiff(t *testing.T, c indexGradCase) {
	t.Helper()
	cpu := tensor.MustDevice("cpu")
	leaves := func(vals [][]float64) []*tensor.Tensor {
		xs := make([]*tensor.Tensor, len(vals))
		for i, v := range vals {
			xs[i] = tensor.FromSlice(cpu, v, c.shapes[i]...)
		}
		return xs
	}
	xs := leaves(c.inputs)
	for _, x := range xs {
		x.SetRequiresGrad(true)
	}
	out := c.fn(cpu, xs)
	w := make([]float64, out.Numel())
	for i := range w {
		w[i] = math.Sin(float64(3*i+1)) + 0.25
	}
	wt := tensor.FromSlice(cpu, w, out.Shape()...)
	grads := tensor.Grad([]*tensor.Tensor{out}, []*tensor.Tensor{wt}, xs, false)
	f := func(vals [][]float64) float64 {
		var s float64
		tensor.NoGrad(func() {
			o := c.fn(cpu, leaves(vals)).Float64s()
			for i := range o {
				s += o[i] * w[i]
			}
		})
		return s
	}
	const eps = 1e-6
	for i := range c.inputs {
		var g []float64
		if grads[i] != nil {
			g = grads[i].Float64s()
		} else {
			g = make([]float64, len(c.inputs[i]))
		}
		for j := range c.inputs[i] {
			pert := func(d float64) float64 {
				vals := make([][]float64, len(c.inputs))
				for k := range vals {
					vals[k] = append([]float64(nil), c.inputs[k]...)
				}
				vals[i][j] += d
				return f(vals)
			}
			num := (pert(eps) - pert(-eps)) / (2 * eps)
			if math.Abs(num-g[j]) > 1e-6+1e-6*math.Abs(num) {
				t.Errorf("%s: input %d element %d: analytical %v, numerical %v (grad %v)", c.name, i, j, g[j], num, g)
				return
			}
		}
	}
}

func seq(n int, scale float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = scale * (math.Cos(float64(2*i+1)) + float64(i%3)*0.5)
	}
	return v
}

func TestIndexGroupGradients(t *testing.T) {
	i64 := func(cpu device.Device, v []int64, shape ...int) *tensor.Tensor {
		return tensor.FromSlice(cpu, v, shape...)
	}
	mask := func(cpu device.Device, v []bool, shape ...int) *tensor.Tensor {
		return tensor.FromSlice(cpu, v, shape...)
	}
	m34 := []bool{true, false, false, true, false, false, false, false, true, true, false, true} // 5 true
	cases := []indexGradCase{
		{"as_strided sliding windows", [][]float64{seq(6, 1)}, [][]int{{6}},
			func(_ device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return x[0].AsStrided([]int{4, 3}, []int{1, 1}, 0)
			}},
		{"as_strided over a transposed view", [][]float64{seq(12, 1)}, [][]int{{3, 4}},
			func(_ device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return x[0].T().AsStrided([]int{2, 5}, []int{3, 1}, 1)
			}},
		{"as_strided over an offset view", [][]float64{seq(10, 1)}, [][]int{{10}},
			func(_ device.Device, x []*tensor.Tensor) *tensor.Tensor {
				// Storage 3..7 lies inside the view (2..7); storage outside the
				// input's view gets no gradient, as in PyTorch.
				return x[0].Narrow(0, 2, 6).AsStrided([]int{3, 2}, []int{1, 2}, 3)
			}},
		{"as_strided over an expanded (self-overlapping) input", [][]float64{seq(3, 1)}, [][]int{{3}},
			func(_ device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return x[0].Reshape(1, 3).Expand(2, 3).AsStrided([]int{2, 2}, []int{1, 1}, 0)
			}},
		{"as_strided with stride-0 and size-1 output dims", [][]float64{seq(5, 1)}, [][]int{{5}},
			func(_ device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return x[0].AsStrided([]int{3, 1, 2}, []int{0, 7, 2}, 1)
			}},
		{"index_put mask, values per selected element", [][]float64{seq(12, 1), seq(5, 2)}, [][]int{{3, 4}, {5}},
			func(cpu device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return x[0].IndexPut([]*tensor.Tensor{mask(cpu, m34, 3, 4)}, x[1], false)
			}},
		{"index_put row mask, rows of values", [][]float64{seq(12, 1), seq(8, 2)}, [][]int{{3, 4}, {2, 4}},
			func(cpu device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return x[0].IndexPut([]*tensor.Tensor{mask(cpu, []bool{true, false, true}, 3)}, x[1], false)
			}},
		{"index_put row mask, one row broadcast", [][]float64{seq(12, 1), seq(4, 2)}, [][]int{{3, 4}, {4}},
			func(cpu device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return x[0].IndexPut([]*tensor.Tensor{mask(cpu, []bool{true, false, true}, 3)}, x[1], true)
			}},
		{"index_put None then mask, values per element", [][]float64{seq(24, 1), seq(5, 2)}, [][]int{{2, 3, 4}, {5}},
			func(cpu device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return x[0].IndexPut([]*tensor.Tensor{nil, mask(cpu, m34, 3, 4)}, x[1], false)
			}},
		{"index_put None then mask, values broadcast over the mask", [][]float64{seq(24, 1), seq(2, 2)}, [][]int{{2, 3, 4}, {2, 1}},
			func(cpu device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return x[0].IndexPut([]*tensor.Tensor{nil, mask(cpu, m34, 3, 4)}, x[1], true)
			}},
		{"index_put mask with an integer index", [][]float64{seq(12, 1), seq(2, 2)}, [][]int{{3, 4}, {2}},
			func(cpu device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return x[0].IndexPut([]*tensor.Tensor{mask(cpu, []bool{false, true, true}, 3), i64(cpu, []int64{3, 0}, 2)}, x[1], false)
			}},
		{"index with duplicates and None", [][]float64{seq(12, 1)}, [][]int{{3, 4}},
			func(cpu device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return tensor.Apply1("index", []*tensor.Tensor{x[0], nil, i64(cpu, []int64{1, 1, -1, 0}, 2, 2)}, nil)
			}},
		{"masked_scatter broadcasting input and mask", [][]float64{seq(3, 1), seq(12, 2)}, [][]int{{3, 1}, {2, 6}},
			func(cpu device.Device, x []*tensor.Tensor) *tensor.Tensor {
				m := mask(cpu, []bool{true, false, false, true, true, true, false, false, true, false, true, true}, 2, 3, 2)
				return x[0].MaskedScatter(m, x[1])
			}},
		{"masked_select broadcasting", [][]float64{seq(3, 1)}, [][]int{{3, 1}},
			func(cpu device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return x[0].MaskedSelect(mask(cpu, []bool{true, false, true, true}, 4))
			}},
		{"scatter with an index smaller than src", [][]float64{seq(8, 1), seq(10, 2)}, [][]int{{2, 4}, {2, 5}},
			func(cpu device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return tensor.Apply1("scatter", []*tensor.Tensor{x[0], i64(cpu, []int64{2, 0, 1, 3}, 2, 2), x[1]}, op.Attrs{"dim": 1})
			}},
		{"scatter_reduce prod with zeros, index smaller than src", [][]float64{{1.5, 0, -2, 0.5}, {0, 2, 3, 0, 0, -1.25, 4}}, [][]int{{4}, {7}},
			func(cpu device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return tensor.Apply1("scatter_reduce", []*tensor.Tensor{x[0], i64(cpu, []int64{0, 0, 1, 2, 2, 3}, 6), x[1]},
					op.Attrs{"dim": 0, "reduce": "prod"})
			}},
		{"scatter_reduce mean without self", [][]float64{seq(4, 1), seq(6, 2)}, [][]int{{4}, {6}},
			func(cpu device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return tensor.Apply1("scatter_reduce", []*tensor.Tensor{x[0], i64(cpu, []int64{0, 0, 1, 3, 3, 3}, 6), x[1]},
					op.Attrs{"dim": 0, "reduce": "mean", "include_self": false})
			}},
		{"unbind, some pieces unused", [][]float64{seq(15, 1)}, [][]int{{5, 3}},
			func(_ device.Device, x []*tensor.Tensor) *tensor.Tensor {
				p := x[0].Unbind(0)
				return tensor.Apply1("cat", []*tensor.Tensor{p[3], p[1], p[3]}, op.Attrs{"dim": 0})
			}},
		{"chunk", [][]float64{seq(15, 1)}, [][]int{{3, 5}},
			func(_ device.Device, x []*tensor.Tensor) *tensor.Tensor {
				p := tensor.Apply("chunk", []*tensor.Tensor{x[0]}, op.Attrs{"chunks": 2, "dim": 1})
				return p[1]
			}},
		{"repeat_interleave with tensor repeats and a zero", [][]float64{seq(6, 1)}, [][]int{{3, 2}},
			func(cpu device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return tensor.Apply1("repeat_interleave", []*tensor.Tensor{x[0], i64(cpu, []int64{2, 0, 3}, 3)}, op.Attrs{"dim": 0, "output_size": 5})
			}},
		{"pad_nd cropping with interior", [][]float64{seq(12, 1)}, [][]int{{3, 4}},
			func(_ device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return tensor.Apply1("pad_nd", []*tensor.Tensor{x[0]}, op.Attrs{"low": []int{-1, 2}, "high": []int{2, -3}, "interior": []int{1, 2}})
			}},
		{"index_select as an embedding lookup", [][]float64{seq(12, 1)}, [][]int{{4, 3}},
			func(cpu device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return tensor.Apply1("index_select", []*tensor.Tensor{x[0], i64(cpu, []int64{3, 0, 3, 3, 1}, 5)}, op.Attrs{"dim": 0})
			}},
		{"masked_fill with a tensor value", [][]float64{seq(6, 1), {0.75}}, [][]int{{2, 3}, {}},
			func(cpu device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return tensor.Apply1("masked_fill", []*tensor.Tensor{x[0], mask(cpu, []bool{true, false, true}, 3), x[1]}, nil)
			}},
		{"roll over two dims", [][]float64{seq(12, 1)}, [][]int{{3, 4}},
			func(_ device.Device, x []*tensor.Tensor) *tensor.Tensor {
				return tensor.Apply1("roll", []*tensor.Tensor{x[0]}, op.Attrs{"shifts": []int{1, -3}, "dims": []int{0, 1}})
			}},
		{"movedim and transpose chain", [][]float64{seq(24, 1)}, [][]int{{2, 3, 4}},
			func(_ device.Device, x []*tensor.Tensor) *tensor.Tensor {
				y := tensor.Apply1("movedim", []*tensor.Tensor{x[0]}, op.Attrs{"source": []int{0, 1}, "destination": []int{2, 0}})
				return y.Transpose(0, 1).Narrow(1, 1, 2)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkFiniteDiff(t, c) })
	}
}

// TestAsStridedOverlapCounts checks the accumulated gradient of overlapping
// windows exactly: each element gets one unit per window that covers it.
func TestAsStridedOverlapCounts(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	x := tensor.FromSlice(cpu, seq(6, 1), 6).SetRequiresGrad(true)
	y := x.AsStrided([]int{4, 3}, []int{1, 1}, 0)
	y.BackwardWith(tensor.BackwardOpts{Gradient: tensor.FromSlice(cpu, []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 4, 3)})
	want := []float64{1, 2, 3, 3, 2, 1}
	got := x.Grad().Float64s()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("grad %v, want %v", got, want)
		}
	}
}
