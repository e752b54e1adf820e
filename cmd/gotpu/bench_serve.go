package main

// `gotpu bench serve`: gotpu serve against llama.cpp's llama-server on the
// same GGUF over loopback HTTP in the same run, and (--load) a bounded
// load test of gotpu serve alone.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/models"
	"github.com/gotpu/gotpu/serve"
)

const benchServeLong = `Measure gotpu serve over loopback HTTP, in this process, against llama.cpp's
llama-server on the same model file (a GGUF) with the same threads and the
same requests: streaming /v1/completions of --prompt pseudo-random token ids
(different per request, so no prefix cache helps either server), greedy,
with ignore_eos and max_tokens --tokens, so both generate exactly --tokens
tokens per request. For every --streams count N both servers get --reps
rounds (after one untimed warm-up round) of N concurrent requests,
interleaved round by round; llama-server runs with --parallel N and N times
the context one request needs. gotpu runs with GOMAXPROCS=--threads,
llama-server with -t/-tb --threads. A GGUF model defaults to --dtype keep
(weights stay quantized, as llama-server runs them) and --mode compiled.

Reported per server and N (medians over the rounds): tokens_per_s, all
streams' completion tokens over the round's wall time (prefill included);
decode_tokens_per_s, one stream's (tokens-1)/(last token - first token)
(median over the streams); ttft_s, the time to the first token (median
over the streams); itl_p50_s and itl_p99_s, the inter-token latencies. The
ratios are gotpu/llama-server: above 1 gotpu is faster for the speeds,
below 1 gotpu is faster for ttft.

With --reference, transformers + PyTorch 2.x (tools/modelref/bench_ref.py
in the venv of tools/modelref/venv.sh, as gotpu bench model uses) runs
the same model in f32 (a GGUF file dequantized by transformers) as a third
implementation, interleaved round by round: model.generate, greedy, on a
batch of N prompts of --prompt ids at once (how a transformers user serves
N requests), torch.set_num_threads(--threads). Its tokens_per_s is N ×
--tokens over generate's wall time, ttft_s the time to the batch's first
tokens, decode_tokens_per_s (--tokens - 1) over the rest, and the ITLs the
intervals between consecutive tokens' logits.

With --load it runs the load test instead: --requests requests, at most
--concurrency at a time, within --time-limit, against gotpu serve alone;
every response must be complete (one finish_reason "length", usage counting
the prompt and exactly --tokens completion tokens, data: [DONE]); after the
load all KV blocks must be free, and after the server shut down no
goroutine of the server, the engine or net/http may be left (counted from
the stacks, compared with the count after a first, warm-up server's
shutdown; the CPU backend's long-lived workers do not count). It fails (after printing) when a check fails.

--json keys (stable). Comparison: mode ("compare"), model, threads,
prompt_tokens, new_tokens, reps, dtype, gotpu_mode, cpu_level, llama_server
(the binary, "" when skipped), load_avg {start, end} (/proc/loadavg's 1, 5
and 15 minute averages; ratios measured at load above 1 are not to be
quoted), results [{impl ("gotpu", "llama-server" or "transformers"),
streams, tokens_per_s, decode_tokens_per_s, ttft_s, itl_p50_s, itl_p99_s,
rounds_tokens_per_s [per round], failed (requests that failed the
checks)}], ratios [{streams, tokens_per_s, decode_tokens_per_s, ttft}]
(gotpu/llama-server), ratios_transformers [the same keys, gotpu/transformers;
empty without --reference], skipped [{impl, reason}], notes [string].
Load (--load): mode ("load"), model, threads, dtype, gotpu_mode, cpu_level,
load_avg {start, end}, load {requests, concurrency, completed, failed, errors, wall_s,
prompt_tokens, completion_tokens, requests_per_s, tokens_per_s,
decode_tokens_per_s, ttft, itl, latency (each {n, mean_s, p50_s, p90_s,
p99_s, max_s})}, kv_blocks_total, kv_blocks_used_after, goroutines_before,
goroutines_after, leaked_goroutines, ok.`

