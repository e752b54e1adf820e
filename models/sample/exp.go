package sample

import "math"

// This file holds expNeg, the exponential used for every softmax weight in
// this package. It is written out in plain float64 arithmetic (no math.Exp,
// whose amd64 and arm64 assembly versions may differ from the pure-Go one in
// the last bit) so that the weights, and therefore the sampled tokens, are the
// same on every architecture. Every product is wrapped in an explicit
// float64 conversion, which the Go specification guarantees prevents the
// compiler from fusing it into a multiply-add (it does fuse on arm64).
//
// Method: t = (k8/8)·ln2 + r with k8 = round(8t/ln2) and |r| ≤ ln2/16, so
// e^t = 2^(k8>>3) · 2^((k8&7)/8) · e^r. e^r is the degree-7 Taylor
// polynomial (truncation error below 4e-16 on that interval); the eight
// 2^(j/8) are correctly rounded constants. The result is within a few ulp of
// e^t.

const (
	// expInvLn2x8 is 8/ln 2 rounded to float64.
	expInvLn2x8 = 11.541560327111707
	// expLn2d8Hi is ln2/8 with its low 28 mantissa bits cleared, so that
	// k8·expLn2d8Hi is exact for every |k8| < 2^25; expLn2d8Lo is the rest.
	expLn2d8Hi = 0.08664339408278465 // 0x3fb62e42f0000000
	expLn2d8Lo = 3.487208510967193e-09
	// expMin is below ln(smallest subnormal float64); e^t is 0 under it.
	expMin = -746.0
)

// exp2Eighths[j] is 2^(j/8), correctly rounded.
var exp2Eighths = [8]float64{
	1.0,
	1.0905077326652577, // 0x3ff172b83c7d517b
	1.189207115002721,  // 0x3ff306fe0a31b715
	1.2968395546510096, // 0x3ff4bfdad5362a27
	1.4142135623730951, // 0x3ff6a09e667f3bcd
	1.5422108254079407, // 0x3ff8ace5422aa0db
	1.681792830507429,  // 0x3ffae89f995ad3ad
	1.8340080864093424, // 0x3ffd5818dcfba487
}

// expNeg returns e^t for t ≤ 0 (t = -Inf gives 0). Callers pass x - max, so t
// is never positive; expNeg(0) is exactly 1.
func expNeg(t float64) float64 {
	if !(t > expMin) { // also catches -Inf and NaN
		return 0
	}
	if t == 0 {
		return 1
	}
	// k8 = the integer nearest 8t/ln2 (t < 0, so truncating toward zero
	// after subtracting 0.5 rounds; exact halves go up, which is as good).
	k := int64(float64(t*expInvLn2x8) - 0.5)
	k8 := float64(k)
	r := t - float64(k8*expLn2d8Hi)
	r -= float64(k8 * expLn2d8Lo)
	// 1 + r + r²/2! + … + r⁷/7! in Estrin's form, whose short dependency
	// chains let consecutive calls overlap:
	// (1 + r) + r²·(1/2 + r/6) + r⁴·((1/24 + r/120) + r²·(1/720 + r/5040)).
	r2 := float64(r * r)
	r4 := float64(r2 * r2)
	a := 1 + r
	b := 0.5 + float64(r*(1.0/6))
	c := 1.0/24 + float64(r*(1.0/120))
	d := 1.0/720 + float64(r*(1.0/5040))
	p := a + float64(r2*b) + float64(r4*(c+float64(r2*d)))
	p = float64(p * exp2Eighths[k&7])
	e := k >> 3 // floor division by 8; e ∈ [-1076, 0]
	if e >= -1022 {
		return float64(p * math.Float64frombits(uint64(e+1023)<<52))
	}
	// Subnormal result: scale in two exact-exponent steps.
	p = float64(p * 0x1p-54)
	return float64(p * math.Float64frombits(uint64(e+54+1023)<<52))
}
