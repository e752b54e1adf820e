package safetensors

import (
	"errors"
	"math"
	"testing"
)

func TestDTypeNamesAndSizes(t *testing.T) {
	tests := []struct {
		name string
		dt   DType
		bits int
		size int
		flt  bool
	}{
		{"BOOL", Bool, 8, 1, false},
		{"F4", F4, 4, 0, true},
		{"F6_E2M3", F6E2M3, 6, 0, true},
		{"F6_E3M2", F6E3M2, 6, 0, true},
		{"U8", U8, 8, 1, false},
		{"I8", I8, 8, 1, false},
		{"F8_E5M2", F8E5M2, 8, 1, true},
		{"F8_E4M3", F8E4M3, 8, 1, true},
		{"F8_E8M0", F8E8M0, 8, 1, true},
		{"F8_E4M3FNUZ", F8E4M3FNUZ, 8, 1, true},
		{"F8_E5M2FNUZ", F8E5M2FNUZ, 8, 1, true},
		{"I16", I16, 16, 2, false},
		{"U16", U16, 16, 2, false},
		{"F16", F16, 16, 2, true},
		{"BF16", BF16, 16, 2, true},
		{"I32", I32, 32, 4, false},
		{"U32", U32, 32, 4, false},
		{"F32", F32, 32, 4, true},
		{"C64", C64, 64, 8, true},
		{"F64", F64, 64, 8, true},
		{"I64", I64, 64, 8, false},
		{"U64", U64, 64, 8, false},
	}
	if len(tests) != len(DTypes()) {
		t.Fatalf("table has %d dtypes, DTypes() has %d", len(tests), len(DTypes()))
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDType(tc.name)
			if err != nil || got != tc.dt {
				t.Fatalf("ParseDType(%q) = %v, %v; want %v", tc.name, got, err, tc.dt)
			}
			if DTypes()[i] != tc.dt {
				t.Errorf("DTypes()[%d] = %v, want %v (reference order)", i, DTypes()[i], tc.dt)
			}
			if tc.dt.String() != tc.name || tc.dt.Bits() != tc.bits || tc.dt.Size() != tc.size || tc.dt.IsFloat() != tc.flt {
				t.Errorf("%v: String %q Bits %d Size %d IsFloat %v", tc.dt, tc.dt.String(), tc.dt.Bits(), tc.dt.Size(), tc.dt.IsFloat())
			}
			var back DType
			if err := back.UnmarshalText([]byte(tc.name)); err != nil || back != tc.dt {
				t.Errorf("UnmarshalText(%q) = %v, %v", tc.name, back, err)
			}
		})
	}
	for _, bad := range []string{"", "f32", "FLOAT32", "F128", "INVALID"} {
		if _, err := ParseDType(bad); !errors.Is(err, ErrDType) || !errors.Is(err, ErrFormat) {
			t.Errorf("ParseDType(%q) error = %v, want ErrDType", bad, err)
		}
	}
	if Invalid.Valid() || DType(200).Valid() || DType(200).Bits() != 0 {
		t.Error("invalid dtypes reported as valid")
	}
}

func TestF16Exhaustive(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := F16ToFloat32(uint16(h))
		// Reference value from the definition of binary16.
		sign := 1.0
		if h&0x8000 != 0 {
			sign = -1
		}
		e, m := (h>>10)&0x1f, h&0x3ff
		var want float64
		switch {
		case e == 0:
			want = sign * math.Ldexp(float64(m), -24)
		case e == 31 && m == 0:
			want = math.Inf(int(sign))
		case e == 31:
			if !math.IsNaN(float64(f)) {
				t.Fatalf("F16ToFloat32(%#04x) = %v, want NaN", h, f)
			}
			continue
		default:
			want = sign * math.Ldexp(float64(1024+m), e-25)
		}
		if float64(f) != want || math.Signbit(float64(f)) != (sign < 0) {
			t.Fatalf("F16ToFloat32(%#04x) = %v, want %v", h, f, want)
		}
		if back := Float32ToF16(f); back != uint16(h) {
			t.Fatalf("Float32ToF16(%v) = %#04x, want %#04x", f, back, h)
		}
	}
}

func TestFloat32ToF16Rounding(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3c00},
		{65504, 0x7bff},
		{65520, 0x7c00},                           // rounds up to Inf
		{65519.996, 0x7bff},                       // just below the halfway point
		{float32(math.Ldexp(1, -24)), 0x0001},     // smallest subnormal
		{float32(math.Ldexp(1, -25)), 0x0000},     // halfway to zero: ties to even (0)
		{float32(math.Ldexp(1.5, -25)), 0x0001},   // above halfway
		{float32(math.Ldexp(3, -25)), 0x0002},     // 1.5 ulp: ties to even (2)
		{float32(1 + math.Ldexp(1, -11)), 0x3c00}, // tie, even stays
		{float32(1 + 3*math.Ldexp(1, -11)), 0x3c02},
		{float32(math.Inf(-1)), 0xfc00},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1e-30, 0},
		{float32(math.Ldexp(2047, -25)), 0x0400}, // rounds up into the smallest normal
	}
	for _, tc := range tests {
		if got := Float32ToF16(tc.in); got != tc.want {
			t.Errorf("Float32ToF16(%g) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
	if h := Float32ToF16(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("Float32ToF16(NaN) = %#04x, not a NaN", h)
	}
}

func TestBF16(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80},
		{-2, 0xc000},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie, even stays
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie, odd rounds up
		{math.Float32frombits(0x3f808001), 0x3f81},
		{math.Float32frombits(0x7f7fffff), 0x7f80}, // max float rounds to Inf
		{float32(math.Inf(1)), 0x7f80},
	}
	for _, tc := range tests {
		if got := Float32ToBF16(tc.in); got != tc.want {
			t.Errorf("Float32ToBF16(%#08x) = %#04x, want %#04x", math.Float32bits(tc.in), got, tc.want)
		}
	}
	for h := 0; h < 1<<16; h++ {
		f := BF16ToFloat32(uint16(h))
		if math.IsNaN(float64(f)) {
			if b := Float32ToBF16(f); b&0x7f80 != 0x7f80 || b&0x7f == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, b)
			}
			continue
		}
		if b := Float32ToBF16(f); b != uint16(h) {
			t.Fatalf("BF16 %#04x -> %v -> %#04x", h, f, b)
		}
	}
}