// benchServeFlags are gotpu bench serve's flags.
type benchServeFlags struct {
	mf                    modelFlags
	threads               int
	streams               string
	prompt, tokens, reps  int
	llamaServer           string
	load                  bool
	requests, concurrency int
	timeLimit             time.Duration
	maxBatch, kvBlocks    int
	prefillChunk          int
	cpuprofile            string
	reference             bool
	python, refScript     string
	asJSON                bool
}

// benchServeResult is one server at one stream count (see the JSON keys).
type benchServeResult struct {
	Impl              string    `json:"impl"`
	Streams           int       `json:"streams"`
	TokensPerS        float64   `json:"tokens_per_s"`
	DecodeTokensPerS  float64   `json:"decode_tokens_per_s"`
	TTFTS             float64   `json:"ttft_s"`
	ITLP50S           float64   `json:"itl_p50_s"`
	ITLP99S           float64   `json:"itl_p99_s"`
	RoundsTokensPerS  []float64 `json:"rounds_tokens_per_s"`
	Failed            int       `json:"failed"`
	rounds            []*serve.LoadReport
	ttfts, decs, p50s []float64
	p99s              []float64
}

// benchServeRatio is gotpu/llama-server at one stream count.
type benchServeRatio struct {
	Streams          int     `json:"streams"`
	TokensPerS       float64 `json:"tokens_per_s"`
	DecodeTokensPerS float64 `json:"decode_tokens_per_s"`
	TTFT             float64 `json:"ttft"`
}

// benchServeReport is gotpu bench serve --json (comparison).
type benchServeReport struct {
	Mode         string             `json:"mode"`
	Model        string             `json:"model"`
	Threads      int                `json:"threads"`
	PromptTokens int                `json:"prompt_tokens"`
	NewTokens    int                `json:"new_tokens"`
	Reps         int                `json:"reps"`
	DType        string             `json:"dtype"`
	GotpuMode    string             `json:"gotpu_mode"`
	CPULevel     string             `json:"cpu_level"`
	LlamaServer  string             `json:"llama_server"`
	LoadAvg      loadAvg            `json:"load_avg"`
	Results      []benchServeResult `json:"results"`
	Ratios       []benchServeRatio  `json:"ratios"`
	RatiosTF     []benchServeRatio  `json:"ratios_transformers"`
	Skipped      []benchSkipped     `json:"skipped"`
	Notes        []string           `json:"notes"`
}

// benchServeLoadReport is gotpu bench serve --load --json.
type benchServeLoadReport struct {
	Mode              string            `json:"mode"`
	Model             string            `json:"model"`
	Threads           int               `json:"threads"`
	DType             string            `json:"dtype"`
	GotpuMode         string            `json:"gotpu_mode"`
	CPULevel          string            `json:"cpu_level"`
	LoadAvg           loadAvg           `json:"load_avg"`
	Load              *serve.LoadReport `json:"load"`
	KVBlocksTotal     int               `json:"kv_blocks_total"`
	KVBlocksUsedAfter int               `json:"kv_blocks_used_after"`
	GoroutinesBefore  int               `json:"goroutines_before"`
	GoroutinesAfter   int               `json:"goroutines_after"`
	LeakedGoroutines  int               `json:"leaked_goroutines"`
	OK                bool              `json:"ok"`
}

