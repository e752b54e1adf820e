package cpu

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// withSlowPools runs f with the pooling kernels on their generic paths.
func withSlowPools(f func()) {
	slowPools = true
	defer func() { slowPools = false }()
	f()
}

// poolInput is a random tensor with a few NaNs and repeated values (ties
// decide which index wins).
func poolInput(dt dtype.DType, seed uint64, shape ...int) *tensor.Tensor {
	g := tensor.NewGenerator(seed)
	x := tensor.RandnGen(g, tensor.MustDevice("cpu"), dtype.F64, shape...)
	v := x.Float64s()
	for i := range v {
		switch i % 13 {
		case 3:
			v[i] = math.NaN()
		case 7, 8:
			v[i] = 0.5
		}
	}
	return tensor.Apply1("convert", []*tensor.Tensor{tensor.FromSlice(tensor.MustDevice("cpu"), v, shape...)}, op.Attrs{"dtype": dt})
}

func sameTensorBytes(t *testing.T, what string, got, want *tensor.Tensor) {
	t.Helper()
	if !slices.Equal(got.Shape(), want.Shape()) || got.DType() != want.DType() {
		t.Fatalf("%s: %s%v, generic %s%v", what, got.DType(), got.Shape(), want.DType(), want.Shape())
	}
	if g, w := got.Bytes(), want.Bytes(); !slices.Equal(g, w) {
		t.Fatalf("%s: the typed path's bytes differ from the generic path's", what)
	}
}

// TestPoolFastPaths: max pooling with indices, reduce_window over the
// trailing dimensions (max and sum) and scatter_reduce sum along the last
// axis give the generic kernels' exact bytes, over padding, dilation,
// strides, ceil mode, NaNs and ties, in f32 and f64.
func TestPoolFastPaths(t *testing.T) {
	pools := []op.Attrs{
		{"kernel_size": []int{2, 2}, "stride": []int{2, 2}},
		{"kernel_size": []int{3, 3}, "stride": []int{1, 1}, "padding": []int{1, 1}},
		{"kernel_size": []int{3, 2}, "stride": []int{2, 1}, "dilation": []int{2, 1}, "ceil_mode": true},
		{"kernel_size": []int{5, 5}, "stride": []int{2, 3}, "padding": []int{2, 1}, "ceil_mode": true},
	}
	shapes := [][]int{{2, 3, 9, 11}, {4, 8, 8}, {1, 1, 28, 28}}
	for _, dt := range []dtype.DType{dtype.F32, dtype.F64} {
		for si, shape := range shapes {
			x := poolInput(dt, uint64(si+1), shape...)
			for pi, a := range pools {
				name := fmt.Sprintf("%s/%v/pool%d", dt, shape, pi)
				r := tensor.Apply("max_pool2d_with_indices", []*tensor.Tensor{x}, a)
				var w []*tensor.Tensor
				withSlowPools(func() { w = tensor.Apply("max_pool2d_with_indices", []*tensor.Tensor{x}, a) })
				sameTensorBytes(t, name+" values", r[0], w[0])
				sameTensorBytes(t, name+" indices", r[1], w[1])
				// The gradient: scatter_add of the output gradient at the indices.
				gy := poolInput(dt, 99, r[0].Shape()...)
				lead := 1
				for _, d := range shape[:len(shape)-2] {
					lead *= d
				}
				plane := shape[len(shape)-2] * shape[len(shape)-1]
				z := tensor.Zeros(tensor.MustDevice("cpu"), dt, lead, plane)
				i2 := r[1].Reshape(lead, -1)
				g2 := gy.Reshape(lead, -1)
				sa := tensor.Apply1("scatter_add", []*tensor.Tensor{z, i2, g2}, op.Attrs{"dim": 1})
				var sw *tensor.Tensor
				withSlowPools(func() { sw = tensor.Apply1("scatter_add", []*tensor.Tensor{z, i2, g2}, op.Attrs{"dim": 1}) })
				sameTensorBytes(t, name+" scatter_add", sa, sw)
			}
			// reduce_window over the trailing dims, max and sum, with padding and dilation.
			r := len(shape)
			ones := func(v int) []int {
				s := make([]int, r)
				for i := range s {
					s[i] = 1
				}
				s[r-2], s[r-1] = v, v
				return s
			}
			zeros := func(lo, hi int) []int {
				s := make([]int, r)
				s[r-2], s[r-1] = lo, hi
				return s
			}
			for _, kind := range []string{"max", "sum"} {
				for wi, a := range []op.Attrs{
					{"kind": kind, "window": ones(3), "strides": ones(2), "dilation": ones(1), "padding_low": zeros(1, 0), "padding_high": zeros(2, 1)},
					// 2x2 stride 2 (pool2x2.go for max), an odd edge dropped or padded.
					{"kind": kind, "window": ones(2), "strides": ones(2), "dilation": ones(1), "padding_low": zeros(0, 0), "padding_high": zeros(0, 0)},
					{"kind": kind, "window": ones(2), "strides": ones(2), "dilation": ones(1), "padding_low": zeros(0, 0), "padding_high": zeros(1, 1)},
				} {
					got := tensor.Apply1("reduce_window", []*tensor.Tensor{x}, a)
					var want *tensor.Tensor
					withSlowPools(func() { want = tensor.Apply1("reduce_window", []*tensor.Tensor{x}, a) })
					sameTensorBytes(t, fmt.Sprintf("%s/%v reduce_window %s window %d", dt, shape, kind, wi), got, want)
				}
			}
		}
	}
}

