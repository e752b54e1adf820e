package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// conv16Cases adds to convCases the shapes the bf16 path has its own code
// for: weight-gradient forms whose kernel rows hold even numbers of steps
// (pairs packed by convPairT16: a tail only, one full block and a tail,
// several blocks), tile heights 8, 12 and 14 and their padded rows, k
// blocks of odd length, panels straddling images, and the direct tiles.
func conv16Cases() []convCase {
	l := func(v ...int) []int { return v }
	cs := convCases()
	return append(cs,
		convCase{n: 6, cin: 8, cout: 16, groups: 1, in: l(12, 12), k: l(8, 8), stride: l(1), dil: l(1), padLo: l(0), padHi: l(0)},
		convCase{n: 5, cin: 3, cout: 12, groups: 1, in: l(40, 41), k: l(38, 36), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1)},
		convCase{n: 3, cin: 2, cout: 9, groups: 1, in: l(70, 66), k: l(66, 64), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1), bias: true},
		convCase{n: 2, cin: 16, cout: 64, groups: 1, in: l(20, 19), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1), bias: true},
		convCase{n: 2, cin: 5, cout: 14, groups: 1, in: l(9, 40), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1)},
		convCase{n: 2, cin: 43, cout: 13, groups: 1, in: l(11, 10), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1), bias: true},
		convCase{n: 3, cin: 16, cout: 6, groups: 1, in: l(12, 12), k: l(5, 5), stride: l(1), dil: l(1), padLo: l(4), padHi: l(4), outPad: l(0), transposed: true},
		convCase{n: 4, cin: 1, cout: 6, groups: 1, in: l(28, 28), k: l(5, 5), stride: l(1), dil: l(1), padLo: l(0), padHi: l(0), bias: true},
		// The direct tiles (B read from the input) over two k blocks, so
		// that a tile is loaded in the pair order and stored back: heights
		// 12 and 8 (two tiles), even k.
		convCase{n: 2, cin: 48, cout: 12, groups: 1, in: l(9, 40), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1), bias: true},
		convCase{n: 1, cin: 50, cout: 16, groups: 1, in: l(8, 42), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1)},
	)
}

// conv16Run runs the convolution kernel on c with dt operands holding
// x, w and b (values of dt), returning the output widened to f32.
func conv16Run(t testing.TB, ks *kset, c convCase, dt dtype.DType, x, w, b []float32) ([]float32, op.ConvParams) {
	t.Helper()
	call, out32, p := convCall(t, c, x, w, b)
	narrow := func(v []float32) []byte {
		o := make([]byte, 2*max(len(v), 1))
		for i, f := range v {
			dtype.PutFloat64(dt, o, i, float64(f))
		}
		return o
	}
	call.InB[0], call.InB[1] = narrow(x), narrow(w)
	if b != nil {
		call.InB[2] = narrow(b)
		call.In[2].Buf = convTestBuf(2 * len(b))
	}
	for i := range call.In {
		call.In[i].DType = dt
	}
	call.Out[0].DType = dt
	ob := make([]byte, 2*max(len(out32), 1))
	call.OutB[0] = ob
	call.ks = ks
	if err := convolutionKernel(call); err != nil {
		t.Fatalf("%v: %v", c, err)
	}
	got := make([]float32, len(out32))
	for i := range got {
		got[i] = float32(dtype.Float64At(dt, ob, i))
	}
	return got, p
}

