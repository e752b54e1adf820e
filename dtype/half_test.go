package dtype

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// f16Oracle rounds f to binary16 bits by a search over every finite
// binary16 value in float64 (exact for all of them), nearest with ties to
// the even bit pattern; overflow past the midpoint between the largest
// finite value and 2^16 is infinity. It shares no code with F16FromF32.
type f16Oracle struct{ vals []float64 } // vals[i] = value of bits i, i < 0x7c00

func newF16Oracle() *f16Oracle {
	o := &f16Oracle{vals: make([]float64, 0x7c00)}
	for i := range o.vals {
		e, m := i>>10, i&0x3ff
		if e == 0 {
			o.vals[i] = math.Ldexp(float64(m), -24)
		} else {
			o.vals[i] = math.Ldexp(float64(1024+m), e-25)
		}
	}
	return o
}

func (o *f16Oracle) round(f float32) uint16 {
	x := float64(f)
	var sign uint16
	if math.Signbit(x) {
		sign, x = 0x8000, -x
	}
	if x >= 65520 { // halfway between 65504 and 65536 rounds to even: inf
		return sign | 0x7c00
	}
	i, _ := slices.BinarySearch(o.vals, x) // vals[i-1] < x <= vals[i]
	if i == len(o.vals) {
		i--
	}
	if i > 0 {
		lo, hi := o.vals[i-1], o.vals[i]
		if x-lo < hi-x || (x-lo == hi-x && (i-1)&1 == 0) {
			i--
		}
	}
	return sign | uint16(i)
}

// TestF16FromF32MatchesOracle checks the encoder on edge values, every
// float32 exponent and random bit patterns against f16Oracle, and the
// decoder on every binary16 value.
func TestF16FromF32MatchesOracle(t *testing.T) {
	o := newF16Oracle()
	for h := range 0x7c00 {
		if got := Float16(h).F32(); float64(got) != o.vals[h] {
			t.Fatalf("Float16(%#04x).F32() = %g, want %g", h, got, o.vals[h])
		}
		if got := Float16(h | 0x8000).F32(); float64(got) != -o.vals[h] {
			t.Fatalf("Float16(%#04x).F32() = %g, want %g", h|0x8000, got, -o.vals[h])
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 65504, 65520, 65519.99, 1e9, -1e9,
		6.1035156e-05, 6.1e-05, 5.96e-08, 2.98e-08, 2.99e-08, 1e-30, math.SmallestNonzeroFloat32}
	for range 200000 {
		vals = append(vals, math.Float32frombits(r.Uint32()))
	}
	for h := 0; h+1 < len(o.vals); h++ { // every tie, exact in float32
		mid := float32((o.vals[h] + o.vals[h+1]) / 2)
		vals = append(vals, mid, -mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9))
	}
	for e := -30; e <= 20; e++ {
		for range 200 {
			vals = append(vals, float32(math.Ldexp(r.Float64()*2-1, e)))
		}
	}
	for _, v := range vals {
		got := uint16(F16FromF32(v))
		if math.IsNaN(float64(v)) {
			if got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
				t.Fatalf("F16FromF32(NaN %#08x) = %#04x, not a NaN", math.Float32bits(v), got)
			}
			continue
		}
		if want := o.round(v); got != want {
			t.Fatalf("F16FromF32(%g = %#08x) = %#04x, want %#04x", v, math.Float32bits(v), got, want)
		}
	}
}
