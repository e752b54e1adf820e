//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gotpu/gotpu/backend/cpu/internal/gemm"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// needBF16 skips (and logs) when the CPU cannot run the VDPBF16PS kernels.
func needBF16(t *testing.T) {
	t.Helper()
	if !haveAVX512BF16() {
		t.Skipf("level %s not supported here (levels %v): the VDPBF16PS kernels did not run", LevelAVX512BF16, SupportedLevels())
	}
}

// dpModel is one candidate model of VDPBF16PS on one lane.
type dpModel struct {
	name string
	f    func(acc, x0, x1, y0, y1 float32) float32
}

// roundOnce is RN(acc + x0*y0 + x1*y1) with one rounding, IEEE
// denormals.
func roundOnce(acc, x0, x1, y0, y1 float32) float32 {
	p0, p1 := float64(x0)*float64(y0), float64(x1)*float64(y1)
	if s := float64(acc) + p0 + p1; math.IsNaN(s) || math.IsInf(s, 0) || math.IsInf(p0, 0) || math.IsInf(p1, 0) {
		return float32(s)
	}
	s := new(big.Float).SetPrec(2000).SetFloat64(float64(acc))
	s.Add(s, new(big.Float).SetPrec(2000).SetFloat64(p0))
	s.Add(s, new(big.Float).SetPrec(2000).SetFloat64(p1))
	if s.Sign() == 0 {
		return float32(float64(acc) + p0 + p1)
	}
	f, _ := s.Float32()
	return f
}

// TestDPBF16Contract runs the BYTE-encoded VDPBF16PS on edge and random
// lanes (denormal inputs and results, rounding ties, cancellation,
// overflow, infinities, NaN) and compares it with candidate models of its
// arithmetic. The contract (bf16_gemm.go) must match every lane bit for
// bit (NaN: any NaN); the others are logged to show what distinguishes
// them.
func TestDPBF16Contract(t *testing.T) {
	needBF16(t)
	r := rand.New(rand.NewPCG(21, 22))
	models := []dpModel{
		{"contract: odd then even FMA, DAZ, FTZ after rounding", func(acc, x0, x1, y0, y1 float32) float32 {
			return fmaDAZ(fmaDAZ(acc, x1, y1), x0, y0)
		}},
		{"even then odd FMA, DAZ, FTZ", func(acc, x0, x1, y0, y1 float32) float32 {
			return fmaDAZ(fmaDAZ(acc, x0, y0), x1, y1)
		}},
		{"odd then even FMA, IEEE denormals", func(acc, x0, x1, y0, y1 float32) float32 {
			return fma32(x0, y0, fma32(x1, y1, acc))
		}},
		{"one rounding of acc+p0+p1, IEEE denormals", roundOnce},
		{"one rounding of acc+p0+p1, DAZ, FTZ", func(acc, x0, x1, y0, y1 float32) float32 {
			v := roundOnce(daz32(acc), daz32(x0), daz32(x1), daz32(y0), daz32(y1))
			return daz32(v)
		}},
	}
	type lane struct{ acc, x0, x1, y0, y1 float32 }
	var lanes []lane
	neg0 := float32(math.Copysign(0, -1))
	edges := []lane{
		{0x1p-126, 0, 0x1p-76, 0, -0x1p-76}, // rounds up to 2^-126
		{0x1p-126, 0, 0x1p-75, 0, -0x1p-75}, // tiny after rounding: flushed
		{0x1p-125, 0, 0x1p-63, 0, -0x1p-64}, // denormal product, normal sum
		{0x1p-127, 0, 1, 0, 1},              // denormal accumulator
		{0, 0x1p-63, 0, 0x1p-64, 0},         // denormal result
		{0, 0x1p-130, 0, 1, 0},              // denormal input
		{neg0, 0, 0, 0, 0},                  // -0 + +0
		{neg0, neg0, 0, 1, 0},               // -0 + -0
		{1, 0x1p-24, 0, 1, 0},               // tie to even
		{1, 0x1p-24, 0x1p-24, 1, 1},         // two ties: sequential vs once
		{1, -1, 0x1p-12, 1, 0x1p-12},        // odd first: 1+2^-24 -> 1, then 0
		{-1, 1, 0x1p-8, 1, 0x1p-16},         // cancellation
		{0x1.fep127, 0x1p127, 0, 1, 0},      // overflow
		{float32(math.Inf(1)), 1, float32(math.Inf(-1)), 1, 1},
		{1, float32(math.Inf(1)), 0, 0, 1}, // inf*0
		{float32(math.NaN()), 1, 1, 1, 1},
		{1, float32(math.NaN()), 1, 1, 1},
	}
	lanes = append(lanes, edges...)
	n := 1 << 16
	if testing.Short() {
		n = 1 << 13
	}
	for i := 0; i < n; i++ {
		l := lane{x0: randBF16Edge(r, true), x1: randBF16Edge(r, true), y0: randBF16Edge(r, true), y1: randBF16Edge(r, true)}
		switch r.IntN(4) {
		case 0:
			l.acc = math.Float32frombits(r.Uint32())
		case 1:
			l.acc = -l.x1 * l.y1 * (1 + float32(r.IntN(5)-2)*0x1p-23) // cancellation
		case 2:
			l.acc = randBF16Edge(r, true)
		default:
			l.acc = float32(r.NormFloat64())
		}
		lanes = append(lanes, l)
	}
	for len(lanes)%16 != 0 {
		lanes = append(lanes, lane{})
	}
	miss := make([]int, len(models))
	for i := 0; i < len(lanes); i += 16 {
		var acc [16]float32
		var a, b [16]uint32
		for j, l := range lanes[i : i+16] {
			acc[j] = l.acc
			a[j] = uint32(dtype.BF16FromF32(l.x1))<<16 | uint32(dtype.BF16FromF32(l.x0))
			b[j] = uint32(dtype.BF16FromF32(l.y1))<<16 | uint32(dtype.BF16FromF32(l.y0))
		}
		gemm.DPBF16Vec(&acc[0], &a[0], &b[0])
		for j, l := range lanes[i : i+16] {
			for mi, m := range models {
				if want := m.f(l.acc, l.x0, l.x1, l.y0, l.y1); !sameF32(acc[j], want) {
					miss[mi]++
					if mi == 0 {
						t.Errorf("lane %+v: VDPBF16PS %g (%08x), contract %g (%08x)", l, acc[j], math.Float32bits(acc[j]), want, math.Float32bits(want))
					}
				}
			}
		}
	}
	for mi, m := range models {
		t.Logf("%-55s mismatches %d of %d lanes", m.name, miss[mi], len(lanes))
	}
}

