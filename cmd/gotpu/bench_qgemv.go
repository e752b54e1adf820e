package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/bench/kernels"
	"github.com/gotpu/gotpu/gguf"
	"github.com/gotpu/gotpu/internal/quant"
)

// `gotpu bench qgemv`: the decode-shaped product of a quantized weight
// (internal/quant) with one activation row, in GB/s of weight bytes read,
// at every kernel level, with Go's copy bandwidth measured in the same run.

func init() {
	var k, memMB, streamMB int
	var levels, clock, llamaBin string
	var minRepS float64
	registerBenchCase(benchCase{
		Name: "qgemv",
		Description: "quantized [n,k] weight (GGUF blocks) times a [k] vector per kernel level, GB/s of weight read, " +
			"with Go's memmove bandwidth in the same run",
		DTypes:      []string{"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K"},
		Long:        benchQGEMVLong,
		DefaultSize: 1536,
		Refs:        []string{"llamacpp"},
		SizeHelp:    "n, the weight rows (outputs); --k is the row length (SmolLM2-135M: 576x576, 1536x576, 576x1536, 49152x576)",
		Flags: func(fs *pflag.FlagSet) {
			fs.IntVar(&k, "k", 576, "k, the weight columns and vector length (a multiple of the type's block: 32, or 256 for the K types)")
			fs.IntVar(&memMB, "memmove-mb", 256, "MiB copied by the go-memmove bandwidth reference (0: skip it and go-memmove-matrix)")
			fs.StringVar(&levels, "levels", "all", "comma-separated kernel levels to run as gotpu.<level> (all: every level this CPU runs; none: only gotpu)")
			fs.IntVar(&streamMB, "stream-mb", 64, "MiB of distinct weight copies one repetition runs through, so that the weight streams from memory "+
				"as in decoding a whole model (0: one copy, which stays in cache if it fits)")
			fs.StringVar(&clock, "clock", "wall", "what a repetition's time is: wall, or cpu (the thread's CPU time, Linux, --threads 1; "+
				"for a machine shared with other work: time spent descheduled is not counted)")
			fs.Float64Var(&minRepS, "min-rep-s", 0, "seconds one repetition of gotpu lasts at least: it repeats the pass over the copies "+
				"until then and counts the mean pass, as test-backend-ops does with its products (1 matches it; 0: one pass)")
			fs.StringVar(&llamaBin, "llamacpp-bin", defaultTestBackendOps(), "llama.cpp's test-backend-ops for the llamacpp reference "+
				"(default $GOTPU_LLAMACPP_BIN, else tools/llamacpp/build.sh's bin dir; \"\": skip it)")
		},
		Run: func(ctx context.Context, cfg *benchConfig, run *benchRun) error {
			gt, err := gguf.ParseType(cfg.DType)
			if err != nil {
				return err
			}
			t, n := quant.Type(gt), cfg.Size
			rb, err := quant.RowBytes(t, k)
			if err != nil || n < 1 || k < 1 || memMB < 0 || streamMB < 0 {
				return fmt.Errorf("qgemv: need n, k > 0 with k a multiple of %v's block and --memmove-mb, --stream-mb >= 0 (%v)", t, err)
			}
			if minRepS < 0 || minRepS > 60 {
				return fmt.Errorf("qgemv: --min-rep-s is 0 to 60 seconds, not %v", minRepS)
			}
			if clock != "wall" && clock != "cpu" {
				return fmt.Errorf("qgemv: --clock is wall or cpu, not %q", clock)
			}
			if clock == "cpu" && (cfg.Threads != 1 || threadCPUSeconds() < 0) {
				return fmt.Errorf("qgemv: --clock cpu needs --threads 1 on Linux")
			}
			run.Shape = fmt.Sprintf("%dx%d %v @ %d", n, k, t, k)
			// Weights like a trained layer's: quantized rows of normal values.
			r := rand.New(rand.NewPCG(1, 2))
			row := make([]float32, k)
			w := make([]byte, n*rb)
			for j := range n {
				for p := range row {
					row[p] = float32(r.NormFloat64()) * 0.02
				}
				if err := quant.QuantizeRow(t, row, w[j*rb:(j+1)*rb]); err != nil {
					return err
				}
			}
			copies := [][]byte{w}
			for len(copies)*len(w) < streamMB<<20 {
				copies = append(copies, slices.Clone(w))
			}
			x := make([]float32, k)
			for p := range x {
				x[p] = float32(r.NormFloat64())
			}
			y := make([]float32, n)
			par := qgemvPar(cfg.Threads)
			want := quant.Levels()
			switch levels {
			case "all":
			case "none":
				want = nil
			default:
				want = strings.Split(levels, ",")
			}
			best := quant.For(cpu.CPULevel())
			timed := clock == "cpu"
			steps := []*kernels.Stepper{qgemvStepper("gotpu", best, t, copies, false, n, k, x, y, par, timed, minRepS)}
			if quant.CanPack(t) {
				// The r16 layout (quant.Pack) that the model loader uses
				// where the level has kernels for it.
				packed := make([][]byte, len(copies))
				for i, c := range copies {
					packed[i] = make([]byte, len(c))
					if err := quant.Pack(t, packed[i], c, n, rb); err != nil {
						return err
					}
				}
				steps = append(steps, qgemvStepper("gotpu.r16", best, t, packed, true, n, k, x, y, par, timed, minRepS))
				run.Note("gotpu.r16 runs the weights in the interleaved r16 layout (level %s: native kernels %v)", best.Level(), best.Packs(t))
			}
			run.Note("gotpu runs the kernels of level %s (the CPU level %s, capped by GOTPU_CPU_LEVEL); gotpu.<level> the kernels For(level) gives", best.Level(), cpu.CPULevel())
			for _, l := range want {
				kl := quant.For(l)
				if kl.Level() != l {
					run.Skip("gotpu."+l, fmt.Sprintf("no kernels of their own at this level or not supported by this CPU (falls back to %s)", kl.Level()))
					continue
				}
				steps = append(steps, qgemvStepper("gotpu."+l, kl, t, copies, false, n, k, x, y, par, timed, minRepS))
			}
			if memMB > 0 {
				mm, err := kernels.MemmoveStepper("go-memmove", memMB<<20)
				if err != nil {
					return err
				}
				ms, err := kernels.MemmoveStepper("go-memmove-matrix", len(w))
				if err != nil {
					return err
				}
				if timed {
					// A cache-resident copy is too short for the thread clock.
					mm.Timed, mm.Run = cpuTimed(mm.Run), nil
					steps = append(steps, mm)
				} else {
					steps = append(steps, mm, ms)
				}
				run.Note("gotpu's GB/s count the weight bytes read (%d copies of %.2f MiB per repetition); go-memmove copies %d MiB and "+
					"go-memmove-matrix one weight's size, over %d goroutines, their GB/s counting bytes read plus written",
					len(copies), float64(len(w))/(1<<20), memMB, cfg.Threads)
			}
			if cfg.WantRef("llamacpp") {
				if ls, done := llamacppQGEMV(ctx, cfg, run, llamaBin, clock, t, n, k, rb, streamMB, minRepS); ls != nil {
					defer done()
					steps = append(steps, ls)
				}
			}
			res, skipped, err := kernels.Interleave(ctx, cfg.Timing, steps)
			if err != nil {
				return err
			}
			for _, s := range skipped {
				run.Skip(s.Impl, s.Reason)
			}
			for _, r := range res {
				run.Add(r)
			}
			return nil
		},
	})
}