func newBenchServeCmd() *cobra.Command {
	var f benchServeFlags
	cmd := &cobra.Command{
		Use:   "serve --model GGUF [--streams 1,8,32] [--load] [--json]",
		Short: "gotpu serve against llama-server over HTTP (tokens/s, TTFT), or a load test (--load)",
		Long:  benchServeLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.mf.path == "" {
				return errors.New("bench serve: --model PATH is required")
			}
			for _, v := range []struct {
				name string
				n    int
			}{{"--threads", f.threads}, {"--prompt", f.prompt}, {"--tokens", f.tokens}, {"--reps", f.reps}, {"--requests", f.requests}, {"--concurrency", f.concurrency}} {
				if v.n <= 0 {
					return fmt.Errorf("bench serve: %s must be > 0, got %d", v.name, v.n)
				}
			}
			if f.mf.dtype == "" && strings.EqualFold(filepath.Ext(f.mf.path), ".gguf") {
				f.mf.dtype = "keep"
			}
			prev := runtime.GOMAXPROCS(f.threads)
			defer runtime.GOMAXPROCS(prev)
			m, restore, err := f.mf.load()
			if err != nil {
				return fmt.Errorf("bench serve: %w", err)
			}
			defer restore()
			if m.LM == nil || m.Tokenizer == nil {
				return fmt.Errorf("bench serve: %s is not a causal language model with a tokenizer", f.mf.path)
			}
			if f.cpuprofile != "" {
				pf, err := os.Create(f.cpuprofile)
				if err != nil {
					return fmt.Errorf("bench serve: %w", err)
				}
				defer pf.Close()
				if err := pprof.StartCPUProfile(pf); err != nil {
					return fmt.Errorf("bench serve: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			if f.load {
				return benchServeLoad(cmd, &f, m)
			}
			return benchServeCompare(cmd, &f, m)
		},
	}
	f.mf.register(cmd.Flags())
	fs := cmd.Flags()
	if fl := fs.Lookup("mode"); fl != nil {
		fl.DefValue = "compiled"
		_ = fl.Value.Set("compiled")
	}
	fs.IntVar(&f.threads, "threads", 2, "threads: GOMAXPROCS for gotpu, -t/-tb for llama-server")
	fs.StringVar(&f.streams, "streams", "1,8,32", "concurrent streams to compare (comma-separated)")
	fs.IntVar(&f.prompt, "prompt", 32, "prompt tokens per request")
	fs.IntVar(&f.tokens, "tokens", 32, "new tokens per request (ignore_eos: exactly this many)")
	fs.IntVar(&f.reps, "reps", 3, "timed rounds per stream count (medians reported)")
	home, _ := os.UserHomeDir()
	fs.StringVar(&f.llamaServer, "llama-server", filepath.Join(home, ".cache/gotpu-llamacpp/0.3.36/bin/llama-server"),
		`llama-server binary (tools/llamacpp/build.sh builds it; "" skips it)`)
	fs.BoolVar(&f.load, "load", false, "run the load test against gotpu serve instead of the comparison")
	fs.IntVar(&f.requests, "requests", 1000, "load test: requests in all")
	fs.IntVar(&f.concurrency, "concurrency", 64, "load test: requests in flight at once")
	fs.DurationVar(&f.timeLimit, "time-limit", 10*time.Minute, "load test: bound on the whole run (requests still running fail)")
	fs.IntVar(&f.maxBatch, "max-batch", 0, "gotpu engine's --max-batch (0: the largest --streams, or the engine's default with --load)")
	fs.IntVar(&f.kvBlocks, "kv-blocks", 0, "gotpu engine's --kv-blocks (0: the engine's default)")
	fs.IntVar(&f.prefillChunk, "prefill-chunk", 0, "gotpu engine's --prefill-chunk (0: the engine's default)")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run (both servers' client side, gotpu's engine) to this file")
	fs.BoolVar(&f.reference, "reference", false, "also run transformers + PyTorch 2.x generate on the f32 model, batched (tools/modelref/bench_ref.py)")
	fs.StringVar(&f.python, "python", "", "the reference's Python (default: $GOTPU_MODELREF_PYTHON, else the venv of tools/modelref/venv.sh)")
	fs.StringVar(&f.refScript, "ref-script", "", "path of "+modelRefScriptPath+" (default: found above the working directory)")
	fs.BoolVar(&f.asJSON, "json", false, "print the JSON report (keys documented above)")
	return cmd
}

func init() {
	benchCmd.AddCommand(newBenchServeCmd())
}

// inprocServe is a gotpu serve HTTP server on a loopback port in this
// process.
type inprocServe struct {
	url string
	gen serve.Generator
	srv *serve.Server
	hs  *http.Server
	err chan error
}

// startInprocServe serves m's causal LM as gotpu serve does.
func startInprocServe(m *models.Model, ec engineConfig) (*inprocServe, error) {
	gen, err := newEngine(m, ec)
	if err != nil {
		return nil, err
	}
	o := serve.ServerOptions{Generator: gen, Tokenizer: serve.HFTokenizer(m.Tokenizer), EOS: eosIDs(m),
		ModelName: "bench", DefaultSampling: defaultSampling(m),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv, err := serve.NewServer(o)
	if err != nil {
		gen.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		gen.Close()
		return nil, err
	}
	s := &inprocServe{url: "http://" + ln.Addr().String(), gen: gen, srv: srv, err: make(chan error, 1),
		hs: &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 30 * time.Second}}
	go func() { s.err <- s.hs.Serve(ln) }()
	return s, nil
}

// stop shuts the server down as SIGTERM does and closes the engine.
func (s *inprocServe) stop() error {
	s.srv.BeginDrain()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	if err := s.hs.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("http shutdown: %w", err))
	}
	if err := <-s.err; err != nil && !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, err)
	}
	if err := s.gen.Drain(ctx); err != nil {
		errs = append(errs, fmt.Errorf("draining the engine: %w", err))
	}
	if err := s.gen.Close(); err != nil {
		errs = append(errs, fmt.Errorf("closing the engine: %w", err))
	}
	return errors.Join(errs...)
}

