package cpu

import (
	"math"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// TestCmpF32 checks the f32 comparison loops against the float64 ones of
// the generic path, for every comparison, on vector-vector, vector-scalar,
// scalar-vector and strided layouts, with NaN, signed zeros, infinities
// and subnormals.
func TestCmpF32(t *testing.T) {
	vals := []float32{float32(math.NaN()), 0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)),
		1e-45, -1e-45, 3.5, 2, 2, -7}
	n := len(vals)
	x := make([]float32, n)
	y := make([]float32, n)
	for i := range x {
		x[i], y[i] = vals[i], vals[(i*5+3)%n]
	}
	generic := map[string]func(a, b float64) bool{
		"eq": func(a, b float64) bool { return a == b }, "ne": func(a, b float64) bool { return a != b },
		"lt": func(a, b float64) bool { return a < b }, "le": func(a, b float64) bool { return a <= b },
		"gt": func(a, b float64) bool { return a > b }, "ge": func(a, b float64) bool { return a >= b },
	}
	type lay struct {
		name   string
		xl, yl op.Layout
		shape  []int
	}
	lays := []lay{
		{"vv", op.Contiguous([]int{n}), op.Contiguous([]int{n}), []int{n}},
		{"vs", op.Contiguous([]int{n}), op.Layout{Shape: []int{n}, Strides: []int{0}, Offset: 4}, []int{n}},
		{"sv", op.Layout{Shape: []int{n}, Strides: []int{0}, Offset: 2}, op.Contiguous([]int{n}), []int{n}},
		{"strided", op.Layout{Shape: []int{n / 2}, Strides: []int{2}}, op.Layout{Shape: []int{n / 2}, Strides: []int{2}, Offset: 1}, []int{n / 2}},
	}
	for name, ff := range generic {
		for _, l := range lays {
			got := make([]byte, n)
			want := make([]byte, n)
			c := func(out []byte) *Call {
				return &Call{
					Launch: &device.Launch{
						In:  []device.Operand{{DType: dtype.F32, Layout: l.xl}, {DType: dtype.F32, Layout: l.yl}},
						Out: []device.Operand{{DType: dtype.Bool, Layout: op.Contiguous(l.shape)}},
					},
					InB:  [][]byte{f32Bytes(x), f32Bytes(y)},
					OutB: [][]byte{out},
				}
			}
			if !cmpF32(c(got), cmpKinds[op.MustLookup(name)]) {
				t.Fatalf("%s %s: not handled", name, l.name)
			}
			cmpBinary(c(want), ff, nil)
			for i := range l.shape[0] {
				if got[i] != want[i] {
					t.Errorf("%s %s: element %d = %v, want %v", name, l.name, i, got[i], want[i])
				}
			}
		}
	}
}

func f32Bytes(s []float32) []byte {
	b := make([]byte, 4*len(s))
	copy(as[float32](b), s)
	return b
}