// TestGEMMBF16Pairs runs the VDPBF16PS GEMM through the blocked driver
// (with small blocks, so that k, row and column blocks, edge tiles and
// odd k remainders all occur) on bf16 operands with edge values and on
// f32 operands at medium and high, and checks every element bit for bit
// against the contract's reference (pairRef), for one and two threads.
func TestGEMMBF16Pairs(t *testing.T) {
	needBF16(t)
	r := rand.New(rand.NewPCG(23, 24))
	// Every kernel variant with small blocks, and the default tile.
	tiles := map[string]*gemmTile[float32]{"default": asmTileBF16, "deep": asmTileBF16Deep}
	for _, v := range []struct {
		mr   int
		kern func(kc int, a, b, c *float32, ldc int, pf *float32, load int)
	}{{8, gemm.BF16x8x32}, {12, gemm.BF16x12x32}, {14, gemm.BF16x14x32}} {
		tiles[fmt.Sprintf("%dx32-small-blocks", v.mr)] = &gemmTile[float32]{mr: v.mr, nr: 32, kc: 8, mc: 2 * v.mr, nc: 64, kern: v.kern, pairs: true}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	// k 1030: several of the deep tile's k blocks, and dot_general's
	// choice of that tile (pairTile, from deepBF16K).
	dims := [][3]int{{2, 2, 1}, {12, 32, 2}, {13, 33, 3}, {25, 65, 9}, {37, 70, 17}, {11, 97, 31}, {50, 40, 64}, {20, 36, deepBF16K + 6}}
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
							want := pairRef(func(p int) float32 { return a.at(i, p).F32() }, func(p int) float32 { return b.at(p, j).F32() }, k)
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
	// Batched (a batch-parallel split with two threads: 4 x 40x70x97 is
	// above the parallel threshold), B broadcast over the batch.
	for _, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		nb, m, n, k := 4, 40, 70, 97
		a := makeOperand(r, "rowmajor", nb*m, k, func(r *rand.Rand) dtype.BFloat16 { return dtype.BF16FromF32(randBF16Edge(r, false)) })
		b := makeOperand(r, "transposed", k, n, func(r *rand.Rand) dtype.BFloat16 { return dtype.BF16FromF32(randBF16Edge(r, false)) })
		got := make([]float32, nb*m*n)
		g := gemmProblem[dtype.BFloat16, dtype.BFloat16, float32]{nb: nb, m: m, n: n, k: k,
			a:    gemmSide[dtype.BFloat16, float32]{src: a.data, batch: seq(nb, m*k), row: seq(m, k), k: seq(k, 1), conv: toF, plain: true},
			b:    gemmSide[dtype.BFloat16, float32]{src: b.data, batch: seq(nb, 0), row: seq(n, b.lay.Strides[1]), k: seq(k, b.lay.Strides[0]), conv: toF, plain: true},
			kern: kern4x4[float32], dot: dotPlain[float32], tile: asmTileBF16, dst: got, ldc: n, dstBatch: m * n,
		}
		g.run()
		for bi := 0; bi < nb; bi++ {
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					want := pairRef(func(p int) float32 { return a.at(bi*m+i, p).F32() }, func(p int) float32 { return b.at(p, j).F32() }, k)
					if got := got[(bi*m+i)*n+j]; !sameF32(got, want) {
						t.Fatalf("batched procs=%d: [%d,%d,%d] = %g, want %g", procs, bi, i, j, got, want)
					}
				}
			}
		}
	}
	// f32 at medium and high through dot_general (the default blocking).
	ks := ksetFor(LevelAVX512BF16)
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
					want := pairRef(func(p int) float32 { return ca[p/k](a.at(i, p%k)) }, func(p int) float32 { return cb[p/k](b.at(p%k, j)) }, k*len(ca))
					if !sameF32(got[i*n+j], want) {
						t.Fatalf("f32 %s m=%d n=%d k=%d: [%d,%d] = %g, want %g", prec, m, n, k, i, j, got[i*n+j], want)
					}
				}
			}
		}
	}
}
