package tensor_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

var elemCPU = tensor.MustDevice("cpu")

// TestElementwiseScalarPromotion checks that Go scalars promote like Python
// numbers: they never widen a tensor of their own category, and a higher
// category gives that category's default.
func TestElementwiseScalarPromotion(t *testing.T) {
	i64 := tensor.FromSlice(elemCPU, []int64{1, 2, 3})
	i32 := tensor.FromSlice(elemCPU, []int32{1, 2, 3})
	u8 := tensor.FromSlice(elemCPU, []uint8{250, 2, 3})
	b := tensor.FromSlice(elemCPU, []bool{true, false, true})
	f16 := tensor.FromSlice(elemCPU, []dtype.Float16{dtype.F16FromF32(1), dtype.F16FromF32(2), dtype.F16FromF32(3)})
	f64 := tensor.FromSlice(elemCPU, []float64{1, 2, 3})
	tests := []struct {
		name string
		got  func() *tensor.Tensor
		dt   dtype.DType
		want []float64
	}{
		{"i64+2 keeps i64", func() *tensor.Tensor { return i64.AddScalar(2) }, dtype.I64, []float64{3, 4, 5}},
		{"i64*2.5 is the default float", func() *tensor.Tensor { return i64.MulScalar(2.5) }, dtype.F32, []float64{2.5, 5, 7.5}},
		{"i32+int keeps i32", func() *tensor.Tensor { return i32.AddScalar(int64(1) << 40) }, dtype.I32, []float64{1, 2, 3}},
		{"u8+10 wraps around", func() *tensor.Tensor { return u8.AddScalar(10) }, dtype.U8, []float64{4, 12, 13}},
		{"u8-1 wraps the scalar", func() *tensor.Tensor { return u8.SubScalar(-1) }, dtype.U8, []float64{251, 3, 4}},
		{"bool+true stays bool", func() *tensor.Tensor { return b.AddScalar(true) }, dtype.Bool, []float64{1, 1, 1}},
		{"bool+1 is i64", func() *tensor.Tensor { return b.AddScalar(1) }, dtype.I64, []float64{2, 1, 2}},
		{"bool*1.5 is the default float", func() *tensor.Tensor { return b.MulScalar(1.5) }, dtype.F32, []float64{1.5, 0, 1.5}},
		{"f16*2.5 keeps f16", func() *tensor.Tensor { return f16.MulScalar(2.5) }, dtype.F16, []float64{2.5, 5, 7.5}},
		{"f64+float32 keeps f64", func() *tensor.Tensor { return f64.AddScalar(float32(0.5)) }, dtype.F64, []float64{1.5, 2.5, 3.5}},
		{"i32/2 is true division", func() *tensor.Tensor { return i32.DivScalar(2) }, dtype.F32, []float64{0.5, 1, 1.5}},
		{"i32 floor_divide 2 stays i32", func() *tensor.Tensor { return i32.FloorDivideScalar(2) }, dtype.I32, []float64{0, 1, 1}},
		{"i64 pow 2 stays i64", func() *tensor.Tensor { return i64.PowScalar(2) }, dtype.I64, []float64{1, 4, 9}},
		{"i64 pow 0.5 is float", func() *tensor.Tensor { return i64.PowScalar(0.5) }, dtype.F32, []float64{1, math.Sqrt2, math.Sqrt(3)}},
		{"2 pow i64 is i64", func() *tensor.Tensor { return tensor.ScalarPow(2, i64) }, dtype.I64, []float64{2, 4, 8}},
		{"exp of i64 is float", func() *tensor.Tensor { return i64.Exp() }, dtype.F32, []float64{math.E, math.Exp(2), math.Exp(3)}},
		{"square of bool is i64", func() *tensor.Tensor { return b.Square() }, dtype.I64, []float64{1, 0, 1}},
		{"clamp i64 with a float bound is float", func() *tensor.Tensor { return i64.Clamp(1.5, nil) }, dtype.F32, []float64{1.5, 2, 3}},
		{"clamp i64 with int bounds stays i64", func() *tensor.Tensor { return i64.Clamp(2, 2) }, dtype.I64, []float64{2, 2, 2}},
		{"clamp u8 with -1 wraps the bound", func() *tensor.Tensor { return u8.ClampMin(-1) }, dtype.U8, []float64{255, 255, 255}},
		{"u8 == 256 compares with the wrapped scalar", func() *tensor.Tensor { return u8.EqScalar(256) }, dtype.Bool, []float64{0, 0, 0}},
		{"i64 == 2.5 compares as float", func() *tensor.Tensor { return i64.EqScalar(2.5) }, dtype.Bool, []float64{0, 0, 0}},
		{"where with two scalars", func() *tensor.Tensor { return tensor.Where(b, tensor.Scalar(1), tensor.Scalar(2.5)) }, dtype.F32, []float64{1, 2.5, 1}},
		{"where keeps the tensor dtype", func() *tensor.Tensor { return tensor.Where(b, u8, tensor.Scalar(7)) }, dtype.U8, []float64{250, 7, 3}},
		{"1 - x", func() *tensor.Tensor { return i64.RSubScalar(1) }, dtype.I64, []float64{0, -1, -2}},
		{"addcmul casts value to int", func() *tensor.Tensor { return i64.Addcmul(i64, i64, 2.5) }, dtype.I64, []float64{3, 10, 21}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.got()
			if got.DType() != tc.dt {
				t.Fatalf("dtype %s, want %s", got.DType(), tc.dt)
			}
			g := got.Float64s()
			for i := range tc.want {
				if math.Abs(g[i]-tc.want[i]) > 1e-6*math.Abs(tc.want[i]) {
					t.Fatalf("values %v, want %v", g, tc.want)
				}
			}
		})
	}
}