// qgemvStepper runs the product once with each weight copy (in the r16
// layout when packed) per repetition;
// with minRep > 0 it repeats that pass until minRep seconds have passed and
// reports the mean time of one pass.
func qgemvStepper(impl string, kern quant.Kernels, t quant.Type, copies [][]byte, packed bool, n, k int, x, y []float32,
	par func(int, func(int, int)), cpuClock bool, minRep float64) *kernels.Stepper {
	run := func() error {
		for _, w := range copies {
			if err := kern.MatMulMulti(t, []quant.Weight{{W: w, N: n, Y: y, Packed: packed}}, k, x, 1, par); err != nil {
				return err
			}
		}
		return nil
	}
	s := &kernels.Stepper{Impl: impl, DType: t.String(), Work: kernels.Work{Bytes: float64(len(copies) * len(copies[0]))}, Run: run}
	if cpuClock {
		s.Timed, s.Run = cpuTimed(run), nil
	}
	if minRep > 0 {
		once := s.Timed
		if once == nil {
			once = func() (float64, error) {
				start := time.Now()
				err := run()
				return time.Since(start).Seconds(), err
			}
		}
		s.Timed, s.Run = func() (float64, error) {
			total, passes := 0.0, 0
			for total < minRep {
				el, err := once()
				if err != nil {
					return 0, err
				}
				total += el
				passes++
			}
			return total / float64(passes), nil
		}, nil
	}
	return s
}