// waitIdle waits until the engine runs nothing and holds no KV block, and
// returns the blocks still used at the end.
func waitIdle(gen serve.Generator, d time.Duration) int {
	deadline := time.Now().Add(d)
	for {
		st := gen.Stats()
		if (st.Running == 0 && st.Queued == 0 && st.KVBlocksUsed == 0) || time.Now().After(deadline) {
			return st.KVBlocksUsed
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// loadOptions are the requests of both the comparison and the load test.
func (f *benchServeFlags) loadOptions(m *models.Model, url string) serve.LoadOptions {
	vocab := m.LM.Config.VocabSize
	lo := min(256, vocab/4) // past the byte and special tokens of common vocabularies
	return serve.LoadOptions{URL: url, PromptTokens: f.prompt, TokenLo: lo, TokenHi: vocab,
		MaxTokens: f.tokens, IgnoreEOS: true, Timeout: f.timeLimit}
}

func benchServeLoad(cmd *cobra.Command, f *benchServeFlags, m *models.Model) error {
	ctx := cmd.Context()
	ec := engineConfig{MaxBatch: f.maxBatch, KVBlocks: f.kvBlocks, PrefillChunk: f.prefillChunk}
	// A warm-up server first: it compiles the step programs and starts the
	// CPU backend's long-lived workers, so the goroutine count after its
	// shutdown is the baseline.
	warm, err := startInprocServe(m, ec)
	if err != nil {
		return fmt.Errorf("bench serve: %w", err)
	}
	wo := f.loadOptions(m, warm.url)
	wo.Requests, wo.Concurrency, wo.Seed, wo.RequireUsage = min(f.concurrency, 8), min(f.concurrency, 8), 1<<40, true
	if _, err := serve.RunLoad(ctx, wo); err != nil {
		warm.stop()
		return fmt.Errorf("bench serve: warm-up: %w", err)
	}
	if err := warm.stop(); err != nil {
		return fmt.Errorf("bench serve: warm-up: %w", err)
	}
	before := settledGoroutines(-1, time.Second)
	s, err := startInprocServe(m, ec)
	if err != nil {
		return fmt.Errorf("bench serve: %w", err)
	}
	o := f.loadOptions(m, s.url)
	o.Requests, o.Concurrency, o.Model, o.RequireUsage = f.requests, f.concurrency, "bench", true
	la := loadAvg{Start: readLoadAvg()}
	lr, err := serve.RunLoad(ctx, o)
	la.End = readLoadAvg()
	if err != nil {
		s.stop()
		return fmt.Errorf("bench serve: %w", err)
	}
	rep := benchServeLoadReport{Mode: "load", Model: f.mf.path, Threads: f.threads, DType: f.mf.dtype, GotpuMode: f.mf.mode,
		CPULevel: cpu.CPULevel(), LoadAvg: la, Load: lr, GoroutinesBefore: before}
	rep.KVBlocksUsedAfter = waitIdle(s.gen, 5*time.Second)
	rep.KVBlocksTotal = s.gen.Stats().KVBlocksTotal
	if err := s.stop(); err != nil {
		return fmt.Errorf("bench serve: %w", err)
	}
	rep.GoroutinesAfter = settledGoroutines(before, 5*time.Second)
	rep.LeakedGoroutines = max(0, rep.GoroutinesAfter-before)
	rep.OK = lr.Failed == 0 && lr.Completed == f.requests && rep.KVBlocksUsedAfter == 0 && rep.LeakedGoroutines == 0
	if err := writeBenchServeLoad(cmd.OutOrStdout(), &rep, f.asJSON); err != nil {
		return err
	}
	if !rep.OK {
		var stacks strings.Builder
		if rep.LeakedGoroutines > 0 {
			stacks.WriteString("\n")
			_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		}
		return fmt.Errorf("bench serve --load: %d of %d requests failed (%v), %d KV blocks still used, %d goroutines leaked%s",
			lr.Failed, f.requests, lr.Errors, rep.KVBlocksUsedAfter, rep.LeakedGoroutines, stacks.String())
	}
	return nil
}

// serverGoroutines counts the goroutines whose stacks run through the
// serve package or net/http: the server's, the engine's and the HTTP
// client's. The CPU backend's long-lived workers (started on first use)
// are not counted, so they are no leak.
func serverGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/gotpu/gotpu/serve.") || strings.Contains(g, "net/http.") {
			count++
		}
	}
	return count
}

