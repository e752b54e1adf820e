package cpu

import (
	"math"
	"testing"

	"github.com/gotpu/gotpu/dtype"
)

func TestDivFloor(t *testing.T) {
	f64 := roundTo(dtype.F64)
	f32 := roundTo(dtype.F32)
	tests := []struct {
		a, b, want float64
		r          func(float64) float64
	}{
		{7, 2, 3, f64},
		{-7, 2, -4, f64},
		{7, -2, -4, f64},
		{-7, -2, 3, f64},
		{math.Copysign(0, -1), 3, math.Copysign(0, -1), f64},
		{1, 0, math.Inf(1), f64},
		{-1, 0, math.Inf(-1), f64},
		{5, math.Inf(1), 0, f64},
		{-5, math.Inf(1), -1, f64},
		{math.Inf(1), 2, math.NaN(), f64},
		// 1/0.1f is 9.99999985 exactly but 10 after rounding the quotient in f32.
		{1, float64(float32(0.1)), 9, f32},
		{1, 0.1, 9, f64},
	}
	for _, tc := range tests {
		got := divFloor(tc.a, tc.b, tc.r)
		if math.IsNaN(tc.want) {
			if !math.IsNaN(got) {
				t.Errorf("divFloor(%g, %g) = %g, want NaN", tc.a, tc.b, got)
			}
			continue
		}
		if got != tc.want || math.Signbit(got) != math.Signbit(tc.want) {
			t.Errorf("divFloor(%g, %g) = %g, want %g", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestIntegerKernels(t *testing.T) {
	tests := []struct {
		name       string
		f          func(a, b int64) int64
		a, b, want int64
	}{
		{"ipow", ipow, 3, 4, 81},
		{"ipow zero", ipow, 0, 0, 1},
		{"ipow wraps", ipow, 2, 64, 0},
		{"ipow 1^-5", ipow, 1, -5, 1},
		{"ipow -1^-3", ipow, -1, -3, -1},
		{"ipow -1^-4", ipow, -1, -4, 1},
		{"ipow 2^-1", ipow, 2, -1, 0},
		{"ipow 0^-1", ipow, 0, -1, 0},
		{"floor div", floorDivInt, -7, 2, -4},
		{"floor div exact", floorDivInt, -6, 2, -3},
		{"floor div neg divisor", floorDivInt, 7, -2, -4},
		{"floor div min/-1", floorDivInt, math.MinInt64, -1, math.MinInt64},
		{"remainder", remainderI, -3, 2, 1},
		{"remainder neg divisor", remainderI, 3, -2, -1},
		{"remainder exact", remainderI, -4, 2, 0},
	}
	for _, tc := range tests {
		if got := tc.f(tc.a, tc.b); got != tc.want {
			t.Errorf("%s(%d, %d) = %d, want %d", tc.name, tc.a, tc.b, got, tc.want)
		}
	}
}

func TestFloatHelpers(t *testing.T) {
	tests := []struct {
		name      string
		got, want float64
	}{
		{"logf subnormal", logf(5e-320), -735.2178029785398},
		{"logf min subnormal", logf(math.SmallestNonzeroFloat64), -744.4400719213812},
		{"logf normal", logf(2), math.Ln2},
		{"remainderF", remainderF(-3, 2), 1},
		{"remainderF inf divisor", remainderF(-5, math.Inf(1)), math.Inf(1)},
		{"maxNaN first on ties", math.Copysign(1, maxNaN(math.Copysign(0, -1), 0)), -1},
		{"minNaN first on ties", math.Copysign(1, minNaN(0, math.Copysign(0, -1))), 1},
		{"lerp small weight", lerp(1, 3, 0.25), 1.5},
		{"lerp large weight", lerp(1, 3, 0.75), 2.5},
		{"lerp extrapolates", lerp(1, 3, 2), 5},
		{"elu negative", elu(-1, 1, 2, 3), math.Expm1(-3) * 2},
	}
	for _, tc := range tests {
		if math.Abs(tc.got-tc.want) > 1e-12*math.Abs(tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if !math.IsNaN(maxNaN(1, math.NaN())) || !math.IsNaN(minNaN(math.NaN(), 1)) {
		t.Error("maximum/minimum must propagate NaN")
	}
}

func TestWrapInt(t *testing.T) {
	tests := []struct {
		v    int64
		d    dtype.DType
		want int64
	}{
		{-1, dtype.U8, 255},
		{256, dtype.U8, 0},
		{128, dtype.I8, -128},
		{1 << 40, dtype.I32, 0},
		{-1, dtype.I64, -1},
		{7, dtype.Bool, 1},
	}
	for _, tc := range tests {
		if got := wrapInt(tc.v, tc.d); got != tc.want {
			t.Errorf("wrapInt(%d, %s) = %d, want %d", tc.v, tc.d, got, tc.want)
		}
	}
}
