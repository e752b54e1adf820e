package cpu

import (
	"math"
	"math/rand"
	"testing"
)

// maxPool2x2Ref is the scalar loop the f32 kernels must match: in window
// order, a larger value or a NaN replaces the running maximum.
func maxPool2x2Ref(src []float32, planes, h, w, oh, ow int) ([]float32, []int64) {
	vals, idxs := make([]float32, planes*oh*ow), make([]int64, planes*oh*ow)
	for pl := range planes {
		in := src[pl*h*w:]
		for i := range oh {
			for j := range ow {
				b0, b1 := 2*i*w+2*j, (2*i+1)*w+2*j
				best, bi := in[b0], b0
				for _, p := range []int{b0 + 1, b1, b1 + 1} {
					if v := in[p]; v > best || v != v {
						best, bi = v, p
					}
				}
				vals[pl*oh*ow+i*ow+j], idxs[pl*oh*ow+i*ow+j] = best, int64(bi)
			}
		}
	}
	return vals, idxs
}

// TestMaxPool2x2F32: at every level, the f32 loops (branch-free Go, the
// AVX-512 row kernel) give the scalar loop's bits
// and indices — ties between +0 and -0 keep the first, the last NaN of a
// window wins with its payload (quieted in the values-only kernel, as its
// round trip through float64 does), odd edges are dropped.
func TestMaxPool2x2F32(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(5))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00001), math.Float32frombits(0xffc00002), math.Float32frombits(0x7f800003), 1, 1}
	for _, lv := range levels() {
		testMaxPool2x2F32(t, r, lv, specials)
	}
}

func testMaxPool2x2F32(t *testing.T, r *rand.Rand, lv string, specials []float32) {
	ks := ksetFor(lv)
	for _, sh := range [][2]int{{2, 2}, {4, 6}, {5, 7}, {28, 28}, {10, 10}, {4, 40}, {3, 35}, {2, 66}} {
		h, w := sh[0], sh[1]
		oh, ow := h/2, w/2
		planes := 3
		src := make([]float32, planes*h*w)
		for i := range src {
			if r.Intn(3) == 0 {
				src[i] = specials[r.Intn(len(specials))]
			} else {
				src[i] = float32(r.Intn(5) - 2) // many ties
			}
		}
		want, wantIdx := maxPool2x2Ref(src, planes, h, w, oh, ow)
		got := make([]float32, len(want))
		maxPool2x2F32(ks, src, got, planes, h, w, oh, ow)
		gotV, gotI := make([]float32, len(want)), make([]int64, len(want))
		maxPool2x2IndicesF32(ks, src, gotV, gotI, planes, h, w, oh, ow)
		for i := range want {
			wb := math.Float32bits(want[i])
			if want[i] != want[i] {
				wb |= 0x00400000 // the values-only kernel quiets NaNs
			}
			if gb := math.Float32bits(got[i]); gb != wb {
				t.Fatalf("%s %dx%d: value %d = %#x, want %#x", lv, h, w, i, gb, wb)
			}
			if math.Float32bits(gotV[i]) != math.Float32bits(want[i]) || gotI[i] != wantIdx[i] {
				t.Fatalf("%s %dx%d: with indices %d = %v@%d, want %v@%d", lv, h, w, i, gotV[i], gotI[i], want[i], wantIdx[i])
			}
		}
	}
}
