package main

// `gotpu bench <case>`: kernel benchmarks against references in the same run.
//
// # The case registry
//
// Every case is a benchCase registered with registerBenchCase from an init
// function, in any file of this package (the cases below are in this file;
// others, such as fuse or xla, live in their own files):
//
//	func init() {
//		var k int // a case flag, read by Run
//		registerBenchCase(benchCase{
//			Name:        "mycase",
//			Description: "what is measured, one line",
//			DTypes:      []string{"f32", "bf16"}, // DTypes[0] is the default
//			DefaultSize: 1024,
//			SizeHelp:    "rows of the matrix",
//			Refs:        []string{"torch"}, // what --ref all runs
//			Flags: func(fs *pflag.FlagSet) { fs.IntVar(&k, "k", 64, "inner dim") },
//			Run: func(ctx context.Context, cfg *benchConfig, run *benchRun) error {
//				run.Shape = fmt.Sprintf("%dx%d", cfg.Size, k)
//				x := ... // set up outside the timing
//				g := &kernels.Stepper{Impl: "gotpu", DType: cfg.DType,
//					Work: kernels.Work{Flops: ...}, Run: func() error { ...; return nil }}
//				// gotpu and the requested Python references ("numpy",
//				// "torch": tools/benchref/ref.py must know the case), rep by rep:
//				return cfg.Measure(ctx, run, []*kernels.Stepper{g}, []string{"torch"},
//					[]string{"--k", fmt.Sprint(k)}, func(impl string) kernels.Work { ... })
//			},
//		})
//	}
//
// registerBenchCase makes `gotpu bench mycase` with the common flags
// (--dtype --size --threads --reps --warmup --ref --python --json) plus the
// case's own. The harness validates the common flags (a --dtype not in
// DTypes, a --ref not in Refs or the known references is an error), sets
// GOMAXPROCS to --threads for the run, calls Run, and then computes the
// ratios and prints the table or the JSON report.
//
// Run fills run (shape, results, skipped references, notes). cfg.Measure
// runs its kernels.Steppers (gotpu's, in-process references such as gonum
// with Ref set) and the Python references interleaved: every round runs each
// implementation once, so all of them see the same machine load (this
// machine is shared: in sequential runs minutes apart numpy's 512³ GEMM
// measured 108 and 13 GFLOP/s). A case may also time things itself with
// kernels.Measure and run.Add the results, or run the Python runner
// sequentially with cfg.PyRef. A reference that cannot run here (no Python,
// no torch, a dtype it lacks) is recorded with run.Skip and the case carries
// on. Only a failure of gotpu's own measurement is returned as an error.
//
// Result names: "gotpu" is the measured implementation, references are
// "numpy", "torch", "gonum", "go-memmove", "go-memmove-matrix", ...; a ".variant" suffix
// ("gotpu.backward", "torch.backward") pairs results of the same variant.
// For every result R that is not gotpu's, ratios["gotpu[.v]/R"] is gotpu's
// throughput over R's (GFLOP/s when both report flops, else GB/s; with equal
// work that is R's median time over gotpu's): above 1 gotpu is faster.
// go-memmove pairs with the variant-less gotpu result, so for a
// memory-bound kernel its ratio is the fraction of copy bandwidth reached.
//
// # JSON (--json), stable keys
//
//	case      string   the case name
//	size      int      the --size value (its meaning is per case, see --help)
//	shape     string   the operand shapes actually run
//	dtype     string   the --dtype value (f32, bf16, medium)
//	threads   int      GOMAXPROCS for gotpu, torch threads and OMP/OpenBLAS threads
//	reps      int      timed repetitions per implementation (after warmup untimed runs)
//	warmup    int
//	results   [{impl, dtype, median_s, min_s, gflops?, gbps?, times_s}]
//	ratios    {"gotpu/<impl>": float}   at the median times
//	ratios_min {"gotpu/<impl>": float}  at each implementation's minimum time
//	skipped   [{impl, reason}]   requested references that could not run
//	notes     [string]
//	versions  {string: any}      gotpu, go, cpu_kernel_level, and the references' versions
//
// gflops and gbps are omitted where the case does not report them (gemm
// reports gflops, memory-bound cases gbps, some both).

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gotpu/gotpu"
	"github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/bench/kernels"
)

// benchResult is one implementation's timing (see the JSON keys above).
type benchResult = kernels.Result

// benchSkipped is a requested reference that could not run, with the reason.
type benchSkipped = kernels.Skipped

