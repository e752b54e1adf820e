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
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu/dist"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/internal/mpiraw"
	"github.com/gotpu/gotpu/tensor"
)

// allreduceResult is one size of one implementation.
type allreduceResult struct {
	Impl      string  `json:"impl"` // "gotpu-shm", "torch-gloo", "gotpu-mpi" or "mpi4py"
	SizeBytes int     `json:"size_bytes"`
	Iters     int     `json:"iters"`
	MedianUS  float64 `json:"median_us"`  // median time of one all-reduce
	BusBWGBps float64 `json:"busbw_gbps"` // size/time × 2(n-1)/n, in GB/s (1e9)
}

// allreduceReport is the --json output of `gotpu bench allreduce`. Keys
// are stable.
type allreduceReport struct {
	NProc   int               `json:"nproc"`
	Engine  string            `json:"engine"` // "shm" or "mpi"
	Reps    int               `json:"reps"`
	Results []allreduceResult `json:"results"`
	// Ratios maps a size in bytes to gotpu's bus bandwidth over the
	// reference's (gloo; mpi4py with --engine mpi; above 1: gotpu is
	// faster); empty with --no-reference.
	Ratios map[string]float64 `json:"ratios"`
	// RawRatios (--engine mpi) maps a size in bytes to the mpi engine's
	// bus bandwidth over raw MPI_Allreduce's timed in the same ranks, the
	// loops of both alternating ("mpi-raw" results): the comparison least
	// moved by a busy machine.
	RawRatios map[string]float64 `json:"raw_ratios,omitempty"`
	// Reference describes the reference run ("torch-gloo <version>",
	// "mpi4py <version> (<MPI library>)") or why there is none.
	Reference string `json:"reference"`
}

const (
	allreduceScript    = "tools/dist/allreduce_gloo.py"
	allreduceMPIScript = "tools/mpi/allreduce_mpi4py.py"
)

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
func allreduceWorker(ctx context.Context, out io.Writer, engine string, sizes []int, reps int) error {
	g, err := dist.Init(ctx, dist.Options{Backend: engine, Timeout: 2 * time.Minute})
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
		// With the mpi engine, raw MPI_Allreduce runs in the same ranks
		// too, its loops alternating with the engine's.
		raw := engine == "mpi" && mpiraw.Built
		var rbuf []float32
		if raw {
			rbuf = make([]float32, size/4)
			for i := range rbuf {
				rbuf[i] = 1
			}
			for range 3 {
				if err := mpiraw.AllReduceSumF32(rbuf); err != nil {
					return err
				}
			}
		}
		sides := []*allreduceSide{{impl: "gotpu-" + engine,
			barrier: func() error { return g.Barrier(ctx) },
			op:      func() error { return g.AllReduce(ctx, x, dist.Sum) }}}
		if raw {
			sides = append(sides, &allreduceSide{impl: "mpi-raw", barrier: mpiraw.Barrier,
				op: func() error { return mpiraw.AllReduceSumF32(rbuf) }})
		}
		for rep := range reps {
			for k := range sides {
				sd := sides[(rep+k)%len(sides)] // each side first in turn
				t, err := timeAllReduceLoop(sd.barrier, sd.op, iters)
				if err != nil {
					return err
				}
				sd.times = append(sd.times, t)
			}
		}
		for _, sd := range sides {
			sort.Float64s(sd.times)
			res = append(res, allreduceResult{Impl: sd.impl, SizeBytes: size, Iters: iters, MedianUS: sd.times[len(sd.times)/2]})
		}
	}
	if g.Rank() == 0 {
		b, _ := json.Marshal(res)
		fmt.Fprintln(out, string(b))
	}
	return nil
}

// mpirunArgs are mpirun's options for both sides of the mpi bench.
func mpirunArgs(nproc int) []string {
	var a []string
	if os.Geteuid() == 0 {
		a = append(a, "--allow-run-as-root")
	}
	if nproc > runtime.NumCPU() {
		a = append(a, "--oversubscribe")
	}
	return append(a, "-np", strconv.Itoa(nproc))
}

