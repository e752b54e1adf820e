//go:build amd64 && !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gotpu/gotpu/backend/cpu/internal/gemm"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// needAMX skips a test of the AMX kernels where level amx is not
// available, saying so.
func needAMX(t *testing.T) {
	t.Helper()
	if asmTileAMX == nil {
		t.Skipf("level %s not supported here (levels %v): the AMX kernels did not run", LevelAMX, SupportedLevels())
	}
}

// TestAMXContract runs the kernel on one 32x32 tile, from zero and from
// loaded accumulators (denormals among them), over 1 to 4 chunks of bf16
// values with denormals, zeros of both signs, extremes and non-finite
// values, and checks every element bit for bit against amxRef. Candidate
// models that are not the instruction's (the k-ordered chain of the lower
// levels, one rounding of the exact sum) are reported as rejected, so the
// model is seen to be the only one that fits.
func TestAMXContract(t *testing.T) {
	needAMX(t)
	r := rand.New(rand.NewPCG(91, 92))
	for trial := 0; trial < 40; trial++ {
		chunks := 1 + trial%4
		k := 2 * amxChunk * chunks
		nonFinite := trial%5 == 4
		av := make([]float32, 32*k)
		bv := make([]float32, k*32)
		for i := range av {
			av[i] = randBF16Edge(r, nonFinite)
		}
		for i := range bv {
			bv[i] = randBF16Edge(r, nonFinite)
		}
		if trial%3 == 0 {
			// Sums near cancellation and in the denormal range.
			for i := 0; i < 32; i++ {
				av[i*k+1] = -av[i*k]
			}
		}
		ap := make([]float32, 32*k/2)
		bp := make([]float32, 32*k/2)
		ad := as[uint32](bytesOfF32(ap))
		bd := as[uint32](bytesOfF32(bp))
		hi := func(x float32) uint32 { return math.Float32bits(x) >> 16 }
		for i := 0; i < 32; i++ {
			for j := 0; j < k/2; j++ {
				ad[(j/amxChunk)*32*amxChunk+i*amxChunk+j%amxChunk] = hi(av[i*k+2*j])<<16 | hi(av[i*k+2*j+1])
			}
		}
		for j := 0; j < k/2; j++ {
			for c := 0; c < 32; c++ {
				bd[j*32+c] = hi(bv[2*j*32+c])<<16 | hi(bv[(2*j+1)*32+c])
			}
		}
		load := trial % 2
		c := make([]float32, 32*40)
		acc0 := make([]float32, len(c))
		for i := range c {
			switch {
			case load == 0:
				c[i] = float32(math.NaN()) // must be ignored
			case i%7 == 0:
				c[i] = math.Float32frombits(uint32(r.IntN(1<<23)) | uint32(r.IntN(2))<<31) // denormal
			default:
				c[i] = float32(r.NormFloat64())
			}
			acc0[i] = c[i]
		}
		gemm.AMX32x32(k, &ap[0], &bp[0], &c[0], 40, &c[0], load)
		chain, single := 0, 0
		for i := 0; i < 32; i++ {
			for j := 0; j < 32; j++ {
				var acc float32
				if load == 1 {
					acc = acc0[i*40+j]
				}
				fa := func(p int) float32 { return av[i*k+p] }
				fb := func(p int) float32 { return bv[p*32+j] }
				want := amxRef(acc, fa, fb, k)
				got := c[i*40+j]
				if !sameF32(got, want) {
					t.Fatalf("trial %d k=%d load=%d: [%d,%d] = %g (%08x), model %g (%08x)", trial, k, load, i, j, got, math.Float32bits(got), want, math.Float32bits(want))
				}
				ch := acc
				for p := 0; p < k; p++ {
					ch = fmaDAZ(ch, fa(p), fb(p))
				}
				if sameF32(ch, got) {
					chain++
				}
				s := float64(daz32(acc))
				for p := 0; p < k; p++ {
					s += float64(daz32(fa(p))) * float64(daz32(fb(p)))
				}
				if sameF32(float32(s), got) {
					single++
				}
			}
			// Columns past the tile are untouched.
			for j := 32; j < 40; j++ {
				if !sameF32(c[i*40+j], acc0[i*40+j]) {
					t.Fatalf("trial %d: [%d,%d] outside the tile written", trial, i, j)
				}
			}
		}
		if trial == 0 {
			t.Logf("k=%d: the k-ordered chain fits %d/1024 elements, one rounding of the sum %d/1024; the model all", k, chain, single)
		}
	}
}

