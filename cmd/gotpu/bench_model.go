package main

// `gotpu bench model`: a causal LM's prefill and decode speed, gotpu against
// transformers + PyTorch 2.x on the same weights, interleaved rep by rep in
// the same run, and gotpu's resident memory after loading.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu"
	"github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/bench/kernels"
	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/models"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/tensor"
)

// modelRefScriptPath is the PyTorch reference runner, relative to the
// repository root.
const modelRefScriptPath = "tools/modelref/bench_ref.py"

// modelBenchReport is `gotpu bench model --json`; the keys are stable and
// documented in the command's help and bench/README.md ("Models").
type modelBenchReport struct {
	Model     string  `json:"model"`
	Family    string  `json:"family"`
	Params    int64   `json:"params"`
	Device    string  `json:"device"`
	Threads   int     `json:"threads"`
	PromptLen int     `json:"prompt_len"`
	NewTokens int     `json:"new_tokens"`
	Reps      int     `json:"reps"`
	Warmup    int     `json:"warmup"`
	RefMethod string  `json:"ref_method"`
	LoadAvg   loadAvg `json:"load_avg"`
	// Results: one per (impl, dtype).
	Results []modelBenchResult `json:"results"`
	// Ratios: gotpu's throughput over the reference's, per dtype and gotpu
	// mode, at the medians (above 1: gotpu faster).
	Ratios   []modelBenchRatio  `json:"ratios"`
	Memory   []modelBenchMemory `json:"memory"`
	Skipped  []benchSkipped     `json:"skipped"`
	Notes    []string           `json:"notes"`
	Profiles []string           `json:"profiles"`
	// StepProfile: --step-profile's tables.
	StepProfile []stepProfilePhase `json:"step_profile,omitempty"`
	Versions    map[string]any     `json:"versions"`
}

// loadAvg is /proc/loadavg's 1, 5 and 15 minute averages at the start and
// the end of the run (nil where unreadable).
type loadAvg struct {
	Start []float64 `json:"start"`
	End   []float64 `json:"end"`
}

type modelBenchResult struct {
	// Impl is gotpu.<mode> (gotpu.strict, gotpu.compiled, ...) or torch.
	Impl          string `json:"impl"`
	DType         string `json:"dtype"`
	PrefillTokens int    `json:"prefill_tokens"`
	DecodeSteps   int    `json:"decode_steps"`
	// Throughputs at the median, fastest and slowest repetition.
	PrefillTPS    float64 `json:"prefill_tokens_per_s"`
	PrefillTPSMin float64 `json:"prefill_tokens_per_s_min"`
	PrefillTPSMax float64 `json:"prefill_tokens_per_s_max"`
	DecodeTPS     float64 `json:"decode_tokens_per_s"`
	DecodeTPSMin  float64 `json:"decode_tokens_per_s_min"`
	DecodeTPSMax  float64 `json:"decode_tokens_per_s_max"`
	// Every timed repetition, in seconds.
	PrefillS []float64 `json:"prefill_s"`
	DecodeS  []float64 `json:"decode_s"`
	// The same from the process's CPU time (user + system, all threads):
	// tokens per CPU-second at the median, and every repetition's CPU
	// seconds. On a loaded machine wall time inflates with the wait for a
	// core while CPU time stays close to the work done (absent where CPU
	// time cannot be read).
	PrefillTPCS float64   `json:"prefill_tokens_per_cpu_s,omitempty"`
	DecodeTPCS  float64   `json:"decode_tokens_per_cpu_s,omitempty"`
	PrefillCPUS []float64 `json:"prefill_cpu_s,omitempty"`
	DecodeCPUS  []float64 `json:"decode_cpu_s,omitempty"`
	// Tokens are the generated ids of the last repetition.
	Tokens []int `json:"tokens"`
	// TokensAgreeTorch is how many leading generated tokens equal torch's
	// in the same dtype (absent without the reference).
	TokensAgreeTorch *int `json:"tokens_agree_torch,omitempty"`
	// Compile holds the compiled steps' counters after the timed rounds
	// (warm-up included; gotpu.compiled only).
	Compile *compile.Stats `json:"compile,omitempty"`
}

type modelBenchRatio struct {
	DType   string  `json:"dtype"`
	Impl    string  `json:"impl"`
	Ref     string  `json:"ref"`
	Prefill float64 `json:"prefill"`
	Decode  float64 `json:"decode"`
	// The same ratios from tokens per CPU-second (absent without CPU
	// times on both sides).
	PrefillCPU float64 `json:"prefill_cpu,omitempty"`
	DecodeCPU  float64 `json:"decode_cpu,omitempty"`
}

type modelBenchMemory struct {
	DType string `json:"dtype"`
	// WeightBytes is the parameters' bytes in the run dtype (each tensor
	// once: tied embeddings count once).
	WeightBytes int64 `json:"weight_bytes"`
	// VmRSS of this process before and after models.Load, each after a
	// runtime.GC and debug.FreeOSMemory (0 where /proc is missing).
	RSSBeforeLoad int64 `json:"rss_before_load_bytes"`
	RSSAfterLoad  int64 `json:"rss_after_load_bytes"`
	// RSSRatio is rss_after_load_bytes / weight_bytes (the whole process:
	// Go runtime and binary included); RSSDeltaRatio is (after - before) /
	// weight_bytes.
	RSSRatio      float64 `json:"rss_ratio"`
	RSSDeltaRatio float64 `json:"rss_delta_ratio"`
	// DeviceReserved is the device allocator's reserved bytes after
	// loading (live tensors plus cached free blocks).
	DeviceReserved int64 `json:"device_reserved_bytes"`
	// RSSAfterEmptyCache is VmRSS once the allocator's cached blocks are
	// released as well (what loading leaves behind that is not weights).
	RSSAfterEmptyCache int64   `json:"rss_after_empty_cache_bytes"`
	LoadS              float64 `json:"load_s"`
	// RSSAfterRuns is VmRSS after the timed runs (after a GC; KV caches and
	// activations the allocator keeps included).
	RSSAfterRuns int64 `json:"rss_after_runs_bytes"`
	// The reference process's VmRSS around from_pretrained (absent
	// without the reference).
	TorchRSSBeforeLoad int64 `json:"torch_rss_before_load_bytes,omitempty"`
	TorchRSSAfterLoad  int64 `json:"torch_rss_after_load_bytes,omitempty"`
	TorchRSSAfterRuns  int64 `json:"torch_rss_after_runs_bytes,omitempty"`
}

