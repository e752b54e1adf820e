package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu/bench/kernels"
	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/optim"
	"github.com/gotpu/gotpu/tensor"
	"github.com/gotpu/gotpu/train"
)

// fuseReport is `gotpu bench fuse --json`. Keys are stable.
type fuseReport struct {
	Threads int `json:"threads"`
	Reps    int `json:"reps"`
	// Results are the timings: part ("chain", "mlp_block", "mnist_step")
	// and impl ("strict", "fused", "compiled", "compiled_retrace",
	// "gemms_only", "torch").
	Results []fuseResult `json:"results"`
	// Ratios are speed-ups at the median times (above 1: the first named
	// is faster): chain_fused_over_strict, chain_fused_over_torch,
	// mlp_fused_over_strict, mnist_compiled_over_strict (compile.TraceOnce:
	// the step replayed without tracing), mnist_compiled_retrace_over_strict
	// (traced on every call), mnist_fused_over_strict;
	// mlp_fusion_bound is the Strict block over its two products alone
	// (the most any fusion that keeps those products can gain);
	// mlp_peak_fused_over_strict is a ratio of peak memory (below 1: Fused
	// uses less); warm_start_speedup is a cold compile of the MNIST step
	// over loading its serialized program.
	Ratios map[string]float64 `json:"ratios"`
	// PeakBytes is the peak of intermediate memory per part and impl
	// ("mlp_block.strict"), above what was allocated before.
	PeakBytes map[string]int64 `json:"peak_bytes"`
	// CompileS and LoadS are the MNIST step's cold compile and warm load
	// times, in seconds.
	CompileS float64  `json:"compile_s"`
	LoadS    float64  `json:"load_s"`
	Skipped  []string `json:"skipped,omitempty"`
}

type fuseResult struct {
	Part    string    `json:"part"`
	Impl    string    `json:"impl"`
	MedianS float64   `json:"median_s"`
	MinS    float64   `json:"min_s"`
	TimesS  []float64 `json:"times_s"`
}