// TestPackPairRows checks the tile-row layout of every packing path
// against its definition: bf16 and f32 (both split parts) sides in every
// layout, at every k remainder and block offset, with partial panels and
// pad pairs.
func TestPackPairRows(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, lay := range layoutNames {
		for _, rows := range []int{1, 5, 16, 33} {
			for _, k := range []int{1, 2, 31, 32, 33, 70} {
				bf := makeOperand(r, lay, rows, k, func(r *rand.Rand) dtype.BFloat16 { return dtype.BF16FromF32(float32(r.NormFloat64())) })
				f := makeOperand(r, lay, rows, k, func(r *rand.Rand) float32 { return float32(r.NormFloat64()) })
				rowOff := seq(rows, bf.lay.Strides[0])
				kOff := seq(k, bf.lay.Strides[1])
				toF := []func(dtype.BFloat16) float32{func(x dtype.BFloat16) float32 { return x.F32() }}
				sb := gemmSide[dtype.BFloat16, float32]{src: bf.data, base: bf.lay.Offset, row: rowOff, k: kOff, conv: toF, plain: true}
				ca, _ := bf16Passes(op.PrecisionHigh)
				sf := gemmSide[float32, float32]{src: f.data, base: f.lay.Offset, row: rowOff, k: kOff, conv: ca, round: bf16Rounds(op.PrecisionHigh)[0]}
				const w = 32
				for p0 := 0; p0 < k; p0 += 32 {
					for _, kc := range []int{1, 2, 17, 32, 64} {
						if p0+kc > k {
							continue
						}
						ps := roundUp((kc+1)/2, amxChunk)
						check := func(name string, got []float32, val func(i, gp int) uint16) {
							g := as[uint32](bytesOfF32(got))
							for i := 0; i < roundUp(rows, w); i++ {
								for j := 0; j < ps; j++ {
									var want uint32
									if i < rows && 2*j < kc {
										want = uint32(val(i, p0+2*j)) << 16
										if 2*j+1 < kc {
											want |= uint32(val(i, p0+2*j+1))
										} else {
											want |= pairPadA
										}
									}
									if gw := g[(i/w)*w*ps+(j/amxChunk)*w*amxChunk+(i%w)*amxChunk+j%amxChunk]; gw != want {
										t.Fatalf("%s %s rows=%d k=%d p0=%d kc=%d: (%d, %d) = %08x, want %08x", name, lay, rows, k, p0, kc, i, j, gw, want)
									}
								}
							}
						}
						dst := make([]float32, roundUp(rows, w)*ps)
						for i := range dst {
							dst[i] = math.Float32frombits(0xdeadbeef)
						}
						packPairRows(procKS, dst, &sb, 0, 0, rows, p0, kc, w, ps, pairPadA)
						check("bf16", dst, func(i, gp int) uint16 { return uint16(bf.at(i, gp)) })
						// The f32 side's second and third passes (k tripled).
						for _, p0f := range []int{p0 + k, p0 + 2*k} {
							for i := range dst {
								dst[i] = math.Float32frombits(0xdeadbeef)
							}
							packPairRows(procKS, dst, &sf, 0, 0, rows, p0f, kc, w, ps, pairPadA)
							check("f32", dst, func(i, gp int) uint16 {
								gp += p0f - p0
								return uint16(dtype.BF16FromF32(ca[gp/k](f.at(i, gp%k))))
							})
						}
					}
				}
			}
		}
	}
}

