package sample

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func TestExpNeg(t *testing.T) {
	if expNeg(0) != 1 {
		t.Fatalf("expNeg(0) = %v", expNeg(0))
	}
	for _, x := range []float64{math.Inf(-1), math.NaN(), -746, -1e308} {
		if got := expNeg(x); got != 0 {
			t.Errorf("expNeg(%v) = %v, want 0", x, got)
		}
	}
	r := rand.New(rand.NewPCG(1, 1))
	worst := 0.0
	check := func(x float64) {
		got, want := expNeg(x), math.Exp(x)
		if want < 0x1p-1022 { // subnormal: absolute error in ulps of the smallest normal
			if math.Abs(got-want) > 4*0x1p-1074 {
				t.Fatalf("expNeg(%v) = %v, math.Exp %v", x, got, want)
			}
			return
		}
		rel := math.Abs(got-want) / want
		worst = max(worst, rel)
		if rel > 1e-15 {
			t.Fatalf("expNeg(%v) = %v, math.Exp %v (rel %g)", x, got, want, rel)
		}
	}
	for range 200000 {
		check(-r.Float64() * 30)
		check(-r.Float64() * 745)
		check(-r.Float64() * 1e-3)
	}
	for k := -8 * 1076; k <= 0; k++ { // reduction boundaries
		x := float64(k) * math.Ln2 / 8
		check(x)
		check(math.Nextafter(x, 0))
		check(math.Nextafter(x, -1e9))
	}
	t.Logf("worst relative error vs math.Exp: %.3g", worst)
}

// exact returns the float32 nearest to the exact sum of ps.
func exactF32(ps []float32) float32 {
	s := new(big.Float).SetPrec(2000)
	for _, p := range ps {
		s.Add(s, new(big.Float).SetFloat64(float64(p)))
	}
	f, _ := s.Float32()
	return f
}

func TestWideSum(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	gen := func() float32 {
		switch r.IntN(6) {
		case 0:
			return math.Float32frombits(r.Uint32N(1 << 23)) // subnormal
		case 1:
			return 1
		case 2:
			return 0
		case 3:
			return math.Float32frombits(r.Uint32N(0x3f800000)) // any in [0, 1)
		}
		return float32(math.Exp(-r.Float64() * 20))
	}
	for it := range 3000 {
		n := 1 + r.IntN(50)
		if it%100 == 0 {
			n = 5000
		}
		ps := make([]float32, n)
		for i := range ps {
			ps[i] = gen()
		}
		var w wideSum
		var h expHist
		for i, p := range ps {
			w.add(p)
			h.add(p)
			if i < 5 || i == n-1 {
				if got, want := w.float32(), exactF32(ps[:i+1]); got != want {
					t.Fatalf("running sum of %v = %v, want %v", ps[:i+1], got, want)
				}
			}
		}
		var f wideSum
		h.fold(&f)
		if f != w {
			t.Fatalf("expHist fold %v != wideSum %v", f, w)
		}
	}
	// Ties to even: 1 + 2^-24 rounds to 1, 1 + 3·2^-24 rounds up.
	var w wideSum
	w.add(1)
	w.add(0x1p-24)
	if w.float32() != 1 {
		t.Errorf("1 + 2^-24 = %v, want 1", w.float32())
	}
	w.add(0x1p-23)
	if got, want := w.float32(), float32(1+0x1p-22); got != want {
		t.Errorf("1 + 3·2^-24 = %v, want %v", got, want)
	}
}

func TestSortKey(t *testing.T) {
	vals := []float32{float32(math.Inf(-1)), -3e38, -1, -1e-45, 0, 1e-45, 1, 3e38, float32(math.Inf(1))}
	for i := range vals {
		if fromSortKey(sortKey(vals[i])) != vals[i] {
			t.Errorf("round trip of %v", vals[i])
		}
		if i > 0 && !(sortKey(vals[i-1]) < sortKey(vals[i])) {
			t.Errorf("key order %v !< %v", vals[i-1], vals[i])
		}
	}
	if sortKey(float32(math.Copysign(0, -1))) != sortKey(0) {
		t.Errorf("-0 and +0 have different keys")
	}
}
