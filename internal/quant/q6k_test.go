package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// q6kBlock fills one Q6_K block (210 bytes) in one of several patterns:
// random bytes, the extreme levels (all 0 or all 63), the extreme scales
// (-128, 127, alternating, zero) and extreme half-precision d (large,
// subnormal, zero, negative).
func q6kBlock(r *rand.Rand, blk []byte, pat int) {
	for i := range blk[:208] {
		blk[i] = byte(r.Uint32())
	}
	switch pat % 4 {
	case 1: // all levels 0 (-32 after the offset)
		clear(blk[:192])
	case 2: // all levels 63
		for i := range blk[:192] {
			blk[i] = 0xff
		}
	case 3: // levels 0 and 63 mixed per byte
		for i := range blk[:192] {
			blk[i] = byte(0xff * (r.Uint32() & 1))
		}
	}
	sc := blk[192:208]
	switch pat / 4 % 5 {
	case 1:
		for i := range sc {
			sc[i] = 0x80 // -128
		}
	case 2:
		for i := range sc {
			sc[i] = 127
		}
	case 3:
		for i := range sc {
			sc[i] = []byte{0x80, 127}[i%2]
		}
	case 4:
		for i := range sc {
			sc[i] = []byte{0, 0x80, 1, 0xff}[r.IntN(4)]
		}
	}
	d := []float32{float32(r.NormFloat64() * 0.01), 1000, -3.5, 6e-8, 0, -0.02, 65504}[pat%7]
	put16(blk[208:], f32to16(d))
}

// q6kActs returns m activation rows of k, each in its own pattern: random
// with an outlier, all -1 (every Q8_K quant -128), alternating ±1 (quants
// -128 and 127 or 127 and -127), a single non-zero value per block, large
// and tiny magnitudes.
func q6kActs(r *rand.Rand, m, k int) []float32 {
	x := randActs(r, m, k)
	for i := range m {
		row := x[i*k : (i+1)*k]
		switch i % 6 {
		case 1:
			for p := range row {
				row[p] = -1
			}
		case 2:
			for p := range row {
				row[p] = float32(1 - 2*(p%2))
			}
		case 3:
			for p := range row {
				row[p] = float32(1-2*(p/7%2)) * 1e-30
			}
		case 4:
			clear(row)
			for b := 0; b < k; b += 256 {
				row[b+r.IntN(256)] = float32(r.NormFloat64() * 100)
			}
		case 5:
			for p := range row {
				row[p] = float32(r.NormFloat64() * 1e4)
			}
		}
	}
	return x
}

// TestQ6KKernels checks every level's Q6_K product (the SIMD kernels read
// their own activation layouts, acts.k6) against the generic
// code and the exact model of ggml's vec_dot_q6_K_q8_K, bit for bit, on
// blocks with extreme levels, scales and d, activations whose quants reach
// -128 and 127, several rows (not a multiple of 4) and k = 256·n.
func TestQ6KKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	ks := levels(t)
	for _, sh := range []shape{{1, 1, 256}, {1, 7, 512}, {6, 11, 256 * 5}, {2, 21, 256 * 14}, {1, 3, 256 * 56}} {
		t.Run(fmt.Sprintf("m%d_n%d_k%d", sh.m, sh.n, sh.k), func(t *testing.T) {
			rb, _ := RowBytes(Q6_K, sh.k)
			w := make([]byte, sh.n*rb)
			for b := range len(w) / 210 {
				q6kBlock(r, w[b*210:][:210], r.IntN(140))
			}
			x := q6kActs(r, sh.m, sh.k)
			want := make([]float32, sh.m*sh.n)
			if err := For(LevelGeneric).MatMul(Q6_K, w, sh.n, sh.k, x, sh.m, want, nil); err != nil {
				t.Fatal(err)
			}
			arb, _ := RowBytes(Q8_K, sh.k)
			ya := make([]byte, arb)
			for i := range sh.m {
				if err := QuantizeRow(Q8_K, x[i*sh.k:(i+1)*sh.k], ya); err != nil {
					t.Fatal(err)
				}
				for j := range sh.n {
					e := modelDot(Q6_K, w[j*rb:(j+1)*rb], ya, sh.k, false)
					if g := want[i*sh.n+j]; math.Float32bits(g) != math.Float32bits(e) {
						t.Fatalf("generic: y[%d,%d] = %g, model %g", i, j, g, e)
					}
				}
			}
			for _, kern := range ks[1:] {
				for _, mm := range []int{1, sh.m} {
					got := make([]float32, mm*sh.n)
					if err := kern.MatMul(Q6_K, w, sh.n, sh.k, x, mm, got, nil); err != nil {
						t.Fatal(err)
					}
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s m=%d: y[%d,%d] = %g (%#x), generic %g (%#x)", kern.Level(), mm, i/sh.n, i%sh.n,
								got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
						}
					}
				}
			}
		})
	}
}

// TestFillK6 checks acts.k6's layout against its definition: in sub-block
// sb, byte 16·(c/4) + 4·(c%4) + i holds quant 32·sb + [c, c+8, c+16,
// c+24][i], and k6c's word (16·(c/4) + 4·(c%4))/2 + h is 32 times the sum of
// the pair i = 2h, 2h+1.
func TestFillK6(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	src := make([]int8, 256)
	for i := range src {
		src[i] = int8(r.Uint32())
	}
	src[3], src[11] = -128, -128
	dst, corr := make([]int8, 256), make([]int16, 128)
	fillK6(src, dst, corr)
	for sb := range 8 {
		for c := range 8 {
			o := 32*sb + 16*(c/4) + 4*(c%4)
			for i, p := range []int{c, c + 8, c + 16, c + 24} {
				if dst[o+i] != src[32*sb+p] {
					t.Fatalf("k6[%d] = %d, want quant %d = %d", o+i, dst[o+i], 32*sb+p, src[32*sb+p])
				}
			}
			for h := range 2 {
				want := 32 * (int(dst[o+2*h]) + int(dst[o+2*h+1]))
				if got := corr[o/2+h]; int(got) != want {
					t.Fatalf("k6c[%d] = %d, want %d", o/2+h, got, want)
				}
			}
		}
	}
	if fillK6Asm == nil {
		t.Log("no assembly fillK6 on this CPU: not run")
		return
	}
	dst2, corr2 := make([]int8, 256), make([]int16, 128)
	fillK6Asm(&src[0], &dst2[0], &corr2[0], 8)
	if !slices.Equal(dst2, dst) || !slices.Equal(corr2, corr) {
		t.Fatalf("fillK6Asm: k6 %v k6c %v, want %v %v", dst2, corr2, dst, corr)
	}
	clear(dst2)
	fillK6Asm(&src[0], &dst2[0], nil, 8)
	if !slices.Equal(dst2, dst) {
		t.Fatalf("fillK6Asm without k6c: k6 %v, want %v", dst2, dst)
	}
}