// settledGoroutines waits up to d for serverGoroutines to fall to want
// (-1: until it stops changing) and returns it.
func settledGoroutines(want int, d time.Duration) int {
	deadline := time.Now().Add(d)
	n := serverGoroutines()
	for time.Now().Before(deadline) {
		if want >= 0 && n <= want {
			return n
		}
		time.Sleep(20 * time.Millisecond)
		k := serverGoroutines()
		if want < 0 && k == n {
			return k
		}
		n = k
	}
	return n
}

func writeBenchServeLoad(w io.Writer, r *benchServeLoadReport, asJSON bool) error {
	if asJSON {
		return writeJSON(w, r)
	}
	l := r.Load
	fmt.Fprintf(w, "bench serve --load %s (%s, %s)  threads=%d  %d requests, %d concurrent  load average %v -> %v\n",
		filepath.Base(r.Model), r.DType, r.GotpuMode, r.Threads, l.Requests, l.Concurrency, r.LoadAvg.Start, r.LoadAvg.End)
	fmt.Fprintf(w, "completed %d, failed %d in %.2fs: %.1f req/s, %.1f tok/s (%d completion tokens)\n", l.Completed, l.Failed, l.WallS, l.RequestsPerS, l.TokensPerS, l.CompletionTokens)
	fmt.Fprintf(w, "TTFT p50 %.1f ms p99 %.1f ms; inter-token p50 %.1f ms p99 %.1f ms; one stream's decode %.1f tok/s (median)\n",
		l.TTFT.P50*1e3, l.TTFT.P99*1e3, l.ITL.P50*1e3, l.ITL.P99*1e3, l.DecodeTokensPerS)
	fmt.Fprintf(w, "KV blocks used after: %d of %d; goroutines %d before, %d after (leaked %d); ok=%v\n",
		r.KVBlocksUsedAfter, r.KVBlocksTotal, r.GoroutinesBefore, r.GoroutinesAfter, r.LeakedGoroutines, r.OK)
	for _, e := range l.Errors {
		fmt.Fprintln(w, "  ", e)
	}
	return nil
}