// modelBenchFlags are `gotpu bench model`'s flags.
type modelBenchFlags struct {
	mf                modelFlags
	dtypes, modes     string
	threads           int
	reps, warmup      int
	promptLen, newTok int
	reference         bool
	refMethod         string
	python, refScript string
	cpuProfile        string
	profileReps       int
	stepProfile       bool
	asJSON            bool
}

func init() {
	var f modelBenchFlags
	cmd := &cobra.Command{
		Use:   "model --model PATH [--dtype f32,bf16] [--mode strict,compiled] [--reference] [--json]",
		Short: "A causal LM's prefill and decode tokens/s against transformers + PyTorch 2.x, and its memory",
		Long: `Measure a causal language model's generation speed: prefill (one forward of a
--prompt-len prompt, batch 1, up to its first token's logits) and decode
(the remaining --new-tokens - 1 forwards of one token with the KV cache,
greedy, no end-of-sequence stop). Throughputs: prefill tokens/s = prompt
tokens / prefill time; decode tokens/s = decode steps / decode time.

For each --dtype, gotpu's model is loaded once and run in every --mode
(strict: op by op; compiled: each step a compiled, replayed program), and
with --reference the same checkpoint runs in transformers + PyTorch 2.x
(tools/modelref/bench_ref.py, torch.set_num_threads(--threads), in the venv
of tools/modelref/venv.sh) in a separate process. The implementations are
interleaved rep by rep (every round runs each once, in a rotating order), so
they see the same machine load; --warmup untimed rounds come first. Medians
over --reps, with the fastest and slowest repetition. The prompt's ids are
id_i = (17 + 7919*i) mod vocab_size, the same in both.

Threads: GOMAXPROCS=--threads for gotpu (the CPU backend's GEMM pool, SDPA
and elementwise workers all size themselves from GOMAXPROCS); the reference
gets torch.set_num_threads(--threads) and OMP/MKL/OpenBLAS_NUM_THREADS.

Memory: VmRSS before and after loading (each after runtime.GC and
debug.FreeOSMemory) against the parameters' bytes in the run dtype.

--cpuprofile DIR writes CPU profiles of --profile-reps extra untimed runs
per dtype and mode, prefill and decode apart:
DIR/<dtype>-<mode>-{prefill,decode}-<i>.pprof; merge them with
go tool pprof -top DIR/f32-strict-decode-*.pprof.

--step-profile times every step of the compiled mode's programs on the
cpu device over --profile-reps extra untimed runs (backend/cpu's step
timer: the wall time of each product, attention, fused group or kernel,
parallel work included), prefill and decode apart, and prints each
phase's steps by total time: what one generation spends where.

With --json one object is printed, with these stable keys:
  model, family, params, device, threads, prompt_len, new_tokens, reps,
  warmup, ref_method
  load_avg   {start, end}: /proc/loadavg's 1/5/15-minute averages
  results    [{impl (gotpu.<mode> or torch), dtype, prefill_tokens,
             decode_steps, prefill_tokens_per_s, prefill_tokens_per_s_min,
             prefill_tokens_per_s_max, decode_tokens_per_s,
             decode_tokens_per_s_min, decode_tokens_per_s_max, prefill_s,
             decode_s, prefill_tokens_per_cpu_s, decode_tokens_per_cpu_s,
             prefill_cpu_s, decode_cpu_s (the same from the process's CPU
             time, all threads), tokens, tokens_agree_torch?, compile? (the compiled
             steps' counters: calls, traces, replays, programs, tiers,
             trace_ns, compile_ns, run_ns)}]
  ratios     [{dtype, impl, ref, prefill, decode, prefill_cpu,
             decode_cpu}]: gotpu's tokens/s over the reference's at the
             medians (above 1: gotpu faster); *_cpu from tokens per
             CPU-second
  memory     [{dtype, weight_bytes, rss_before_load_bytes,
             rss_after_load_bytes, rss_ratio, rss_delta_ratio,
             device_reserved_bytes, rss_after_empty_cache_bytes, load_s,
             rss_after_runs_bytes, torch_rss_before_load_bytes?,
             torch_rss_after_load_bytes?, torch_rss_after_runs_bytes?}]
  skipped    [{impl, reason}]: a reference that could not run
  notes      [string]
  profiles   [string]: the --cpuprofile files written
  step_profile [{dtype, phase (prefill or decode), runs, steps: [{step,
             calls, total_s, mean_us}]}]: with --step-profile, per step
             kind (op, output dtype and shape; "sibling OP xN" a run of
             sibling products) the calls and time summed over the runs
  versions   {gotpu, go, cpu, cpu_kernel_level, torch.*}
bench/models/run.sh runs both benchmark checkpoints in both dtypes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			rep, err := runModelBench(ctx, &f, cmd.ErrOrStderr())
			if err != nil {
				return fmt.Errorf("bench model: %w", err)
			}
			if f.asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			return writeModelBench(cmd.OutOrStdout(), rep)
		},
	}
	fs := cmd.Flags()
	f.mf.registerSource(fs)
	fs.StringVar(&f.dtypes, "dtype", "f32,bf16", "compute dtypes, comma-separated: f32, bf16 (f16 and keep, a GGUF file's weights kept quantized, for gotpu alone)")
	fs.StringVar(&f.modes, "mode", "strict,compiled", "gotpu's execution modes, comma-separated: strict, fused, compiled")
	fs.IntVar(&f.threads, "threads", 2, "threads: GOMAXPROCS for gotpu, torch.set_num_threads for the reference")
	fs.IntVar(&f.reps, "reps", 5, "timed repetitions per implementation (medians reported)")
	fs.IntVar(&f.warmup, "warmup", 1, "untimed rounds first")
	fs.IntVar(&f.promptLen, "prompt-len", 128, "prompt tokens (batch 1)")
	fs.IntVar(&f.newTok, "new-tokens", 64, "tokens generated per run (the first comes from the prefill)")
	fs.BoolVar(&f.reference, "reference", false, "also run transformers + PyTorch 2.x (tools/modelref/bench_ref.py)")
	fs.StringVar(&f.refMethod, "ref-method", "generate", "how the reference is timed: generate (model.generate, what users run) or loop (bare forwards with a DynamicCache)")
	fs.StringVar(&f.python, "python", "", "the reference's Python (default: $GOTPU_MODELREF_PYTHON, else the venv of tools/modelref/venv.sh)")
	fs.StringVar(&f.refScript, "ref-script", "", "path of "+modelRefScriptPath+" (default: found above the working directory)")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "directory for CPU profiles of gotpu's prefill and decode (extra untimed runs)")
	fs.IntVar(&f.profileReps, "profile-reps", 3, "profiled runs per dtype and mode with --cpuprofile or --step-profile")
	fs.BoolVar(&f.stepProfile, "step-profile", false, "time every step of gotpu's compiled programs (cpu device) over --profile-reps extra untimed runs, prefill and decode apart")
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object (keys above)")
	benchCmd.AddCommand(cmd)
}

// modelImpl is one implementation measured rep by rep.
type modelImpl struct {
	name string
	ref  bool
	// run does one generation and returns its timings and tokens.
	run                   func(ctx context.Context) (modelRun, error)
	prefill, decode       []float64
	prefillCPU, decodeCPU []float64
	last                  modelRun
	failed                bool
	// stats, when set, reads the compiled steps' counters.
	stats func() *compile.Stats
}

// modelRun is one generation's measurements.
type modelRun struct {
	PrefillS      float64 `json:"prefill_s"`
	DecodeS       float64 `json:"decode_s"`
	PrefillCPUS   float64 `json:"prefill_cpu_s"` // negative: unknown
	DecodeCPUS    float64 `json:"decode_cpu_s"`
	PrefillTokens int     `json:"prefill_tokens"`
	DecodeSteps   int     `json:"decode_steps"`
	Tokens        []int   `json:"tokens"`
	// RSS is the reference process's VmRSS after the run.
	RSS   int64  `json:"rss_bytes"`
	Error string `json:"error"`
}

// benchPromptIDs is the benchmark prompt: id_i = (17 + 7919*i) mod vocab
// (bench_ref.py computes the same).
func benchPromptIDs(n, vocab int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = int((17 + 7919*int64(i)) % int64(vocab))
	}
	return ids
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(strings.ToLower(p)); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func runModelBench(ctx context.Context, f *modelBenchFlags, logw io.Writer) (*modelBenchReport, error) {
	if f.threads < 1 || f.reps < 1 || f.warmup < 0 || f.promptLen < 1 || f.newTok < 1 || f.profileReps < 1 {
		return nil, errors.New("--threads, --reps, --prompt-len, --new-tokens and --profile-reps must be positive, --warmup not negative")
	}
	if f.mf.path == "" {
		return nil, errors.New("--model PATH is required")
	}
	if f.refMethod != "generate" && f.refMethod != "loop" {
		return nil, fmt.Errorf("unknown --ref-method %q (want generate or loop)", f.refMethod)
	}
	dtypes := splitList(f.dtypes)
	modes := splitList(f.modes)
	if len(dtypes) == 0 || len(modes) == 0 {
		return nil, errors.New("--dtype and --mode need at least one value")
	}
	dts := make([]dtype.DType, len(dtypes))
	for i, d := range dtypes {
		dt, err := parseModelDType(d)
		if err != nil {
			return nil, err
		}
		if dt == dtype.Invalid {
			return nil, fmt.Errorf("--dtype %q", d)
		}
		dts[i] = dt
		dtypes[i] = benchDTypeName(dt)
	}
	for _, m := range modes {
		if _, _, err := parseModelMode(m); err != nil || m == "debug" {
			return nil, fmt.Errorf("unknown --mode %q (want strict, fused or compiled)", m)
		}
	}
	if f.cpuProfile != "" {
		if err := os.MkdirAll(f.cpuProfile, 0o755); err != nil {
			return nil, err
		}
	}
	prevProcs := runtime.GOMAXPROCS(f.threads)
	defer runtime.GOMAXPROCS(prevProcs)
	prevMode := tensor.SetMode(tensor.Strict)
	defer tensor.SetMode(prevMode)

	rep := &modelBenchReport{Model: f.mf.path, Device: f.mf.device, Threads: f.threads, PromptLen: f.promptLen,
		NewTokens: f.newTok, Reps: f.reps, Warmup: f.warmup, Results: []modelBenchResult{}, Ratios: []modelBenchRatio{},
		Memory: []modelBenchMemory{}, Skipped: []benchSkipped{}, Notes: []string{}, Profiles: []string{},
		Versions: map[string]any{"gotpu": gotpu.Version, "go": runtime.Version(), "cpu": cpuModelName(),
			"cpu_kernel_level": cpu.CPULevel()}}
	rep.LoadAvg.Start = readLoadAvg()
	if f.reference {
		rep.RefMethod = f.refMethod
	}
	var py, script string
	refErr := error(nil)
	if f.reference {
		py, script, refErr = modelRefCommand(f.python, f.refScript)
		if refErr != nil {
			rep.Skipped = append(rep.Skipped, benchSkipped{Impl: "torch", Reason: refErr.Error()})
		}
	}
	logf := func(format string, args ...any) {
		if logw != nil && !f.asJSON {
			fmt.Fprintf(logw, format+"\n", args...)
		}
	}

	for di, dt := range dts {
		dname := dtypes[di]
		mem, m, err := loadForBench(&f.mf, dt)
		if err != nil {
			return nil, err
		}
		lm := m.LM
		if lm == nil {
			return nil, fmt.Errorf("%s is not a causal language model", f.mf.path)
		}
		rep.Family = m.Config.Family()
		rep.Params = paramCount(lm)
		mem.DType = dname
		vocab := m.Config.VocabSize
		prompt := benchPromptIDs(f.promptLen, vocab)
		logf("%s: loaded in %.1fs, weights %.1f MB, RSS %.1f MB", dname, mem.LoadS, float64(mem.WeightBytes)/1e6, float64(mem.RSSAfterLoad)/1e6)

		var impls []*modelImpl
		for _, mode := range modes {
			tmode, compiled, _ := parseModelMode(mode)
			impls = append(impls, &modelImpl{name: "gotpu." + mode, run: func(ctx context.Context) (modelRun, error) {
				lm.Compiled = compiled
				old := tensor.SetMode(tmode)
				defer tensor.SetMode(old)
				runtime.GC()
				return gotpuGenerate(ctx, lm, prompt, f.newTok, nil)
			}})
			if compiled {
				impls[len(impls)-1].stats = func() *compile.Stats { st := lm.CompileStats(); return &st }
			}
		}
		var srv *modelRefServer
		if f.reference && refErr == nil {
			if dt != dtype.F32 && dt != dtype.BF16 {
				rep.Skipped = append(rep.Skipped, benchSkipped{Impl: "torch", Reason: dname + ": the reference runs f32 and bf16 only"})
			} else {
				logf("%s: starting the PyTorch reference", dname)
				srv, err = startModelRef(ctx, py, script, f, dname)
				if err != nil {
					rep.Skipped = append(rep.Skipped, benchSkipped{Impl: "torch", Reason: dname + ": " + err.Error()})
				} else {
					mem.TorchRSSBeforeLoad, mem.TorchRSSAfterLoad = srv.load.RSSBefore, srv.load.RSSAfter
					for k, v := range srv.versions {
						rep.Versions["torch."+k] = v
					}
					impls = append(impls, &modelImpl{name: "torch", ref: true, run: srv.run})
				}
			}
		}
		rounds := f.warmup + f.reps
		for r := 0; r < rounds; r++ {
			for k := range impls {
				im := impls[(r+k)%len(impls)]
				if im.failed {
					continue
				}
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				res, err := im.run(ctx)
				if err != nil {
					if !im.ref {
						return nil, fmt.Errorf("%s %s: %w", im.name, dname, err)
					}
					im.failed = true
					rep.Skipped = append(rep.Skipped, benchSkipped{Impl: im.name, Reason: dname + ": " + err.Error()})
					continue
				}
				if r >= f.warmup {
					im.prefill = append(im.prefill, res.PrefillS)
					im.decode = append(im.decode, res.DecodeS)
					im.prefillCPU = append(im.prefillCPU, res.PrefillCPUS)
					im.decodeCPU = append(im.decodeCPU, res.DecodeCPUS)
				}
				im.last = res
			}
			logf("%s: round %d/%d done", dname, r+1, rounds)
		}
		runtime.GC()
		debug.FreeOSMemory()
		mem.RSSAfterRuns = readVmRSS()
		for _, im := range impls {
			if im.ref && !im.failed {
				mem.TorchRSSAfterRuns = im.last.RSS
			}
		}
		rep.Memory = append(rep.Memory, mem)
		if srv != nil {
			srv.close()
		}

		var torch *modelBenchResult
		first := len(rep.Results)
		for _, im := range impls {
			if im.failed || len(im.prefill) == 0 {
				continue
			}
			rep.Results = append(rep.Results, summarizeModelRuns(im, dname))
		}
		for i := first; i < len(rep.Results); i++ {
			if rep.Results[i].Impl == "torch" {
				torch = &rep.Results[i]
			}
		}
		if torch != nil {
			for i := first; i < len(rep.Results); i++ {
				g := &rep.Results[i]
				if !strings.HasPrefix(g.Impl, "gotpu.") {
					continue
				}
				n := agreeing(g.Tokens, torch.Tokens)
				g.TokensAgreeTorch = &n
				ratio := modelBenchRatio{DType: dname, Impl: g.Impl, Ref: "torch",
					Prefill: g.PrefillTPS / torch.PrefillTPS, Decode: g.DecodeTPS / torch.DecodeTPS}
				if g.PrefillTPCS > 0 && torch.PrefillTPCS > 0 {
					ratio.PrefillCPU = g.PrefillTPCS / torch.PrefillTPCS
				}
				if g.DecodeTPCS > 0 && torch.DecodeTPCS > 0 {
					ratio.DecodeCPU = g.DecodeTPCS / torch.DecodeTPCS
				}
				rep.Ratios = append(rep.Ratios, ratio)
			}
		}

		if f.cpuProfile != "" {
			for _, mode := range modes {
				tmode, compiled, _ := parseModelMode(mode)
				lm.Compiled = compiled
				old := tensor.SetMode(tmode)
				files, err := profileGenerate(ctx, lm, prompt, f.newTok, f.profileReps,
					filepath.Join(f.cpuProfile, dname+"-"+mode))
				tensor.SetMode(old)
				rep.Profiles = append(rep.Profiles, files...)
				if err != nil {
					return nil, err
				}
			}
		}
		if f.stepProfile {
			if !slices.Contains(modes, "compiled") || !strings.HasPrefix(f.mf.device, "cpu") {
				rep.Notes = append(rep.Notes, "--step-profile times compiled programs on the cpu device: no table for "+dname)
			} else {
				tmode, compiled, _ := parseModelMode("compiled")
				lm.Compiled = compiled
				old := tensor.SetMode(tmode)
				phases, err := stepProfileGenerate(ctx, lm, prompt, f.newTok, f.profileReps, dname)
				tensor.SetMode(old)
				rep.StepProfile = append(rep.StepProfile, phases...)
				if err != nil {
					return nil, err
				}
			}
		}
		lm, m = nil, nil
		freeDeviceCache(f.mf.device)
	}
	if f.reps < 5 {
		rep.Notes = append(rep.Notes, "fewer than 5 repetitions: the medians are not reliable")
	}
	rep.LoadAvg.End = readLoadAvg()
	return rep, nil
}

func benchDTypeName(dt dtype.DType) string {
	switch dt {
	case keepQuantized:
		return "keep"
	case dtype.F32:
		return "f32"
	case dtype.BF16:
		return "bf16"
	case dtype.F16:
		return "f16"
	}
	return dt.String()
}

// gotpuGenerate runs one greedy generation of newTok tokens (no EOS stop)
// and returns its timings; onToken, when set, is called with each token.
// The process's CPU time is read before the call, when the first token is
// chosen and after the call.
func gotpuGenerate(ctx context.Context, lm *models.CausalLM, prompt []int, newTok int, onToken func(seq, tok int) error) (modelRun, error) {
	c0 := processCPUSeconds()
	c1 := -1.0
	n := 0
	res, err := lm.Generate(ctx, [][]int{prompt}, models.GenerateOptions{MaxNewTokens: newTok, OnToken: func(seq, tok int) error {
		if n++; n == 1 {
			c1 = processCPUSeconds()
		}
		if onToken != nil {
			return onToken(seq, tok)
		}
		return nil
	}})
	c2 := processCPUSeconds()
	if err != nil {
		return modelRun{}, err
	}
	if len(res.Tokens[0]) != newTok {
		return modelRun{}, fmt.Errorf("generated %d tokens, want %d", len(res.Tokens[0]), newTok)
	}
	r := modelRun{PrefillS: res.Prefill.Seconds(), DecodeS: res.Decode.Seconds(), PrefillCPUS: -1, DecodeCPUS: -1,
		PrefillTokens: res.PrefillTokens, DecodeSteps: res.DecodeSteps, Tokens: res.Tokens[0]}
	if c0 >= 0 && c1 >= 0 && c2 >= 0 {
		r.PrefillCPUS, r.DecodeCPUS = c1-c0, c2-c1
	}
	return r, nil
}

// profileGenerate runs reps generations with the CPU profiler on, the
// prefill and the decode of each in their own file: prefix-prefill-<i>.pprof
// and prefix-decode-<i>.pprof. The profiler is switched over when the first
// token is chosen.
func profileGenerate(ctx context.Context, lm *models.CausalLM, prompt []int, newTok, reps int, prefix string) ([]string, error) {
	var files []string
	var cur *os.File
	start := func(name string) error {
		f, err := os.Create(name)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		cur = f
		files = append(files, name)
		return nil
	}
	stop := func() error {
		if cur == nil {
			return nil
		}
		pprof.StopCPUProfile()
		err := cur.Close()
		cur = nil
		return err
	}
	defer stop()
	for i := 0; i < reps; i++ {
		runtime.GC()
		if err := start(fmt.Sprintf("%s-prefill-%d.pprof", prefix, i)); err != nil {
			return files, err
		}
		n := 0
		_, err := gotpuGenerate(ctx, lm, prompt, newTok, func(_, _ int) error {
			n++
			if n != 1 {
				return nil
			}
			if err := stop(); err != nil {
				return err
			}
			if newTok > 1 {
				return start(fmt.Sprintf("%s-decode-%d.pprof", prefix, i))
			}
			return nil
		})
		if serr := stop(); err == nil {
			err = serr
		}
		if err != nil {
			return files, err
		}
	}
	return files, nil
}

func summarizeModelRuns(im *modelImpl, dt string) modelBenchResult {
	r := modelBenchResult{Impl: im.name, DType: dt, PrefillTokens: im.last.PrefillTokens, DecodeSteps: im.last.DecodeSteps,
		PrefillS: im.prefill, DecodeS: im.decode, Tokens: nonNil(im.last.Tokens)}
	if im.stats != nil {
		r.Compile = im.stats()
	}
	tps := func(n int, times []float64) (med, lo, hi float64) {
		if n == 0 || len(times) == 0 {
			return 0, 0, 0
		}
		med = float64(n) / kernels.Median(times)
		lo = float64(n) / slices.Max(times)
		hi = float64(n) / slices.Min(times)
		return med, lo, hi
	}
	r.PrefillTPS, r.PrefillTPSMin, r.PrefillTPSMax = tps(r.PrefillTokens, im.prefill)
	r.DecodeTPS, r.DecodeTPSMin, r.DecodeTPSMax = tps(r.DecodeSteps, im.decode)
	known := func(v []float64) bool { return len(v) > 0 && slices.Min(v) > 0 }
	if known(im.prefillCPU) && known(im.decodeCPU) {
		r.PrefillCPUS, r.DecodeCPUS = im.prefillCPU, im.decodeCPU
		r.PrefillTPCS, _, _ = tps(r.PrefillTokens, im.prefillCPU)
		r.DecodeTPCS, _, _ = tps(r.DecodeSteps, im.decodeCPU)
	}
	return r
}

// agreeing counts the leading equal elements of a and b.
func agreeing(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// loadForBench loads the model in dt and measures the memory it took.
func loadForBench(mf *modelFlags, dt dtype.DType) (modelBenchMemory, *models.Model, error) {
	var mem modelBenchMemory
	settle := func() {
		runtime.GC()
		debug.FreeOSMemory()
	}
	settle()
	mem.RSSBeforeLoad = readVmRSS()
	start := time.Now()
	m, err := mf.loadAs(dt)
	if err != nil {
		return mem, nil, err
	}
	mem.LoadS = time.Since(start).Seconds()
	settle()
	mem.RSSAfterLoad = readVmRSS()
	if m.LM != nil {
		mem.WeightBytes = weightBytes(m.LM)
	}
	if mem.WeightBytes > 0 && mem.RSSAfterLoad > 0 {
		mem.RSSRatio = float64(mem.RSSAfterLoad) / float64(mem.WeightBytes)
		mem.RSSDeltaRatio = float64(mem.RSSAfterLoad-mem.RSSBeforeLoad) / float64(mem.WeightBytes)
	}
	if dev, b, err := device.Get(mf.device); err == nil {
		mem.DeviceReserved = b.MemStats(dev.Index).Reserved
	}
	freeDeviceCache(mf.device)
	mem.RSSAfterEmptyCache = readVmRSS()
	return mem, m, nil
}

// uniqueParams lists a module's parameters, each tensor once.
func uniqueParams(m nn.Module) []*tensor.Tensor {
	var out []*tensor.Tensor
	for _, p := range nn.Parameters(m) {
		if !slices.ContainsFunc(out, func(q *tensor.Tensor) bool { return q == p || q.SharesStorage(p) }) {
			out = append(out, p)
		}
	}
	return out
}

func weightBytes(m nn.Module) int64 {
	var n int64
	for _, p := range uniqueParams(m) {
		n += int64(p.Numel()) * int64(p.DType().Size())
	}
	// Weights kept in their quantized blocks are u8 buffers.
	for _, b := range nn.NamedBuffers(m) {
		if b.Tensor != nil && b.Tensor.DType() == dtype.U8 {
			n += int64(b.Tensor.Numel())
		}
	}
	return n
}

func paramCount(m nn.Module) int64 {
	var n int64
	for _, p := range uniqueParams(m) {
		n += int64(p.Numel())
	}
	return n
}

// freeDeviceCache returns the device allocator's cached blocks (the model
// of the previous dtype) to the system.
func freeDeviceCache(dev string) {
	runtime.GC()
	if _, b, err := device.Get(dev); err == nil {
		if e, ok := b.(interface{ EmptyCache() }); ok {
			e.EmptyCache()
		}
	}
	debug.FreeOSMemory()
}

// readVmRSS returns this process's resident set size from
// /proc/self/status (0 where unavailable).
func readVmRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fs := strings.Fields(v)
			if len(fs) >= 1 {
				kb, err := strconv.ParseInt(fs[0], 10, 64)
				if err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}

// readLoadAvg returns /proc/loadavg's three averages (nil where
// unavailable).
func readLoadAvg() []float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	fs := strings.Fields(string(data))
	if len(fs) < 3 {
		return nil
	}
	out := make([]float64, 3)
	for i := range out {
		if out[i], err = strconv.ParseFloat(fs[i], 64); err != nil {
			return nil
		}
	}
	return out
}

// cpuModelName is /proc/cpuinfo's first "model name" ("" where
// unavailable).
func cpuModelName() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// modelRefCommand finds the reference's interpreter and script: --python,
// else $GOTPU_MODELREF_PYTHON, else the venv tools/modelref/venv.sh makes
// ($GOTPU_MODELREF_VENV, default ~/.cache/gotpu-modelref/venv), which is
// not created here (it downloads PyTorch); and --ref-script, else
// tools/modelref/bench_ref.py above the working directory.
func modelRefCommand(python, script string) (string, string, error) {
	if python == "" {
		python = os.Getenv("GOTPU_MODELREF_PYTHON")
	}
	if python == "" {
		venv := os.Getenv("GOTPU_MODELREF_VENV")
		if venv == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", "", fmt.Errorf("no home directory for the modelref venv: %w", err)
			}
			venv = filepath.Join(home, ".cache", "gotpu-modelref", "venv")
		}
		python = filepath.Join(venv, "bin", "python")
		if _, err := os.Stat(python); err != nil {
			return "", "", fmt.Errorf("no Python with torch and transformers: %s is missing (create it with tools/modelref/venv.sh, or set GOTPU_MODELREF_PYTHON or --python)", python)
		}
	} else if _, err := exec.LookPath(python); err != nil {
		return "", "", fmt.Errorf("python %s: %w", python, err)
	}
	if script == "" {
		p, err := findAbove(modelRefScriptPath)
		if err != nil {
			return "", "", err
		}
		script = p
	} else if _, err := os.Stat(script); err != nil {
		return "", "", err
	}
	return python, script, nil
}

// modelRefServer is a running `bench_ref.py --serve`.
type modelRefServer struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	out      *bufio.Reader
	stderr   *kernels.LockedBuffer
	versions map[string]any
	load     struct {
		RSSBefore int64 `json:"rss_before_bytes"`
		RSSAfter  int64 `json:"rss_after_bytes"`
	}
}

func startModelRef(ctx context.Context, py, script string, f *modelBenchFlags, dt string) (*modelRefServer, error) {
	return startRefServer(ctx, py, script, f.mf.path, dt, f.threads, f.promptLen, f.newTok, f.refMethod)
}

// startRefServer starts `bench_ref.py --serve` on model (dtype dt, the
// given threads, prompt length and new tokens, timing method) and waits
// for it to be ready.
func startRefServer(ctx context.Context, py, script, model, dt string, threads, promptLen, newTok int, method string) (*modelRefServer, error) {
	argv := []string{script, "--serve", "--model", model, "--dtype", dt, "--threads", strconv.Itoa(threads),
		"--prompt-len", strconv.Itoa(promptLen), "--new-tokens", strconv.Itoa(newTok), "--method", method}
	cmd := exec.CommandContext(ctx, py, argv...)
	cmd.Env = append(kernels.Env(threads), "TRANSFORMERS_VERBOSITY=error", "HF_HUB_OFFLINE=1")
	s := &modelRefServer{cmd: cmd, stderr: &kernels.LockedBuffer{}}
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.out = bufio.NewReader(stdout)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", py, script, err)
	}
	var ready struct {
		Ready       bool            `json:"ready"`
		Unavailable string          `json:"unavailable"`
		Versions    map[string]any  `json:"versions"`
		Load        json.RawMessage `json:"load"`
	}
	line, rerr := s.out.ReadBytes('\n')
	if rerr == nil {
		rerr = json.Unmarshal(line, &ready)
	}
	if rerr != nil || !ready.Ready {
		s.stdin.Close()
		werr := cmd.Wait()
		if ready.Unavailable != "" {
			return nil, errors.New(ready.Unavailable)
		}
		if rerr == nil {
			rerr = fmt.Errorf("unexpected first line %q", strings.TrimSpace(string(line)))
		}
		return nil, fmt.Errorf("%s %s: %w (exit: %v): %s", py, script, rerr, werr, s.stderr.LastLine())
	}
	s.versions = ready.Versions
	if len(ready.Load) > 0 {
		_ = json.Unmarshal(ready.Load, &s.load)
	}
	return s, nil
}

func (s *modelRefServer) run(context.Context) (modelRun, error) {
	var r modelRun
	if err := s.ask("run", &r); err != nil {
		return modelRun{}, err
	}
	if r.Error != "" {
		return modelRun{}, errors.New(r.Error)
	}
	return r, nil
}

// ask sends one command line to the reference and decodes its one-line
// JSON reply into v.
func (s *modelRefServer) ask(cmd string, v any) error {
	if _, err := io.WriteString(s.stdin, cmd+"\n"); err != nil {
		return fmt.Errorf("%w: %s", err, s.stderr.LastLine())
	}
	line, err := s.out.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("reference process ended: %w: %s", err, s.stderr.LastLine())
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("bad reply %q: %w", strings.TrimSpace(string(line)), err)
	}
	return nil
}

// refBatch is the reply to "batch N": generate over N prompts at once.
type refBatch struct {
	Batch     int       `json:"batch"`
	PrefillS  float64   `json:"prefill_s"`
	DecodeS   float64   `json:"decode_s"`
	StepS     []float64 `json:"step_s"`
	NewTokens int       `json:"new_tokens"`
	Error     string    `json:"error"`
}

// batch runs transformers' generate on n prompts at once.
func (s *modelRefServer) batch(n int) (refBatch, error) {
	var r refBatch
	if err := s.ask(fmt.Sprintf("batch %d", n), &r); err != nil {
		return refBatch{}, err
	}
	if r.Error != "" {
		return refBatch{}, errors.New(r.Error)
	}
	if r.Batch != n || r.PrefillS <= 0 || r.DecodeS < 0 || r.NewTokens <= 0 {
		return refBatch{}, fmt.Errorf("bad reply to batch %d: %+v", n, r)
	}
	return r, nil
}

func (s *modelRefServer) close() {
	s.stdin.Close()
	_ = s.cmd.Wait()
}

func writeModelBench(w io.Writer, rep *modelBenchReport) error {
	la := func(v []float64) string {
		if len(v) < 3 {
			return "?"
		}
		return fmt.Sprintf("%.2f %.2f %.2f", v[0], v[1], v[2])
	}
	steps := rep.NewTokens - 1
	fmt.Fprintf(w, "bench model %s (%s, %.1fM params)  threads=%d  prompt=%d  new tokens=%d (%d decode steps)  reps=%d (median; min..max)\n",
		rep.Model, rep.Family, float64(rep.Params)/1e6, rep.Threads, rep.PromptLen, rep.NewTokens, steps, rep.Reps)
	fmt.Fprintf(w, "load average: start %s, end %s\n", la(rep.LoadAvg.Start), la(rep.LoadAvg.End))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "dtype\timpl\tprefill tok/s\t(min..max)\tdecode tok/s\t(min..max)\tprefill tok/cpu-s\tdecode tok/cpu-s\ttokens = torch\t")
	for _, r := range rep.Results {
		agree := "-"
		if r.TokensAgreeTorch != nil {
			agree = fmt.Sprintf("%d/%d", *r.TokensAgreeTorch, len(r.Tokens))
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f..%.1f\t%.2f\t%.2f..%.2f\t%.1f\t%.2f\t%s\t\n", r.DType, r.Impl, r.PrefillTPS, r.PrefillTPSMin, r.PrefillTPSMax,
			r.DecodeTPS, r.DecodeTPSMin, r.DecodeTPSMax, r.PrefillTPCS, r.DecodeTPCS, agree)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Ratios) > 0 {
		fmt.Fprintf(w, "ratios gotpu/torch (%s) at the medians, above 1: gotpu faster\n", rep.RefMethod)
		for _, r := range rep.Ratios {
			fmt.Fprintf(w, "  %-5s %-16s prefill %6.2fx   decode %6.2fx   (CPU time: prefill %5.2fx  decode %5.2fx)\n",
				r.DType, r.Impl, r.Prefill, r.Decode, r.PrefillCPU, r.DecodeCPU)
		}
	}
	for _, m := range rep.Memory {
		fmt.Fprintf(w, "memory %-5s weights %.1f MB; RSS after load %.1f MB (%.2fx the weights), load added %.1f MB (%.2fx); device reserved %.1f MB; load %.2fs",
			m.DType, float64(m.WeightBytes)/1e6, float64(m.RSSAfterLoad)/1e6, m.RSSRatio,
			float64(m.RSSAfterLoad-m.RSSBeforeLoad)/1e6, m.RSSDeltaRatio, float64(m.DeviceReserved)/1e6, m.LoadS)
		fmt.Fprintf(w, "; RSS with the allocator's cache emptied %.1f MB, after the runs %.1f MB", float64(m.RSSAfterEmptyCache)/1e6, float64(m.RSSAfterRuns)/1e6)
		if m.TorchRSSAfterLoad > 0 {
			fmt.Fprintf(w, "; torch: load added %.1f MB, RSS after the runs %.1f MB", float64(m.TorchRSSAfterLoad-m.TorchRSSBeforeLoad)/1e6, float64(m.TorchRSSAfterRuns)/1e6)
		}
		fmt.Fprintln(w)
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "skipped %s: %s\n", s.Impl, s.Reason)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, p := range rep.Profiles {
		fmt.Fprintf(w, "profile: %s\n", p)
	}
	for _, ph := range rep.StepProfile {
		var total float64
		for _, s := range ph.Steps {
			total += s.TotalS
		}
		fmt.Fprintf(w, "steps of the compiled %s %s, per run (%d runs; %.2f ms a run):\n", ph.DType, ph.Phase, ph.Runs, 1e3*total/float64(max(ph.Runs, 1)))
		for i, s := range ph.Steps {
			if i == stepProfileLines {
				fmt.Fprintf(w, "  ... %d more (--json has all)\n", len(ph.Steps)-i)
				break
			}
			fmt.Fprintf(w, "  %9.1f us %5.1f%% %7.1f calls %9.1f us/call  %s\n", 1e6*s.TotalS/float64(max(ph.Runs, 1)), 100*s.TotalS/max(total, 1e-12),
				float64(s.Calls)/float64(max(ph.Runs, 1)), s.MeanUS, s.Step)
		}
	}
	return nil
}

// stepProfileLines is how many steps per phase the text output lists.
const stepProfileLines = 15

// stepProfilePhase is one phase's step table (--step-profile).
type stepProfilePhase struct {
	DType string           `json:"dtype"`
	Phase string           `json:"phase"`
	Runs  int              `json:"runs"`
	Steps []stepProfileRow `json:"steps"`
}

// stepProfileRow is one kind of step's calls and time over the runs.
type stepProfileRow struct {
	Step   string  `json:"step"`
	Calls  int64   `json:"calls"`
	TotalS float64 `json:"total_s"`
	MeanUS float64 `json:"mean_us"`
}

// stepProfileGenerate runs reps compiled generations with the CPU
// backend's step timer on, switched from the prefill's table to the
// decode's when the first token is chosen, and returns both tables summed
// over the runs.
func stepProfileGenerate(ctx context.Context, lm *models.CausalLM, prompt []int, newTok, reps int, dname string) ([]stepProfilePhase, error) {
	defer cpu.ProfileSteps(false)
	sum := [2]map[string]*stepProfileRow{{}, {}}
	add := func(ph int) {
		for _, t := range cpu.StepTimes() {
			r := sum[ph][t.Step]
			if r == nil {
				r = &stepProfileRow{Step: t.Step}
				sum[ph][t.Step] = r
			}
			r.Calls += t.Calls
			r.TotalS += t.Total.Seconds()
		}
	}
	for i := 0; i < reps; i++ {
		runtime.GC()
		cpu.ProfileSteps(true)
		n := 0
		_, err := gotpuGenerate(ctx, lm, prompt, newTok, func(_, _ int) error {
			if n++; n == 1 {
				add(0)
				cpu.ProfileSteps(true)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		add(1)
	}
	var out []stepProfilePhase
	for ph, name := range []string{"prefill", "decode"} {
		p := stepProfilePhase{DType: dname, Phase: name, Runs: reps}
		for _, r := range sum[ph] {
			r.MeanUS = 1e6 * r.TotalS / float64(max(r.Calls, 1))
			p.Steps = append(p.Steps, *r)
		}
		slices.SortFunc(p.Steps, func(a, b stepProfileRow) int {
			if a.TotalS != b.TotalS {
				if a.TotalS > b.TotalS {
					return -1
				}
				return 1
			}
			return strings.Compare(a.Step, b.Step)
		})
		out = append(out, p)
	}
	return out, nil
}

// findAbove returns rel (a repository path such as a tools/ script) in
// the working directory or the nearest directory above it that has it.
func findAbove(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%s not found above the working directory (run from the repository or pass --ref-script)", rel)
		}
		dir = parent
	}
}
