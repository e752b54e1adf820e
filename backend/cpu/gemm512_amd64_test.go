//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/gotpu/gotpu/backend/cpu/internal/gemm"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// zmmKernelsF32 are the AVX-512 f32 micro-kernels with their tiles (the
// sweep compares them; add a candidate here to measure it).
var zmmKernelsF32 = []struct {
	name   string
	mr, nr int
	kern   func(kc int, a, b, c *float32, ldc int, pf *float32, load int)
}{
	{"6x64", 6, 64, gemm.F32x6x64z},
}

// TestZMMKernels checks every AVX-512 micro-kernel directly against the
// exact FMA chain: from zero (load 0, C only written) and from C (load 1),
// at k around the unrolled loop's four steps, with a row stride wider
// than the tile and guard values around every row.
func TestZMMKernels(t *testing.T) {
	if !haveAVX512() {
		t.Logf("level %s not supported by this CPU: ZMM kernels not run", LevelAVX512)
		return
	}
	r := rand.New(rand.NewPCG(51, 52))
	for _, kd := range zmmKernelsF32 {
		for _, kc := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 192} {
			for _, load := range []int{0, 1} {
				a := make([]float32, kd.mr*kc+1)
				b := make([]float32, kd.nr*kc+1)
				for i := range a {
					a[i] = genF32(r)
				}
				for i := range b {
					b[i] = genF32(r)
				}
				ldc := kd.nr + 7
				c := make([]float32, kd.mr*ldc+8)
				for i := range c {
					c[i] = genF32(r)
				}
				want := append([]float32(nil), c...)
				for i := 0; i < kd.mr; i++ {
					for j := 0; j < kd.nr; j++ {
						acc := want[i*ldc+j]
						if load == 0 {
							acc = 0
						}
						for p := 0; p < kc; p++ {
							acc = fma32(a[p*kd.mr+i], b[p*kd.nr+j], acc)
						}
						want[i*ldc+j] = acc
					}
				}
				kd.kern(kc, &a[0], &b[0], &c[0], ldc, &c[0], load)
				if i := sameBits(c, want); i >= 0 {
					t.Fatalf("%s kc %d load %d: element %d (row %d col %d) = %v, want %v", kd.name, kc, load, i, i/ldc, i%ldc, c[i], want[i])
				}
			}
		}
	}
	// f64: math.FMA is the exact reference.
	const mr, nr = 6, 32
	for _, kc := range []int{0, 1, 3, 4, 5, 9, 64} {
		for _, load := range []int{0, 1} {
			a := make([]float64, mr*kc+1)
			b := make([]float64, nr*kc+1)
			for i := range a {
				a[i] = r.NormFloat64()
			}
			for i := range b {
				b[i] = r.NormFloat64()
			}
			ldc := nr + 3
			c := make([]float64, mr*ldc+4)
			for i := range c {
				c[i] = r.NormFloat64()
			}
			want := append([]float64(nil), c...)
			for i := 0; i < mr; i++ {
				for j := 0; j < nr; j++ {
					acc := want[i*ldc+j]
					if load == 0 {
						acc = 0
					}
					for p := 0; p < kc; p++ {
						acc = math.FMA(a[p*mr+i], b[p*nr+j], acc)
					}
					want[i*ldc+j] = acc
				}
			}
			gemm.F64x6x32z(kc, &a[0], &b[0], &c[0], ldc, &c[0], load)
			for i := range c {
				if math.Float64bits(c[i]) != math.Float64bits(want[i]) {
					t.Fatalf("f64 6x32 kc %d load %d: element %d = %v, want %v", kc, load, i, c[i], want[i])
				}
			}
		}
	}
}

