package cpu

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// bigFMADAZ is fmaDAZ computed with math/big: the exact sum, rounded to
// 24 bits with an unbounded exponent, flushed below 2^-126.
func bigFMADAZ(acc, x, y float32) float32 {
	acc, x, y = daz32(acc), daz32(x), daz32(y)
	p := float64(x) * float64(y)
	if s := p + float64(acc); math.IsNaN(s) || math.IsInf(s, 0) || s == 0 {
		return float32(s)
	}
	s := new(big.Float).SetPrec(1000).SetFloat64(p)
	s.Add(s, new(big.Float).SetPrec(1000).SetFloat64(float64(acc)))
	if s.Sign() == 0 {
		return 0
	}
	s.SetMode(big.ToNearestEven).SetPrec(24)
	f, _ := s.Float64()
	if math.Abs(f) < 0x1p-126 {
		return float32(math.Copysign(0, f))
	}
	return float32(f)
}

// randBF16Edge returns a bf16 value as f32: mostly normal numbers of a
// moderate range, with denormals, zeros of both signs, extremes and a few
// non-finite values.
func randBF16Edge(r *rand.Rand, nonFinite bool) float32 {
	switch v := r.IntN(40); {
	case v == 0:
		return float32(math.Copysign(0, -1))
	case v == 1:
		return 0
	case v < 4:
		return math.Float32frombits(uint32(r.IntN(1<<16)) << 16 & 0x807f0000) // denormal (or zero)
	case v < 6:
		return math.Float32frombits(uint32(r.IntN(2))<<31 | uint32(1+r.IntN(3))<<23 | uint32(r.IntN(128))<<16) // near 2^-126
	case v == 6 && nonFinite:
		return float32(math.Inf(1 - 2*r.IntN(2)))
	case v == 7 && nonFinite:
		return float32(math.NaN())
	case v == 8:
		return math.Float32frombits(uint32(r.IntN(2))<<31 | uint32(250+r.IntN(4))<<23 | uint32(r.IntN(128))<<16) // huge
	default:
		return dtype.RoundBF16(float32(r.NormFloat64()) * float32(math.Ldexp(1, r.IntN(30)-15)))
	}
}

// TestFMADAZReference checks the fast exact model against math/big.
func TestFMADAZReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 200000
	if testing.Short() {
		n = 20000
	}
	for i := 0; i < n; i++ {
		x, y := randBF16Edge(r, true), randBF16Edge(r, true)
		var acc float32
		switch r.IntN(3) {
		case 0:
			acc = -x * y * (1 + float32(r.IntN(5)-2)*0x1p-23)
		case 1:
			acc = math.Float32frombits(r.Uint32())
		default:
			acc = randBF16Edge(r, true)
		}
		if got, want := fmaDAZ(acc, x, y), bigFMADAZ(acc, x, y); !sameF32(got, want) {
			t.Fatalf("fmaDAZ(%g, %g, %g) = %g (%08x), big %g (%08x)", acc, x, y, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	for _, c := range []struct{ acc, x, y, want float32 }{
		{0x1p-126, 0x1p-76, -0x1p-76, 0x1p-126}, // rounds up to 2^-126: kept
		{0x1p-126, 0x1p-75, -0x1p-75, 0},        // 2^-126 - 2^-150 is tiny: flushed
		{0x1p-125, 0x1p-63, -0x1p-64, 0x1.8p-126},
		{0x1p-127, 1, 1, 1},                                                          // a denormal accumulator reads as zero
		{float32(math.Copysign(0, -1)), -0x1p-130, 1, float32(math.Copysign(0, -1))}, // DAZ keeps the sign
		{float32(math.Copysign(0, -1)), 0x1p-130, 1, 0},
	} {
		if got := fmaDAZ(c.acc, c.x, c.y); !sameF32(got, c.want) {
			t.Errorf("fmaDAZ(%g, %g, %g) = %g, want %g", c.acc, c.x, c.y, got, c.want)
		}
	}
}

// pairRef is the contract of the VDPBF16PS GEMM for one element: the
// fmaDAZ chain over k in order from zero.
func pairRef(a, b func(p int) float32, k int) float32 {
	var acc float32
	for p := 0; p < k; p++ {
		acc = fmaDAZ(acc, a(p), b(p))
	}
	return acc
}

// TestPackPairs checks the pair layout of every packing path against its
// definition: bf16 and f32 (both bf16 split parts) sides in the row-major,
// transposed, strided and broadcast layouts, at every k remainder and
// block offset, with partial panels.
func TestPackPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, lay := range layoutNames {
		for _, rows := range []int{1, 5, 12, 33, 48} {
			for _, k := range []int{1, 2, 7, 16, 67} {
				for _, w := range []int{12, 32} {
					bf := makeOperand(r, lay, rows, k, func(r *rand.Rand) dtype.BFloat16 { return dtype.BF16FromF32(float32(r.NormFloat64())) })
					f := makeOperand(r, lay, rows, k, func(r *rand.Rand) float32 { return float32(r.NormFloat64()) })
					rowOff := seq(rows, bf.lay.Strides[0])
					kOff := seq(k, bf.lay.Strides[1])
					toF := []func(dtype.BFloat16) float32{func(x dtype.BFloat16) float32 { return x.F32() }}
					sb := gemmSide[dtype.BFloat16, float32]{src: bf.data, base: bf.lay.Offset, row: rowOff, k: kOff, conv: toF, plain: true}
					ca, _ := bf16Passes(op.PrecisionHigh)
					rounds := bf16Rounds(op.PrecisionHigh)
					sf := gemmSide[float32, float32]{src: f.data, base: f.lay.Offset, row: rowOff, k: kOff, conv: ca, round: rounds[0]}
					for p0 := 0; p0 < k; p0 += 2 {
						for kc := 1; p0+kc <= k; kc++ {
							check := func(name string, got []float32, val func(i, gp int) uint16, lo, hi int) {
								kp := (kc + 1) / 2
								g := as[uint32](bytesOf(got))
								for i := 0; i < roundUp(rows, w); i++ {
									for j := 0; j < kp; j++ {
										var want uint32
										if i < rows {
											want = uint32(val(i, p0+2*j)) << 16
											if 2*j+1 < kc {
												want |= uint32(val(i, p0+2*j+1))
											} else {
												want |= pairPadA
											}
										}
										if gw := g[(i/w)*w*kp+j*w+i%w]; gw != want {
											t.Fatalf("%s %s rows=%d k=%d w=%d p0=%d kc=%d: (%d, %d) = %08x, want %08x", name, lay, rows, k, w, p0, kc, i, j, gw, want)
										}
									}
								}
							}
							dst := make([]float32, roundUp(rows, w)*kc)
							for i := range dst {
								dst[i] = math.Float32frombits(0xdeadbeef)
							}
							packPairs(procKS, dst, &sb, 0, 0, rows, p0, kc, w, pairPadA)
							check("bf16", dst, func(i, gp int) uint16 { return uint16(bf.at(i, gp)) }, p0, kc)
							// The f32 side over its three passes (k tripled).
							for p0f := p0; p0f < 3*k; p0f += 2 * k {
								for i := range dst {
									dst[i] = math.Float32frombits(0xdeadbeef)
								}
								packPairs(procKS, dst, &sf, 0, 0, rows, p0f, kc, w, pairPadA)
								check("f32", dst, func(i, gp int) uint16 {
									gp += p0f - p0
									return uint16(dtype.BF16FromF32(ca[gp/k](f.at(i, gp%k))))
								}, p0f, kc)
							}
						}
					}
				}
			}
		}
	}
}