// TestGEMMAMX runs the AMX GEMM through the blocked driver (small blocks,
// so that k, row and column blocks, edge tiles, partial chunks and odd k
// all occur, and the default blocking) on bf16 operands with edge values
// in every layout, and through dot_general on bf16 and on f32 at medium
// and high, at one and two threads, and checks every element bit for bit
// against amxRef.
func TestGEMMAMX(t *testing.T) {
	needAMX(t)
	r := rand.New(rand.NewPCG(93, 94))
	tiles := map[string]*gemmTile[float32]{
		"default":      asmTileAMX,
		"small-blocks": {mr: 32, nr: 32, kc: 32, mc: 64, nc: 64, kern: gemm.AMX32x32, pairs: true, amx: true},
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	dims := [][3]int{{2, 2, 1}, {32, 32, 32}, {13, 33, 3}, {33, 65, 31}, {37, 70, 64}, {11, 97, 95}, {64, 40, 129}, {20, 36, 1030}}
	if !testing.Short() {
		dims = append(dims, [3]int{130, 150, 301})
	}
	toF := []func(dtype.BFloat16) float32{func(x dtype.BFloat16) float32 { return x.F32() }}
	for tn, tile := range tiles {
		for _, d := range dims {
			m, n, k := d[0], d[1], d[2]
			for li, lay := range layoutNames {
				la, lb := lay, layoutNames[(li+1)%len(layoutNames)]
				nonFinite := (m+k)%3 == 0
				a := makeOperand(r, la, m, k, func(r *rand.Rand) dtype.BFloat16 { return dtype.BF16FromF32(randBF16Edge(r, nonFinite)) })
				b := makeOperand(r, lb, k, n, func(r *rand.Rand) dtype.BFloat16 { return dtype.BF16FromF32(randBF16Edge(r, nonFinite)) })
				for _, procs := range []int{1, 2} {
					runtime.GOMAXPROCS(procs)
					got := make([]float32, m*n)
					g := gemmProblem[dtype.BFloat16, dtype.BFloat16, float32]{nb: 1, m: m, n: n, k: k,
						a:    gemmSide[dtype.BFloat16, float32]{src: a.data, base: a.lay.Offset, row: seq(m, a.lay.Strides[0]), k: seq(k, a.lay.Strides[1]), conv: toF, plain: true},
						b:    gemmSide[dtype.BFloat16, float32]{src: b.data, base: b.lay.Offset, row: seq(n, b.lay.Strides[1]), k: seq(k, b.lay.Strides[0]), conv: toF, plain: true},
						kern: kern4x4[float32], dot: dotPlain[float32], tile: tile, dst: got, ldc: n, dstBatch: m * n,
					}
					g.run()
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							want := amxRef(0, func(p int) float32 { return a.at(i, p).F32() }, func(p int) float32 { return b.at(p, j).F32() }, k)
							if !sameF32(got[i*n+j], want) {
								t.Fatalf("bf16 %s %s x %s m=%d n=%d k=%d procs=%d: [%d,%d] = %g (%08x), want %g (%08x)",
									tn, la, lb, m, n, k, procs, i, j, got[i*n+j], math.Float32bits(got[i*n+j]), want, math.Float32bits(want))
							}
						}
					}
				}
			}
		}
	}
	// dot_general at level amx: bf16 (rounded to bf16 once) and f32 at
	// medium and high.
	ks := ksetFor(LevelAMX)
	for di, d := range dims {
		m, n, k := d[0], d[1], d[2]
		la, lb := layoutNames[(m+k)%4], layoutNames[(n+k)%4]
		if di%2 == 0 {
			la, lb = "rowmajor", "transposed" // x·Wᵀ, a linear layer
		}
		a := makeOperand(r, la, m, k, func(r *rand.Rand) dtype.BFloat16 { return dtype.BF16FromF32(randBF16Edge(r, false)) })
		b := makeOperand(r, lb, k, n, func(r *rand.Rand) dtype.BFloat16 { return dtype.BF16FromF32(randBF16Edge(r, false)) })
		got, err := matmul(ks, dtype.BF16, op.PrecisionDefault, a, b)
		if err != nil {
			t.Fatal(err)
		}
		if m == 1 || n == 1 {
			continue
		}
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				want := dtype.BF16FromF32(amxRef(0, func(p int) float32 { return a.at(i, p).F32() }, func(p int) float32 { return b.at(p, j).F32() }, k))
				if got[i*n+j] != want {
					t.Fatalf("bf16 dot_general %s x %s m=%d n=%d k=%d: [%d,%d] = %v, want %v", la, lb, m, n, k, i, j, got[i*n+j], want)
				}
			}
		}
	}
	for _, prec := range []string{op.PrecisionMedium, op.PrecisionHigh} {
		ca, cb := bf16Passes(prec)
		for _, d := range dims {
			m, n, k := d[0], d[1], d[2]
			a := makeOperand(r, layoutNames[(m+k)%4], m, k, genF32)
			b := makeOperand(r, layoutNames[(n+k)%4], k, n, genF32)
			got, err := matmul(ks, dtype.F32, prec, a, b)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					want := amxRef(0, func(p int) float32 { return ca[p/k](a.at(i, p%k)) }, func(p int) float32 { return cb[p/k](b.at(p%k, j)) }, k*len(ca))
					if !sameF32(got[i*n+j], want) {
						t.Fatalf("f32 %s m=%d n=%d k=%d: [%d,%d] = %g, want %g", prec, m, n, k, i, j, got[i*n+j], want)
					}
				}
			}
		}
	}
}

