package vec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gotpu/gotpu/dtype"
)

// TestRopeBF16 checks the bf16 rotate-half row (its AVX2 groups of
// eight and the Go loop for the rest) against the unfused ops'
// arithmetic written out, bit for bit, at every level: half widths around
// the group of eight, NaNs of both signs, infinities, signed zeros,
// subnormals and values whose products and sums round.
func TestRopeBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	specials := []float32{float32(math.NaN()), float32(-math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1e-39, 3e38}
	val := func() dtype.BFloat16 {
		if r.IntN(8) == 0 {
			return dtype.BF16FromF32(specials[r.IntN(len(specials))])
		}
		return dtype.BF16FromF32(float32(r.NormFloat64() * 3))
	}
	rb := func(v float32) float32 { return dtype.BF16FromF32(v).F32() }
	// The vector kernels' NaN rule (the op-by-op ones' too): the left
	// operand's NaN, quieted, else the right one's.
	ord := func(a, b float32, f func(a, b float32) float32) float32 {
		switch {
		case a != a:
			return math.Float32frombits(math.Float32bits(a) | 0x400000)
		case b != b:
			return math.Float32frombits(math.Float32bits(b) | 0x400000)
		}
		return f(a, b)
	}
	mul := func(a, b float32) float32 { return ord(a, b, func(a, b float32) float32 { return a * b }) }
	add := func(a, b float32) float32 { return ord(a, b, func(a, b float32) float32 { return a + b }) }
	for _, lv := range Levels() {
		k := For(lv)
		func() {
			for _, h := range []int{1, 7, 8, 9, 10, 15, 16, 24, 32, 33, 64} {
				xs, cs, ss := make([]dtype.BFloat16, 2*h), make([]dtype.BFloat16, 2*h), make([]dtype.BFloat16, 2*h)
				for i := range xs {
					xs[i], cs[i], ss[i] = val(), val(), val()
				}
				// Both operands of every product and sum NaN, of
				// opposite signs, in the first and the last pair: the
				// result tells which NaN won.
				pn, nn := dtype.BF16FromF32(float32(math.NaN())), dtype.BF16FromF32(float32(-math.NaN()))
				for _, j := range []int{0, h - 1} {
					xs[j], xs[j+h] = nn, nn
					cs[j], ss[j], cs[j+h], ss[j+h] = pn, nn, pn, pn
				}
				got := make([]dtype.BFloat16, 2*h)
				k.RopeBF16(got, xs, cs, ss, h)
				for j := 0; j < h; j++ {
					lo, hi := xs[j].F32(), xs[j+h].F32()
					want0 := dtype.BF16FromF32(add(rb(mul(lo, cs[j].F32())), rb(mul(-hi, ss[j].F32()))))
					want1 := dtype.BF16FromF32(add(rb(mul(hi, cs[j+h].F32())), rb(mul(lo, ss[j+h].F32()))))
					same := func(g, w dtype.BFloat16) bool {
						// The Go loop (generic level) leaves the order of
						// two NaN operands to the compiler.
						return g == w || !k.Asm && g.F32() != g.F32() && w.F32() != w.F32()
					}
					if !same(got[j], want0) || !same(got[j+h], want1) {
						t.Fatalf("%s h=%d j=%d: x %v,%v c %v,%v s %v,%v: got %#x,%#x want %#x,%#x", lv, h, j,
							lo, hi, cs[j].F32(), cs[j+h].F32(), ss[j].F32(), ss[j+h].F32(), uint16(got[j]), uint16(got[j+h]), uint16(want0), uint16(want1))
					}
				}
			}
		}()
	}
}

// TestBF16Conversions checks Widen, Narrow, RoundHi, RoundLo and
// PackRounded at every level against dtype's scalar conversions, bit for
// bit: lengths around the 8- and 16-wide steps, unaligned starts, NaNs of
// both signs with payloads, infinities, signed zeros, subnormals, ties.
func TestBF16Conversions(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	specials := []uint32{0x7fc00001, 0xffa00000, 0x7f800000, 0xff800000, 0, 0x80000000, 0x00000001, 0x807fffff,
		0x3f808000, 0x3f818000, 0x3f80ffff, 0x7f7fffff}
	for _, lv := range Levels() {
		k := For(lv)
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 100} {
			src := make([]float32, n+1)
			for i := range src {
				if r.IntN(4) == 0 {
					src[i] = math.Float32frombits(specials[r.IntN(len(specials))])
				} else {
					src[i] = float32(r.NormFloat64() * 100)
				}
			}
			x := src[1:]
			// Narrow (x is scratch: a copy goes in).
			got := make([]dtype.BFloat16, n)
			k.Narrow(got, append([]float32(nil), x...))
			for i, v := range x {
				if want := dtype.BF16FromF32(v); got[i] != want {
					t.Fatalf("%s n=%d: Narrow(%#x) = %#x, want %#x", lv, n, math.Float32bits(v), uint16(got[i]), uint16(want))
				}
			}
			// Widen.
			w := make([]float32, n)
			k.Widen(w, got)
			for i := range w {
				if math.Float32bits(w[i]) != uint32(got[i])<<16 {
					t.Fatalf("%s n=%d: Widen(%#x) = %#x", lv, n, uint16(got[i]), math.Float32bits(w[i]))
				}
			}
			// RoundHi, RoundLo and PackRounded.
			hi, lo := append([]float32(nil), x...), append([]float32(nil), x...)
			k.RoundHi(hi)
			k.RoundLo(lo)
			ph, pl := make([]uint16, n), make([]uint16, n)
			k.PackRounded(ph, hi)
			k.PackRounded(pl, lo)
			for i, v := range x {
				wh := math.Float32frombits(BF16Bits(math.Float32bits(v)))
				wl := math.Float32frombits(BF16Bits(math.Float32bits(v - wh)))
				if math.Float32bits(hi[i]) != math.Float32bits(wh) || math.Float32bits(lo[i]) != math.Float32bits(wl) {
					t.Fatalf("%s n=%d: split of %#x = %#x + %#x, want %#x + %#x", lv, n, math.Float32bits(v),
						math.Float32bits(hi[i]), math.Float32bits(lo[i]), math.Float32bits(wh), math.Float32bits(wl))
				}
				if uint32(ph[i]) != math.Float32bits(wh)>>16 || uint32(pl[i]) != math.Float32bits(wl)>>16 {
					t.Fatalf("%s n=%d: PackRounded of %#x, %#x = %#x, %#x", lv, n, math.Float32bits(wh), math.Float32bits(wl), ph[i], pl[i])
				}
				if BF16Bits(math.Float32bits(v))>>16 != uint32(dtype.BF16FromF32(v)) {
					t.Fatalf("BF16Bits(%#x) = %#x, dtype gives %#x", math.Float32bits(v), BF16Bits(math.Float32bits(v)), uint16(dtype.BF16FromF32(v)))
				}
			}
		}
	}
}