func TestFloat8(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		fn   func(uint8) float32
		in   uint8
		want float64
	}{
		{"e4m3 one", F8E4M3ToFloat32, 0x38, 1},
		{"e4m3 max", F8E4M3ToFloat32, 0x7e, 448},
		{"e4m3 nan", F8E4M3ToFloat32, 0x7f, nan},
		{"e4m3 -nan", F8E4M3ToFloat32, 0xff, nan},
		{"e4m3 min sub", F8E4M3ToFloat32, 0x01, math.Ldexp(1, -9)},
		{"e4m3 -1.5", F8E4M3ToFloat32, 0xbc, -1.5},
		{"e5m2 one", F8E5M2ToFloat32, 0x3c, 1},
		{"e5m2 max", F8E5M2ToFloat32, 0x7b, 57344},
		{"e5m2 inf", F8E5M2ToFloat32, 0x7c, math.Inf(1)},
		{"e5m2 -inf", F8E5M2ToFloat32, 0xfc, math.Inf(-1)},
		{"e5m2 nan", F8E5M2ToFloat32, 0x7d, nan},
		{"e5m2 min sub", F8E5M2ToFloat32, 0x01, math.Ldexp(1, -16)},
		{"e4m3fnuz one", F8E4M3FNUZToFloat32, 0x40, 1},
		{"e4m3fnuz max", F8E4M3FNUZToFloat32, 0x7f, 240},
		{"e4m3fnuz nan", F8E4M3FNUZToFloat32, 0x80, nan},
		{"e5m2fnuz one", F8E5M2FNUZToFloat32, 0x40, 1},
		{"e5m2fnuz max", F8E5M2FNUZToFloat32, 0x7f, 57344},
		{"e5m2fnuz nan", F8E5M2FNUZToFloat32, 0x80, nan},
		{"e8m0 one", F8E8M0ToFloat32, 127, 1},
		{"e8m0 min", F8E8M0ToFloat32, 0, math.Ldexp(1, -127)},
		{"e8m0 max", F8E8M0ToFloat32, 254, math.Ldexp(1, 127)},
		{"e8m0 nan", F8E8M0ToFloat32, 255, nan},
	}
	for _, tc := range tests {
		got := float64(tc.fn(tc.in))
		if math.IsNaN(tc.want) {
			if !math.IsNaN(got) {
				t.Errorf("%s: got %v, want NaN", tc.name, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDecodeEncode(t *testing.T) {
	vals := []float32{0, 1, -2.5, 65504, 3.1415927}
	for _, dt := range []DType{F32, F64, F16, BF16} {
		b, err := EncodeFloat32(dt, vals)
		if err != nil {
			t.Fatalf("EncodeFloat32(%v): %v", dt, err)
		}
		if len(b) != dt.Size()*len(vals) {
			t.Fatalf("EncodeFloat32(%v) gave %d bytes", dt, len(b))
		}
		got, err := DecodeFloat32(dt, b)
		if err != nil {
			t.Fatalf("DecodeFloat32(%v): %v", dt, err)
		}
		for i, v := range vals {
			tol := 0.0
			if dt == BF16 {
				tol = math.Abs(float64(v)) / 128
			} else if dt == F16 {
				tol = math.Abs(float64(v)) / 1024
			}
			if math.Abs(float64(got[i]-v)) > tol {
				t.Errorf("%v: element %d = %v, want %v", dt, i, got[i], v)
			}
		}
	}
	ints := []struct {
		dt   DType
		data []byte
		want []float64
	}{
		{I8, []byte{0xff, 0x7f}, []float64{-1, 127}},
		{U16, []byte{0xff, 0xff}, []float64{65535}},
		{I32, []byte{0xfe, 0xff, 0xff, 0xff}, []float64{-2}},
		{I64, []byte{0, 0, 0, 0, 0, 0, 0, 0x80}, []float64{math.MinInt64}},
		{Bool, []byte{0, 1, 2}, []float64{0, 1, 1}},
	}
	for _, tc := range ints {
		got, err := DecodeFloat64(tc.dt, tc.data)
		if err != nil {
			t.Fatalf("DecodeFloat64(%v): %v", tc.dt, err)
		}
		for i := range tc.want {
			if got[i] != tc.want[i] {
				t.Errorf("DecodeFloat64(%v)[%d] = %v, want %v", tc.dt, i, got[i], tc.want[i])
			}
		}
	}
	for _, dt := range []DType{C64, F4, F6E2M3, Invalid} {
		if _, err := DecodeFloat64(dt, make([]byte, 8)); !errors.Is(err, ErrDType) {
			t.Errorf("DecodeFloat64(%v) error = %v, want ErrDType", dt, err)
		}
	}
	if _, err := DecodeFloat32(F32, make([]byte, 6)); !errors.Is(err, ErrShape) {
		t.Errorf("DecodeFloat32 of 6 bytes: %v, want ErrShape", err)
	}
	if _, err := EncodeFloat32(I32, vals); !errors.Is(err, ErrDType) {
		t.Errorf("EncodeFloat32(I32): %v, want ErrDType", err)
	}
}