// TestConvAMX runs bf16 convolutions (not transposed: 1-d and 2-d, with
// padding, strides, dilation, groups, bias, k blocks and partial chunks,
// and weight-gradient shapes) at level amx and checks every output bit for
// bit against the contract: amxRef over the k steps in (ci, kh, kw)
// order, plus the bias in f32, rounded to bf16 once.
func TestConvAMX(t *testing.T) {
	needAMX(t)
	r := rand.New(rand.NewPCG(95, 96))
	for _, c := range conv16Cases() {
		if c.transposed || len(c.in) > 2 {
			continue
		}
		xs, ws := c.n*c.cin, c.cout*(c.cin/c.groups)
		for i := range c.in {
			xs, ws = xs*c.in[i], ws*c.k[i]
		}
		x, w, b := bf16Round(convRand(r, xs)), bf16Round(convRand(r, ws)), bf16Round(convRand(r, c.cout))
		if !c.bias {
			b = nil
		}
		var got []float32
		var p op.ConvParams
		ks := ksetFor(LevelAMX)
		got, p = conv16Run(t, ks, c, dtype.BF16, x, w, b)
		if !convPairsOK(procKS, p) {
			continue
		}
		nd := len(p.In)
		in, kk, out := append([]int{1}, p.In...), append([]int{1}, p.Kernel...), append([]int{1}, p.Out...)
		at := func(v []int, i int) int { return v[len(v)-nd+i] }
		if nd == 1 {
			in, kk, out = []int{1, p.In[0]}, []int{1, p.Kernel[0]}, []int{1, p.Out[0]}
		}
		dim := func(v []int, i int) int { // per spatial dim, padded to 2-d
			if nd == 1 {
				if i == 0 {
					return 0
				}
				return at(v, 0)
			}
			return at(v, i)
		}
		cinG, coutG := p.Cin/p.Groups, p.Cout/p.Groups
		kdim := cinG * kk[len(kk)-2] * kk[len(kk)-1]
		oh, ow := out[len(out)-2], out[len(out)-1]
		ih, iw := in[len(in)-2], in[len(in)-1]
		kh, kw := kk[len(kk)-2], kk[len(kk)-1]
		for n := 0; n < p.N; n++ {
			for co := 0; co < p.Cout; co++ {
				gi := co / coutG
				for y := 0; y < oh; y++ {
					for xo := 0; xo < ow; xo++ {
						fa := func(q int) float32 { return w[co*kdim+q] }
						fb := func(q int) float32 {
							ci, t := q/(kh*kw), q%(kh*kw)
							yy := y*dim(p.Stride, 0) - dim(p.PadLo, 0) + (t/kw)*dim(p.Dilation, 0)
							xx := xo*dim(p.Stride, 1) - dim(p.PadLo, 1) + (t%kw)*dim(p.Dilation, 1)
							if nd == 1 {
								yy = 0
							}
							if yy < 0 || yy >= ih || xx < 0 || xx >= iw {
								return 0
							}
							return x[((n*p.Cin+gi*cinG+ci)*ih+yy)*iw+xx]
						}
						acc := amxRef(0, fa, fb, kdim)
						if b != nil {
							acc += b[co]
						}
						want := dtype.RoundBF16(acc)
						o := ((n*p.Cout+co)*oh+y)*ow + xo
						if !sameF32(got[o], want) {
							t.Fatalf("%v: out[%d] (n %d co %d y %d x %d) = %v, want %v", c, o, n, co, y, xo, got[o], want)
						}
					}
				}
			}
		}
	}
}