// TestZMMTilesBlocked runs the blocked driver on each candidate AVX-512
// tile (not only the one in use) and compares with the AVX2 level bit for
// bit.
func TestZMMTilesBlocked(t *testing.T) {
	if !haveAVX512() {
		t.Logf("level %s not supported by this CPU: ZMM tiles not run", LevelAVX512)
		return
	}
	r := rand.New(rand.NewPCG(53, 54))
	m, n, k := 61, 150, 421
	a := makeOperand(r, "rowmajor", m, k, genF32)
	b := makeOperand(r, "rowmajor", k, n, genF32)
	var ref []float32
	ks := ksetFor(LevelAVX2)
	ref, _ = matmul(ks, dtype.F32, op.PrecisionHighest, a, b)
	prev := asm512TileF32
	defer func() { asm512TileF32 = prev }()
	for _, kd := range zmmKernelsF32 {
		tile := *prev
		tile.mr, tile.nr, tile.kern = kd.mr, kd.nr, kd.kern
		tile.kc, tile.mc, tile.nc = 128, 3*kd.mr, 2*kd.nr
		asm512TileF32 = &tile
		var got []float32
		ks := ksetFor(LevelAVX512)
		got, _ = matmul(ks, dtype.F32, op.PrecisionHighest, a, b)
		if i := sameBits(got, ref); i >= 0 {
			t.Fatalf("%s: [%d] = %v, avx2 %v", kd.name, i, got[i], ref[i])
		}
	}
}

// BenchmarkBlockSweep512 measures the f32 tiles and their blocking on this
// machine: each ZMM tile with its cache-derived blocking next to the AVX2
// 6x16 tile, GEMM_SWEEP_SIZE³ products (default 1024), GFLOP/s of wall
// time and of the thread's CPU time. GEMM_SWEEP_GRID=1 sweeps kc and mc
// for the first tile (GEMM_SWEEP_TILE names another). Run with
// GOMAXPROCS=1 and -count for medians:
//
//	GOMAXPROCS=1 GEMM_SWEEP_SIZE=1536 go test -run '^$' -bench BlockSweep512 -count 7 ./backend/cpu
func BenchmarkBlockSweep512(b *testing.B) {
	if !haveAVX512() {
		b.Skip("no AVX-512")
	}
	size := 1024
	if v, err := strconv.Atoi(os.Getenv("GEMM_SWEEP_SIZE")); err == nil && v > 0 {
		size = v
	}
	prev := asm512TileF32
	defer func() { asm512TileF32 = prev }()
	r := rand.New(rand.NewPCG(1, 1))
	a := makeOperand(r, "rowmajor", size, size, genF32)
	bo := makeOperand(r, "rowmajor", size, size, genF32)
	type cfg struct {
		k          int // index in zmmKernelsF32, -1: the AVX2 6x16 level
		kc, mc, nc int
	}
	var cfgs []cfg
	grid := os.Getenv("GEMM_SWEEP_GRID") != ""
	for ki, kd := range zmmKernelsF32 {
		kc, mc, nc := gemmBlockFor(gemmCaches, kd.mr, kd.nr, 4, nil)
		if !grid {
			cfgs = append(cfgs, cfg{ki, kc, mc, nc})
			continue
		}
		if want := os.Getenv("GEMM_SWEEP_TILE"); kd.name != want && (want != "" || ki != 0) {
			continue
		}
		for _, kc := range []int{96, 128, 192, 256, 384} {
			for _, l2 := range []int{8, 4, 2} {
				cfgs = append(cfgs, cfg{ki, kc, gemmCaches.L2 / l2 / (kc * 4) / kd.mr * kd.mr, nc})
			}
		}
	}
	cfgs = append(cfgs, cfg{-1, asmTileF32.kc, asmTileF32.mc, asmTileF32.nc})
	for _, c := range cfgs {
		level, name := LevelAVX512, "avx2-6x16"
		if c.k >= 0 {
			name = zmmKernelsF32[c.k].name
		} else {
			level = LevelAVX2
		}
		b.Run(fmt.Sprintf("%s/kc=%d/mc=%d/nc=%d", name, c.kc, c.mc, c.nc), func(b *testing.B) {
			if c.k >= 0 {
				kd := zmmKernelsF32[c.k]
				asm512TileF32 = &gemmTile[float32]{mr: kd.mr, nr: kd.nr, kc: c.kc, mc: c.mc, nc: c.nc, kern: kd.kern}
			}
			ks := ksetFor(level)
			benchGFLOPS(b, 2*float64(size*size*size), func() { matmul(ks, dtype.F32, op.PrecisionHighest, a, bo) })
		})
	}
}