// cpuTimed times fn by the CPU time of the OS thread it runs on.
func cpuTimed(fn func() error) func() (float64, error) {
	return func() (float64, error) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		t0 := threadCPUSeconds()
		err := fn()
		return threadCPUSeconds() - t0, err
	}
}

// qgemvPar splits the row groups over threads goroutines (0: GOMAXPROCS;
// nil, serial, for one).
func qgemvPar(threads int) func(int, func(int, int)) {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	if threads == 1 {
		return nil
	}
	return func(total int, fn func(lo, hi int)) {
		var wg sync.WaitGroup
		parts := min(threads, total)
		for p := range parts {
			lo, hi := total*p/parts, total*(p+1)/parts
			wg.Go(func() { fn(lo, hi) })
		}
		wg.Wait()
	}
}

// benchQGEMVLong is `gotpu bench qgemv --help`.
const benchQGEMVLong = `Time the decode-shaped product of a quantized weight (GGUF blocks, --dtype)
of n (--size) rows by k (--k) columns with one f32 vector, at the kernel
level this CPU runs (gotpu) and at every level of --levels (gotpu.<level>),
with references in the same run, repetition by repetition (every round runs
each implementation once):

  go-memmove, go-memmove-matrix  Go's copy of --memmove-mb MiB and of one
                                 weight's bytes (GB/s: read plus written)
  llamacpp                       ggml's CPU mat-vec of the same block type
                                 and shape, timed by llama.cpp's own op
                                 benchmark test-backend-ops, one process per
                                 repetition; its time is the mean wall time
                                 of one product over at least 1 s of
                                 products on one weight

test-backend-ops runs its built-in perf case for --size 4096 --k 14336:

  test-backend-ops perf -b CPU -o MUL_MAT -p '^type_a=q4_K,type_b=f32,m=4096,n=1,k=14336,bs=\[1,1\],nr=\[1,1\],' --output sql

and any other shape from a one-line --test-file naming MUL_MAT by ggml's op
enum number, read from the ggml.h of the sources next to the binary
(tools/llamacpp/build.sh's <cache>/0.3.36/src/ggml/include/ggml.h; the
result row must then say MUL_MAT with the requested shapes). A weight that
fits in cache stays there across llama.cpp's products: --stream-mb 0 runs
gotpu on one copy too. A gotpu repetition is one pass over its copies
(milliseconds, so one preemption on a busy machine ruins it) unless
--min-rep-s S repeats the pass for S seconds and takes the mean pass:
--min-rep-s 1 measures gotpu the way test-backend-ops measures ggml.

The llamacpp reference (in --ref all; --ref none drops it) needs the
test-backend-ops binary (tools/llamacpp/build.sh test-backend-ops builds it;
--llamacpp-bin or $GOTPU_LLAMACPP_BIN point elsewhere). It is skipped, with
the reason in skipped, unless --threads equals the thread count
test-backend-ops gives ggml (half the online CPUs, at least 1: 1 on a 2-CPU
machine; it has no flag to change it) and --clock is wall. For example:

  gotpu bench qgemv --dtype Q4_K --size 4096 --k 14336 --threads 1 --levels none \\
    --memmove-mb 0 --stream-mb 0 --min-rep-s 1 --json

GB/s count the bytes of the quantized weight read per product, for gotpu
(all --stream-mb copies per repetition) and llamacpp alike, so
ratios["gotpu/llamacpp"] is gotpu's rate over llama.cpp's at the same
type, shape and threads (above 1: gotpu faster). median_s of llamacpp is one
product, gotpu's one repetition over all copies.

JSON (--json): the keys of every bench case (case, size, shape, dtype,
threads, reps, warmup, results [{impl, dtype, median_s, min_s, gbps,
times_s}], ratios, ratios_min, skipped [{impl, reason}], notes, versions),
with impl one of gotpu, gotpu.<level>, go-memmove, go-memmove-matrix,
llamacpp; ratios keys gotpu/go-memmove, gotpu/go-memmove-matrix,
gotpu/llamacpp; versions adds llamacpp.test_backend_ops (the binary's path),
llamacpp.threads and llamacpp.build_commit (as the binary reports it:
"unknown" for the sdist build) when llamacpp ran.`
