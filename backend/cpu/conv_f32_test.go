package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// convCase is one convolution of the fast-path tests (1-d when len(in) == 1).
type convCase struct {
	n, cin, cout, groups int
	in, k                []int
	stride, dil          []int
	padLo, padHi, outPad []int
	transposed, bias     bool
	prec                 string // "" is highest
}

func (c convCase) String() string {
	t := ""
	if c.transposed {
		t = "T"
	}
	return fmt.Sprintf("%sn%d_c%d_o%d_g%d_in%v_k%v_s%v_d%v_p%v-%v_op%v_b%v%s", t, c.n, c.cin, c.cout, c.groups, c.in, c.k, c.stride, c.dil, c.padLo, c.padHi, c.outPad, c.bias, c.prec)
}

// convTestBuf is a device.Buffer standing in for a present optional input.
type convTestBuf int

func (b convTestBuf) Size() int { return int(b) }

// convRun runs the convolution kernel on c, through the fast path or (old)
// the generic im2col path, returning the output and its shape.
func convRun(t *testing.T, c convCase, x, w, b []float32, old bool) ([]float32, op.ConvParams) {
	t.Helper()
	call, out, p := convCall(t, c, x, w, b)
	if old {
		runConvGeneric(call, p, c.prec)
	} else if err := convolutionKernel(call); err != nil {
		t.Fatalf("%v: %v", c, err)
	}
	return out, p
}

// runConvGeneric runs the generic im2col path (what convolutionKernel ran
// before the fast path) at precision prec ("" is highest).
func runConvGeneric(call *Call, p op.ConvParams, prec string) {
	if prec == "" || isHighest(prec) {
		id := []func(float32) float32{idF32}
		runConv(call, p, convPlan[float32, float32]{kern: kern4x4[float32], dot: dotPlain[float32], wConv: id, xConv: id, colConv: id,
			toT: idF32, fromT: idF32, plain: true, tile: tileF32(procKS)})
		return
	}
	pa, pb := bf16Passes(prec)
	runConv(call, p, convPlan[float32, float32]{kern: kern4x4[float32], dot: dotPlain[float32], wConv: pa, xConv: pb, colConv: pb,
		toT: idF32, fromT: idF32, tile: tileF32(procKS)})
}

// convCall builds the convolution kernel's call for c and returns it with
// its output buffer and resolved parameters.
func convCall(t testing.TB, c convCase, x, w, b []float32) (*Call, []float32, op.ConvParams) {
	t.Helper()
	a := op.Attrs{"stride": c.stride, "padding": c.padLo, "padding_high": c.padHi, "dilation": c.dil,
		"groups": c.groups, "transposed": c.transposed, "precision": op.PrecisionHighest}
	if c.prec != "" {
		a["precision"] = c.prec
	}
	if c.transposed {
		a["output_padding"] = c.outPad
	}
	na, err := op.MustLookup("convolution").Normalize(a)
	if err != nil {
		t.Fatalf("%v: normalize: %v", c, err)
	}
	xs := append([]int{c.n, c.cin}, c.in...)
	ws := append([]int{c.cout, c.cin / c.groups}, c.k...)
	if c.transposed {
		ws = append([]int{c.cin, c.cout / c.groups}, c.k...)
	}
	var bs []int
	if c.bias {
		bs = []int{c.cout}
	}
	p, err := op.ResolveConv(xs, ws, bs, na)
	if err != nil {
		t.Fatalf("%v: resolve: %v", c, err)
	}
	out := make([]float32, max(op.Numel(p.Shape()), 1))
	bop := device.Operand{DType: dtype.F32}
	bb := []byte{}
	if c.bias {
		bop = device.Operand{Buf: convTestBuf(4 * len(b)), DType: dtype.F32, Layout: op.Contiguous(bs)}
		bb = bytesOf(b)
	}
	call := &Call{
		Launch: &device.Launch{Attrs: na,
			In:  []device.Operand{{DType: dtype.F32, Layout: op.Contiguous(xs)}, {DType: dtype.F32, Layout: op.Contiguous(ws)}, bop},
			Out: []device.Operand{{DType: dtype.F32, Layout: op.Contiguous(p.Shape())}},
		},
		InB:  [][]byte{bytesOf(x), bytesOf(w), bb},
		OutB: [][]byte{bytesOf(out)},
	}
	return call, out[:op.Numel(p.Shape())], p
}