func TestElementwiseDefaultDType(t *testing.T) {
	prev := tensor.SetDefaultDType(dtype.F64)
	defer tensor.SetDefaultDType(prev)
	x := tensor.FromSlice(elemCPU, []int32{1, 2})
	for name, got := range map[string]*tensor.Tensor{
		"sqrt":     x.Sqrt(),
		"mul 0.5":  x.MulScalar(0.5),
		"div":      x.Div(x),
		"atan2":    x.Atan2(x),
		"copysign": x.Copysign(x),
	} {
		if got.DType() != dtype.F64 {
			t.Errorf("%s: dtype %s with default f64", name, got.DType())
		}
	}
}

// TestElementwiseInPlaceVersions checks that in-place ops write through
// views, bump the shared storage's version counter once per op, and refuse
// results that cannot be cast or broadcast into the destination.
func TestElementwiseInPlaceVersions(t *testing.T) {
	x := tensor.FromSlice(elemCPU, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	v0 := x.Version()
	y := x.AddInPlace(tensor.FromSlice(elemCPU, []float32{10, 20, 30}))
	if y != x {
		t.Fatal("AddInPlace must return its receiver")
	}
	if got := x.Version(); got != v0+1 {
		t.Fatalf("version %d after one in-place op, want %d", got, v0+1)
	}
	if got := x.Float64s(); !slices.Equal(got, []float64{11, 22, 33, 14, 25, 36}) {
		t.Fatalf("add_: %v", got)
	}
	// A transposed view shares storage and version.
	xt := tensor.Apply1("permute", []*tensor.Tensor{x}, op.Attrs{"dims": []int{1, 0}})
	xt.MulInPlace(tensor.FromSlice(elemCPU, []float32{1, -1}))
	if got := x.Version(); got != v0+2 {
		t.Fatalf("version %d after an in-place op on a view, want %d", got, v0+2)
	}
	if got := x.Float64s(); !slices.Equal(got, []float64{11, 22, 33, -14, -25, -36}) {
		t.Fatalf("mul_ through a transposed view: %v", got)
	}
	steps := []struct {
		name string
		f    func()
		want []float64
	}{
		{"clamp_", func() { x.ClampInPlace(-20, 25) }, []float64{11, 22, 25, -14, -20, -20}},
		{"relu_", func() { x.ReluInPlace() }, []float64{11, 22, 25, 0, 0, 0}},
		{"sub_", func() { x.SubInPlace(tensor.Scalar(1)) }, []float64{10, 21, 24, -1, -1, -1}},
		{"neg_", func() { x.NegInPlace() }, []float64{-10, -21, -24, 1, 1, 1}},
		{"abs_", func() { x.AbsInPlace() }, []float64{10, 21, 24, 1, 1, 1}},
		{"add_ alpha", func() { x.AddAlphaInPlace(tensor.Scalar(1), -2) }, []float64{8, 19, 22, -1, -1, -1}},
		{"div_", func() { x.DivInPlace(tensor.Scalar(2)) }, []float64{4, 9.5, 11, -0.5, -0.5, -0.5}},
		{"lerp_", func() { x.LerpInPlace(tensor.FromSlice(elemCPU, []float32{0}), tensor.Scalar(0.5)) }, []float64{2, 4.75, 5.5, -0.25, -0.25, -0.25}},
		{"addcmul_", func() { x.AddcmulInPlace(x, x, 1) }, []float64{6, 27.3125, 35.75, -0.1875, -0.1875, -0.1875}},
	}
	for i, s := range steps {
		s.f()
		if got := x.Version(); got != v0+3+int64(i) {
			t.Fatalf("%s: version %d, want %d", s.name, got, v0+3+int64(i))
		}
		if got := x.Float64s(); !slices.Equal(got, s.want) {
			t.Fatalf("%s: %v, want %v", s.name, got, s.want)
		}
	}

	errs := []struct {
		name, want string
		f          func()
	}{
		{"int div_", "can't be cast to the desired output type", func() {
			tensor.FromSlice(elemCPU, []int64{1, 2}).DivInPlace(tensor.Scalar(2))
		}},
		{"bool add_ int", "can't be cast to the desired output type", func() {
			tensor.FromSlice(elemCPU, []bool{true}).AddInPlace(tensor.Scalar(1))
		}},
		{"broadcast into a smaller tensor", "doesn't match the broadcast shape", func() {
			tensor.FromSlice(elemCPU, []float32{1, 2, 3}).AddInPlace(tensor.FromSlice(elemCPU, []float32{1, 2, 3, 4, 5, 6}, 2, 3))
		}},
		{"in-place on a scalar", "in-place op on a Go scalar", func() { tensor.Scalar(1.0).AddInPlace(tensor.Scalar(1.0)) }},
	}
	for _, e := range errs {
		err := tensor.Catch(e.f)
		if err == nil || !strings.Contains(err.Error(), e.want) {
			t.Errorf("%s: error %v, want one containing %q", e.name, err, e.want)
		}
	}
	// A refused in-place op leaves the tensor and its version alone.
	z := tensor.FromSlice(elemCPU, []int64{1, 2})
	zv := z.Version()
	_ = tensor.Catch(func() { z.MulInPlace(tensor.Scalar(0.5)) })
	if z.Version() != zv || !slices.Equal(z.Float64s(), []float64{1, 2}) {
		t.Fatalf("refused mul_ changed the tensor: version %d (was %d), %v", z.Version(), zv, z.Float64s())
	}
	// Integer in-place ops with integer results are fine.
	z.MulInPlace(tensor.Scalar(3))
	if z.Version() != zv+1 || !slices.Equal(z.Float64s(), []float64{3, 6}) {
		t.Fatalf("i64 mul_: version %d, %v", z.Version(), z.Float64s())
	}
}

func TestElementwiseErrors(t *testing.T) {
	ints := tensor.FromSlice(elemCPU, []int64{4, 5, 6})
	zeros := tensor.FromSlice(elemCPU, []int64{1, 0, 2})
	tests := []struct {
		name, want string
		f          func()
		sentinel   error
	}{
		{"floor_divide by zero", "ZeroDivisionError", func() { ints.FloorDivide(zeros).Bytes() }, cpu.ErrZeroDivision},
		{"remainder by zero", "ZeroDivisionError", func() { ints.Remainder(zeros).Bytes() }, cpu.ErrZeroDivision},
		{"trunc div by zero", "ZeroDivisionError", func() { ints.DivMode(zeros, "trunc").Bytes() }, cpu.ErrZeroDivision},
		{"negative integer power", "Integers to negative integer powers are not allowed", func() { ints.PowScalar(-1) }, nil},
		{"bad rounding mode", "expected rounding_mode to be one of", func() { ints.DivMode(ints, "round") }, nil},
		{"where needs bool", "expected condition to be a boolean tensor", func() { tensor.Where(ints, ints, ints) }, nil},
		{"clamp without bounds", "at least one of 'min' or 'max'", func() { ints.Clamp(nil, nil) }, nil},
		{"gelu on ints", "not implemented for dtype i64", func() { ints.Gelu() }, nil},
		{"shapes", "not broadcastable", func() { ints.Add(tensor.FromSlice(elemCPU, []int64{1, 2})) }, nil},
	}
	for _, tc := range tests {
		err := tensor.Catch(tc.f)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
			continue
		}
		if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
			t.Errorf("%s: %v does not wrap %v", tc.name, err, tc.sentinel)
		}
	}
	// A negative exponent in a 0-d tensor is fine (base**-1 is 0 for |base| >
	// 1): PyTorch only rejects negative Python-number exponents.
	if got := ints.Pow(tensor.FromSlice(elemCPU, []int64{-1}, []int{}...)).Float64s(); !slices.Equal(got, []float64{0, 0, 0}) {
		t.Errorf("i64 ** tensor(-1) = %v, want zeros", got)
	}
}