// TestConv16Levels checks bf16 and f16 convolutions at every CPU level
// against a float64 direct loop on the same (rounded) values, within the
// output's rounding plus f32 summation error, NaN positions included;
// and that every level from avx2 up — the widened f32 path and, at
// avx512bf16, the VDPBF16PS path — gives the same bits (the same f32 FMA
// chains; the data has no denormals, where VDPBF16PS would flush). Level
// amx's bf16 path is checked within tolerance (its bits: TestConvAMX).
func TestConv16Levels(t *testing.T) {
	logUnsupported(t)
	r := rand.New(rand.NewPCG(7, 8))
	cases := conv16Cases()
	for ci, c := range cases {
		for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
			if dt == dtype.F16 && ci%3 != 0 {
				continue // f16 shares the widened path: a third of the table
			}
			withNaN := ci%5 == 0
			t.Run(fmt.Sprintf("%s_%v_nan%v", dt, c, withNaN), func(t *testing.T) {
				xs := c.n * c.cin
				for _, v := range c.in {
					xs *= v
				}
				ws := c.cout * max(c.cin/c.groups, 0)
				for _, v := range c.k {
					ws *= v
				}
				round := func(v []float32) []float32 {
					for i := range v {
						if dt == dtype.BF16 {
							v[i] = dtype.RoundBF16(v[i])
						} else {
							v[i] = dtype.F16FromF32(v[i]).F32()
						}
					}
					return v
				}
				x, w, b := round(convRand(r, xs)), round(convRand(r, ws)), round(convRand(r, c.cout))
				if !c.bias {
					b = nil
				}
				if withNaN && len(x) > 0 {
					x[r.IntN(len(x))] = float32(math.NaN())
				}
				ulp := 0x1p-8
				if dt == dtype.F16 {
					ulp = 0x1p-11
				}
				var ref32 []float32
				var refLevel string
				for _, level := range levels() {
					var got []float32
					var p op.ConvParams
					var pairs bool // the VDPBF16PS/AMX path ran (asked at the level, not the process's)
					ks := ksetFor(level)
					got, p = conv16Run(t, ks, c, dt, x, w, b)
					pairs = convPairsOK(ks, p)
					if ref32 == nil {
						ref, mag := convNaive(p, x, w, b)
						for i := range got {
							g, want := float64(got[i]), ref[i]
							if math.IsNaN(want) != math.IsNaN(g) {
								t.Fatalf("%s: out[%d] = %v, want %v (NaN mismatch)", level, i, g, want)
							}
							if tol := ulp*math.Abs(want) + 1e-5*mag[i] + 1e-30; !math.IsNaN(want) && math.Abs(g-want) > tol {
								t.Fatalf("%s: out[%d] = %v, want %v (|diff| %g > %g)", level, i, g, want, math.Abs(g-want), tol)
							}
						}
					}
					if level == LevelGeneric {
						continue
					}
					if dt == dtype.BF16 && levelRank(level) >= levelRank(LevelAMX) && pairs {
						// The AMX tiles' arithmetic differs in the last bits
						// (amx.go; TestConvAMX checks it exactly): here within
						// the float64 reference's tolerance.
						ref, mag := convNaive(p, x, w, b)
						for i := range got {
							g, want := float64(got[i]), ref[i]
							if math.IsNaN(want) != math.IsNaN(g) || !math.IsNaN(want) && math.Abs(g-want) > ulp*math.Abs(want)+1e-5*mag[i]+1e-30 {
								t.Fatalf("%s: out[%d] = %v, want %v", level, i, g, want)
							}
						}
						continue
					}
					if ref32 == nil {
						ref32, refLevel = got, level
						continue
					}
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(ref32[i]) && !(got[i] != got[i] && ref32[i] != ref32[i]) {
							t.Fatalf("out[%d] = %v at %s, %v at %s: not bit-identical", i, got[i], level, ref32[i], refLevel)
						}
					}
				}
			})
		}
	}
}

// TestConvPairsTaken checks that the VDPBF16PS path takes the ResNet and
// LeNet shapes and their gradients' forms at level avx512bf16.
func TestConvPairsTaken(t *testing.T) {
	if asmTileBF16 == nil {
		t.Skip("no AVX512_BF16 on this CPU")
	}
	for _, c := range conv16Cases() {
		if c.transposed && (c.stride[0] > 1 || len(c.stride) > 1 && c.stride[1] > 1) || len(c.in) > 2 {
			continue
		}
		_, _, p := convCall(t, c, make([]float32, 1<<20), make([]float32, 1<<20), nil)
		ks := ksetFor(LevelAVX512BF16)
		if !convPairsOK(ks, p) {
			t.Errorf("%v: VDPBF16PS path not taken", c)
		}
	}
}

// BenchmarkConvBF16 times bf16 convolutions as the kernel receives them
// (see BenchmarkConvF32): the ResNet 3x3 layer's forward, input gradient
// and weight gradient, and LeNet's two layers. GFLOP/cpu-s divides by the
// process's CPU time.
func BenchmarkConvBF16(b *testing.B) {
	l := func(v ...int) []int { return v }
	for _, bc := range []struct {
		name string
		c    convCase
	}{
		{"forward", convCase{n: 8, cin: 64, cout: 64, groups: 1, in: l(56, 56), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1)}},
		{"input_grad", convCase{n: 8, cin: 64, cout: 64, groups: 1, in: l(56, 56), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1), outPad: l(0), transposed: true}},
		{"weight_grad", convCase{n: 64, cin: 8, cout: 64, groups: 1, in: l(56, 56), k: l(56, 56), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := bc.c
			r := rand.New(rand.NewPCG(1, 2))
			xs, ws := c.n*c.cin, c.cout*c.cin/c.groups
			for i := range c.in {
				xs, ws = xs*c.in[i], ws*c.k[i]
			}
			x, w := bf16Round(convRand(r, xs)), bf16Round(convRand(r, ws))
			call, out, p := convCall(b, c, x, w, nil)
			for i, v := range [][]float32{x, w} {
				o := make([]byte, 2*len(v))
				for j, f := range v {
					dtype.PutFloat64(dtype.BF16, o, j, float64(f))
				}
				call.InB[i] = o
				call.In[i].DType = dtype.BF16
			}
			call.Out[0].DType = dtype.BF16
			call.OutB[0] = make([]byte, 2*len(out))
			flops := 2 * float64(op.Numel(p.Shape())) * float64(ws/c.cout)
			if c.transposed {
				flops = 2 * float64(xs) * float64(ws/c.cin)
			}
			b.ResetTimer()
			cpu0 := convCPUTime()
			for range b.N {
				if err := convolutionKernel(call); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			if cpu := convCPUTime() - cpu0; cpu > 0 {
				b.ReportMetric(flops*float64(b.N)/cpu.Seconds()/1e9, "GFLOP/cpu-s")
			}
		})
	}
}