// convNaive is a direct float64 loop (2-d form; 1-d has H = 1): the
// output and the sum of the absolute values of its terms.
func convNaive(p op.ConvParams, x, w, b []float32) (ref, mag []float64) {
	two := func(v []int, d int) (int, int) {
		if len(v) == 1 {
			return d, v[0]
		}
		return v[0], v[1]
	}
	H, W := two(p.In, 1)
	KH, KW := two(p.Kernel, 1)
	OH, OW := two(p.Out, 1)
	SH, SW := two(p.Stride, 1)
	DH, DW := two(p.Dilation, 1)
	PH, PW := two(p.PadLo, 0)
	cinG, coutG := p.Cin/p.Groups, p.Cout/p.Groups
	ref = make([]float64, p.N*p.Cout*OH*OW)
	mag = make([]float64, len(ref))
	for n := 0; n < p.N; n++ {
		for g := 0; g < p.Groups; g++ {
			for ci := 0; ci < cinG; ci++ {
				for co := 0; co < coutG; co++ {
					for a := 0; a < KH; a++ {
						for bb := 0; bb < KW; bb++ {
							var wv float64
							if p.Transposed {
								wv = float64(w[(((g*cinG+ci)*coutG+co)*KH+a)*KW+bb])
							} else {
								wv = float64(w[(((g*coutG+co)*cinG+ci)*KH+a)*KW+bb])
							}
							if p.Transposed {
								for i := 0; i < H; i++ {
									for j := 0; j < W; j++ {
										oi, oj := i*SH-PH+a*DH, j*SW-PW+bb*DW
										if oi < 0 || oi >= OH || oj < 0 || oj >= OW {
											continue
										}
										v := float64(x[((n*p.Cin+g*cinG+ci)*H+i)*W+j]) * wv
										o := ((n*p.Cout+g*coutG+co)*OH+oi)*OW + oj
										ref[o] += v
										mag[o] += math.Abs(v)
									}
								}
								continue
							}
							for oi := 0; oi < OH; oi++ {
								for oj := 0; oj < OW; oj++ {
									i, j := oi*SH-PH+a*DH, oj*SW-PW+bb*DW
									if i < 0 || i >= H || j < 0 || j >= W {
										continue
									}
									v := float64(x[((n*p.Cin+g*cinG+ci)*H+i)*W+j]) * wv
									o := ((n*p.Cout+g*coutG+co)*OH+oi)*OW + oj
									ref[o] += v
									mag[o] += math.Abs(v)
								}
							}
						}
					}
				}
			}
		}
	}
	if b != nil {
		for i := range ref {
			ref[i] += float64(b[i/(OH*OW)%p.Cout])
			mag[i] += math.Abs(float64(b[i/(OH*OW)%p.Cout]))
		}
	}
	return ref, mag
}

// bf16Round returns x rounded elementwise to bfloat16.
func bf16Round(x []float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = dtype.RoundBF16(v)
	}
	return out
}

func convRand(r *rand.Rand, n int) []float32 {
	s := make([]float32, max(n, 1))
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s[:n]
}