// benchCase is one `gotpu bench` case; see the registry comment above.
type benchCase struct {
	// Name is the subcommand name.
	Name string
	// Description is one line for --help and `gotpu bench list`.
	Description string
	// Long, when set, is the --help text above the flags.
	Long string
	// DTypes are the accepted --dtype values; DTypes[0] is the default.
	DTypes []string
	// DefaultSize is the --size default; SizeHelp says what --size means.
	DefaultSize int
	SizeHelp    string
	// Refs are the references --ref all runs; --ref may name only these and
	// the known references (a known one the case lacks is reported skipped).
	Refs []string
	// DefaultWarmup and DefaultReps, when not 0, replace the --warmup
	// (1) and --reps (5) defaults.
	DefaultWarmup, DefaultReps int
	// Flags, when set, adds the case's own flags.
	Flags func(fs *pflag.FlagSet)
	// Run measures the case into run.
	Run func(ctx context.Context, cfg *benchConfig, run *benchRun) error
}

// knownRefs are the reference names every case accepts in --ref.
var knownRefs = []string{"numpy", "torch", "gonum"}

// benchConfig is what a case's Run gets: the validated common flags.
type benchConfig struct {
	Case    string
	DType   string
	Size    int
	Threads int
	Timing  kernels.Timing
	// Refs are the requested references (--ref, expanded).
	Refs []string
	// Python is the interpreter for the Python references.
	Python string
	// RefScript is tools/benchref/ref.py ("" finds it).
	RefScript string
}

// WantRef reports whether reference name was requested.
func (c *benchConfig) WantRef(name string) bool { return slices.Contains(c.Refs, name) }

// PyRef runs the Python reference impl ("numpy" or "torch") for this case
// with the common flags (dtype, size, threads, reps, warmup) plus args, and
// adds its results to run, or a skipped entry when it cannot run. work gives
// the work of each result by impl name.
func (c *benchConfig) PyRef(ctx context.Context, run *benchRun, impl string, args []string, work func(impl string) kernels.Work) {
	p := kernels.PyRef{Python: c.Python, Script: c.RefScript, Threads: c.Threads}
	all := append([]string{"--dtype", c.DType, "--size", fmt.Sprint(c.Size)}, args...)
	res, vers, err := p.Run(ctx, impl, c.Case, c.Timing, all, work)
	if err != nil {
		run.Skip(impl, err.Error())
		return
	}
	for _, r := range res {
		run.Add(r)
	}
	for k, v := range vers {
		run.Version(impl+"."+k, v)
	}
}

// Measure interleaves the steppers (gotpu's, and in-process references
// such as gonum) with the Python references in py that were requested
// (each started as `ref.py --serve` with the common flags plus pyArgs), rep
// by rep, and adds the results to run. A reference that cannot start or
// fails is recorded as skipped; only a failure of a non-reference stepper
// is returned. work gives a Python result's work by impl name.
func (c *benchConfig) Measure(ctx context.Context, run *benchRun, steps []*kernels.Stepper, py []string, pyArgs []string,
	work func(impl string) kernels.Work) error {
	p := kernels.PyRef{Python: c.Python, Script: c.RefScript, Threads: c.Threads}
	args := append([]string{"--dtype", c.DType, "--size", fmt.Sprint(c.Size)}, pyArgs...)
	for _, impl := range py {
		if !c.WantRef(impl) {
			continue
		}
		srv, err := p.Start(ctx, impl, c.Case, args)
		if err != nil {
			run.Skip(impl, err.Error())
			continue
		}
		defer srv.Close()
		for k, v := range srv.Versions {
			run.Version(impl+"."+k, v)
		}
		for _, st := range srv.Steppers(work) {
			if _, v, _ := strings.Cut(st.Impl, "."); slices.ContainsFunc(steps, func(g *kernels.Stepper) bool {
				base, gv, _ := strings.Cut(g.Impl, ".")
				return base == "gotpu" && gv == v
			}) {
				steps = append(steps, st) // only variants gotpu measures too (no torch.backward without gotpu.backward)
			}
		}
	}
	res, skipped, err := kernels.Interleave(ctx, c.Timing, steps)
	if err != nil {
		return err
	}
	for _, r := range res {
		run.Add(r)
	}
	run.Skipped = append(run.Skipped, skipped...)
	return nil
}

// benchRun collects what a case measured.
type benchRun struct {
	Shape    string
	Results  []benchResult
	Skipped  []benchSkipped
	Notes    []string
	Versions map[string]any
}

// Add appends a result.
func (r *benchRun) Add(res benchResult) { r.Results = append(r.Results, res) }

