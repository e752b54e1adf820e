package cpu

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// TestGEMMReport prints the GEMM throughput table of the report: square
// f32 (highest), f64 and f32 medium products at 512..4096 through the
// dot_general kernel, next to gonum's pure-Go Sgemm/Dgemm, as the median
// and best of GEMM_REPS (default 5) wall-clock runs on GOMAXPROCS threads,
// the libraries interleaved round by round so that load from other
// processes hits them alike; also the median rate per CPU-second of the
// process (times the threads, the rate the cores reach when no other
// process takes them). GEMM_REPORT=1 enables it (minutes);
// GEMM_SIZES=512,1024 limits the sizes; GEMM_NOGONUM=1 leaves gonum out.
func TestGEMMReport(t *testing.T) {
	if os.Getenv("GEMM_REPORT") == "" {
		t.Skip("GEMM_REPORT not set")
	}
	sizes := []int{512, 1024, 2048, 4096}
	if s := os.Getenv("GEMM_SIZES"); s != "" {
		sizes = nil
		var v int
		for _, f := range splitComma(s) {
			fmt.Sscan(f, &v)
			sizes = append(sizes, v)
		}
	}
	reps := 5
	if s := os.Getenv("GEMM_REPS"); s != "" {
		fmt.Sscan(s, &reps)
	}
	fmt.Printf("GOMAXPROCS=%d level=%s\n", runtime.GOMAXPROCS(0), CPULevel())
	for _, size := range sizes {
		r := rand.New(rand.NewPCG(1, 1))
		a32 := makeOperand(r, "rowmajor", size, size, genF32)
		b32 := makeOperand(r, "rowmajor", size, size, genF32)
		gen64 := func(r *rand.Rand) float64 { return r.NormFloat64() }
		a64 := makeOperand(r, "rowmajor", size, size, gen64)
		b64 := makeOperand(r, "rowmajor", size, size, gen64)
		c32 := make([]float32, size*size)
		c64 := make([]float64, size*size)
		names := []string{"gotpu f32 highest", "gotpu f64", "gotpu f32 medium"}
		fns := []func(){
			func() { matmul(dtype.F32, op.PrecisionHighest, a32, b32) },
			func() { matmul(dtype.F64, op.PrecisionHighest, a64, b64) },
			func() { matmul(dtype.F32, op.PrecisionMedium, a32, b32) },
		}
		if size <= 2048 && os.Getenv("GEMM_NOGONUM") == "" {
			var impl gonum.Implementation
			names = append(names, "gonum sgemm", "gonum dgemm")
			fns = append(fns,
				func() {
					impl.Sgemm(blas.NoTrans, blas.NoTrans, size, size, size, 1, a32.data, size, b32.data, size, 0, c32, size)
				},
				func() {
					impl.Dgemm(blas.NoTrans, blas.NoTrans, size, size, size, 1, a64.data, size, b64.data, size, 0, c64, size)
				})
		}
		times := make([][]float64, len(fns))
		cpus := make([][]float64, len(fns))
		for _, fn := range fns {
			fn() // warm up: scratch buffers, page faults
		}
		for rep := 0; rep < reps; rep++ {
			for i, fn := range fns {
				c0 := cpuSeconds()
				t0 := time.Now()
				fn()
				times[i] = append(times[i], time.Since(t0).Seconds())
				cpus[i] = append(cpus[i], cpuSeconds()-c0)
			}
		}
		flops := 2 * float64(size) * float64(size) * float64(size)
		for i, name := range names {
			ts, cs := times[i], cpus[i]
			sort.Float64s(ts)
			sort.Float64s(cs)
			fmt.Printf("%5d %-18s median %7.1f best %7.1f GFLOP/s wall, median %6.1f GFLOP/cpu-s\n", size, name, flops/ts[len(ts)/2]/1e9, flops/ts[0]/1e9, flops/cs[len(cs)/2]/1e9)
		}
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}