// convCases is the table: sizes 1, 7, 15, 16, 17, 33 and ragged shapes,
// strides 1-2, padding 0-2 (asymmetric too), dilation 1-2, groups 1, 2
// and depthwise, 1-d and 2-d, forward and transposed (the input
// gradient's form) and the weight gradient's form (a large kernel, a
// small output, the batch as channels).
func convCases() []convCase {
	l := func(v ...int) []int { return v }
	var cs []convCase
	for _, sz := range []int{1, 7, 15, 16, 17, 33} {
		for _, st := range []int{1, 2} {
			for _, pd := range []int{0, 1, 2} {
				for _, dl := range []int{1, 2} {
					k := 3
					if sz+2*pd < dl*(k-1)+1 {
						k = 1
					}
					co := []int{1, 7, 16, 17}[(sz+pd+st)%4]
					cs = append(cs,
						convCase{n: 2, cin: 3, cout: co, groups: 1, in: l(sz, sz+3), k: l(k, 2), stride: l(st), dil: l(dl), padLo: l(pd), padHi: l(pd), bias: pd == 1},
						convCase{n: 1, cin: 4, cout: 6, groups: 2, in: l(sz + 2), k: l(k), stride: l(st), dil: l(dl), padLo: l(pd), padHi: l(pd), bias: true},
					)
					// Transposed (stride 1: the flipped forward form; 2: GEMM +
					// col2im), output size (in-1)*s - padLo - padHi + effK +
					// outPad positive.
					for _, tc := range []convCase{
						{n: 2, cin: 5, cout: co, groups: 1, in: l(sz, sz+1), k: l(k, 3), stride: l(st), dil: l(dl), padLo: l(min(pd, dl*(k-1))), padHi: l(min(pd, 2*dl)), outPad: l(st - 1), transposed: true, bias: sz == 7},
						{n: 1, cin: 4, cout: 2, groups: 2, in: l(sz), k: l(k), stride: l(st), dil: l(dl), padLo: l(pd), padHi: l(0), outPad: l(0), transposed: true},
					} {
						if (sz-1)*st-tc.padLo[0]-tc.padHi[0]+dl*(k-1)+1+tc.outPad[0] >= 1 {
							cs = append(cs, tc)
						}
					}
				}
			}
		}
	}
	cs = append(cs,
		// Depthwise, asymmetric padding, ragged.
		convCase{n: 3, cin: 8, cout: 8, groups: 8, in: l(9, 13), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1, 0), padHi: l(2, 1), bias: true},
		convCase{n: 2, cin: 6, cout: 12, groups: 6, in: l(10, 7), k: l(3, 2), stride: l(2, 1), dil: l(1, 2), padLo: l(1), padHi: l(1)},
		convCase{n: 2, cin: 8, cout: 8, groups: 8, in: l(15, 15), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1), transposed: true, bias: true},
		// Asymmetric strides (the phase split) with dilation and padding.
		convCase{n: 2, cin: 5, cout: 7, groups: 1, in: l(17, 15), k: l(3, 4), stride: l(3, 2), dil: l(2, 1), padLo: l(2, 0), padHi: l(1, 3), bias: true},
		convCase{n: 3, cin: 4, cout: 6, groups: 2, in: l(33), k: l(5), stride: l(3), dil: l(2), padLo: l(1), padHi: l(2)},
		convCase{n: 2, cin: 3, cout: 8, groups: 1, in: l(16, 16), k: l(2, 2), stride: l(1, 4), dil: l(1), padLo: l(0), padHi: l(0), bias: true},
		// 1x1, stride 1 and 2.
		convCase{n: 3, cin: 33, cout: 17, groups: 1, in: l(7, 9), k: l(1, 1), stride: l(1), dil: l(1), padLo: l(0), padHi: l(0), bias: true},
		convCase{n: 2, cin: 16, cout: 32, groups: 1, in: l(15, 16), k: l(1, 1), stride: l(2), dil: l(1), padLo: l(0), padHi: l(0)},
		convCase{n: 3, cin: 8, cout: 14, groups: 2, in: l(5, 6), k: l(1, 1), stride: l(1), dil: l(2), padLo: l(0), padHi: l(0), bias: true},
		convCase{n: 2, cin: 7, cout: 1, groups: 1, in: l(40), k: l(1), stride: l(1), dil: l(1), padLo: l(0), padHi: l(0), bias: true},
		convCase{n: 1, cin: 300, cout: 20, groups: 1, in: l(17), k: l(1), stride: l(1), dil: l(1), padLo: l(0), padHi: l(0)},
		// The weight gradient's convolution: X [Cx, N, H, W], G [Cg, N, OH, OW] as the kernel.
		convCase{n: 16, cin: 2, cout: 17, groups: 1, in: l(17, 17), k: l(17, 17), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1)},
		convCase{n: 7, cin: 4, cout: 6, groups: 2, in: l(15, 16), k: l(8, 8), stride: l(2), dil: l(2), padLo: l(1), padHi: l(1)},
		convCase{n: 5, cin: 3, cout: 9, groups: 1, in: l(33), k: l(31), stride: l(1), dil: l(1), padLo: l(2), padHi: l(2)},
		// ... of a stride-2 convolution: kernel runs with element step 2.
		convCase{n: 9, cin: 3, cout: 5, groups: 1, in: l(20, 21), k: l(9, 10), stride: l(1), dil: l(2), padLo: l(1), padHi: l(1), bias: true},
		convCase{n: 20, cin: 2, cout: 7, groups: 1, in: l(40), k: l(17), stride: l(1), dil: l(2), padLo: l(1), padHi: l(0)},
		// ... with enough output positions for the 6x64 tile, whose panels
		// the transposing packers fill 16 columns at a time (rows 64
		// apart): kernel rows of 18 (16 transposed, 2 in a short run) and,
		// output rows of 3, of 20 with element step 2.
		convCase{n: 64, cin: 2, cout: 9, groups: 1, in: l(20, 20), k: l(16, 18), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1)},
		convCase{n: 64, cin: 2, cout: 7, groups: 1, in: l(20, 39), k: l(9, 20), stride: l(1), dil: l(2), padLo: l(1), padHi: l(1), bias: true},
		// Without a bias, more output channels than whole 6-row tiles (and
		// exactly whole ones, in groups), k blocked: tiles of panels inside
		// an output row go straight into the output (convOutDirect).
		convCase{n: 2, cin: 64, cout: 13, groups: 1, in: l(20, 21), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1)},
		convCase{n: 3, cin: 8, cout: 24, groups: 2, in: l(18, 35), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1)},
		// Transposed with output padding and more channels than one k block.
		convCase{n: 2, cin: 300, cout: 20, groups: 1, in: l(6, 5), k: l(3, 3), stride: l(1), dil: l(2), padLo: l(1), padHi: l(1), outPad: l(1), transposed: true, bias: true},
		// Strided transposed: ragged, asymmetric stride, depthwise, more
		// channels than one k block.
		convCase{n: 3, cin: 6, cout: 9, groups: 3, in: l(7, 5), k: l(3, 2), stride: l(2, 3), dil: l(1, 2), padLo: l(1, 0), padHi: l(1, 0), outPad: l(1, 2), transposed: true, bias: true},
		convCase{n: 1, cin: 4, cout: 4, groups: 4, in: l(9, 9), k: l(3, 3), stride: l(2), dil: l(1), padLo: l(1), padHi: l(1), outPad: l(1), transposed: true},
		convCase{n: 2, cin: 300, cout: 7, groups: 1, in: l(5, 4), k: l(3, 3), stride: l(2), dil: l(1), padLo: l(2), padHi: l(0), outPad: l(0), transposed: true, bias: true},
		// Transposed padding beyond effK-1: the forward form crops the input.
		convCase{n: 2, cin: 3, cout: 4, groups: 1, in: l(9, 11), k: l(3, 2), stride: l(1), dil: l(1), padLo: l(3, 2), padHi: l(1, 0), transposed: true, bias: true},
		convCase{n: 1, cin: 2, cout: 3, groups: 1, in: l(12), k: l(2), stride: l(1), dil: l(2), padLo: l(4), padHi: l(0), transposed: true},
		// Wide images with more than six output channels: the direct tile
		// reads B from the input for every 6-row tile (convF32's direct),
		// forward, dilated, stride 2 (through the phases), transposed and
		// 1-d.
		convCase{n: 2, cin: 24, cout: 13, groups: 1, in: l(9, 40), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1), bias: true},
		convCase{n: 1, cin: 3, cout: 7, groups: 1, in: l(16, 70), k: l(3, 3), stride: l(1), dil: l(2), padLo: l(2), padHi: l(2)},
		convCase{n: 2, cin: 4, cout: 12, groups: 1, in: l(30, 66), k: l(3, 3), stride: l(2), dil: l(1), padLo: l(1), padHi: l(1), bias: true},
		convCase{n: 2, cin: 40, cout: 16, groups: 1, in: l(16, 48), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1), outPad: l(0), transposed: true, bias: true},
		convCase{n: 3, cin: 6, cout: 20, groups: 2, in: l(250), k: l(5), stride: l(1), dil: l(1), padLo: l(2), padHi: l(2)},
		// Empty channels: bias only.
		convCase{n: 2, cin: 0, cout: 3, groups: 1, in: l(5, 5), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1), bias: true},
	)
	return cs
}

