package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGEMMStream checks the streaming x·Wᵀ path bit for bit against the
// blocked GEMM (the same FMA chains) over ragged shapes — m around the x
// panels' 16, n around the six-row W panels and the chunks, k around the
// k block — with a row stride on W, NaN and Inf, and that the epilogue
// hook covers every element of C exactly once.
func TestGEMMStream(t *testing.T) {
	if smallKernF32 == nil || !procKS.atLeast(LevelAVX2) {
		t.Skip("no AVX2 kernels")
	}
	r := rand.New(rand.NewPCG(4, 5))
	for _, m := range []int{1, 7, 15, 16, 17, 33, 64, 65, 96} {
		for _, n := range []int{6, 7, 13, 47, 48, 49, 97} {
			for _, k := range []int{1, 15, 16, 17, 1023, 1024, 1025, 2100} {
				if m*n*k > 3_000_000 {
					continue
				}
				ldw := k + 3
				x := make([]float32, m*k)
				w := make([]float32, n*ldw)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				for i := range w {
					w[i] = float32(r.NormFloat64())
				}
				if m*k > 5 {
					x[5] = float32(math.NaN())
				}
				w[len(w)/2] = float32(math.Inf(1))
				// The reference: the AVX2 level's blocked or small path;
				// every assembly level's streaming kernel must give its bits.
				want := make([]float32, m*n)
				gemmF32(ksetFor(LevelAVX2), m, n, k, x, k, false, w, ldw, true, want, n, nil)
				for _, level := range levels() {
					if levelRank(level) < levelRank(LevelAVX2) {
						continue
					}
					checkStream(t, level, m, n, k, x, w, ldw, want)
				}
			}
		}
	}
}

// checkStream runs gemmStreamXWt at the active level and compares it with
// want bit for bit, checking the epilogue sees every element once.
func checkStream(t *testing.T, level string, m, n, k int, x, w []float32, ldw int, want []float32) {
	ks := ksetFor(level)
	t.Helper()
	got := make([]float32, m*n)
	hits := make([]int32, m*n)
	ok := gemmStreamXWt(ks, m, n, k, x, k, w, ldw, got, n, func(i0, j0, mc, nc int) {
		for i := i0; i < i0+mc; i++ {
			for j := j0; j < j0+nc; j++ {
				hits[i*n+j]++
			}
		}
	}, nil)
	if !ok {
		t.Fatalf("%s m=%d n=%d k=%d: path not taken", level, m, n, k)
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
			t.Fatalf("%s m=%d n=%d k=%d: element %d = %v, want %v", level, m, n, k, i, got[i], want[i])
		}
		if hits[i] != 1 {
			t.Fatalf("%s m=%d n=%d k=%d: epilogue saw element %d %d times", level, m, n, k, i, hits[i])
		}
	}
}

// BenchmarkGEMMStream compares x·Wᵀ at the shapes of an MNIST MLP and a
// transformer MLP block (batch 64) on the streaming path and without it.
func BenchmarkGEMMStream(b *testing.B) {
	for _, s := range [][3]int{{64, 512, 784}, {64, 256, 512}, {64, 4096, 1024}, {64, 1024, 4096}, {32, 3072, 768}} {
		m, n, k := s[0], s[1], s[2]
		x := make([]float32, m*k)
		w := make([]float32, n*k)
		for i := range w {
			w[i] = float32(i%7) * 0.01
		}
		c := make([]float32, m*n)
		for _, off := range []bool{false, true} {
			name := "stream"
			if off {
				name = "packed"
			}
			b.Run(fmt.Sprintf("%s/%dx%dx%d", name, m, n, k), func(b *testing.B) {
				gemmStreamOff = off
				defer func() { gemmStreamOff = false }()
				for b.Loop() {
					if !gemmStreamXWt(procKS, m, n, k, x, k, w, k, c, n, nil, nil) {
						buf := make([]float32, m*n)
						gemmF32(procKS, n, m, k, w, k, false, x, k, true, buf, m, nil)
					}
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