// TestScatterSumFastErrors: an index out of range is an error naming it,
// as on the generic path.
func TestScatterSumFastErrors(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	z := tensor.Zeros(cpu, dtype.F32, 2, 4)
	idx := tensor.FromSlice(cpu, []int64{0, 1, 4, 2}, 2, 2)
	src := tensor.Ones(cpu, dtype.F32, 2, 2)
	err := tensor.Catch(func() { tensor.Apply1("scatter_add", []*tensor.Tensor{z, idx, src}, op.Attrs{"dim": 1}) })
	if err == nil || !strings.Contains(err.Error(), "out of bounds") {
		t.Fatalf("index 4 of a size-4 axis: %v", err)
	}
}

// BenchmarkPoolCNN times the MNIST CNN's first pooling layer ([64, 6, 28,
// 28], 2x2 stride 2): forward with indices, reduce_window max, and the
// gradient's scatter_add, on the typed and the generic paths.
func BenchmarkPoolCNN(b *testing.B) {
	cpu := tensor.MustDevice("cpu")
	x := poolInput(dtype.F32, 1, 64, 6, 28, 28)
	a := op.Attrs{"kernel_size": []int{2, 2}, "stride": []int{2, 2}}
	r := tensor.Apply("max_pool2d_with_indices", []*tensor.Tensor{x}, a)
	z := tensor.Zeros(cpu, dtype.F32, 384, 784)
	i2, g2 := r[1].Reshape(384, -1), r[0].Reshape(384, -1)
	wa := op.Attrs{"kind": "max", "window": []int{1, 1, 2, 2}, "strides": []int{1, 1, 2, 2}}
	for _, slow := range []bool{false, true} {
		name := "typed"
		if slow {
			name = "generic"
		}
		for _, c := range []struct {
			op string
			f  func()
		}{
			{"max_pool2d_with_indices", func() { tensor.Apply("max_pool2d_with_indices", []*tensor.Tensor{x}, a) }},
			{"reduce_window", func() { tensor.Apply1("reduce_window", []*tensor.Tensor{x}, wa) }},
			{"scatter_add", func() { tensor.Apply1("scatter_add", []*tensor.Tensor{z, i2, g2}, op.Attrs{"dim": 1}) }},
		} {
			b.Run(c.op+"/"+name, func(b *testing.B) {
				slowPools = slow
				defer func() { slowPools = false }()
				for b.Loop() {
					c.f()
				}
			})
		}
	}
}