// llamaServer is a running llama-server process.
type llamaServer struct {
	url    string
	cmd    *exec.Cmd
	cancel context.CancelFunc
	log    *bytes.Buffer
	exited chan struct{} // closed once the process is waited for
}

// startLlamaServer starts bin on model with parallel slots of ctxPerSlot
// tokens each and waits until /health answers 200.
func startLlamaServer(ctx context.Context, bin, model string, threads, parallel, ctxPerSlot int) (*llamaServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	args := []string{"-m", model, "-t", strconv.Itoa(threads), "-tb", strconv.Itoa(threads), "--parallel", strconv.Itoa(parallel),
		"-c", strconv.Itoa(parallel * ctxPerSlot), "-ngl", "0", "--host", "127.0.0.1", "--port", strconv.Itoa(port)}
	c := exec.CommandContext(cctx, bin, args...)
	c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
	c.WaitDelay = 10 * time.Second
	var log bytes.Buffer
	c.Stdout, c.Stderr = &log, &log
	if err := c.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("starting llama-server: %w", err)
	}
	exited := make(chan struct{})
	s := &llamaServer{url: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: c, cancel: cancel, log: &log, exited: exited}
	go func() { _ = c.Wait(); close(exited) }()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			cancel()
			return nil, fmt.Errorf("llama-server %s exited: %s", strings.Join(args, " "), tail(log.String(), 800))
		case <-time.After(100 * time.Millisecond):
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/health", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
	}
	cancel()
	<-exited
	return nil, fmt.Errorf("llama-server did not become healthy within 2 minutes: %s", tail(log.String(), 800))
}

