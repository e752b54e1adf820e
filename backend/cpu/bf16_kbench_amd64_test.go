//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/gotpu/gotpu/backend/cpu/internal/gemm"
	"github.com/gotpu/gotpu/dtype"
)

// BenchmarkKernBF16 times the VDPBF16PS micro-kernels alone on
// L1-resident panels (thread CPU time, so other processes' load is
// excluded), with the AMX kernel where the CPU has it.
func BenchmarkKernBF16(b *testing.B) {
	if !haveAVX512BF16() {
		b.Skip("no AVX512_BF16")
	}
	kerns := []struct {
		name string
		mr   int
		f    func(kc int, a, b, c *float32, ldc int, pf *float32, load int)
	}{{"8x32", 8, gemm.BF16x8x32}, {"12x32", 12, gemm.BF16x12x32}, {"14x32", 14, gemm.BF16x14x32}}
	if asmTileAMX != nil {
		kerns = append(kerns, struct {
			name string
			mr   int
			f    func(kc int, a, b, c *float32, ldc int, pf *float32, load int)
		}{"amx32x32", 32, gemm.AMX32x32})
	}
	for _, kc := range []int{256, 512} {
		for _, k := range kerns {
			b.Run(fmt.Sprintf("%s/kc%d", k.name, kc), func(b *testing.B) {
				a := make([]float32, k.mr*kc/2)
				bb := make([]float32, 32*kc/2)
				c := make([]float32, k.mr*32)
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				t0 := threadCPU()
				for i := 0; i < b.N; i++ {
					for j := 0; j < 100; j++ {
						k.f(kc, &a[0], &bb[0], &c[0], 32, &c[0], 1)
					}
				}
				flops := float64(b.N) * 100 * 2 * float64(k.mr*32*kc)
				b.ReportMetric(flops/(threadCPU()-t0)/1e9, "GFLOP/thread-cpu-s")
			})
		}
	}
}

// BenchmarkGEMMBF16 times whole bf16 products (square and LLM prefill
// shapes) at the active level, in thread... wall time per op.
func BenchmarkGEMMBF16(b *testing.B) {
	for _, s := range [][3]int{{2048, 2048, 2048}, {128, 1536, 576}, {128, 576, 1536}} {
		m, n, k := s[0], s[1], s[2]
		for _, lvl := range SupportedLevels()[1:] {
			b.Run(fmt.Sprintf("%dx%dx%d/%s", m, n, k, lvl), func(b *testing.B) {
				x := make([]dtype.BFloat16, m*k)
				w := make([]dtype.BFloat16, n*k)
				for i := range x {
					x[i] = dtype.BF16FromF32(float32(i%7) - 3)
				}
				for i := range w {
					w[i] = dtype.BF16FromF32(float32(i%5) - 2)
				}
				out := make([]dtype.BFloat16, m*n)
				toF := []func(dtype.BFloat16) float32{func(x dtype.BFloat16) float32 { return x.F32() }}
				ks := ksetFor(lvl)
				tile := tileF32(ks)
				if tp := pairTile(ks, m, n, k); tp != nil {
					tile = tp
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					g := gemmProblem[dtype.BFloat16, dtype.BFloat16, float32]{nb: 1, m: m, n: n, k: k,
						a:    gemmSide[dtype.BFloat16, float32]{src: x, row: seqShared(m, k), k: seqShared(k, 1), conv: toF, plain: true},
						b:    gemmSide[dtype.BFloat16, float32]{src: w, row: seqShared(n, k), k: seqShared(k, 1), conv: toF, plain: true},
						kern: kern4x4[float32], dot: dotPlain[float32], tile: tile,
						store: storeBF16(ks, out, m, n),
					}
					g.run()
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