// allreduceSide is one implementation the worker times: its barrier, one
// all-reduce, and the time per all-reduce of each timed loop.
type allreduceSide struct {
	impl        string
	barrier, op func() error
	times       []float64
}

// timeAllReduceLoop times iters calls of op between barriers (µs per
// call).
func timeAllReduceLoop(barrier, op func() error, iters int) (float64, error) {
	if err := barrier(); err != nil {
		return 0, err
	}
	t0 := time.Now()
	for range iters {
		if err := op(); err != nil {
			return 0, err
		}
	}
	if err := barrier(); err != nil {
		return 0, err
	}
	return time.Since(t0).Seconds() / float64(iters) * 1e6, nil
}

// lastJSONLine returns the last line of b that starts with '[' or '{'
// (mpirun may print notices around the ranks' output).
func lastJSONLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := bytes.TrimSpace(lines[i]); len(l) > 0 && (l[0] == '[' || l[0] == '{') {
			return l
		}
	}
	return nil
}

func runAllreduceBench(ctx context.Context, engine string, nproc, reps int, sizes []int, sizesFlag string, noRef bool, python, script string, log io.Writer) (*allreduceReport, error) {
	rep := &allreduceReport{NProc: nproc, Engine: engine, Reps: reps, Ratios: map[string]float64{}}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench allreduce: %w", err)
	}
	worker := []string{self, "bench", "allreduce", "--worker", "--engine", engine, "--sizes", sizesFlag, "--reps", strconv.Itoa(reps)}
	var out, errb bytes.Buffer
	var mpirun string
	if engine == "mpi" {
		if mpirun, err = exec.LookPath("mpirun"); err != nil {
			return nil, fmt.Errorf("bench allreduce --engine mpi: mpirun not found (tools/mpi/install.sh installs Open MPI): %w", err)
		}
		cmd := exec.CommandContext(ctx, mpirun, append(mpirunArgs(nproc), worker...)...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("bench allreduce: mpirun: %w:\n%s%s", err, out.String(), errb.String())
		}
	} else {
		c := launchConfig{NProcPerNode: nproc, NNodes: 1, MasterAddr: "127.0.0.1", NoPrefix: true, Program: worker}
		lr, err := launch(ctx, c, &out, &errb, nil)
		if err != nil {
			return nil, err
		}
		if lr.ExitCode != 0 {
			return nil, fmt.Errorf("bench allreduce: rank %d failed (exit %d):\n%s%s", lr.FailedRank, lr.ExitCode, out.String(), errb.String())
		}
	}
	var mine []allreduceResult
	if err := json.Unmarshal(lastJSONLine(out.Bytes()), &mine); err != nil {
		return nil, fmt.Errorf("bench allreduce: worker output: %w\n%s", err, out.String())
	}
	rep.Results = append(rep.Results, mine...)
	refImpl := "torch-gloo"
	ss := make([]string, len(sizes))
	for i, s := range sizes {
		ss[i] = strconv.Itoa(s)
	}
	switch {
	case noRef:
		rep.Reference = "none (--no-reference)"
	case engine == "mpi":
		refImpl = "mpi4py"
		py, scr, err := mpiRefCommand(python, script)
		if err != nil {
			rep.Reference = "none: " + err.Error()
			fmt.Fprintln(log, "bench allreduce: no reference:", err)
			break
		}
		cmd := exec.CommandContext(ctx, mpirun, append(mpirunArgs(nproc), py, scr, "--sizes", strings.Join(ss, ","), "--reps", strconv.Itoa(reps))...)
		cmd.Stderr = log
		b, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("bench allreduce: reference mpirun %s %s: %w", py, scr, err)
		}
		var ref struct {
			MPI4Py  string            `json:"mpi4py"`
			MPI     string            `json:"mpi"`
			Results []allreduceResult `json:"results"`
		}
		if err := json.Unmarshal(lastJSONLine(b), &ref); err != nil {
			return nil, fmt.Errorf("bench allreduce: reference output: %w\n%s", err, b)
		}
		rep.Reference = fmt.Sprintf("mpi4py %s (%s)", ref.MPI4Py, strings.TrimRight(ref.MPI, "\x00 ,"))
		for _, r := range ref.Results {
			r.Impl = refImpl
			rep.Results = append(rep.Results, r)
		}
	default:
		py, scr, err := distRefCommand(python, script)
		if err != nil {
			rep.Reference = "none: " + err.Error()
			fmt.Fprintln(log, "bench allreduce: no reference:", err)
			break
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
			r.Impl = refImpl
			rep.Results = append(rep.Results, r)
		}
	}
	fillRatios(rep, refImpl, sizes)
	return rep, nil
}