// stop interrupts llama-server and waits for it to exit.
func (s *llamaServer) stop() {
	s.cancel()
	<-s.exited // WaitDelay bounds the wait
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func benchServeCompare(cmd *cobra.Command, f *benchServeFlags, m *models.Model) error {
	ctx := cmd.Context()
	var streams []int
	for _, s := range strings.Split(f.streams, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("bench serve: --streams: %q is not a positive count", s)
		}
		streams = append(streams, n)
	}
	ec := engineConfig{MaxBatch: f.maxBatch, KVBlocks: f.kvBlocks, PrefillChunk: f.prefillChunk}
	if ec.MaxBatch == 0 {
		ec.MaxBatch = slices.Max(streams)
	}
	rep := benchServeReport{Mode: "compare", Model: f.mf.path, Threads: f.threads, PromptTokens: f.prompt, NewTokens: f.tokens,
		Reps: f.reps, DType: f.mf.dtype, GotpuMode: f.mf.mode, CPULevel: cpu.CPULevel(), LlamaServer: f.llamaServer,
		Results: []benchServeResult{}, Ratios: []benchServeRatio{}, RatiosTF: []benchServeRatio{}, Skipped: []benchSkipped{}, Notes: []string{},
		LoadAvg: loadAvg{Start: readLoadAvg()}}
	if f.prefillChunk > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("gotpu engine --prefill-chunk %d", f.prefillChunk))
	}
	useLlama := f.llamaServer != ""
	if useLlama {
		// The model's kind first: it does not depend on what this machine
		// has built, so the report is the same with or without the binary.
		if !strings.EqualFold(filepath.Ext(f.mf.path), ".gguf") {
			rep.Skipped = append(rep.Skipped, benchSkipped{Impl: "llama-server", Reason: "--model is not a GGUF file"})
			useLlama, rep.LlamaServer = false, ""
		} else if _, err := os.Stat(f.llamaServer); err != nil {
			rep.Skipped = append(rep.Skipped, benchSkipped{Impl: "llama-server", Reason: fmt.Sprintf("%v (tools/llamacpp/build.sh builds it)", err)})
			useLlama, rep.LlamaServer = false, ""
		}
	}
	var ref *modelRefServer
	if f.reference {
		py, script, err := modelRefCommand(f.python, f.refScript)
		if err == nil {
			ref, err = startRefServer(ctx, py, script, f.mf.path, "f32", f.threads, f.prompt, f.tokens, "generate")
		}
		if err != nil {
			rep.Skipped = append(rep.Skipped, benchSkipped{Impl: "transformers", Reason: err.Error()})
		} else {
			defer ref.close()
			rep.Notes = append(rep.Notes, "transformers: generate on the f32 model, one batch of N prompts per round")
		}
	}
	g, err := startInprocServe(m, ec)
	if err != nil {
		return fmt.Errorf("bench serve: %w", err)
	}
	defer g.stop()
	ctxPerSlot := f.prompt + f.tokens + 64
	for _, n := range streams {
		var ls *llamaServer
		if useLlama {
			if ls, err = startLlamaServer(ctx, f.llamaServer, f.mf.path, f.threads, n, ctxPerSlot); err != nil {
				rep.Skipped = append(rep.Skipped, benchSkipped{Impl: fmt.Sprintf("llama-server@%d", n), Reason: err.Error()})
			}
		}
		gr := benchServeResult{Impl: "gotpu", Streams: n}
		lr := benchServeResult{Impl: "llama-server", Streams: n}
		tr := benchServeResult{Impl: "transformers", Streams: n}
		refOK := ref != nil
		for round := 0; round <= f.reps; round++ { // round 0 warms up
			seed := uint64(n)<<32 | uint64(round)
			for _, side := range []struct {
				r   *benchServeResult
				url string
			}{{&gr, g.url}, {&lr, urlOf(ls)}} {
				if side.url == "" {
					continue
				}
				o := f.loadOptions(m, side.url)
				o.Requests, o.Concurrency, o.Seed = n, n, seed
				o.RequireUsage = side.r.Impl == "gotpu"
				res, err := serve.RunLoad(ctx, o)
				if err != nil {
					if ls != nil {
						ls.stop()
					}
					return fmt.Errorf("bench serve: %s at %d streams: %w", side.r.Impl, n, err)
				}
				if round > 0 {
					side.r.add(res)
				}
			}
			if refOK {
				rb, err := ref.batch(n)
				if err != nil {
					rep.Skipped = append(rep.Skipped, benchSkipped{Impl: fmt.Sprintf("transformers@%d", n), Reason: err.Error()})
					refOK = false
				} else if round > 0 {
					tr.addBatch(rb, n, f.tokens)
				}
			}
			if round == 0 {
				waitIdle(g.gen, 5*time.Second)
			}
		}
		if ls != nil {
			ls.stop()
		}
		gr.finish()
		rep.Results = append(rep.Results, gr)
		if ls != nil {
			lr.finish()
			rep.Results = append(rep.Results, lr)
			rep.Ratios = append(rep.Ratios, benchServeRatio{Streams: n, TokensPerS: ratio(gr.TokensPerS, lr.TokensPerS),
				DecodeTokensPerS: ratio(gr.DecodeTokensPerS, lr.DecodeTokensPerS), TTFT: ratio(gr.TTFTS, lr.TTFTS)})
		}
		if refOK {
			tr.finish()
			rep.Results = append(rep.Results, tr)
			rep.RatiosTF = append(rep.RatiosTF, benchServeRatio{Streams: n, TokensPerS: ratio(gr.TokensPerS, tr.TokensPerS),
				DecodeTokensPerS: ratio(gr.DecodeTokensPerS, tr.DecodeTokensPerS), TTFT: ratio(gr.TTFTS, tr.TTFTS)})
		}
	}
	rep.LoadAvg.End = readLoadAvg()
	for _, r := range rep.Results {
		if r.Failed > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s at %d streams: %d requests failed the completeness checks (%v)", r.Impl, r.Streams, r.Failed, r.rounds[0].Errors))
		}
	}
	return writeBenchServe(cmd.OutOrStdout(), &rep, f.asJSON)
}

