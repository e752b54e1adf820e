package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// BenchmarkGEMMReport measures the GEMM throughput table of the report:
// square f32 (highest), f64 and f32 medium products at 512..4096 through
// the dot_general kernel, next to gonum's pure-Go Sgemm/Dgemm (up to 2048),
// on GOMAXPROCS threads, in GFLOP/s of wall time and per CPU-second of the
// process (times the threads: the rate the cores reach when no other
// process takes them). Sub-benchmarks are size=N/impl; -count gives the
// repetitions for medians (benchstat), -bench selects sizes:
//
//	go test -run '^$' -bench 'GEMMReport/size=(512|1024)/' -count 5 ./backend/cpu
func BenchmarkGEMMReport(b *testing.B) {
	for _, size := range []int{512, 1024, 2048, 4096} {
		r := rand.New(rand.NewPCG(1, 1))
		a32 := makeOperand(r, "rowmajor", size, size, genF32)
		b32 := makeOperand(r, "rowmajor", size, size, genF32)
		gen64 := func(r *rand.Rand) float64 { return r.NormFloat64() }
		a64 := makeOperand(r, "rowmajor", size, size, gen64)
		b64 := makeOperand(r, "rowmajor", size, size, gen64)
		c32 := make([]float32, size*size)
		c64 := make([]float64, size*size)
		var impl gonum.Implementation
		cases := []struct {
			name string
			fn   func()
		}{
			{"gotpu-f32-highest", func() { matmul(procKS, dtype.F32, op.PrecisionHighest, a32, b32) }},
			{"gotpu-f64", func() { matmul(procKS, dtype.F64, op.PrecisionHighest, a64, b64) }},
			{"gotpu-f32-medium", func() { matmul(procKS, dtype.F32, op.PrecisionMedium, a32, b32) }},
		}
		if size <= 2048 {
			cases = append(cases,
				struct {
					name string
					fn   func()
				}{"gonum-sgemm", func() {
					impl.Sgemm(blas.NoTrans, blas.NoTrans, size, size, size, 1, a32.data, size, b32.data, size, 0, c32, size)
				}},
				struct {
					name string
					fn   func()
				}{"gonum-dgemm", func() {
					impl.Dgemm(blas.NoTrans, blas.NoTrans, size, size, size, 1, a64.data, size, b64.data, size, 0, c64, size)
				}})
		}
		flops := 2 * float64(size) * float64(size) * float64(size)
		for _, c := range cases {
			b.Run(fmt.Sprintf("size=%d/%s", size, c.name), func(b *testing.B) {
				c.fn() // warm up: scratch buffers, page faults
				b.ResetTimer()
				c0 := cpuSeconds()
				for b.Loop() {
					c.fn()
				}
				cpu := cpuSeconds() - c0
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				if cpu > 0 {
					b.ReportMetric(flops*float64(b.N)/cpu/1e9, "GFLOP/cpu-s")
				}
			})
		}
	}
}