// fillRatios sets the results' bus bandwidths and the report's ratios:
// gotpu's over refImpl's and, where the ranks timed raw MPI too, over
// mpi-raw's.
func fillRatios(rep *allreduceReport, refImpl string, sizes []int) {
	byKey := map[string]float64{}
	for i := range rep.Results {
		r := &rep.Results[i]
		r.BusBWGBps = busBW(r.SizeBytes, r.MedianUS, rep.NProc)
		byKey[r.Impl+"/"+strconv.Itoa(r.SizeBytes)] = r.BusBWGBps
	}
	for _, s := range sizes {
		k := strconv.Itoa(s)
		if g, ok := byKey[refImpl+"/"+k]; ok && g > 0 {
			rep.Ratios[k] = byKey["gotpu-"+rep.Engine+"/"+k] / g
		}
		if g, ok := byKey["mpi-raw/"+k]; ok && g > 0 {
			if rep.RawRatios == nil {
				rep.RawRatios = map[string]float64{}
			}
			rep.RawRatios[k] = byKey["gotpu-"+rep.Engine+"/"+k] / g
		}
	}
}

// mpiRefCommand finds a Python with mpi4py (--python, else
// /usr/bin/python3, where Debian's python3-mpi4py installs it, else
// python3) and tools/mpi/allreduce_mpi4py.py above the working directory.
func mpiRefCommand(python, script string) (string, string, error) {
	if python == "" {
		for _, p := range []string{"/usr/bin/python3", "python3"} {
			if exec.Command(p, "-c", "import mpi4py.MPI").Run() == nil {
				python = p
				break
			}
		}
		if python == "" {
			return "", "", fmt.Errorf("no python3 can import mpi4py (tools/mpi/install.sh installs python3-mpi4py)")
		}
	}
	if script == "" {
		p, err := findAbove(allreduceMPIScript)
		if err != nil {
			return "", "", err
		}
		script = p
	}
	return python, script, nil
}

// distRefCommand finds the Python with torch (as bench model does) and
// tools/dist/allreduce_gloo.py above the working directory.
func distRefCommand(python, script string) (string, string, error) {
	py, _, err := modelRefCommand(python, "/dev/null")
	if err != nil {
		return "", "", err
	}
	if script == "" {
		if script, err = findAbove(allreduceScript); err != nil {
			return "", "", err
		}
	}
	return py, script, nil
}