// TestElementwiseDirectVsDecomposed runs every composite that has a direct
// CPU kernel on a tensor large enough to take the parallel path, and checks
// the kernel against its decomposition.
func TestElementwiseDirectVsDecomposed(t *testing.T) {
	n := 3*cpu.ParallelThreshold + 7
	xs := make([]float32, n)
	ys := make([]float32, n)
	ws := make([]float32, n)
	for i := range xs {
		// Deterministic values spread over [-6, 6], plus a few specials.
		xs[i] = float32(math.Sin(float64(i)*0.7919) * 6)
		ys[i] = float32(math.Cos(float64(i)*0.3137)*3) + 3.5
		ws[i] = float32(math.Sin(float64(i) * 0.1))
	}
	xs[0], xs[1], xs[2] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
	x := tensor.FromSlice(elemCPU, xs)
	y := tensor.FromSlice(elemCPU, ys)
	w := tensor.FromSlice(elemCPU, ws)
	unit := x.MulScalar(1.0 / 6.5)
	pos := y
	cases := []struct {
		name string
		f    func() *tensor.Tensor
	}{
		{"exp2", x.Exp2}, {"log2", pos.Log2}, {"log10", pos.Log10}, {"asin", unit.Asin}, {"acos", unit.Acos},
		{"atan", x.Atan}, {"sinh", x.Sinh}, {"cosh", x.Cosh}, {"asinh", x.Asinh}, {"acosh", pos.Acosh},
		{"atanh", unit.Atanh}, {"silu", x.Silu}, {"mish", x.Mish}, {"gelu", x.Gelu}, {"gelu tanh", x.GeluTanh},
		{"hardsigmoid", x.Hardsigmoid}, {"hardswish", x.Hardswish}, {"frac", x.Frac}, {"selu", x.Selu},
		{"elu", func() *tensor.Tensor { return x.Elu(0.7) }},
		{"leaky_relu", func() *tensor.Tensor { return x.LeakyRelu(0.1) }},
		{"softplus", func() *tensor.Tensor { return x.Softplus(2, 3) }},
		{"logit", func() *tensor.Tensor { return unit.Abs().LogitEps(0.01) }},
		{"relu", x.Relu}, {"relu6", x.Relu6}, {"hardtanh", func() *tensor.Tensor { return x.Hardtanh(-2, 3) }},
		{"clamp", func() *tensor.Tensor { return x.Clamp(-1.5, 2) }}, {"trunc", x.Trunc},
		{"round", func() *tensor.Tensor { return x.RoundDecimals(2) }},
		{"nan_to_num", func() *tensor.Tensor { return x.NanToNum(0) }},
		{"remainder", func() *tensor.Tensor { return x.Remainder(y) }},
		{"hypot", func() *tensor.Tensor { return x.Hypot(y) }},
		{"copysign", func() *tensor.Tensor { return y.Copysign(x) }},
		{"fmax", func() *tensor.Tensor { return x.Fmax(w) }}, {"fmin", func() *tensor.Tensor { return x.Fmin(w) }},
		{"lerp", func() *tensor.Tensor { return x.Lerp(y, w) }},
		{"lerp scalar", func() *tensor.Tensor { return x.LerpScalar(y, 0.3) }},
		{"addcmul", func() *tensor.Tensor { return x.Addcmul(y, w, 0.5) }},
		{"addcdiv", func() *tensor.Tensor { return x.Addcdiv(w, y, 2) }},
	}
	for _, tc := range cases {
		direct := tc.f().Float64s()
		prev := tensor.SetForceDecompose(true)
		dec := tc.f().Float64s()
		tensor.SetForceDecompose(prev)
		for i := range direct {
			a, b := direct[i], dec[i]
			if math.IsNaN(a) && math.IsNaN(b) || a == b {
				continue
			}
			if math.Abs(a-b) > 1e-5+4e-6*math.Abs(b) {
				t.Errorf("%s[%d] (x=%g): direct %g, decomposed %g", tc.name, i, xs[i], a, b)
				break
			}
		}
	}
}

// Benchmarks of a few hot elementwise ops on 1M f32 elements (no timing is
// asserted; bench/ compares against PyTorch).
func BenchmarkElementwise(b *testing.B) {
	n := 1 << 20
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(math.Sin(float64(i)))
	}
	x := tensor.FromSlice(elemCPU, xs)
	y := x.AddScalar(1.5)
	for _, bc := range []struct {
		name string
		f    func() *tensor.Tensor
	}{
		{"add", func() *tensor.Tensor { return x.Add(y) }},
		{"mul_scalar", func() *tensor.Tensor { return x.MulScalar(0.5) }},
		{"exp", x.Exp},
		{"gelu", x.Gelu},
		{"silu", x.Silu},
		{"where", func() *tensor.Tensor { return tensor.Where(x.GtScalar(0), x, y) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(4 * n))
			for b.Loop() {
				bc.f()
			}
		})
	}
}