// TestConvFastMatches checks the fast f32 path against the generic path
// (forward: bit for bit, the same FMA chains) and a float64 direct loop
// (all: within f32 rounding of the terms' magnitude), NaN positions
// included.
func TestConvFastMatches(t *testing.T) {
	if tileF32(procKS) == nil {
		t.Skip("no register-tiled f32 kernel at this CPU level")
	}
	r := rand.New(rand.NewPCG(1, 2))
	var cases []convCase
	for i, c := range convCases() {
		cases = append(cases, c)
		if i%4 == 0 {
			// The bf16 precisions on a quarter of the table.
			c.prec = []string{op.PrecisionMedium, op.PrecisionHigh}[i/4%2]
			cases = append(cases, c)
		}
	}
	for _, c := range cases {
		for _, withNaN := range []bool{false, true} {
			name := c.String()
			if withNaN {
				name += "_nan"
			}
			t.Run(name, func(t *testing.T) {
				xs := c.n * c.cin
				for _, v := range c.in {
					xs *= v
				}
				ws := c.cout * max(c.cin/c.groups, 0)
				for _, v := range c.k {
					ws *= v
				}
				x, w, b := convRand(r, xs), convRand(r, ws), convRand(r, c.cout)
				if !c.bias {
					b = nil
				}
				if withNaN {
					if len(x) == 0 {
						t.Skip("no input elements")
					}
					x[r.IntN(len(x))] = float32(math.NaN())
				}
				got, p := convRun(t, c, x, w, b, false)
				if !convFastOK(procKS, p) {
					t.Fatalf("fast path does not take %v", c)
				}
				xr, wr, tolRel := x, w, 1e-5
				switch c.prec {
				case op.PrecisionMedium:
					// One pass over bf16-rounded inputs, f32 sums.
					xr, wr = bf16Round(x), bf16Round(w)
				case op.PrecisionHigh:
					// Three passes: each product within 2^-16 of exact.
					tolRel = 1e-4
				}
				ref, mag := convNaive(p, xr, wr, b)
				for i := range got {
					g, want := float64(got[i]), ref[i]
					if math.IsNaN(want) != math.IsNaN(g) {
						t.Fatalf("out[%d] = %v, want %v (NaN mismatch)", i, g, want)
					}
					if math.IsNaN(want) {
						continue
					}
					if tol := tolRel*mag[i] + 1e-30; math.Abs(g-want) > tol {
						t.Fatalf("out[%d] = %v, want %v (|diff| %g > %g)", i, g, want, math.Abs(g-want), tol)
					}
				}
				if p.Transposed || c.prec != "" && !convFastOK(procKS, p) {
					return
				}
				old, _ := convRun(t, c, x, w, b, true)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(old[i]) && !(got[i] != got[i] && old[i] != old[i]) {
						t.Fatalf("out[%d] = %v, generic path %v: not bit-identical", i, got[i], old[i])
					}
				}
			})
		}
	}
}