func urlOf(s *llamaServer) string {
	if s == nil {
		return ""
	}
	return s.url
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func (r *benchServeResult) add(l *serve.LoadReport) {
	r.rounds = append(r.rounds, l)
	r.RoundsTokensPerS = append(r.RoundsTokensPerS, l.TokensPerS)
	r.ttfts = append(r.ttfts, l.TTFT.P50)
	r.decs = append(r.decs, l.DecodeTokensPerS)
	r.p50s = append(r.p50s, l.ITL.P50)
	r.p99s = append(r.p99s, l.ITL.P99)
	r.Failed += l.Failed
}

// addBatch records one round of the transformers reference: generate
// over n prompts of tokens new tokens each.
func (r *benchServeResult) addBatch(b refBatch, n, tokens int) {
	r.RoundsTokensPerS = append(r.RoundsTokensPerS, float64(n*tokens)/(b.PrefillS+b.DecodeS))
	r.ttfts = append(r.ttfts, b.PrefillS)
	dec := 0.0
	if b.DecodeS > 0 && tokens > 1 {
		dec = float64(tokens-1) / b.DecodeS
	}
	r.decs = append(r.decs, dec)
	// The intervals summarized as RunLoad summarizes the servers' ITLs.
	itl := serve.Summarize(b.StepS)
	r.p50s = append(r.p50s, itl.P50)
	r.p99s = append(r.p99s, itl.P99)
}

func (r *benchServeResult) finish() {
	r.TokensPerS, r.TTFTS, r.DecodeTokensPerS = medianOf(r.RoundsTokensPerS), medianOf(r.ttfts), medianOf(r.decs)
	r.ITLP50S, r.ITLP99S = medianOf(r.p50s), medianOf(r.p99s)
	if r.RoundsTokensPerS == nil {
		r.RoundsTokensPerS = []float64{}
	}
}

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func writeBenchServe(w io.Writer, r *benchServeReport, asJSON bool) error {
	if asJSON {
		return writeJSON(w, r)
	}
	fmt.Fprintf(w, "bench serve %s (%s, %s)  threads=%d  prompt=%d  new tokens=%d  reps=%d (medians)  load average %v -> %v\n",
		filepath.Base(r.Model), r.DType, r.GotpuMode, r.Threads, r.PromptTokens, r.NewTokens, r.Reps, r.LoadAvg.Start, r.LoadAvg.End)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "IMPL\tSTREAMS\tTOK/S\tDECODE TOK/S (1 stream)\tTTFT ms\tITL p50 ms\tITL p99 ms\tFAILED\t")
	for _, x := range r.Results {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t\n", x.Impl, x.Streams, x.TokensPerS, x.DecodeTokensPerS, x.TTFTS*1e3, x.ITLP50S*1e3, x.ITLP99S*1e3, x.Failed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, x := range r.Ratios {
		fmt.Fprintf(w, "gotpu/llama-server at %d streams: tokens/s %.2fx, one stream's decode %.2fx, TTFT %.2fx (below 1: gotpu faster)\n",
			x.Streams, x.TokensPerS, x.DecodeTokensPerS, x.TTFT)
	}
	for _, x := range r.RatiosTF {
		fmt.Fprintf(w, "gotpu/transformers at %d streams: tokens/s %.2fx, one stream's decode %.2fx, TTFT %.2fx (below 1: gotpu faster)\n",
			x.Streams, x.TokensPerS, x.DecodeTokensPerS, x.TTFT)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "skipped %s: %s\n", s.Impl, s.Reason)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}