// TestZMMSmallKernel checks the unpacked ZMM kernel against the exact FMA
// chain and bit for bit against the AVX2 one, with A read through row and
// k strides (both layouts) and B rows rsb apart.
func TestZMMSmallKernel(t *testing.T) {
	if !haveAVX512() {
		t.Logf("level %s not supported by this CPU: gemm.F32x6x16sz not run", LevelAVX512)
		return
	}
	r := rand.New(rand.NewPCG(55, 56))
	for _, kc := range []int{0, 1, 2, 5, 17, 100} {
		for _, lay := range [][2]int{{kc + 3, 1}, {1, 9}} { // rsa, csa
			for _, load := range []int{0, 1} {
				rsa, csa := lay[0], lay[1]
				a := make([]float32, 6*rsa+kc*csa+10)
				rsb := 21
				b := make([]float32, kc*rsb+16)
				for i := range a {
					a[i] = genF32(r)
				}
				for i := range b {
					b[i] = genF32(r)
				}
				ldc := 19
				c := make([]float32, 6*ldc)
				for i := range c {
					c[i] = genF32(r)
				}
				want := append([]float32(nil), c...)
				for i := 0; i < 6; i++ {
					for j := 0; j < 16; j++ {
						acc := want[i*ldc+j]
						if load == 0 {
							acc = 0
						}
						for p := 0; p < kc; p++ {
							acc = fma32(a[i*rsa+p*csa], b[p*rsb+j], acc)
						}
						want[i*ldc+j] = acc
					}
				}
				y := append([]float32(nil), c...)
				gemm.F32x6x16sz(kc, &a[0], rsa, csa, &b[0], rsb, &c[0], ldc, load)
				gemm.F32x6x16s(kc, &a[0], rsa, csa, &b[0], rsb, &y[0], ldc, load)
				if i := sameBits(c, want); i >= 0 {
					t.Fatalf("kc %d rsa %d csa %d load %d: [%d] = %v, want %v", kc, rsa, csa, load, i, c[i], want[i])
				}
				if i := sameBits(c, y); i >= 0 {
					t.Fatalf("kc %d rsa %d csa %d load %d: [%d] = %v, AVX2 %v", kc, rsa, csa, load, i, c[i], y[i])
				}
			}
		}
	}
}

// TestSmallKern64 checks gemm.F32x6x64sz against four gemm.F32x6x16sz calls
// (the contract is the same FMA chains, so the bits must be equal) on
// strided A (row and column strides), B as 64 contiguous columns and as
// four separate 16-column panels, from zero and from C, with guard values
// around C's rows.
func TestSmallKern64(t *testing.T) {
	if smallKern64F32Z == nil {
		t.Logf("level %s not supported by this CPU: gemm.F32x6x64sz not run", LevelAVX512)
		return
	}
	r := rand.New(rand.NewPCG(61, 62))
	for _, kc := range []int{0, 1, 2, 5, 16, 64, 77} {
		for _, tc := range []struct{ rsa, csa, rsb, bvs int }{
			{kc + 3, 1, 64 + 5, 16},   // row-major A, 64 contiguous B columns
			{1, 7, 16, 16 * (kc + 1)}, // A column-major, B in 16-column panels
		} {
			for _, load := range []int{0, 1} {
				a := make([]float32, 6*tc.rsa+tc.csa*kc+8)
				b := make([]float32, tc.rsb*kc+3*tc.bvs+16+8)
				for i := range a {
					a[i] = genF32(r)
				}
				for i := range b {
					b[i] = genF32(r)
				}
				ldc := 64 + 9
				c := make([]float32, 6*ldc+8)
				for i := range c {
					c[i] = genF32(r)
				}
				want := append([]float32(nil), c...)
				for v := 0; v < 4; v++ {
					gemm.F32x6x16sz(kc, &a[0], tc.rsa, tc.csa, &b[v*tc.bvs], tc.rsb, &want[16*v], ldc, load)
				}
				smallKern64F32Z(kc, &a[0], tc.rsa, tc.csa, &b[0], tc.rsb, tc.bvs, &c[0], ldc, load)
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
						t.Fatalf("kc %d %+v load %d: c[%d] = %v, want %v", kc, tc, load, i, c[i], want[i])
					}
				}
			}
		}
	}
}
