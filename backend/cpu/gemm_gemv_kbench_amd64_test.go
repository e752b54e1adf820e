//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/gotpu/gotpu/backend/cpu/internal/gemm"
	"github.com/gotpu/gotpu/dtype"
)

// BenchmarkGEMVDotKernels compares the dot-form kernels alone (no
// dispatch, one thread) on x·Wᵀ decode shapes: the f32 in-order chain
// kernel that the path ran before (gemm.GemvDotF32x16: 8x8 transposes in
// registers, still sdpa's) against the lane-order ones, on enough copies of W to
// leave the caches; in row groups (walk0: pairs at AVX2, four or eight at
// AVX-512) and one row at a time (walk1, gemm.GemvRowWalk). GB/s of the weight read, and per CPU-second
// (the machine is often shared).
func BenchmarkGEMVDotKernels(b *testing.B) {
	for _, sh := range [][2]int{{576, 576}, {1536, 576}, {768, 2304}, {3072, 768}} {
		in, out := sh[0], sh[1]
		copies := max(1, (64<<20)/(in*out*4))
		w := make([]float32, copies*in*out)
		wb := make([]dtype.BFloat16, copies*in*out)
		for i := range w {
			w[i] = float32(i%7) - 3
			wb[i] = dtype.BF16FromF32(w[i])
		}
		x := make([]float32, in)
		for i := range x {
			x[i] = 1
		}
		y := make([]float32, out+16)
		tail, tail16 := gemvTailMask(in), gemvTailMask16(in)
		xd := make([]float32, roundUp(in, 32))
		gemvDeinterleave(xd, x)
		run := func(name string, bytes int, f func(c int)) {
			b.Run(fmt.Sprintf("%dto%d/%s", in, out, name), func(b *testing.B) {
				if strings.Contains(name, "avx512") && !procKS.atLeast(LevelAVX512) {
					b.Skipf("this CPU runs level %s, not avx512", procKS.level)
				}
				b.SetBytes(int64(bytes))
				cpu0 := cpuSeconds()
				for i := 0; i < b.N; i++ {
					f(i % copies)
				}
				if cs := cpuSeconds() - cpu0; cs > 0 {
					b.ReportMetric(float64(bytes)*float64(b.N)/cs/1e9, "GB/cpu-s")
				}
			})
		}
		run("f32/chain16", in*out*4, func(c int) {
			a := w[c*in*out:]
			for r := 0; r+16 <= out; r += 16 {
				gemm.GemvDotF32x16(in, &a[r*in], in, &x[0], &y[r])
			}
		})
		walk := gemm.GemvRowWalk
		for _, wk := range []uint8{0, 1} {
			gemm.GemvRowWalk = wk
			run(fmt.Sprintf("f32/lanes-avx2-walk%d", wk), in*out*4, func(c int) { gemm.GemvDotF32AVX2(in, &w[c*in*out], in, &x[0], &y[0], out, tail) })
			run(fmt.Sprintf("bf16/lanes-avx2-walk%d", wk), in*out*2, func(c int) {
				gemm.GemvDotBF16AVX2(in, (*uint16)(unsafe.Pointer(&wb[c*in*out])), in, &xd[0], &y[0], out, tail16)
			})
			run(fmt.Sprintf("f32/lanes-avx512-walk%d", wk), in*out*4, func(c int) { gemm.GemvDotF32AVX512(in, &w[c*in*out], in, &x[0], &y[0], out, tail) })
			run(fmt.Sprintf("bf16/lanes-avx512-walk%d", wk), in*out*2, func(c int) {
				gemm.GemvDotBF16AVX512(in, (*uint16)(unsafe.Pointer(&wb[c*in*out])), in, &xd[0], &y[0], out, tail16)
			})
		}
		gemm.GemvRowWalk = walk
	}
}
