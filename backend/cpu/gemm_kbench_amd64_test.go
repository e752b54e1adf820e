//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"syscall"
	"testing"
	"time"

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
			gemmF32x6x16(kc, &a[0], &bb[0], &c[0], 16, &c[0], 1)
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
			gemmF64x6x8(kc, &a[0], &bb[0], &c[0], 8, &c[0], 1)
		}
	}
	b.ReportMetric(float64(b.N)*100*2*6*8*float64(kc)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// bestGFLOPS times fn reps times and returns the best and median rates.
func bestGFLOPS(flops float64, reps int, fn func()) (best, med float64) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fn()
	rates := make([]float64, reps)
	for i := range rates {
		t0 := threadCPU()
		fn()
		rates[i] = flops / (threadCPU() - t0) / 1e9
	}
	sort.Float64s(rates)
	return rates[reps-1], rates[reps/2]
}

// TestBlockSweep measures the f32 blocking on this machine: one thread
// (GOMAXPROCS=1, thread CPU time, so that time stolen by other processes
// does not count), configurations interleaved round by round and the best
// of the rounds kept. GEMM_SWEEP=1 enables it.
func TestBlockSweep(t *testing.T) {
	if os.Getenv("GEMM_SWEEP") == "" {
		t.Skip("GEMM_SWEEP not set")
	}
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
	best := make([]float64, len(cfgs))
	all := make([][]float64, len(cfgs))
	for round := 0; round < 5; round++ {
		for i, c := range cfgs {
			asmTileF32.kc, asmTileF32.mc, asmTileF32.nc = c.kc, c.mc, c.nc
			b, _ := bestGFLOPS(2*float64(size*size*size), 1, func() { matmul(dtype.F32, op.PrecisionHighest, a, bo) })
			best[i] = max(best[i], b)
			all[i] = append(all[i], b)
		}
	}
	for i, c := range cfgs {
		sort.Float64s(all[i])
		fmt.Printf("kc %3d mc %3d nc %4d: best %.1f median %.1f GFLOP/s\n", c.kc, c.mc, c.nc, best[i], all[i][len(all[i])/2])
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

// wallBest times each fn in interleaved rounds (wall clock) and returns
// per fn the best and median seconds.
func wallBest(rounds int, fns []func()) (best, med []float64) {
	ts := make([][]float64, len(fns))
	for _, fn := range fns {
		fn()
	}
	for r := 0; r < rounds; r++ {
		for i, fn := range fns {
			t0 := time.Now()
			fn()
			ts[i] = append(ts[i], time.Since(t0).Seconds())
		}
	}
	for i := range ts {
		sort.Float64s(ts[i])
		best = append(best, ts[i][0])
		med = append(med, ts[i][len(ts[i])/2])
	}
	return best, med
}

// TestGEMVBandwidth prints the decode-shaped matrix-vector products' GB/s
// (best and median of interleaved rounds) next to a copy of the same bytes
// over the same workers. GEMM_SWEEP=1 enables it.
func TestGEMVBandwidth(t *testing.T) {
	if os.Getenv("GEMM_SWEEP") == "" {
		t.Skip("GEMM_SWEEP not set")
	}
	for _, sh := range [][2]int{{768, 3072}, {3072, 768}} {
		in, out := sh[0], sh[1]
		r := rand.New(rand.NewPCG(1, 1))
		x := makeOperand(r, "rowmajor", 1, in, genF32)
		w := makeOperand(r, "rowmajor", in, out, genF32)
		wt := makeOperand(r, "transposed", in, out, genF32)
		dst := make([]float32, in*out)
		nw := runtime.GOMAXPROCS(0)
		fns := []func(){
			func() { matmul(dtype.F32, op.PrecisionHighest, x, w) },
			func() { matmul(dtype.F32, op.PrecisionHighest, x, wt) },
			func() {
				gemmParallel(nw, nil, func(tid, nw int) {
					lo, hi := len(dst)*tid/nw, len(dst)*(tid+1)/nw
					copy(dst[lo:hi], w.data[lo:hi])
				})
			},
		}
		reps := 20
		wrap := make([]func(), len(fns))
		for i, fn := range fns {
			wrap[i] = func() {
				for j := 0; j < reps; j++ {
					fn()
				}
			}
		}
		best, med := wallBest(15, wrap)
		gb := float64(in*out*4*reps) / 1e9
		for i, name := range []string{"x·W (axpy form)", "x·Wᵀ (dot form)", "copy"} {
			fmt.Printf("%dx%d %-16s best %.1f GB/s median %.1f GB/s\n", in, out, name, gb/best[i], gb/med[i])
		}
	}
}