func init() {
	var nproc, reps int
	var sizesFlag, python, script, engine string
	var asJSON, noRef, worker bool
	cmd := &cobra.Command{
		Use:   "allreduce [--engine shm|mpi] [--sizes 1KB,...] [--nproc 2] [--json]",
		Short: "all_reduce bus bandwidth and latency of dist's engines against torch.distributed gloo or raw MPI",
		Long: `Time all_reduce(sum) of float32 tensors between --nproc processes on this host:
gotpu's built-in shared-memory engine (the bench re-executes itself as the
ranks, under gotpu run's environment) and, in the same command, PyTorch's
torch.distributed with the gloo backend (tools/dist/allreduce_gloo.py in the
Python of bench model: --python, $GOTPU_MODELREF_PYTHON or the modelref
venv). Per size: 3 warm-up all-reduces, then --reps loops of back-to-back
all-reduces between barriers (about 256 MiB per loop, 5 to 1000 calls);
the median loop gives the time per all-reduce, and the bus bandwidth is
size/time × 2(n-1)/n (nccl-tests' convention).

--engine mpi (a binary built with -tags gotpu_mpi; tools/mpi/install.sh
installs Open MPI and mpi4py) times the mpi engine instead, both sides
started by mpirun with the same options: gotpu's ranks, then raw
MPI_Allreduce through mpi4py (tools/mpi/allreduce_mpi4py.py, in a python3
that imports mpi4py, or --python) with the same loops. gotpu's ranks also
time raw MPI_Allreduce themselves (cgo, MPI_COMM_WORLD, no checks), its
loops alternating with the engine's: on a busy machine that pairing moves
far less than two separate jobs do.

--json keys: nproc, engine ("shm", "mpi"), reps, results [{impl
("gotpu-shm", "torch-gloo", "gotpu-mpi", "mpi4py", "mpi-raw"), size_bytes,
iters, median_us, busbw_gbps}], ratios {size_bytes: gotpu's bus bandwidth
over the reference's}, raw_ratios (--engine mpi: {size_bytes: the engine's
bus bandwidth over mpi-raw's}), reference ("torch-gloo <version>", "mpi4py
<version> (<MPI library>)" or why none).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sizes, err := parseSizes(sizesFlag)
			if err != nil {
				return err
			}
			if nproc < 2 || reps < 1 {
				return fmt.Errorf("bench allreduce: --nproc must be at least 2 and --reps at least 1")
			}
			if err := dist.EngineAvailable(engine); err != nil {
				return fmt.Errorf("bench allreduce: %w", err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			if worker {
				return allreduceWorker(ctx, cmd.OutOrStdout(), engine, sizes, reps)
			}
			rep, err := runAllreduceBench(ctx, engine, nproc, reps, sizes, sizesFlag, noRef, python, script, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintf(w, "size\timpl\tmedian µs\tbus GB/s\tgotpu/reference\n")
			slices.SortStableFunc(rep.Results, func(a, b allreduceResult) int { return a.SizeBytes - b.SizeBytes })
			for _, r := range rep.Results {
				ratio := ""
				if v, ok := rep.Ratios[strconv.Itoa(r.SizeBytes)]; ok && strings.HasPrefix(r.Impl, "gotpu-") {
					ratio = fmt.Sprintf("%.2fx", v)
				}
				if v, ok := rep.RawRatios[strconv.Itoa(r.SizeBytes)]; ok && strings.HasPrefix(r.Impl, "gotpu-") {
					ratio += fmt.Sprintf(" (%.2fx mpi-raw)", v)
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
	f.StringVar(&engine, "engine", "shm", "dist engine: shm (built in) or mpi (build tag gotpu_mpi; reference mpi4py)")
	f.IntVar(&reps, "reps", 5, "timed loops per size (the median is reported)")
	f.StringVar(&sizesFlag, "sizes", "1KB,64KB,1MB,16MB,64MB,256MB", "tensor sizes in bytes (KB, MB: powers of 1024)")
	f.BoolVar(&noRef, "no-reference", false, "skip the reference (gloo, or mpi4py with --engine mpi)")
	f.StringVar(&python, "python", "", "Python for the reference: with torch (default: as bench model), with mpi4py for --engine mpi (default: /usr/bin/python3)")
	f.StringVar(&script, "ref-script", "", "the reference script (default: "+allreduceScript+" above the working directory)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&worker, "worker", false, "run as one rank (internal)")
	f.MarkHidden("worker")
	benchCmd.AddCommand(cmd)
}