// Skip records a reference that could not run.
func (r *benchRun) Skip(impl, reason string) {
	r.Skipped = append(r.Skipped, benchSkipped{Impl: impl, Reason: reason})
}

// Note adds a line to the report.
func (r *benchRun) Note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// Version records a version string under key.
func (r *benchRun) Version(key string, v any) {
	if r.Versions == nil {
		r.Versions = map[string]any{}
	}
	r.Versions[key] = v
}

// benchReport is the --json output (keys documented above).
type benchReport struct {
	Case    string             `json:"case"`
	Size    int                `json:"size"`
	Shape   string             `json:"shape"`
	DType   string             `json:"dtype"`
	Threads int                `json:"threads"`
	Reps    int                `json:"reps"`
	Warmup  int                `json:"warmup"`
	Results []benchResult      `json:"results"`
	Ratios  map[string]float64 `json:"ratios"`
	// RatiosMin are the same ratios at each implementation's minimum time.
	RatiosMin map[string]float64 `json:"ratios_min"`
	Skipped   []benchSkipped     `json:"skipped"`
	Notes     []string           `json:"notes"`
	Versions  map[string]any     `json:"versions"`
}

// benchCases is the registry, by name.
var benchCases = map[string]*benchCase{}

// benchCmd is `gotpu bench`; registerBenchCase adds the case subcommands.
// It is a package-level variable (initialised before every init function),
// so cases can register from any file's init.
var benchCmd = &cobra.Command{
	Use:   "bench <case>",
	Short: "Benchmark the CPU kernels against NumPy, PyTorch and gonum in the same run",
	Long: `Benchmark gotpu's CPU kernels, with references measured in the same run at the
same thread count: NumPy (OpenBLAS) and PyTorch 1.13 through tools/benchref/ref.py
(run with /usr/bin/python3; install them with tools/benchref/install.sh), and
gonum's pure-Go BLAS. Every implementation runs --warmup untimed times, then
--reps timed times; the table shows the median and minimum, the throughput of
the median, and ratios gotpu/reference of throughput (above 1: gotpu faster).
A reference that cannot run is reported as skipped. bench/kernels/run.sh runs
the whole table.`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, args []string) error {
		return cmd.Help()
	},
}

