package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRoundQ8AndAmax checks the fast rounding and magnitude of the Q8
// quantizers against the formulas they replace (int8(roundf(v)), float
// max of |v|), on ties, near-ties, tiny and extreme values.
func TestRoundQ8AndAmax(t *testing.T) {
	vals := []float32{0, float32(math.Copysign(0, -1)), 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 126.5, -126.5, 127, -127, 127.49998,
		math.Nextafter32(0.5, 0), math.Nextafter32(0.5, 1), -math.Nextafter32(0.5, 0), math.Nextafter32(1.5, 0), math.Nextafter32(1.5, 2),
		1e-30, -1e-30, math.SmallestNonzeroFloat32}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		vals = append(vals, (rng.Float32()*2-1)*127.5)
		vals = append(vals, float32(rng.IntN(255)-127)+0.5*float32(rng.IntN(2)))
	}
	for _, v := range vals {
		if got, want := roundQ8(v), int8(roundf(v)); got != want {
			t.Fatalf("roundQ8(%v) = %d, want %d", v, got, want)
		}
	}
	tests := []struct {
		name string
		x    []float32
	}{
		{"empty", nil},
		{"zeros", []float32{0, float32(math.Copysign(0, -1))}},
		{"mixed", []float32{1, -3, 2.5, -2.9}},
		{"inf", []float32{1, float32(math.Inf(-1)), 3}},
		{"random", vals[:4096]},
	}
	for _, tc := range tests {
		var want float32
		for _, v := range tc.x {
			want = max(want, absf(v))
		}
		if got := amaxOf(tc.x); got != want {
			t.Errorf("%s: amaxOf = %v, want %v", tc.name, got, want)
		}
	}
	if got := amaxOf([]float32{1, float32(math.NaN()), 2}); !math.IsNaN(float64(got)) {
		t.Errorf("amaxOf with a NaN = %v, want NaN", got)
	}
}

// TestQuantizeQ8RowMatchesBlocks checks that activation quantization
// straight into the arrays gives what the reference quantizer's blocks
// decode to: quants, d, s and the quant sums.
func TestQuantizeQ8RowMatchesBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const k = 128
	x := make([]float32, k)
	for i := range x {
		x[i] = (rng.Float32()*2 - 1) * float32(1+i%9)
	}
	x[3], x[40] = 0, 0.5
	clear(x[64:96]) // an all-zero block
	for _, tc := range []struct {
		t   Type
		off int
	}{{Q8_0, 2}, {Q8_1, 4}} {
		a := newActs(tc.t, x, 1, k, nil, 0)
		raw := make([]byte, k/32*tc.t.TypeSize())
		quantizeRow(tc.t, x, raw)
		for b := range k / 32 {
			blk := raw[b*tc.t.TypeSize():]
			if got, want := a.d[b], f16to32(le16(blk)); got != want {
				t.Errorf("%v block %d: d %v, want %v", tc.t, b, got, want)
			}
			if tc.t == Q8_1 {
				if got, want := a.s[b], f16to32(le16(blk[2:])); got != want {
					t.Errorf("%v block %d: s %v, want %v", tc.t, b, got, want)
				}
			}
			var sum int32
			for j := range 32 {
				q := int8(blk[tc.off+j])
				sum += int32(q)
				if a.qs[b*32+j] != q {
					t.Fatalf("%v block %d quant %d: %d, want %d", tc.t, b, j, a.qs[b*32+j], q)
				}
			}
			if a.isum[b] != sum {
				t.Errorf("%v block %d: isum %d, want %d", tc.t, b, a.isum[b], sum)
			}
		}
		a.release()
	}
}
