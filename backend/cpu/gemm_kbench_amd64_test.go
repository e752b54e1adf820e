//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"

	"github.com/gotpu/gotpu/backend/cpu/internal/gemm"
	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

func BenchmarkKernF32(b *testing.B) {
	kc := 256
	a := make([]float32, 6*kc)
	bb := make([]float32, 16*kc)
	c := make([]float32, 6*16)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := threadCPU()
	for i := 0; i < b.N; i++ {
		for j := 0; j < 100; j++ {
			gemm.F32x6x16(kc, &a[0], &bb[0], &c[0], 16, &c[0], 1)
		}
	}
	flops := float64(b.N) * 100 * 2 * 6 * 16 * float64(kc)
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	b.ReportMetric(flops/(threadCPU()-t0)/1e9, "GFLOP/thread-cpu-s")
}

func BenchmarkKernF64(b *testing.B) {
	kc := 256
	a := make([]float64, 6*kc)
	bb := make([]float64, 8*kc)
	c := make([]float64, 6*8)
	for i := 0; i < b.N; i++ {
		for j := 0; j < 100; j++ {
			gemm.F64x6x8(kc, &a[0], &bb[0], &c[0], 8, &c[0], 1)
		}
	}
	b.ReportMetric(float64(b.N)*100*2*6*8*float64(kc)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkBlockSweep measures the AVX2 f32 tile's blocking on this
// machine, one sub-benchmark per (kc, mc, nc): 1024³ products, GFLOP/s of
// wall time and of the thread's CPU time (time other processes take does
// not count in the second). Run with GOMAXPROCS=1 and -count for medians:
//
//	GOMAXPROCS=1 go test -run '^$' -bench BlockSweep/ -count 5 ./backend/cpu
func BenchmarkBlockSweep(b *testing.B) {
	prev := *asmTileF32
	defer func() { *asmTileF32 = prev }()
	size := 1024
	r := rand.New(rand.NewPCG(1, 1))
	a := makeOperand(r, "rowmajor", size, size, genF32)
	bo := makeOperand(r, "rowmajor", size, size, genF32)
	type cfg struct{ kc, mc, nc int }
	var cfgs []cfg
	for _, kc := range []int{128, 256, 384, 512} {
		for _, mc := range []int{48, 96, 144, 240, 480} {
			cfgs = append(cfgs, cfg{kc, mc, 4080})
		}
	}
	cfgs = append(cfgs, cfg{256, 144, 256}, cfg{256, 144, 512})
	for _, c := range cfgs {
		b.Run(fmt.Sprintf("kc=%d/mc=%d/nc=%d", c.kc, c.mc, c.nc), func(b *testing.B) {
			asmTileF32.kc, asmTileF32.mc, asmTileF32.nc = c.kc, c.mc, c.nc
			benchGFLOPS(b, 2*float64(size*size*size), func() { matmul(procKS, dtype.F32, op.PrecisionHighest, a, bo) })
		})
	}
}

// benchGFLOPS runs fn b.N times on a locked thread and reports GFLOP/s of
// wall time and of the thread's CPU time.
func benchGFLOPS(b *testing.B, flops float64, fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fn()
	b.ResetTimer()
	t0 := threadCPU()
	for b.Loop() {
		fn()
	}
	cpu := threadCPU() - t0
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu > 0 {
		b.ReportMetric(flops*float64(b.N)/cpu/1e9, "GFLOP/thread-cpu-s")
	}
}

// threadCPU is the calling OS thread's CPU time in seconds.
func threadCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// BenchmarkGEMVBandwidth measures the decode-shaped matrix-vector
// products next to a copy of the same bytes over the same workers (the
// MB/s column is the matrix's bytes read per second):
//
//	go test -run '^$' -bench GEMVBandwidth -count 5 ./backend/cpu
func BenchmarkGEMVBandwidth(b *testing.B) {
	for _, sh := range [][2]int{{768, 3072}, {3072, 768}} {
		in, out := sh[0], sh[1]
		r := rand.New(rand.NewPCG(1, 1))
		x := makeOperand(r, "rowmajor", 1, in, genF32)
		w := makeOperand(r, "rowmajor", in, out, genF32)
		wt := makeOperand(r, "transposed", in, out, genF32)
		dst := make([]float32, in*out)
		nw := runtime.GOMAXPROCS(0)
		for _, c := range []struct {
			name string
			fn   func()
		}{
			{"axpy", func() { matmul(procKS, dtype.F32, op.PrecisionHighest, x, w) }},
			{"dot", func() { matmul(procKS, dtype.F32, op.PrecisionHighest, x, wt) }},
			{"copy", func() {
				pool.Run(nw, nil, func(tid, nw int) {
					lo, hi := len(dst)*tid/nw, len(dst)*(tid+1)/nw
					copy(dst[lo:hi], w.data[lo:hi])
				})
			}},
		} {
			b.Run(fmt.Sprintf("%dx%d/%s", in, out, c.name), func(b *testing.B) {
				b.SetBytes(int64(in * out * 4))
				c.fn()
				b.ResetTimer()
				for b.Loop() {
					c.fn()
				}
			})
		}
	}
}