func init() {
	rootCmd.AddCommand(benchCmd)
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the benchmark cases",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return writeBenchList(cmd.OutOrStdout(), asJSON)
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of {name, description, dtypes, default_size, size_help, refs} (cases with their own flags: empty dtypes and refs, size 0)")
	benchCmd.AddCommand(list)

	var sumJSON bool
	summary := &cobra.Command{
		Use:   "summary FILE...",
		Short: "Merge `gotpu bench <case> --json` reports into one markdown table (or one JSON array)",
		Long: `Read the JSON reports of earlier runs (one report, or an array of reports, per
file; "-" is standard input) and print one markdown table with a row per
implementation: case, shape, dtype, threads, median and min ms, GFLOP/s, GB/s,
and gotpu's throughput ratio over that implementation. --json prints the
reports as one JSON array instead. bench/kernels/run.sh uses it.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var reps []*benchReport
			for _, name := range args {
				r, err := readBenchReports(cmd.InOrStdin(), name)
				if err != nil {
					return err
				}
				reps = append(reps, r...)
			}
			if sumJSON {
				return writeJSON(cmd.OutOrStdout(), reps)
			}
			return writeBenchSummary(cmd.OutOrStdout(), reps)
		},
	}
	summary.Flags().BoolVar(&sumJSON, "json", false, "print the reports as one JSON array")
	benchCmd.AddCommand(summary)
}

// errBadReport is a summary input that is not a `gotpu bench --json` report.
var errBadReport = errors.New("not a gotpu bench report")

// readBenchReports reads one report or an array of reports from file name
// ("-": stdin).
func readBenchReports(stdin io.Reader, name string) ([]*benchReport, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	data = bytes.TrimSpace(data)
	var reps []*benchReport
	if len(data) > 0 && data[0] == '[' {
		err = json.Unmarshal(data, &reps)
	} else {
		var r benchReport
		err = json.Unmarshal(data, &r)
		reps = append(reps, &r)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", name, errBadReport, err)
	}
	for _, r := range reps {
		if r == nil || r.Case == "" || r.Results == nil {
			return nil, fmt.Errorf("%s: %w: no case or results", name, errBadReport)
		}
	}
	return reps, nil
}

// writeBenchSummary prints reports as one markdown table.
func writeBenchSummary(w io.Writer, reps []*benchReport) error {
	num := func(v float64) string {
		if v == 0 {
			return ""
		}
		return fmt.Sprintf("%.1f", v)
	}
	fmt.Fprintln(w, "| case | shape | dtype | threads | impl | impl dtype | median ms | min ms | GFLOP/s | GB/s | gotpu/impl | at min |")
	fmt.Fprintln(w, "|---|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|")
	for _, rep := range reps {
		for _, r := range rep.Results {
			ratio, ratioMin := "", ""
			for k, v := range rep.Ratios {
				if _, ref, _ := strings.Cut(k, "/"); ref == r.Impl {
					ratio = fmt.Sprintf("%.2f", v)
					if m, ok := rep.RatiosMin[k]; ok {
						ratioMin = fmt.Sprintf("%.2f", m)
					}
				}
			}
			if _, err := fmt.Fprintf(w, "| %s | %s | %s | %d | %s | %s | %.3f | %.3f | %s | %s | %s | %s |\n", rep.Case, rep.Shape, rep.DType,
				rep.Threads, r.Impl, r.DType, r.MedianS*1e3, r.MinS*1e3, num(r.GFLOPS), num(r.GBPS), ratio, ratioMin); err != nil {
				return err
			}
		}
		for _, s := range rep.Skipped {
			fmt.Fprintf(w, "| %s | %s | %s | %d | %s | skipped: %s | | | | | | |\n", rep.Case, rep.Shape, rep.DType, rep.Threads, s.Impl,
				strings.ReplaceAll(s.Reason, "|", "/"))
		}
	}
	return nil
}

type benchCaseInfo struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	DTypes      []string `json:"dtypes"`
	DefaultSize int      `json:"default_size"`
	SizeHelp    string   `json:"size_help"`
	Refs        []string `json:"refs"`
}

// writeBenchList lists every `gotpu bench` subcommand but list and summary,
// so the list cannot drift from what runs: registered cases with their
// dtypes, size and references; cases with their own flags (fuse, model,
// xla...) with their description only (dtypes and refs empty, size 0).
func writeBenchList(w io.Writer, asJSON bool) error {
	infos := []benchCaseInfo{}
	for _, cmd := range benchCmd.Commands() { // sorted by name
		n := cmd.Name()
		if n == "list" || n == "summary" || !cmd.IsAvailableCommand() {
			continue
		}
		if c, ok := benchCases[n]; ok {
			infos = append(infos, benchCaseInfo{Name: c.Name, Description: c.Description, DTypes: c.DTypes,
				DefaultSize: c.DefaultSize, SizeHelp: c.SizeHelp, Refs: nonNil(c.Refs)})
			continue
		}
		infos = append(infos, benchCaseInfo{Name: n, Description: cmd.Short, DTypes: []string{}, Refs: []string{}})
	}
	if asJSON {
		return writeJSON(w, infos)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tDTYPES\tSIZE\tREFS\tDESCRIPTION")
	for _, i := range infos {
		size := "-"
		if i.DefaultSize > 0 {
			size = fmt.Sprintf("%d (%s)", i.DefaultSize, i.SizeHelp)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", i.Name, orDash(strings.Join(i.DTypes, ",")), size,
			orDash(strings.Join(i.Refs, ",")), i.Description)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// benchFlags are the common flags of every case.
type benchFlags struct {
	dtype          string
	size           int
	threads        int
	reps, warmup   int
	ref            string
	python, script string
	asJSON         bool
}

// registerBenchCase adds case c as `gotpu bench <c.Name>`. It panics on a
// programming error (empty or duplicate name, no dtypes, no Run), at
// start-up.
func registerBenchCase(c benchCase) {
	if c.Name == "" || c.Run == nil || len(c.DTypes) == 0 {
		panic(fmt.Sprintf("registerBenchCase: case %q needs a name, dtypes and a Run function", c.Name))
	}
	if _, dup := benchCases[c.Name]; dup || c.Name == "list" || c.Name == "summary" {
		panic(fmt.Sprintf("registerBenchCase: case %q registered twice", c.Name))
	}
	cc := &c
	benchCases[c.Name] = cc
	var f benchFlags
	sizeHelp := c.SizeHelp
	if sizeHelp == "" {
		sizeHelp = "problem size"
	}
	cmd := &cobra.Command{
		Use:   c.Name,
		Short: c.Description,
		Long:  c.Long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt) // Ctrl-C also stops a Python reference
			defer stop()
			rep, err := runBenchCase(ctx, cc, f)
			if err != nil {
				return fmt.Errorf("bench %s: %w", cc.Name, err)
			}
			if f.asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			return writeBenchTable(cmd.OutOrStdout(), rep)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.dtype, "dtype", c.DTypes[0], "element type: "+strings.Join(c.DTypes, ", ")+
		" (medium: f32 tensors, one bf16 matmul pass)")
	fs.IntVar(&f.size, "size", c.DefaultSize, sizeHelp)
	fs.IntVar(&f.threads, "threads", 0, "threads for gotpu (GOMAXPROCS) and the references (0: GOMAXPROCS)")
	reps, warmup := 5, 1
	if c.DefaultReps > 0 {
		reps = c.DefaultReps
	}
	if c.DefaultWarmup > 0 {
		warmup = c.DefaultWarmup
	}
	fs.IntVar(&f.reps, "reps", reps, "timed repetitions per implementation (the median is reported)")
	fs.IntVar(&f.warmup, "warmup", warmup, "untimed warm-up runs per implementation")
	refs := append([]string{"none"}, c.Refs...)
	fs.StringVar(&f.ref, "ref", "all", "references, comma-separated: "+strings.Join(append(refs, "all"), "|"))
	fs.StringVar(&f.python, "python", kernels.DefaultPython, "Python interpreter for the numpy/torch references")
	fs.StringVar(&f.script, "ref-script", "", "path of tools/benchref/ref.py (default: found above the working directory, or $GOTPU_BENCHREF)")
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object with the keys case, size, shape, dtype, threads, reps, warmup, results, ratios, ratios_min, skipped, notes, versions (bench/kernels/README.md)")
	if c.Flags != nil {
		c.Flags(fs)
	}
	benchCmd.AddCommand(cmd)
}

// parseRefs expands --ref for case c.
func parseRefs(c *benchCase, spec string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(spec, ",") {
		s = strings.TrimSpace(strings.ToLower(s))
		switch {
		case s == "none" || s == "":
		case s == "all":
			for _, r := range c.Refs {
				if !slices.Contains(out, r) {
					out = append(out, r)
				}
			}
		case slices.Contains(c.Refs, s) || slices.Contains(knownRefs, s):
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		default:
			return nil, fmt.Errorf("unknown --ref %q (want none, %s or all)", s, strings.Join(c.Refs, ", "))
		}
	}
	return out, nil
}

// runBenchCase validates the flags, runs the case at the requested thread
// count and builds the report.
func runBenchCase(ctx context.Context, c *benchCase, f benchFlags) (*benchReport, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if !slices.Contains(c.DTypes, f.dtype) {
		return nil, fmt.Errorf("--dtype %q not supported (want %s)", f.dtype, strings.Join(c.DTypes, ", "))
	}
	if f.size < 1 {
		return nil, fmt.Errorf("--size must be positive, got %d", f.size)
	}
	if f.reps < 1 {
		return nil, fmt.Errorf("--reps must be at least 1, got %d", f.reps)
	}
	if f.warmup < 0 {
		return nil, fmt.Errorf("--warmup must not be negative, got %d", f.warmup)
	}
	if f.threads < 0 {
		return nil, fmt.Errorf("--threads must not be negative, got %d", f.threads)
	}
	refs, err := parseRefs(c, f.ref)
	if err != nil {
		return nil, err
	}
	threads := f.threads
	if threads == 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	prev := runtime.GOMAXPROCS(threads)
	defer runtime.GOMAXPROCS(prev)

	cfg := &benchConfig{Case: c.Name, DType: f.dtype, Size: f.size, Threads: threads,
		Timing: kernels.Timing{Warmup: f.warmup, Reps: f.reps}, Refs: refs, Python: f.python, RefScript: f.script}
	run := &benchRun{}
	for _, r := range refs {
		if !slices.Contains(c.Refs, r) {
			run.Skip(r, fmt.Sprintf("case %s has no %s reference", c.Name, r))
		}
	}
	run.Version("gotpu", gotpu.Version)
	run.Version("go", runtime.Version())
	run.Version("cpu_kernel_level", cpu.CPULevel())
	if err := c.Run(ctx, cfg, run); err != nil {
		return nil, err
	}
	if f.reps < 5 {
		run.Note("fewer than 5 repetitions: the medians are not reliable")
	}
	med, min := benchRatios(run.Results)
	return &benchReport{Case: c.Name, Size: f.size, Shape: run.Shape, DType: f.dtype, Threads: threads,
		Reps: f.reps, Warmup: f.warmup, Results: nonNil(run.Results), Ratios: med, RatiosMin: min,
		Skipped: nonNil(run.Skipped), Notes: nonNil(run.Notes), Versions: run.Versions}, nil
}

// benchRatios pairs every non-gotpu result with gotpu's result of the same
// variant (the ".suffix" of the impl name; go-memmove pairs with plain
// gotpu) and returns gotpu's throughput over the reference's, at the median
// times (med) and at the minimum times (min: the least disturbed run of each,
// steadier than the median on a loaded machine).
func benchRatios(results []benchResult) (med, min map[string]float64) {
	med, min = map[string]float64{}, map[string]float64{}
	ok := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }
	variant := func(impl string) (base, v string) {
		base, v, _ = strings.Cut(impl, ".")
		return base, v
	}
	for _, r := range results {
		base, v := variant(r.Impl)
		if base == "gotpu" {
			continue
		}
		gname := "gotpu"
		if v != "" {
			gname += "." + v
		}
		i := slices.IndexFunc(results, func(g benchResult) bool { return g.Impl == gname })
		if i < 0 {
			continue
		}
		g := results[i]
		var ratio float64
		switch {
		case g.GFLOPS > 0 && r.GFLOPS > 0:
			ratio = g.GFLOPS / r.GFLOPS
		case g.GBPS > 0 && r.GBPS > 0:
			ratio = g.GBPS / r.GBPS
		case g.MedianS > 0:
			ratio = r.MedianS / g.MedianS
		}
		if !ok(ratio) {
			continue
		}
		key := gname + "/" + r.Impl
		med[key] = ratio
		// Throughput at the minimum is the median's scaled by median/min.
		if m := ratio * (g.MedianS / g.MinS) / (r.MedianS / r.MinS); ok(m) {
			min[key] = m
		}
	}
	return med, min
}

func writeBenchTable(w io.Writer, rep *benchReport) error {
	fmt.Fprintf(w, "bench %s  size=%d  shape=%s  dtype=%s  threads=%d  reps=%d (median after %d warm-up)\n",
		rep.Case, rep.Size, rep.Shape, rep.DType, rep.Threads, rep.Reps, rep.Warmup)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "impl\tdtype\tmedian ms\tmin ms\tGFLOP/s\tGB/s\t")
	num := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f", v)
	}
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3f\t%s\t%s\t\n", r.Impl, r.DType, r.MedianS*1e3, r.MinS*1e3, num(r.GFLOPS), num(r.GBPS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Ratios) > 0 {
		keys := make([]string, 0, len(rep.Ratios))
		for k := range rep.Ratios {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintln(w, "ratios (gotpu throughput / reference; above 1: gotpu faster):  at median   at min")
		for _, k := range keys {
			fmt.Fprintf(w, "  %-32s %9.3f %8.3f\n", k, rep.Ratios[k], rep.RatiosMin[k])
		}
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "skipped %s: %s\n", s.Impl, s.Reason)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

// The kernel cases (bench/kernels/README.md lists them with their
// sizes). Each interleaves gotpu with its references rep by rep
// (benchConfig.Measure).
func init() {
	var gemmM, gemmK int
	var gemmWt bool
	registerBenchCase(benchCase{
		Name:        "gemm",
		Description: "n×n by n×n matrix product, or m×k by k×n with --m/--k (tensor.MatmulPrec)",
		DTypes:      []string{kernels.F32, kernels.Medium, kernels.BF16},
		DefaultSize: 1024,
		SizeHelp:    "n of the n×n matrices (the columns of the product with --m/--k)",
		Refs:        []string{"numpy", "torch", "gonum"},
		Flags: func(fs *pflag.FlagSet) {
			fs.IntVar(&gemmM, "m", 0, "rows of the first operand (0: --size); e.g. --m 128 --k 576 --size 1536 --wt is an LLM prefill's x·Wᵀ")
			fs.IntVar(&gemmK, "k", 0, "the contraction length (0: --size)")
			fs.BoolVar(&gemmWt, "wt", false, "store the second operand as W [n,k] and multiply by its transpose (a linear layer)")
		},
		Run: func(ctx context.Context, cfg *benchConfig, run *benchRun) error {
			n := cfg.Size
			if gemmM < 0 || gemmK < 0 {
				return fmt.Errorf("--m and --k must not be negative")
			}
			m, k := cmp.Or(gemmM, n), cmp.Or(gemmK, n)
			square := m == n && k == n && !gemmWt
			var g *kernels.Stepper
			var done func()
			var err error
			var pyArgs []string
			if square {
				run.Shape = fmt.Sprintf("%dx%d @ %dx%d", n, n, n, n)
				g, done, err = kernels.GEMMStepper(cfg.DType, n)
			} else {
				run.Shape = fmt.Sprintf("%dx%d @ %dx%d", m, k, k, n)
				if gemmWt {
					run.Shape = fmt.Sprintf("%dx%d @ (%dx%d)ᵀ", m, k, n, k)
					pyArgs = append(pyArgs, "--wt")
				}
				pyArgs = append(pyArgs, "--gemm-m", fmt.Sprint(m), "--gemm-k", fmt.Sprint(k))
				g, done, err = kernels.GEMMShapeStepper(cfg.DType, m, k, n, gemmWt)
			}
			if err != nil {
				return err
			}
			defer done()
			steps := []*kernels.Stepper{g}
			if cfg.WantRef("gonum") {
				if gemmWt {
					run.Skip("gonum", "--wt is not measured on gonum")
				} else {
					steps = append(steps, kernels.GonumShapeStepper(m, k, n))
				}
			}
			if cfg.DType != kernels.F32 {
				run.Note("numpy and gonum compute in f32; torch uses bf16 tensors for bf16, and f32 tensors at set_float32_matmul_precision(\"medium\") for medium (which PyTorch 1.13 ignores on the CPU)")
			}
			return cfg.Measure(ctx, run, steps, []string{"numpy", "torch"}, pyArgs,
				func(string) kernels.Work { return kernels.GEMMShapeWork(m, k, n) })
		},
	})

	var gemvK, memMB int
	registerBenchCase(benchCase{
		Name:        "gemv",
		Description: "[m,k] matrix times [k] vector, with Go's memmove bandwidth measured in the same run",
		DTypes:      []string{kernels.F32, kernels.Medium, kernels.BF16},
		DefaultSize: 768,
		SizeHelp:    "m, the matrix rows (--k its columns)",
		Refs:        []string{"numpy", "torch"},
		Flags: func(fs *pflag.FlagSet) {
			fs.IntVar(&gemvK, "k", 3072, "k, the matrix columns and vector length")
			fs.IntVar(&memMB, "memmove-mb", 256, "MiB copied by the go-memmove bandwidth reference (0: skip it and go-memmove-matrix)")
		},
		Run: func(ctx context.Context, cfg *benchConfig, run *benchRun) error {
			m, k := cfg.Size, gemvK
			if k < 1 || memMB < 0 {
				return fmt.Errorf("--k must be positive and --memmove-mb not negative")
			}
			run.Shape = fmt.Sprintf("%dx%d @ %d", m, k, k)
			g, done, err := kernels.GEMVStepper(cfg.DType, m, k)
			if err != nil {
				return err
			}
			defer done()
			steps := []*kernels.Stepper{g}
			if memMB > 0 {
				mm, err := kernels.MemmoveStepper("go-memmove", memMB<<20)
				if err != nil {
					return err
				}
				// The same bytes as the matrix: cache-resident if the matrix is.
				mb := int(kernels.GEMVWork(m, k, cfg.DType).Bytes)
				ms, err := kernels.MemmoveStepper("go-memmove-matrix", mb)
				if err != nil {
					return err
				}
				steps = append(steps, mm, ms)
				run.Note("go-memmove copies %d MiB, go-memmove-matrix the matrix's %.1f MiB (which stays in cache between repetitions "+
					"if it fits), over %d goroutines; their GB/s count bytes read plus written", memMB, float64(mb)/(1<<20), cfg.Threads)
			}
			err = cfg.Measure(ctx, run, steps, []string{"numpy", "torch"}, []string{"--k", fmt.Sprint(k)},
				func(impl string) kernels.Work {
					if impl == "numpy" {
						return kernels.GEMVWork(m, k, kernels.F32)
					}
					return kernels.GEMVWork(m, k, refDType(cfg.DType))
				})
			if err == nil {
				gemvCopyShare(run)
			}
			return err
		},
	})

	registerBenchCase(benchCase{
		Name:        "eltwise",
		Description: "the op-by-op chain gelu(x·a+b)·c over four tensors, Strict mode",
		DTypes:      []string{kernels.F32, kernels.BF16},
		DefaultSize: 16 << 20,
		SizeHelp:    "elements per tensor",
		Refs:        []string{"torch"},
		Run: func(ctx context.Context, cfg *benchConfig, run *benchRun) error {
			n := cfg.Size
			run.Shape = fmt.Sprintf("4 x [%d]", n)
			g, done, err := kernels.EltwiseStepper(cfg.DType, n)
			if err != nil {
				return err
			}
			defer done()
			run.Note("GB/s count the 4 inputs read and the output written once (op by op moves more)")
			return cfg.Measure(ctx, run, []*kernels.Stepper{g}, []string{"torch"}, nil,
				func(string) kernels.Work { return kernels.EltwiseWork(n, cfg.DType) })
		},
	})

	for _, rc := range []struct {
		name, desc string
		extra      int // parameter elements per column
		step       func(string, int, int) (*kernels.Stepper, func(), error)
	}{
		{"softmax", "softmax over the last dim of a [size, size] tensor", 0, kernels.SoftmaxStepper},
		{"layernorm", "layer_norm over the last dim of a [size, size] tensor, with weight and bias", 2, kernels.LayerNormStepper},
	} {
		registerBenchCase(benchCase{
			Name:        rc.name,
			Description: rc.desc,
			DTypes:      []string{kernels.F32, kernels.BF16},
			DefaultSize: 4096,
			SizeHelp:    "rows and columns of the square input",
			Refs:        []string{"numpy", "torch"},
			Run: func(ctx context.Context, cfg *benchConfig, run *benchRun) error {
				n := cfg.Size
				run.Shape = fmt.Sprintf("%dx%d", n, n)
				g, done, err := rc.step(cfg.DType, n, n)
				if err != nil {
					return err
				}
				defer done()
				run.Note("GB/s count the input read and the output written once; numpy is single-threaded here and always f32")
				return cfg.Measure(ctx, run, []*kernels.Stepper{g}, []string{"numpy", "torch"}, nil,
					func(impl string) kernels.Work {
						dt := refDType(cfg.DType)
						if impl == "numpy" {
							dt = kernels.F32
						}
						return kernels.RowWork(n, n, rc.extra*n, dt)
					})
			},
		})
	}

	var cs kernels.ConvShape
	var convBackward bool
	registerBenchCase(benchCase{
		Name:        "conv",
		Description: "ResNet-like conv2d (8×64×56×56, 64→64, 3×3, pad 1) forward and backward",
		DTypes:      []string{kernels.F32, kernels.Medium, kernels.BF16},
		DefaultSize: 56,
		SizeHelp:    "input height and width",
		Refs:        []string{"torch"},
		Flags: func(fs *pflag.FlagSet) {
			fs.IntVar(&cs.N, "batch", 8, "batch size N")
			fs.IntVar(&cs.C, "channels", 64, "input channels")
			fs.IntVar(&cs.Cout, "cout", 64, "output channels")
			fs.IntVar(&cs.K, "kernel", 3, "kernel height and width")
			fs.IntVar(&cs.Pad, "pad", 1, "padding")
			fs.BoolVar(&convBackward, "backward", true, "also time the backward pass (input and weight gradients)")
		},
		Run: func(ctx context.Context, cfg *benchConfig, run *benchRun) error {
			s := cs
			s.H = cfg.Size
			run.Shape = s.String()
			steps, done, err := kernels.ConvSteppers(cfg.DType, s, convBackward)
			if err != nil {
				return err
			}
			defer done()
			args := []string{"--batch", fmt.Sprint(s.N), "--channels", fmt.Sprint(s.C), "--cout", fmt.Sprint(s.Cout),
				"--kernel", fmt.Sprint(s.K), "--pad", fmt.Sprint(s.Pad)}
			return cfg.Measure(ctx, run, steps, []string{"torch"}, args, func(impl string) kernels.Work {
				w := kernels.ConvWork(s, refDType(cfg.DType))
				if strings.HasSuffix(impl, ".backward") {
					w.Flops, w.Bytes = 2*w.Flops, 2*w.Bytes
				}
				return w
			})
		},
	})
}

// refDType is the dtype torch's tensors have for a benchmark dtype (medium
// is f32 tensors at precision medium, as for gotpu).
func refDType(dt string) string {
	if dt == kernels.Medium {
		return kernels.F32
	}
	return dt
}

// gemvCopyShare notes gotpu's GEMV rate (bytes read) as a share of each
// memmove's read rate (half its bytes read plus written): the
// bandwidth-bound target of a matrix-vector product.
func gemvCopyShare(run *benchRun) {
	var got float64
	for _, r := range run.Results {
		if r.Impl == "gotpu" {
			got = r.GBPS
		}
	}
	for _, r := range run.Results {
		if (r.Impl == "go-memmove" || r.Impl == "go-memmove-matrix") && got > 0 && r.GBPS > 0 {
			run.Note("gotpu reads %.1f GB/s: %.0f%% of %s's read rate (%.1f GB/s, half its bytes moved)", got, 100*got/(r.GBPS/2), r.Impl, r.GBPS/2)
		}
	}
}
