package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// logUnsupported logs the levels this CPU cannot run (their kernels are
// not exercised here).
func logUnsupported(t *testing.T) {
	if n := len(SupportedLevels()); n < len(allLevels) {
		t.Logf("levels not supported by this CPU, not run: %v", allLevels[n:])
	}
}

// TestGEMMLevelsBitwise checks that every assembly level gives the same
// bits — the exact FMA chain in k order — on shapes that take the blocked
// path with several k, row and column blocks and partial edge tiles of
// every tile size in use (6x64, 6x16, 6x32, 6x8), over all operand
// layouts, f32 and f64, and at 1, 2 and 3 threads; the pure-Go level stays
// within its float64-emulation bound of the same products.
func TestGEMMLevelsBitwise(t *testing.T) {
	logUnsupported(t)
	r := rand.New(rand.NewPCG(61, 62))
	shapes := [][3]int{{29, 65, 385}, {97, 131, 400}, {200, 33, 451}, {1, 300, 70}, {300, 2, 70}, {28, 64, 192}, {15, 47, 1}}
	if testing.Short() {
		shapes = shapes[:5]
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for si, sz := range shapes {
		m, n, k := sz[0], sz[1], sz[2]
		la, lb := layoutNames[si%len(layoutNames)], layoutNames[(si/2+3)%len(layoutNames)]
		a := makeOperand(r, la, m, k, genF32)
		b := makeOperand(r, lb, k, n, genF32)
		a64 := operand[float64]{data: widenAll(a.data), lay: a.lay}
		b64 := operand[float64]{data: widenAll(b.data), lay: b.lay}
		var ref32 []float32
		var ref64 []float64
		for _, level := range levels() {
			for _, procs := range []int{1, 2, 3} {
				runtime.GOMAXPROCS(procs)
				name := fmt.Sprintf("%s m=%d n=%d k=%d a=%s b=%s procs=%d", level, m, n, k, la, lb, procs)
				var got32 []float32
				var got64 []float64
				var err1, err2 error
				ks := ksetFor(level)
				got32, err1 = matmul(ks, dtype.F32, op.PrecisionHighest, a, b)
				got64, err2 = matmul(ks, dtype.F64, op.PrecisionHighest, a64, b64)
				if err1 != nil || err2 != nil {
					t.Fatalf("%s: %v %v", name, err1, err2)
				}
				if level == LevelGeneric {
					if bad := checkF32(got32, a, b, m, n, k, false); bad != "" {
						t.Fatalf("%s: %s", name, bad)
					}
				} else if ref32 == nil {
					if bad := checkF32(got32, a, b, m, n, k, true); bad != "" {
						t.Fatalf("%s: %s", name, bad)
					}
					ref32 = got32
				} else if i := sameBits(got32, ref32); i >= 0 {
					t.Fatalf("%s: f32 [%d] = %v, first assembly level %v", name, i, got32[i], ref32[i])
				}
				// f64 is exact on every level (math.FMA chains).
				if ref64 == nil {
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							var want float64
							for p := 0; p < k; p++ {
								want = math.FMA(a64.at(i, p), b64.at(p, j), want)
							}
							if g := got64[i*n+j]; g != want {
								t.Fatalf("%s: f64 [%d,%d] = %v, want %v", name, i, j, g, want)
							}
						}
					}
					ref64 = got64
				} else {
					for i := range got64 {
						if math.Float64bits(got64[i]) != math.Float64bits(ref64[i]) {
							t.Fatalf("%s: f64 [%d] = %v, want %v", name, i, got64[i], ref64[i])
						}
					}
				}
			}
		}
	}
}

// TestGEMMLevelsBatched checks a batched f32 contraction with a transposed
// B (x·Wᵀ per batch element, the packed transpose) bit for bit across the
// assembly levels and against the FMA chain, at 1 and 2 threads (2 takes
// the batch-parallel mode).
func TestGEMMLevelsBatched(t *testing.T) {
	logUnsupported(t)
	r := rand.New(rand.NewPCG(63, 64))
	nb, m, n, k := 4, 45, 70, 260
	av := make([]float32, nb*m*k)
	bv := make([]float32, nb*n*k)
	for i := range av {
		av[i] = genF32(r)
	}
	for i := range bv {
		bv[i] = genF32(r)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var ref []float32
	for _, level := range levels() {
		for _, procs := range []int{1, 2} {
			runtime.GOMAXPROCS(procs)
			out := make([]float32, nb*m*n)
			c := &Call{
				Launch: &device.Launch{
					Attrs: op.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}, "lhs_contract": []int{2}, "rhs_contract": []int{2}, "precision": op.PrecisionHighest},
					In: []device.Operand{{DType: dtype.F32, Layout: op.Contiguous([]int{nb, m, k})},
						{DType: dtype.F32, Layout: op.Contiguous([]int{nb, n, k})}},
					Out: []device.Operand{{DType: dtype.F32, Layout: op.Contiguous([]int{nb, m, n})}},
				},
				InB: [][]byte{bytesOf(av), bytesOf(bv)}, OutB: [][]byte{bytesOf(out)},
			}
			var err error
			ks := ksetFor(level)
			c.ks = ks
			err = dotGeneralKernel(c)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s procs=%d", level, procs)
			if level == LevelGeneric || ref == nil {
				for bb := 0; bb < nb; bb++ {
					a := operand[float32]{av, op.Layout{Shape: []int{m, k}, Strides: []int{k, 1}, Offset: bb * m * k}}
					b := operand[float32]{bv, op.Layout{Shape: []int{k, n}, Strides: []int{1, k}, Offset: bb * n * k}}
					if bad := checkF32(out[bb*m*n:(bb+1)*m*n], a, b, m, n, k, level != LevelGeneric); bad != "" {
						t.Fatalf("%s batch %d: %s", name, bb, bad)
					}
				}
				if level != LevelGeneric {
					ref = out
				}
				continue
			}
			if i := sameBits(out, ref); i >= 0 {
				t.Fatalf("%s: [%d] = %v, first assembly level %v", name, i, out[i], ref[i])
			}
		}
	}
}

func widenAll(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}
