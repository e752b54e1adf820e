package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gotpu/gotpu/tensor"
)

// TestVecWhereF32 checks the vector select against the element loop at
// every length around the vector width, unaligned, in place, with NaN,
// -0 and +0 conditions, at both levels.
func TestVecWhereF32(t *testing.T) {
	conds := []float32{0, 1, float32(math.NaN()), float32(math.Copysign(0, -1)), -2, 1e-45, float32(math.Inf(-1))}
	for _, level := range []string{LevelAVX2, LevelGeneric} {
		prev := cpuLevel
		cpuLevel = level
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 100} {
			for _, off := range []int{0, 1} {
				c := make([]float32, n+off)
				a := make([]float32, n+off)
				b := make([]float32, n+off)
				for i := range c {
					c[i] = conds[(i*3)%len(conds)]
					a[i] = float32(i) + 0.5
					b[i] = -float32(i) - 0.25
				}
				want := make([]float32, n)
				whereF32Go(want, c[off:], a[off:], b[off:])
				got := make([]float32, n)
				vecWhereF32(got, c[off:], a[off:], b[off:])
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s n=%d off=%d: element %d = %v, want %v", level, n, off, i, got[i], want[i])
					}
				}
				// In place over the condition.
				cc := append([]float32(nil), c[off:]...)
				vecWhereF32(cc, cc, a[off:], b[off:])
				for i := range want {
					if math.Float32bits(cc[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s n=%d off=%d in place: element %d = %v, want %v", level, n, off, i, cc[i], want[i])
					}
				}
			}
		}
		cpuLevel = prev
	}
}

// TestWhereRun checks the bool-conditioned select of 4-byte values (the
// where kernel's dense and one-value-broadcast runs) against its
// definition at every level: lengths around the 32-element step,
// unaligned starts, condition bytes other than 0 and 1, and NaN payloads
// and signed zeros passing through bit for bit.
func TestWhereRun(t *testing.T) {
	vals := []uint32{math.Float32bits(float32(math.NaN())), 0x7fc00001, 0x80000000, 0, math.Float32bits(1.5), 0xffffffff}
	conds := []byte{0, 1, 0, 2, 255, 1, 1, 0, 0, 0, 1}
	for _, lv := range levels() {
		withLevel(lv, func() {
			for _, n := range []int{0, 1, 31, 32, 33, 63, 64, 65, 96, 127, 128, 200, 1000} {
				for _, off := range []int{0, 1, 3} {
					for mode := range 3 {
						c := make([]byte, n+off)
						x := make([]uint32, n+off)
						y := make([]uint32, n+off)
						for i := range c {
							c[i] = conds[(i*7+off)%len(conds)]
							x[i] = vals[(i*5)%len(vals)] ^ uint32(i)
							y[i] = vals[(i*3+1)%len(vals)] + uint32(i)
						}
						got := make([]uint32, n)
						whereRun(got, c[off:], x[off:], y[off:], mode)
						for i := range got {
							xv, yv := x[off+i], y[off+i]
							if mode == 2 {
								xv = x[off]
							}
							if mode == 1 {
								yv = y[off]
							}
							want := yv
							if c[off+i] != 0 {
								want = xv
							}
							if got[i] != want {
								t.Fatalf("%s n=%d off=%d mode=%d: d[%d] = %#x, want %#x", lv, n, off, mode, i, got[i], want)
							}
						}
					}
				}
			}
		})
	}
}

// TestCmpWhereOps runs gt against a scalar, gt of two tensors and where
// with a broadcast zero (a ReLU gradient's ops) through the op layer on
// tensors large enough to split over threads, at every level, and
// compares every byte with the element definition.
func TestCmpWhereOps(t *testing.T) {
	dev := tensor.MustDevice("cpu")
	r := rand.New(rand.NewPCG(5, 6))
	n := 3*vecChunk + 37
	xs, ys, gs := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], ys[i], gs[i] = float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
		switch r.IntN(50) {
		case 0:
			xs[i] = float32(math.NaN())
		case 1:
			xs[i] = float32(math.Copysign(0, -1))
		case 2:
			ys[i] = xs[i]
		}
	}
	x, y, g := tensor.FromSlice(dev, xs, n), tensor.FromSlice(dev, ys, n), tensor.FromSlice(dev, gs, n)
	for _, lv := range levels() {
		withLevel(lv, func() {
			pos := tensor.Apply("gt", []*tensor.Tensor{x, tensor.Scalar(0.0)}, nil)[0]
			gt := tensor.Apply("gt", []*tensor.Tensor{x, y}, nil)[0]
			w := tensor.Apply("where", []*tensor.Tensor{pos, g, tensor.Scalar(0.0)}, nil)[0]
			pb, gb, wb := pos.Bytes(), gt.Bytes(), as[float32](w.Bytes())
			for i := range xs {
				if want := xs[i] > 0; pb[i] != b2u(want) {
					t.Fatalf("%s: gt(x, 0)[%d] of %v = %d", lv, i, xs[i], pb[i])
				}
				if want := xs[i] > ys[i]; gb[i] != b2u(want) {
					t.Fatalf("%s: gt(x, y)[%d] of %v, %v = %d", lv, i, xs[i], ys[i], gb[i])
				}
				want := float32(0)
				if xs[i] > 0 {
					want = gs[i]
				}
				if math.Float32bits(wb[i]) != math.Float32bits(want) {
					t.Fatalf("%s: where[%d] = %v, want %v", lv, i, wb[i], want)
				}
			}
		})
	}
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}
