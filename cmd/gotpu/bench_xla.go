//go:build pjrt

package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu/backend/pjrt"
	"github.com/gotpu/gotpu/bench/kernels"
	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/optim"
	"github.com/gotpu/gotpu/tensor"
)

// xlaReport is `gotpu bench xla --json`. Keys are stable.
type xlaReport struct {
	Threads int `json:"threads"`
	Reps    int `json:"reps"`
	// Results: part ("gemm", "chain", "mnist_step") and device ("cpu",
	// "xla").
	Results []fuseResult `json:"results"`
	// Ratios are cpu_over_xla_<part>: XLA's median time over ours (above
	// 1: gotpu's cpu backend is faster).
	Ratios map[string]float64 `json:"ratios"`
}

func init() {
	var threads, reps, warmup, gemmN, chainN int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "xla",
		Short: "gotpu's cpu backend against XLA's CPU plugin (PJRT) in the same run",
		Long: `Compare gotpu's cpu backend with XLA's CPU compiler on the same machine, interleaved
rep by rep: an f32 GEMM (--gemm-size), the chain gelu(x*a+b)*c over --chain-size
elements (Fused mode: one program on each device) and one MNIST MLP training
step (784-512-256-10, batch 64, SGD momentum 0.9) under compile.Fn. The XLA
plugin is found as for --device xla (GOTPU_PJRT_PLUGIN, pip site-packages,
tools/pjrt/fetch.sh's cache). --json keys: threads, reps, results [{part, impl,
median_s, min_s, times_s}] (impl is the device), ratios {cpu_over_xla_gemm,
cpu_over_xla_chain, cpu_over_xla_mnist_step}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if threads < 1 || reps < 1 || warmup < 0 || gemmN < 1 || chainN < 1 {
				return fmt.Errorf("bench xla: sizes, --threads and --reps must be positive, --warmup not negative")
			}
			if err := pjrt.Open("xla"); err != nil {
				return fmt.Errorf("bench xla: %w", err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			prev := runtime.GOMAXPROCS(threads)
			defer runtime.GOMAXPROCS(prev)
			rep, err := runXLABench(ctx, threads, kernels.Timing{Warmup: warmup, Reps: reps}, gemmN, chainN)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintf(w, "part\tdevice\tmedian ms\tmin ms\n")
			for _, r := range rep.Results {
				fmt.Fprintf(w, "%s\t%s\t%.2f\t%.2f\n", r.Part, r.Impl, r.MedianS*1e3, r.MinS*1e3)
			}
			w.Flush()
			for _, k := range []string{"cpu_over_xla_gemm", "cpu_over_xla_chain", "cpu_over_xla_mnist_step"} {
				fmt.Fprintf(cmd.OutOrStdout(), "%-26s %.2f\n", k, rep.Ratios[k])
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&threads, "threads", 2, "threads (GOMAXPROCS)")
	f.IntVar(&reps, "reps", 5, "timed repetitions")
	f.IntVar(&warmup, "warmup", 2, "untimed repetitions first (XLA compiles on the first)")
	f.IntVar(&gemmN, "gemm-size", 1024, "n of the n×n×n GEMM")
	f.IntVar(&chainN, "chain-size", 4<<20, "elements per tensor of the chain")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	benchCmd.AddCommand(cmd)
}

func runXLABench(ctx context.Context, threads int, tm kernels.Timing, gemmN, chainN int) (*xlaReport, error) {
	rep := &xlaReport{Threads: threads, Reps: tm.Reps, Ratios: map[string]float64{}}
	var steps []*kernels.Stepper
	for _, name := range []string{"cpu", "xla"} {
		dev, err := gotpuDevice(name)
		if err != nil {
			return nil, err
		}
		g := tensor.NewGenerator(1)
		randn := func(shape ...int) *tensor.Tensor { return tensor.RandnGen(g, dev, dtype.F32, shape...) }
		a, b := randn(gemmN, gemmN), randn(gemmN, gemmN)
		steps = append(steps, inMode("gemm", name, tensor.Strict, dev, func() *tensor.Tensor { return a.Matmul(b) }))
		x, ca, cb, cc := randn(chainN), randn(chainN), randn(chainN), randn(chainN)
		steps = append(steps, inMode("chain", name, tensor.Fused, dev, func() *tensor.Tensor { return x.Mul(ca).Add(cb).Gelu().Mul(cc) }))
		step := compile.Fn(mnistStep(dev, func(p []*tensor.Tensor) optim.Optimizer {
			return optim.NewSGD([]*optim.Group{{Params: p, Options: map[string]float64{"momentum": 0.9}}}, 0.01)
		}), compile.Name("bench-xla-"+name))
		xs := randn(64, 784)
		ys := make([]int64, 64)
		for i := range ys {
			ys[i] = int64(i % 10)
		}
		yt := tensor.FromSlice(tensor.MustDevice("cpu"), ys, 64).To(dev)
		steps = append(steps, &kernels.Stepper{Impl: "mnist_step/" + name, DType: "f32", Run: func() error {
			out, err := step.Call(xs, yt)
			if err != nil {
				return err
			}
			_ = out[0].Item()
			return nil
		}})
	}
	res, _, err := kernels.Interleave(ctx, tm, steps)
	if err != nil {
		return nil, fmt.Errorf("bench xla: %w", err)
	}
	med := map[string]float64{}
	for _, r := range res {
		part, impl, _ := strings.Cut(r.Impl, "/")
		rep.Results = append(rep.Results, fuseResult{Part: part, Impl: impl, MedianS: r.MedianS, MinS: r.MinS, TimesS: r.TimesS})
		med[r.Impl] = r.MedianS
	}
	for _, p := range []string{"gemm", "chain", "mnist_step"} {
		if c, x := med[p+"/cpu"], med[p+"/xla"]; c > 0 && x > 0 {
			rep.Ratios["cpu_over_xla_"+p] = x / c
		}
	}
	return rep, nil
}

func gotpuDevice(name string) (device.Device, error) {
	d, _, err := device.Get(name)
	return d, err
}