// BenchmarkConvF32 times the three convolutions of a ResNet-like 3x3
// layer's training step (x [8,64,56,56], w [64,64,3,3], pad 1) as the
// kernel receives them: the forward, the input gradient (a stride-1
// transposed convolution) and the weight gradient (op's convWeightGrad: the
// input as [64, 8, 56, 56] convolved with the output gradient as a
// [64, 8, 56, 56] kernel, 3x3 outputs), and stride-2, 1x1, depthwise and
// 1-d shapes. GOTPU_CONV_BENCH_GENERIC=1 times the generic im2col path
// instead; GOTPU_CONV_BENCH_PACKED=1 turns off the avx2 direct tile and
// medium's one rounding of the input (convDirect16, convRoundOnce) and the
// tiles written straight into the output (convOutDirect), and
// GOTPU_CONV_BENCH_SCATTER=1 the last alone, for comparison. GFLOP/cpu-s divides by the process's CPU time: with
// GOMAXPROCS=1 it is the kernel's rate whatever else the machine runs.
func BenchmarkConvF32(b *testing.B) {
	if os.Getenv("GOTPU_CONV_BENCH_PACKED") != "" {
		defer func(d, r, o bool) { convDirect16, convRoundOnce, convOutDirect = d, r, o }(convDirect16, convRoundOnce, convOutDirect)
		convDirect16, convRoundOnce, convOutDirect = false, false, false
	}
	if os.Getenv("GOTPU_CONV_BENCH_SCATTER") != "" {
		defer func(o bool) { convOutDirect = o }(convOutDirect)
		convOutDirect = false
	}
	l := func(v ...int) []int { return v }
	for _, bc := range []struct {
		name string
		c    convCase
	}{
		{"forward", convCase{n: 8, cin: 64, cout: 64, groups: 1, in: l(56, 56), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1)}},
		{"input_grad", convCase{n: 8, cin: 64, cout: 64, groups: 1, in: l(56, 56), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1), outPad: l(0), transposed: true}},
		{"weight_grad", convCase{n: 64, cin: 8, cout: 64, groups: 1, in: l(56, 56), k: l(56, 56), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1)}},
		// A stride-2 downsampling layer (x [8,64,56,56], w [128,64,3,3]):
		// forward and input gradient.
		{"s2_forward", convCase{n: 8, cin: 64, cout: 128, groups: 1, in: l(56, 56), k: l(3, 3), stride: l(2), dil: l(1), padLo: l(1), padHi: l(1)}},
		{"s2_input_grad", convCase{n: 8, cin: 128, cout: 64, groups: 1, in: l(28, 28), k: l(3, 3), stride: l(2), dil: l(1), padLo: l(1), padHi: l(1), outPad: l(1), transposed: true}},
		{"s2_weight_grad", convCase{n: 64, cin: 8, cout: 128, groups: 1, in: l(56, 56), k: l(28, 28), stride: l(1), dil: l(2), padLo: l(1), padHi: l(0)}},
		{"pointwise", convCase{n: 8, cin: 256, cout: 64, groups: 1, in: l(28, 28), k: l(1, 1), stride: l(1), dil: l(1), padLo: l(0), padHi: l(0)}},
		{"depthwise", convCase{n: 8, cin: 64, cout: 64, groups: 64, in: l(56, 56), k: l(3, 3), stride: l(1), dil: l(1), padLo: l(1), padHi: l(1)}},
		{"conv1d", convCase{n: 8, cin: 128, cout: 128, groups: 1, in: l(1000), k: l(5), stride: l(1), dil: l(2), padLo: l(4), padHi: l(4)}},
		// LeNet's two layers (batch 64, 5x5): forward, input and weight gradients.
		{"lenet1_forward", convCase{n: 64, cin: 1, cout: 6, groups: 1, in: l(28, 28), k: l(5, 5), stride: l(1), dil: l(1), padLo: l(0), padHi: l(0)}},
		{"lenet1_input_grad", convCase{n: 64, cin: 6, cout: 1, groups: 1, in: l(24, 24), k: l(5, 5), stride: l(1), dil: l(1), padLo: l(0), padHi: l(0), outPad: l(0), transposed: true}},
		{"lenet1_weight_grad", convCase{n: 1, cin: 64, cout: 6, groups: 1, in: l(28, 28), k: l(24, 24), stride: l(1), dil: l(1), padLo: l(0), padHi: l(0)}},
		{"lenet2_forward", convCase{n: 64, cin: 6, cout: 16, groups: 1, in: l(12, 12), k: l(5, 5), stride: l(1), dil: l(1), padLo: l(0), padHi: l(0)}},
		{"lenet2_input_grad", convCase{n: 64, cin: 16, cout: 6, groups: 1, in: l(8, 8), k: l(5, 5), stride: l(1), dil: l(1), padLo: l(0), padHi: l(0), outPad: l(0), transposed: true}},
		{"lenet2_weight_grad", convCase{n: 6, cin: 64, cout: 16, groups: 1, in: l(12, 12), k: l(8, 8), stride: l(1), dil: l(1), padLo: l(0), padHi: l(0)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := bc.c
			r := rand.New(rand.NewPCG(1, 2))
			xs, ws := c.n*c.cin, c.cout*c.cin/c.groups
			for i := range c.in {
				xs, ws = xs*c.in[i], ws*c.k[i]
			}
			x, w := convRand(r, xs), convRand(r, ws)
			call, _, p := convCall(b, c, x, w, nil)
			flops := 2 * float64(op.Numel(p.Shape())) * float64(ws/c.cout)
			if c.transposed {
				flops = 2 * float64(xs) * float64(ws/c.cin)
			}
			id := []func(float32) float32{idF32}
			generic := os.Getenv("GOTPU_CONV_BENCH_GENERIC") != ""
			b.ResetTimer()
			cpu0 := convCPUTime()
			for range b.N {
				if generic {
					// The generic im2col path, for comparison.
					runConv(call, p, convPlan[float32, float32]{kern: kern4x4[float32], dot: dotPlain[float32], wConv: id, xConv: id, colConv: id,
						toT: idF32, fromT: idF32, plain: true, tile: tileF32(procKS)})
					continue
				}
				if err := convolutionKernel(call); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			if cpu := convCPUTime() - cpu0; cpu > 0 {
				// Per core-second of CPU time the process got: with
				// GOMAXPROCS=1, the kernel's rate free of other processes.
				b.ReportMetric(flops*float64(b.N)/cpu.Seconds()/1e9, "GFLOP/cpu-s")
			}
		})
	}
}

// TestConvPanelsPerUnit checks convF32's split of the columns into units.
func TestConvPanelsPerUnit(t *testing.T) {
	for _, c := range []struct{ npan, groups, nw, max, want int }{
		{9, 1, 2, 4, 1},    // a ResNet weight gradient at 6x64: 5 and 4 panels a thread, not 6 and 3
		{36, 1, 2, 16, 3},  // the same at 6x16: 12 units of 3
		{408, 1, 2, 4, 4},  // a forward: full units
		{9, 1, 1, 4, 3},    // one thread: as large as a quarter of the work allows
		{10, 3, 2, 16, 1},  // groups: 30 units, 15 a thread
		{1, 1, 2, 4, 1},    // one panel
		{100, 1, 8, 16, 1}, // many threads: 100 units, 13 a thread (3 a unit: 15)
	} {
		if got := convPanelsPerUnit(c.npan, c.groups, c.nw, c.max); got != c.want {
			t.Errorf("convPanelsPerUnit(%d, %d, %d, %d) = %d, want %d", c.npan, c.groups, c.nw, c.max, got, c.want)
		}
	}
}
