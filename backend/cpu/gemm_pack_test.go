package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gotpu/gotpu/dtype"
)

// packGuard is the value every untouched destination element keeps.
const packGuard = float32(-12345.5)

func iotaF32(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(i) + 0.25
	}
	return s
}

func guarded(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = packGuard
	}
	return s
}

func sameBits(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestGEMMPackN checks the panel copies (vector and portable) against
// their definition, with guard values around and between the panels.
func TestGEMMPackN(t *testing.T) {
	t.Parallel()
	for _, w := range []int{6, 16, 32, 48, 64} {
		for _, kc := range []int{1, 2, 7, 64, 257} {
			for _, np := range []int{1, 2, 5} {
				for _, extra := range []int{0, 3, 100} {
					lds := np*w + extra
					dps := w*kc + 5
					src := iotaF32((kc-1)*lds + np*w)
					want := guarded(np * dps)
					for q := 0; q < np; q++ {
						for p := 0; p < kc; p++ {
							for j := 0; j < w; j++ {
								want[q*dps+p*w+j] = src[p*lds+q*w+j]
							}
						}
					}
					for _, level := range levels() {
						name := fmt.Sprintf("w%d/kc%d/np%d/lds%d/%s", w, kc, np, lds, level)
						got := guarded(np * dps)
						ks := ksetFor(level)
						gemmPackN(ks, got, src, lds, kc, np, w, dps)
						if i := sameBits(got, want); i >= 0 {
							t.Fatalf("%s: element %d = %v, want %v", name, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestGEMMPackTW checks the w-wide transpose (the ZMM tiles' A and B
// panels) at every level, over row counts below, at and above multiples of
// eight (the overlapping last block) and lengths around the vector loop.
func TestGEMMPackTW(t *testing.T) {
	t.Parallel()
	for _, level := range levels() {
		for _, w := range []int{8, 12, 14, 16, 32, 64} {
			for _, rows := range []int{1, 7, 8, 9, 12, 14, 16, 17, 31, 64} {
				if rows > w {
					continue
				}
				for _, n := range []int{1, 8, 9, 31, 200} {
					lds := n + 5
					src := iotaF32((rows-1)*lds + n)
					want := guarded(n*w + 4)
					for p := 0; p < n; p++ {
						for r := 0; r < w; r++ {
							if r < rows {
								want[p*w+r] = src[r*lds+p]
							} else {
								want[p*w+r] = 0
							}
						}
					}
					got := guarded(n*w + 4)
					ks := ksetFor(level)
					gemmPackTW(ks, got, src, lds, rows, n, w)
					if i := sameBits(got, want); i >= 0 {
						t.Fatalf("%s w %d rows %d n %d: element %d = %v, want %v", level, w, rows, n, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestGEMMPackT16 checks the 16-row transpose over row counts (full and
// partial panels) and lengths around the vector loop's eight steps.
func TestGEMMPackT16(t *testing.T) {
	for _, rows := range []int{1, 5, 15, 16} {
		for _, n := range []int{1, 7, 8, 9, 16, 31, 200} {
			for _, lds := range []int{n, n + 3, 256} {
				if lds < n {
					continue
				}
				src := iotaF32((rows-1)*lds + n)
				want := guarded(n*16 + 4)
				for p := 0; p < n; p++ {
					for r := 0; r < 16; r++ {
						if r < rows {
							want[p*16+r] = src[r*lds+p]
						} else {
							want[p*16+r] = 0
						}
					}
				}
				got := guarded(n*16 + 4)
				gemmPackT16(procKS, got, src, lds, rows, n)
				if i := sameBits(got, want); i >= 0 {
					t.Fatalf("rows %d n %d lds %d: element %d = %v, want %v", rows, n, lds, i, got[i], want[i])
				}
			}
		}
	}
}

// TestGEMMStoreT6 checks the transposing tile store: every row count,
// lengths around eight, and that nothing beside the h columns is written.
func TestGEMMStoreT6(t *testing.T) {
	for h := 1; h <= 6; h++ {
		for _, n := range []int{1, 7, 8, 9, 17, 64, 65} {
			for _, ldo := range []int{6, 7, 50} {
				ldt := n + 2
				tile := iotaF32(5*ldt + n + 2)
				want := guarded((n-1)*ldo + 8)
				for i := 0; i < n; i++ {
					for r := 0; r < h; r++ {
						want[i*ldo+r] = tile[r*ldt+i]
					}
				}
				got := guarded((n-1)*ldo + 8)
				gemmStoreT6(procKS, got, ldo, tile, ldt, h, n)
				if i := sameBits(got, want); i >= 0 {
					t.Fatalf("h %d n %d ldo %d: element %d = %v, want %v", h, n, ldo, i, got[i], want[i])
				}
			}
		}
	}
}

// TestPackSideFast checks the fast side packing against packSide's
// general loop (a converter per element) over panel widths, row counts
// with partial panels, k offsets and strides.
func TestPackSideFast(t *testing.T) {
	t.Parallel()
	for _, w := range []int{6, 16, 32, 64} {
		for _, rows := range []int{2, 6, 13, 16, 40} {
			for _, kc := range []int{1, 5, 64} {
				for _, p0 := range []int{0, 3} {
					ld := rows + 9
					nk := p0 + kc + 2
					src := iotaF32(nk*ld + 20)
					s := gemmSide[float32, float32]{src: src, base: 4, row: seq(rows+3, 1), k: seq(nk, ld), conv: []func(float32) float32{idF32}, plain: true}
					r0 := 2
					rr := rows - 1
					n := ceilDiv(rr, w) * w * kc
					want := guarded(n)
					general := s
					general.plain = false
					packSide(procKS, want, &general, 0, r0, rr, p0, kc, w)
					got := guarded(n)
					if !packSideFast(procKS, got, &s, 0, r0, rr, p0, kc, w) {
						if rr < 2 {
							continue
						}
						t.Fatalf("w %d rows %d kc %d p0 %d: not taken", w, rr, kc, p0)
					}
					if i := sameBits(got, want); i >= 0 {
						t.Fatalf("w %d rows %d kc %d p0 %d: element %d = %v, want %v", w, rr, kc, p0, i, got[i], want[i])
					}
				}
			}
		}
	}
	// Rows evenly spaced and contiguous along k, in 16-, 32- and 64-wide
	// panels, at every level.
	for _, tc := range []struct {
		w     int
		level string
	}{{16, ""}, {32, ""}, {64, ""}, {14, ""}, {12, ""}, {8, ""}, {32, LevelGeneric}, {14, LevelGeneric}} {
		w := tc.w
		lv := tc.level
		if lv == "" {
			lv = procKS.level
		}
		packSideFastStrided(t, ksetFor(lv), w)
	}
	// Layouts it must decline: rows not adjacent, k steps not uniform.
	src := iotaF32(1000)
	id := []func(float32) float32{idF32}
	for _, s := range []gemmSide[float32, float32]{
		{src: src, row: seq(16, 2), k: seq(8, 40), conv: id, plain: true},
		{src: src, row: append(seq(15, 50), 760), k: seq(8, 1), conv: id, plain: true},
		{src: src, row: seq(16, 1), k: []int{0, 40, 90}, conv: id, plain: true},
		{src: src, row: seq(16, 1), k: seq(8, 40), conv: id, plain: false},
	} {
		if packSideFast(procKS, make([]float32, 16*8), &s, 0, 0, 16, 0, len(s.k), 16) {
			t.Errorf("layout row %v k %v plain %v taken", s.row[:3], s.k, s.plain)
		}
	}
}

// packSideFastStrided checks packSideFast on rows evenly spaced and
// contiguous along k (the transpose) into w-wide panels.
func packSideFastStrided(t *testing.T, ks *kset, w int) {
	for _, rows := range []int{2, 10, 16, 17, 40, 70} {
		for _, kc := range []int{1, 8, 9, 70} {
			for _, p0 := range []int{0, 5} {
				ld := p0 + kc + 3
				src := iotaF32((rows+2)*ld + 10)
				s := gemmSide[float32, float32]{src: src, base: 3, row: seq(rows+2, ld), k: seq(p0+kc+1, 1), conv: []func(float32) float32{idF32}, plain: true}
				n := ceilDiv(rows, w) * w * kc
				want := guarded(n)
				general := s
				general.plain = false
				packSide(ks, want, &general, 0, 1, rows, p0, kc, w)
				got := guarded(n)
				if !packSideFast(ks, got, &s, 0, 1, rows, p0, kc, w) {
					t.Fatalf("w %d %s strided rows %d kc %d p0 %d: not taken", w, ks.level, rows, kc, p0)
				}
				if i := sameBits(got, want); i >= 0 {
					t.Fatalf("w %d %s strided rows %d kc %d p0 %d: element %d = %v, want %v", w, ks.level, rows, kc, p0, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkGEMMPackN times the panel copy at a blocked GEMM's B block
// (kc 256 steps of 8 panels from rows 512 or 784 elements apart).
func BenchmarkGEMMPackN(b *testing.B) {
	for _, lds := range []int{512, 784} {
		for _, w := range []int{16, 6} {
			kc, np := 256, 8
			src := iotaF32(kc * lds)
			dst := make([]float32, np*w*kc)
			b.Run(fmt.Sprintf("w%d/lds%d", w, lds), func(b *testing.B) {
				for b.Loop() {
					gemmPackN(procKS, dst, src, lds, kc, np, w, w*kc)
				}
				b.ReportMetric(float64(kc*np*w*4*b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

// TestGEMMTranspose checks the block transpose over shapes around the
// 8x8 blocks and strides, with guard values around the destination rows.
func TestGEMMTranspose(t *testing.T) {
	for _, rows := range []int{1, 7, 8, 9, 16, 23} {
		for _, cols := range []int{1, 5, 8, 15, 17, 40} {
			for _, pad := range []int{0, 3} {
				lds, ldd := cols+pad, rows+pad+1
				src := iotaF32((rows-1)*lds + cols)
				want := guarded((cols-1)*ldd + rows + pad)
				for r := 0; r < rows; r++ {
					for c := 0; c < cols; c++ {
						want[c*ldd+r] = src[r*lds+c]
					}
				}
				got := guarded(len(want))
				gemmTranspose(procKS, got, ldd, src, lds, rows, cols)
				if i := sameBits(got, want); i >= 0 {
					t.Fatalf("%dx%d pad %d: element %d = %v, want %v", rows, cols, pad, i, got[i], want[i])
				}
			}
		}
	}
}

// TestPackBF16Fast checks packBF16's vector widening transposes
// (packBF16Panel: x of x·Wᵀ in six-row panels, W in panels of 8 or more)
// against the generic conversion loop bit for bit, at every level: evenly
// spaced rows with a gap after each, panel row counts around six and
// eight, k steps around the eight-step blocks, any bf16 bits (NaN
// payloads, subnormals), guard values after the panels.
func TestPackBF16Fast(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	toF := []func(dtype.BFloat16) float32{func(v dtype.BFloat16) float32 { return v.F32() }}
	for _, lv := range levels() {
		ks := ksetFor(lv)
		for _, w := range []int{6, 8, 12, 16, 64} {
			for _, rows := range []int{1, 5, 6, 7, 8, 9, 13, 16, 17, 40} {
				for _, kc := range []int{1, 8, 9, 15, 16, 17, 70} {
					for _, p0 := range []int{0, 5} {
						ld := p0 + kc + 3
						src := make([]dtype.BFloat16, (rows+2)*ld+10)
						for i := range src {
							src[i] = dtype.BFloat16(r.Uint32())
						}
						s := gemmSide[dtype.BFloat16, float32]{src: src, base: 3, row: seq(rows+2, ld), k: seq(p0+kc+1, 1), conv: toF, plain: true}
						n := ceilDiv(rows, w)*w*kc + 8
						want := guarded(n)
						general := s
						general.plain = false
						packSide(ks, want, &general, 0, 1, rows, p0, kc, w)
						got := guarded(n)
						packSide(ks, got, &s, 0, 1, rows, p0, kc, w)
						if i := sameBits(got, want); i >= 0 {
							t.Fatalf("%s w %d rows %d kc %d p0 %d: element %d = %#x, want %#x", lv, w, rows, kc, p0, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
						}
					}
				}
			}
		}
		// The vector path is taken where it applies.
		if lv != LevelGeneric && packT8WBF16Asm != nil {
			src := make([]dtype.BFloat16, 16*20)
			for _, c := range []struct{ rows, w int }{{6, 6}, {8, 16}, {13, 16}, {16, 16}} {
				if !packBF16Panel(ks, make([]float32, c.w*20), src, 20, c.rows, 20, c.w) {
					t.Errorf("%s: %d rows into %d-wide panels not taken", lv, c.rows, c.w)
				}
			}
		}
	}
}
