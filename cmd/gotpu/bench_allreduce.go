package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu/dist"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// allreduceResult is one size of one implementation.
type allreduceResult struct {
	Impl      string  `json:"impl"` // "gotpu-shm" or "torch-gloo"
	SizeBytes int     `json:"size_bytes"`
	Iters     int     `json:"iters"`
	MedianUS  float64 `json:"median_us"`  // median time of one all-reduce
	BusBWGBps float64 `json:"busbw_gbps"` // size/time × 2(n-1)/n, in GB/s (1e9)
}

// allreduceReport is the --json output of `gotpu bench allreduce`. Keys
// are stable.
type allreduceReport struct {
	NProc   int               `json:"nproc"`
	Reps    int               `json:"reps"`
	Results []allreduceResult `json:"results"`
	// Ratios maps a size in bytes to gotpu's bus bandwidth over gloo's
	// (above 1: gotpu is faster); empty with --no-reference.
	Ratios map[string]float64 `json:"ratios"`
	// Reference describes the reference run ("torch-gloo <version>") or why
	// there is none.
	Reference string `json:"reference"`
}

const allreduceScript = "tools/dist/allreduce_gloo.py"

// allreduceIters is how many all-reduces one timed loop runs: about
// 256 MiB moved, between 5 and 1000 (the Python reference uses the same).
func allreduceIters(size int) int {
	return max(5, min(1000, (256<<20)/max(size, 1)))
}

func busBW(size int, us float64, n int) float64 {
	if us <= 0 {
		return 0
	}
	return float64(size) / (us * 1e-6) * 2 * float64(n-1) / float64(n) / 1e9
}

// parseSizes reads "1KB,16MB,1024" (KB, MB, GB are powers of 1024).
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.ToUpper(strings.TrimSpace(f))
		mul := 1
		for _, u := range []struct {
			suf string
			m   int
		}{{"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
			if strings.HasSuffix(f, u.suf) {
				mul, f = u.m, strings.TrimSuffix(f, u.suf)
				break
			}
		}
		n, err := strconv.Atoi(f)
		if err != nil || n*mul < 4 {
			return nil, fmt.Errorf("bench allreduce: bad size %q (want bytes ≥ 4, e.g. 1KB, 16MB)", f)
		}
		out = append(out, n*mul/4*4)
	}
	return out, nil
}

// allreduceWorker is one rank of the gotpu side (the bench re-executes
// itself with --worker under gotpu run's environment).
func allreduceWorker(ctx context.Context, out io.Writer, sizes []int, reps int) error {
	g, err := dist.Init(ctx, dist.Options{Timeout: 2 * time.Minute})
	if err != nil {
		return err
	}
	defer g.Close()
	var res []allreduceResult
	cpu := tensor.MustDevice("cpu")
	for _, size := range sizes {
		x := tensor.Ones(cpu, dtype.F32, size/4)
		iters := allreduceIters(size)
		for range 3 {
			if err := g.AllReduce(ctx, x, dist.Sum); err != nil {
				return err
			}
		}
		var times []float64
		for range reps {
			if err := g.Barrier(ctx); err != nil {
				return err
			}
			t0 := time.Now()
			for range iters {
				if err := g.AllReduce(ctx, x, dist.Sum); err != nil {
					return err
				}
			}
			if err := g.Barrier(ctx); err != nil {
				return err
			}
			times = append(times, time.Since(t0).Seconds()/float64(iters)*1e6)
		}
		sort.Float64s(times)
		res = append(res, allreduceResult{Impl: "gotpu-shm", SizeBytes: size, Iters: iters, MedianUS: times[len(times)/2]})
	}
	if g.Rank() == 0 {
		b, _ := json.Marshal(res)
		fmt.Fprintln(out, string(b))
	}
	return nil
}

func runAllreduceBench(ctx context.Context, nproc, reps int, sizes []int, sizesFlag string, noRef bool, python, script string, log io.Writer) (*allreduceReport, error) {
	rep := &allreduceReport{NProc: nproc, Reps: reps, Ratios: map[string]float64{}}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench allreduce: %w", err)
	}
	var out, errb bytes.Buffer
	c := launchConfig{NProcPerNode: nproc, NNodes: 1, MasterAddr: "127.0.0.1", NoPrefix: true,
		Program: []string{self, "bench", "allreduce", "--worker", "--sizes", sizesFlag, "--reps", strconv.Itoa(reps)}}
	lr, err := launch(ctx, c, &out, &errb, nil)
	if err != nil {
		return nil, err
	}
	if lr.ExitCode != 0 {
		return nil, fmt.Errorf("bench allreduce: rank %d failed (exit %d):\n%s%s", lr.FailedRank, lr.ExitCode, out.String(), errb.String())
	}
	var mine []allreduceResult
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &mine); err != nil {
		return nil, fmt.Errorf("bench allreduce: worker output: %w\n%s", err, out.String())
	}
	rep.Results = append(rep.Results, mine...)
	if noRef {
		rep.Reference = "none (--no-reference)"
	} else {
		py, scr, err := distRefCommand(python, script)
		if err != nil {
			rep.Reference = "none: " + err.Error()
			fmt.Fprintln(log, "bench allreduce: no reference:", err)
		} else {
			ss := make([]string, len(sizes))
			for i, s := range sizes {
				ss[i] = strconv.Itoa(s)
			}
			cmd := exec.CommandContext(ctx, py, scr, "--nproc", strconv.Itoa(nproc), "--sizes", strings.Join(ss, ","), "--reps", strconv.Itoa(reps))
			cmd.Stderr = log
			b, err := cmd.Output()
			if err != nil {
				return nil, fmt.Errorf("bench allreduce: reference %s %s: %w", py, scr, err)
			}
			var ref struct {
				Torch   string            `json:"torch"`
				Results []allreduceResult `json:"results"`
			}
			if err := json.Unmarshal(b, &ref); err != nil {
				return nil, fmt.Errorf("bench allreduce: reference output: %w\n%s", err, b)
			}
			rep.Reference = "torch-gloo " + ref.Torch
			for _, r := range ref.Results {
				r.Impl = "torch-gloo"
				rep.Results = append(rep.Results, r)
			}
		}
	}
	byKey := map[string]float64{}
	for i := range rep.Results {
		r := &rep.Results[i]
		r.BusBWGBps = busBW(r.SizeBytes, r.MedianUS, nproc)
		byKey[r.Impl+"/"+strconv.Itoa(r.SizeBytes)] = r.BusBWGBps
	}
	for _, s := range sizes {
		k := strconv.Itoa(s)
		if g, ok := byKey["torch-gloo/"+k]; ok && g > 0 {
			rep.Ratios[k] = byKey["gotpu-shm/"+k] / g
		}
	}
	return rep, nil
}

