package dtype

import (
	"math"
	"testing"
)

func TestPromote(t *testing.T) {
	tests := []struct{ a, b, want DType }{
		{Bool, Bool, Bool}, {Bool, U8, U8}, {U8, I8, I16}, {I8, U8, I16}, {U8, I16, I16},
		{I32, I64, I64}, {I64, F16, F16}, {F16, BF16, F32}, {BF16, F32, F32}, {F32, F64, F64},
		{Bool, F64, F64}, {I8, BF16, BF16},
	}
	for _, tt := range tests {
		if got := Promote(tt.a, tt.b); got != tt.want {
			t.Errorf("Promote(%v,%v)=%v want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestResultType(t *testing.T) {
	tests := []struct {
		name string
		ops  []Operand
		want DType
	}{
		{"int tensor + wrapped float", []Operand{{I64, 1, false}, {F64, 0, true}}, F32},
		{"f16 tensor + wrapped float", []Operand{{F16, 1, false}, {F64, 0, true}}, F16},
		{"i32 tensor + wrapped int", []Operand{{I32, 1, false}, {I64, 0, true}}, I32},
		{"u8 tensor + 0-d i64", []Operand{{U8, 2, false}, {I64, 0, false}}, U8},
		{"i32 tensor + 0-d f64", []Operand{{I32, 2, false}, {F64, 0, false}}, F64},
		{"f32 tensor + 0-d f64", []Operand{{F32, 2, false}, {F64, 0, false}}, F32},
		{"bool tensor + wrapped bool", []Operand{{Bool, 1, false}, {Bool, 0, true}}, Bool},
		{"bool tensor + wrapped int", []Operand{{Bool, 1, false}, {I64, 0, true}}, I64},
		{"two 0-d", []Operand{{I32, 0, false}, {F64, 0, false}}, F64},
		{"two wrapped", []Operand{{I64, 0, true}, {F64, 0, true}}, F32},
	}
	for _, tt := range tests {
		if got := ResultType(F32, tt.ops...); got != tt.want {
			t.Errorf("%s: got %v want %v", tt.name, got, tt.want)
		}
	}
}

func TestBF16Rounding(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80}, {-2, 0xc000},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie, even stays
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie, odd rounds up
		{math.Float32frombits(0x3f808001), 0x3f81},
		{float32(math.Inf(1)), 0x7f80},
		{math.Float32frombits(0x7f7fffff), 0x7f80}, // max f32 rounds to inf
	}
	for _, tt := range tests {
		if got := uint16(BF16FromF32(tt.in)); got != tt.want {
			t.Errorf("BF16(%v)=%#x want %#x", tt.in, got, tt.want)
		}
	}
	if n := BF16FromF32(float32(math.NaN())).F32(); !math.IsNaN(float64(n)) {
		t.Errorf("NaN became %v", n)
	}
}

func TestF16RoundTrip(t *testing.T) {
	// Every finite f16 converts to f32 and back exactly.
	for i := 0; i < 1<<16; i++ {
		h := Float16(i)
		f := h.F32()
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := F16FromF32(f); back != h {
			t.Fatalf("f16 %#x -> %v -> %#x", i, f, back)
		}
	}
	tests := []struct {
		in   float32
		want uint16
	}{
		{65504, 0x7bff}, {65520, 0x7c00}, {1, 0x3c00}, {5.960464477539063e-08, 0x0001},
		{2.98e-08, 0x0000}, {3.0e-08, 0x0001}, {float32(math.Copysign(0, -1)), 0x8000},
	}
	for _, tt := range tests {
		if got := uint16(F16FromF32(tt.in)); got != tt.want {
			t.Errorf("F16(%v)=%#x want %#x", tt.in, got, tt.want)
		}
	}
}