func init() {
	var threads, reps, warmup, chainN, mnistSteps int
	var asJSON, noTorch bool
	cmd := &cobra.Command{
		Use:   "fuse",
		Short: "Fused eager mode and compiled steps against Strict (and PyTorch eager) in the same run",
		Long: `Measure the Fused eager mode and compile.Fn against Strict mode, interleaved rep
by rep in one process:
  chain       gelu(x*a+b)*c over --chain-size f32 elements (four tensors):
              Strict, Fused, and PyTorch eager (tools/benchref/ref.py, /usr/bin/python3)
  mlp_block   layer_norm -> linear(1024->4096) -> gelu -> linear(4096->1024) -> residual
              add at 64x1024: Strict and Fused time and peak intermediate memory; and
              gemms_only, the block's two products alone in Strict (mlp_fusion_bound =
              Strict block / gemms_only bounds what fusing the rest can gain)
  mnist_step  one MNIST MLP (784-512-256-10, AdamW) training step, batch 64 (each
              repetition runs --mnist-steps steps; times are per step):
              Strict, Fused, compiled (compile.Fn with TraceOnce: replayed without
              tracing) and compiled_retrace (compile.Fn tracing every call); plus the
              step program's cold compile time against loading its serialized form
              (the cache's warm start)
--json keys: threads, reps, results [{part, impl, median_s, min_s, times_s}],
ratios {chain_fused_over_strict, chain_fused_over_torch, mlp_fused_over_strict,
mlp_fusion_bound, mlp_peak_fused_over_strict, mnist_compiled_over_strict,
mnist_compiled_retrace_over_strict, mnist_fused_over_strict, warm_start_speedup},
peak_bytes {"<part>.<impl>"}, compile_s, load_s, skipped.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if threads < 1 || reps < 1 || warmup < 0 || chainN < 1 || mnistSteps < 1 {
				return fmt.Errorf("bench fuse: --threads, --reps, --chain-size and --mnist-steps must be positive, --warmup not negative")
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			prev := runtime.GOMAXPROCS(threads)
			defer runtime.GOMAXPROCS(prev)
			rep, err := runFuseBench(ctx, threads, kernels.Timing{Warmup: warmup, Reps: reps}, chainN, mnistSteps, !noTorch)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			return printFuse(cmd, rep)
		},
	}
	f := cmd.Flags()
	f.IntVar(&threads, "threads", 2, "threads (GOMAXPROCS, torch threads)")
	f.IntVar(&reps, "reps", 5, "timed repetitions")
	f.IntVar(&warmup, "warmup", 1, "untimed repetitions first")
	f.IntVar(&chainN, "chain-size", 16<<20, "elements per tensor of the chain")
	f.IntVar(&mnistSteps, "mnist-steps", 20, "MNIST steps per repetition (times are per step)")
	f.BoolVar(&noTorch, "no-torch", false, "skip the PyTorch reference")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	benchCmd.AddCommand(cmd)
}

func printFuse(cmd *cobra.Command, rep *fuseReport) error {
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
	fmt.Fprintf(w, "part\timpl\tmedian ms\tmin ms\n")
	for _, r := range rep.Results {
		fmt.Fprintf(w, "%s\t%s\t%.2f\t%.2f\n", r.Part, r.Impl, r.MedianS*1e3, r.MinS*1e3)
	}
	w.Flush()
	for _, k := range []string{"chain_fused_over_strict", "chain_fused_over_torch", "mlp_fused_over_strict", "mlp_fusion_bound", "mlp_peak_fused_over_strict",
		"mnist_fused_over_strict", "mnist_compiled_over_strict", "mnist_compiled_retrace_over_strict", "warm_start_speedup"} {
		if v, ok := rep.Ratios[k]; ok {
			fmt.Fprintf(cmd.OutOrStdout(), "%-34s %.2f\n", k, v)
		}
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(cmd.OutOrStdout(), "skipped: %s\n", s)
	}
	return nil
}

// inMode returns a stepper running f in mode m and computing its result
// (kept alive through the flush: the Fused mode does not compute values
// nobody holds).
func inMode(part, impl string, m tensor.Mode, dev device.Device, f func() *tensor.Tensor) *kernels.Stepper {
	return &kernels.Stepper{Impl: part + "/" + impl, DType: "f32", Run: func() error {
		return tensor.Catch(func() {
			prev := tensor.SetMode(m)
			defer tensor.SetMode(prev)
			y := f()
			tensor.Flush(dev)
			runtime.KeepAlive(y)
		})
	}}
}

func runFuseBench(ctx context.Context, threads int, tm kernels.Timing, chainN, mnistSteps int, torch bool) (*fuseReport, error) {
	dev := tensor.MustDevice("cpu")
	rep := &fuseReport{Threads: threads, Reps: tm.Reps, Ratios: map[string]float64{}, PeakBytes: map[string]int64{}}
	g := tensor.NewGenerator(1)
	randn := func(shape ...int) *tensor.Tensor { return tensor.RandnGen(g, dev, dtype.F32, shape...) }

	// chain
	x, a, b, c := randn(chainN), randn(chainN), randn(chainN), randn(chainN)
	chain := func() *tensor.Tensor { return x.Mul(a).Add(b).Gelu().Mul(c) }
	steps := []*kernels.Stepper{
		inMode("chain", "strict", tensor.Strict, dev, chain),
		inMode("chain", "fused", tensor.Fused, dev, chain),
	}
	if torch {
		srv, err := kernels.PyRef{Threads: threads}.Start(ctx, "torch", "eltwise", []string{"--dtype", "f32", "--size", fmt.Sprint(chainN)})
		if err != nil {
			rep.Skipped = append(rep.Skipped, "torch: "+err.Error())
		} else {
			defer srv.Close()
			for _, st := range srv.Steppers(func(string) kernels.Work { return kernels.Work{} }) {
				if st.Impl == "torch" {
					st.Impl = "chain/torch"
					steps = append(steps, st)
				}
			}
		}
	}

	// mlp_block
	const rows, hidden, model = 64, 4096, 1024
	xb := randn(rows, model)
	lnW, lnB := randn(model), randn(model)
	w1, b1 := randn(hidden, model).Mul(tensor.Scalar(0.03)), randn(hidden)
	w2, b2 := randn(model, hidden).Mul(tensor.Scalar(0.015)), randn(model)
	block := func() *tensor.Tensor {
		h := tensor.LayerNorm(xb, []int{model}, lnW, lnB, 1e-5)
		h = tensor.Linear(tensor.Linear(h, w1, b1).Gelu(), w2, b2)
		return xb.Add(h)
	}
	// The block's two products alone, on the inputs they see in the block.
	hln := tensor.LayerNorm(xb, []int{model}, lnW, lnB, 1e-5)
	act := tensor.Linear(hln, w1, b1).Gelu()
	gemms := func() *tensor.Tensor {
		a := tensor.Linear(hln, w1, nil)
		b := tensor.Linear(act, w2, nil)
		runtime.KeepAlive(a)
		return b
	}
	steps = append(steps,
		inMode("mlp_block", "strict", tensor.Strict, dev, block),
		inMode("mlp_block", "fused", tensor.Fused, dev, block),
		inMode("mlp_block", "gemms_only", tensor.Strict, dev, gemms))

	// mnist_step
	mk := func() func(in ...*tensor.Tensor) []*tensor.Tensor { return mnistStep(dev, nil) }
	xs := randn(64, 784)
	ys := make([]int64, 64)
	for i := range ys {
		ys[i] = int64(i % 10)
	}
	yt := tensor.FromSlice(dev, ys, 64)
	strictStep, fusedStep := mk(), mk()
	compiled := compile.Fn(mk(), compile.Name("bench-mnist-step"), compile.TraceOnce())
	retrace := compile.Fn(mk(), compile.Name("bench-mnist-step-retrace"))
	callStep := func(fn *compile.Function) func() error {
		return func() error {
			out, err := fn.Call(xs, yt)
			if err != nil {
				return err
			}
			_ = out[0].Item()
			return nil
		}
	}
	// A step takes a few milliseconds: each repetition runs mnistSteps of
	// them (reported per step), so that scheduler noise averages out.
	for _, st := range []*kernels.Stepper{
		inMode("mnist_step", "strict", tensor.Strict, dev, func() *tensor.Tensor { l := strictStep(xs, yt)[0]; _ = l.Item(); return l }),
		inMode("mnist_step", "fused", tensor.Fused, dev, func() *tensor.Tensor { l := fusedStep(xs, yt)[0]; _ = l.Item(); return l }),
		{Impl: "mnist_step/compiled", DType: "f32", Run: callStep(compiled)},
		{Impl: "mnist_step/compiled_retrace", DType: "f32", Run: callStep(retrace)},
	} {
		one := st.Run
		st.Run = func() error {
			for range mnistSteps {
				if err := one(); err != nil {
					return err
				}
			}
			return nil
		}
		steps = append(steps, st)
	}

	res, skipped, err := kernels.Interleave(ctx, tm, steps)
	if err != nil {
		return nil, fmt.Errorf("bench fuse: %w", err)
	}
	for _, s := range skipped {
		rep.Skipped = append(rep.Skipped, fmt.Sprintf("%v", s))
	}
	med := map[string]float64{}
	for _, r := range res {
		part, impl, _ := strings.Cut(r.Impl, "/")
		if part == "mnist_step" {
			r.MedianS /= float64(mnistSteps)
			r.MinS /= float64(mnistSteps)
			for i := range r.TimesS {
				r.TimesS[i] /= float64(mnistSteps)
			}
		}
		rep.Results = append(rep.Results, fuseResult{Part: part, Impl: impl, MedianS: r.MedianS, MinS: r.MinS, TimesS: r.TimesS})
		med[r.Impl] = r.MedianS
	}
	ratio := func(name, fast, slow string) {
		if med[fast] > 0 && med[slow] > 0 {
			rep.Ratios[name] = med[slow] / med[fast]
		}
	}
	ratio("chain_fused_over_strict", "chain/fused", "chain/strict")
	ratio("chain_fused_over_torch", "chain/fused", "chain/torch")
	ratio("mlp_fused_over_strict", "mlp_block/fused", "mlp_block/strict")
	ratio("mnist_fused_over_strict", "mnist_step/fused", "mnist_step/strict")
	ratio("mnist_compiled_over_strict", "mnist_step/compiled", "mnist_step/strict")
	ratio("mnist_compiled_retrace_over_strict", "mnist_step/compiled_retrace", "mnist_step/strict")
	ratio("mlp_fusion_bound", "mlp_block/gemms_only", "mlp_block/strict")

	// Peak intermediate memory of the MLP block.
	for _, m := range []struct {
		name string
		mode tensor.Mode
	}{{"strict", tensor.Strict}, {"fused", tensor.Fused}} {
		peak, err := peakBytes(dev, func() {
			prev := tensor.SetMode(m.mode)
			defer tensor.SetMode(prev)
			y := block()
			tensor.Flush(dev)
			runtime.KeepAlive(y)
		})
		if err != nil {
			return nil, err
		}
		rep.PeakBytes["mlp_block."+m.name] = peak
	}
	if s, f := rep.PeakBytes["mlp_block.strict"], rep.PeakBytes["mlp_block.fused"]; s > 0 {
		rep.Ratios["mlp_peak_fused_over_strict"] = float64(f) / float64(s)
	}

	// Warm start: the compiled step's program, compiled cold and loaded.
	gr, err := compile.Fn(mk()).Graph(xs, yt)
	if err != nil {
		return nil, err
	}
	be, _ := device.Lookup("cpu")
	var cs, ls time.Duration
	for range 3 {
		c1, l1, err := compile.Measure(ctx, tensor.ProgramRequest{Device: dev, Backend: be, Graph: gr})
		if err != nil {
			return nil, err
		}
		if cs == 0 || c1 < cs {
			cs = c1
		}
		if ls == 0 || l1 < ls {
			ls = l1
		}
	}
	rep.CompileS, rep.LoadS = cs.Seconds(), ls.Seconds()
	if ls > 0 {
		rep.Ratios["warm_start_speedup"] = cs.Seconds() / ls.Seconds()
	}
	return rep, nil
}

// peakBytes runs f and returns the peak of allocated device memory above
// what was allocated before.
func peakBytes(dev device.Device, f func()) (int64, error) {
	be, err := device.Lookup(dev.Type)
	if err != nil {
		return 0, err
	}
	r, ok := be.(interface{ ResetPeakMemory(int) })
	if !ok {
		return 0, fmt.Errorf("bench fuse: %s cannot reset its peak memory", dev)
	}
	// Collect what earlier measurements left (cleanups free device
	// buffers asynchronously, after a collection): wait until it settles.
	before := be.MemStats(dev.Index).Allocated
	for range 20 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		now := be.MemStats(dev.Index).Allocated
		if now == before {
			break
		}
		before = now
	}
	r.ResetPeakMemory(dev.Index)
	if err := tensor.Catch(f); err != nil {
		return 0, err
	}
	return be.MemStats(dev.Index).PeakAllocated - before, nil
}

// mnistStep returns one training step of a fresh MNIST MLP (train.NewMLP)
// on dev with the optimizer newOpt makes (AdamW lr 1e-3 when nil).
func mnistStep(dev device.Device, newOpt func([]*tensor.Tensor) optim.Optimizer) func(in ...*tensor.Tensor) []*tensor.Tensor {
	m := train.NewMLP(dev)
	params := nn.Parameters(m)
	var opt optim.Optimizer
	if newOpt != nil {
		opt = newOpt(params)
	} else {
		opt = optim.NewAdamW(optim.Params(params), 1e-3)
	}
	return func(in ...*tensor.Tensor) []*tensor.Tensor {
		opt.ZeroGrad()
		loss := tensor.CrossEntropy(m.Forward(in[0]), in[1], tensor.CrossEntropyOpts{})
		loss.Backward()
		opt.Step()
		return []*tensor.Tensor{loss}
	}
}
