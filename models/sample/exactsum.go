package sample

import (
	"math"
	"math/bits"
)

// The top-p cut compares running sums of float32 probabilities with a
// float32 threshold. To make that cut a property of the probabilities alone,
// independent of the order in which the fast path happens to add them, sums
// are exact: every non-negative float32 is an integer multiple of 2^-149, and
// a sum of up to 2^31 float32 values no larger than 1 fits in 192 bits of
// fixed point. The sum is rounded to float32 (to nearest, ties to even) only
// when it is compared. transformers accumulates torch.cumsum in float64 and
// rounds each prefix to float32, which agrees with this except when a prefix
// lies within about 1e-16 of a float32 rounding midpoint.

// wideSum is an exact sum of non-negative float32 values in units of 2^-149.
type wideSum struct{ l [3]uint64 }

// addShifted adds v·2^sh (in units) to s.
func (s *wideSum) addShifted(v uint64, sh uint) {
	limb, off := sh>>6, sh&63
	lo := v << off
	hi := v >> (64 - off) // 0 when off == 0
	var c uint64
	s.l[limb], c = bits.Add64(s.l[limb], lo, 0)
	if limb+1 < 3 {
		s.l[limb+1], c = bits.Add64(s.l[limb+1], hi, c)
		if limb+2 < 3 {
			s.l[limb+2] += c
		}
	}
}

// f32parts splits a finite non-negative float32 into v·2^sh units of 2^-149.
func f32parts(p float32) (v uint64, sh uint) {
	b := math.Float32bits(p)
	e := b >> 23 & 0xff
	m := uint64(b & (1<<23 - 1))
	if e == 0 {
		return m, 0
	}
	return m | 1<<23, uint(e - 1)
}

// add adds a finite float32 in [0, 1].
func (s *wideSum) add(p float32) {
	v, sh := f32parts(p)
	s.addShifted(v, sh)
}

// window returns bits [lo, lo+64) of s (lo ≥ 0).
func (s *wideSum) window(lo int) uint64 {
	j, off := lo>>6, uint(lo)&63
	var w uint64
	if j < 3 {
		w = s.l[j] >> off
	}
	if off != 0 && j+1 < 3 {
		w |= s.l[j+1] << (64 - off)
	}
	return w
}

// anyBelow reports whether any bit below position i is set.
func (s *wideSum) anyBelow(i int) bool {
	for j := 0; j < 3 && j*64 < i; j++ {
		w := s.l[j]
		if n := i - j*64; n < 64 {
			w &= 1<<uint(n) - 1
		}
		if w != 0 {
			return true
		}
	}
	return false
}

// float32 returns s rounded to the nearest float32, ties to even.
func (s *wideSum) float32() float32 {
	h := -1
	for j := 2; j >= 0; j-- {
		if s.l[j] != 0 {
			h = j*64 + 63 - bits.LeadingZeros64(s.l[j])
			break
		}
	}
	if h < 0 {
		return 0
	}
	q := max(h-23, 0) // position of the float32 quantum (units of 2^-149)
	m := s.window(q) & (1<<uint(h-q+1) - 1)
	if q > 0 && s.window(q-1)&1 == 1 && (m&1 == 1 || s.anyBelow(q-1)) {
		m++
	}
	// m ≤ 2^24 and the exponent is in float32 range, so both conversions
	// below are exact.
	return float32(float64(m) * math.Ldexp(1, q-149))
}

// expHist sums many float32 values exactly and cheaply: mantissas are added
// per exponent (each fits 24 bits, so 2^31 of them fit a uint64) and folded
// into a wideSum once at the end.
type expHist struct{ m [255]uint64 }

func (h *expHist) reset() { h.m = [255]uint64{} }

// add adds a finite float32 in [0, 1].
func (h *expHist) add(p float32) {
	b := math.Float32bits(p)
	e := b >> 23 & 0xff
	m := uint64(b & (1<<23 - 1))
	if e != 0 {
		m |= 1 << 23
	}
	h.m[e] += m
}

// fold adds the histogram's total into s.
func (h *expHist) fold(s *wideSum) {
	for e, m := range h.m {
		if m == 0 {
			continue
		}
		sh := uint(0)
		if e > 0 {
			sh = uint(e - 1)
		}
		s.addShifted(m, sh)
	}
}