// distRefCommand finds the Python with torch (as bench model does) and
// tools/dist/allreduce_gloo.py above the working directory.
func distRefCommand(python, script string) (string, string, error) {
	py, _, err := modelRefCommand(python, "/dev/null")
	if err != nil {
		return "", "", err
	}
	if script == "" {
		p, err := findAbove(allreduceScript)
		if err != nil {
			return "", "", err
		}
		script = p
	}
	return py, script, nil
}

func init() {
	var nproc, reps int
	var sizesFlag, python, script string
	var asJSON, noRef, worker bool
	cmd := &cobra.Command{
		Use:   "allreduce [--sizes 1KB,...] [--nproc 2] [--json]",
		Short: "all_reduce bus bandwidth and latency of the built-in engine against torch.distributed gloo",
		Long: `Time all_reduce(sum) of float32 tensors between --nproc processes on this host:
gotpu's built-in shared-memory engine (the bench re-executes itself as the
ranks, under gotpu run's environment) and, in the same command, PyTorch's
torch.distributed with the gloo backend (tools/dist/allreduce_gloo.py in the
Python of bench model: --python, $GOTPU_MODELREF_PYTHON or the modelref
venv). Per size: 3 warm-up all-reduces, then --reps loops of back-to-back
all-reduces between barriers (about 256 MiB per loop, 5 to 1000 calls);
the median loop gives the time per all-reduce, and the bus bandwidth is
size/time × 2(n-1)/n (nccl-tests' convention).

--json keys: nproc, reps, results [{impl ("gotpu-shm", "torch-gloo"),
size_bytes, iters, median_us, busbw_gbps}], ratios {size_bytes: gotpu's bus
bandwidth over gloo's}, reference ("torch-gloo <version>" or why none).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sizes, err := parseSizes(sizesFlag)
			if err != nil {
				return err
			}
			if nproc < 2 || reps < 1 {
				return fmt.Errorf("bench allreduce: --nproc must be at least 2 and --reps at least 1")
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			if worker {
				return allreduceWorker(ctx, cmd.OutOrStdout(), sizes, reps)
			}
			rep, err := runAllreduceBench(ctx, nproc, reps, sizes, sizesFlag, noRef, python, script, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintf(w, "size\timpl\tmedian µs\tbus GB/s\tgotpu/gloo\n")
			slices.SortStableFunc(rep.Results, func(a, b allreduceResult) int { return a.SizeBytes - b.SizeBytes })
			for _, r := range rep.Results {
				ratio := ""
				if v, ok := rep.Ratios[strconv.Itoa(r.SizeBytes)]; ok && r.Impl == "gotpu-shm" {
					ratio = fmt.Sprintf("%.2fx", v)
				}
				fmt.Fprintf(w, "%d\t%s\t%.1f\t%.3f\t%s\n", r.SizeBytes, r.Impl, r.MedianUS, r.BusBWGBps, ratio)
			}
			w.Flush()
			fmt.Fprintf(cmd.OutOrStdout(), "reference: %s\n", rep.Reference)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&nproc, "nproc", 2, "processes (ranks)")
	f.IntVar(&reps, "reps", 5, "timed loops per size (the median is reported)")
	f.StringVar(&sizesFlag, "sizes", "1KB,64KB,1MB,16MB,64MB,256MB", "tensor sizes in bytes (KB, MB: powers of 1024)")
	f.BoolVar(&noRef, "no-reference", false, "skip the torch.distributed gloo reference")
	f.StringVar(&python, "python", "", "Python with torch for the reference (default: as bench model)")
	f.StringVar(&script, "ref-script", "", "the reference script (default: "+allreduceScript+" above the working directory)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&worker, "worker", false, "run as one rank (internal)")
	f.MarkHidden("worker")
	benchCmd.AddCommand(cmd)
}
