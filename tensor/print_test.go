package tensor_test

import (
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

func TestString(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	tests := []struct {
		name string
		x    *tensor.Tensor
		want string
	}{
		{"f32 matrix", tensor.FromSlice(cpu, []float32{1, 2.5, 3, 4}, 2, 2), "tensor([[1.0000, 2.5000],\n        [3.0000, 4.0000]])"},
		{"int mode", tensor.FromSlice(cpu, []float32{1, -2, 3}), "tensor([ 1., -2.,  3.])"},
		{"f64 dtype", tensor.FromSlice(cpu, []float64{0.5}), "tensor([0.5000], dtype=torch.float64)"},
		{"i64", tensor.FromSlice(cpu, []int64{1, 20, -3}), "tensor([ 1, 20, -3])"},
		{"i32", tensor.FromSlice(cpu, []int32{7}), "tensor([7], dtype=torch.int32)"},
		{"bool", tensor.FromSlice(cpu, []bool{true, false}), "tensor([ True, False])"},
		{"scalar", tensor.FromSlice(cpu, []float32{1.5}, []int{}...), "tensor(1.5000)"},
		{"sci", tensor.FromSlice(cpu, []float32{1e-5, 1}), "tensor([1.0000e-05, 1.0000e+00])"},
		{"nonfinite", tensor.FromSlice(cpu, []float32{float32(inf()), 1.5}), "tensor([   inf, 1.5000])"},
		{"empty", tensor.FromBytes(cpu, dtype.F32, []int{0, 3}, nil), "tensor([], size=(0, 3))"},
		{"3d", tensor.FromSlice(cpu, []int64{1, 2, 3, 4}, 2, 1, 2), "tensor([[[1, 2]],\n\n        [[3, 4]]])"},
	}
	for _, tt := range tests {
		if got := tt.x.String(); got != tt.want {
			t.Errorf("%s:\ngot  %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func inf() float64 { var z float64; return 1 / z }
