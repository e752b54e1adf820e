package kernels

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// DefaultPython is the interpreter the references run with: Debian's, which
// has python3-numpy and python3-torch (tools/benchref/install.sh), not a
// pyenv python that may be first on PATH.
const DefaultPython = "/usr/bin/python3"

// RefScriptPath is the runner's path relative to the repository root.
const RefScriptPath = "tools/benchref/ref.py"

// FindRefScript returns the path of tools/benchref/ref.py: $GOTPU_BENCHREF
// if set, else the first match walking up from the working directory.
func FindRefScript() (string, error) {
	if p := os.Getenv("GOTPU_BENCHREF"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("GOTPU_BENCHREF: %w: %w", err, ErrUnavailable)
		}
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find %s: %w", RefScriptPath, err)
	}
	for {
		p := filepath.Join(dir, RefScriptPath)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%s not found above the working directory (run from the repository or set GOTPU_BENCHREF): %w",
				RefScriptPath, ErrUnavailable)
		}
		dir = parent
	}
}

// PyRef runs the Python reference runner.
type PyRef struct {
	// Python is the interpreter (DefaultPython when empty); Script the
	// runner (FindRefScript when empty).
	Python, Script string
	// Threads is the thread count for torch and OpenBLAS.
	Threads int
}

// pyOutput is ref.py's JSON.
type pyOutput struct {
	Unavailable string         `json:"unavailable"`
	Versions    map[string]any `json:"versions"`
	Results     []pyResult     `json:"results"`
}

type pyResult struct {
	Impl   string    `json:"impl"`
	DType  string    `json:"dtype"`
	TimesS []float64 `json:"times_s"`
}

// Env returns the environment the runner gets: the current one with the
// thread-pool variables set to threads and passive waiting, so that
// torch's and OpenBLAS's pools do not spin against each other or against
// gotpu, whose repetitions interleave with theirs. OpenBLAS's idle threads
// spin for 2^OPENBLAS_THREAD_TIMEOUT cycles after each call (2^28 by
// default, about 0.1 s): gotpu's repetition that followed a numpy one ran
// with a core taken (f32 1024³ at 93-100 GFLOP/s against 194-204 alone);
// 2^4, the least OpenBLAS accepts, lets them sleep at once.
func Env(threads int) []string {
	set := map[string]string{
		"OMP_NUM_THREADS":         strconv.Itoa(threads),
		"OPENBLAS_NUM_THREADS":    strconv.Itoa(threads),
		"MKL_NUM_THREADS":         strconv.Itoa(threads),
		"OMP_WAIT_POLICY":         "PASSIVE",
		"OPENBLAS_THREAD_TIMEOUT": "4",
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			env = append(env, kv)
		}
	}
	for _, k := range []string{"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY", "OPENBLAS_THREAD_TIMEOUT"} {
		env = append(env, k+"="+set[k])
	}
	return env
}

// Run runs `ref.py caseName --impl impl args...` with the timing and thread
// flags added, and returns its results with throughput from work (called
// with each result's impl). A missing interpreter, module or case is
// ErrUnavailable; any other failure is an error naming the command.
func (p PyRef) Run(ctx context.Context, impl, caseName string, t Timing, args []string, work func(impl string) Work) ([]Result, map[string]any, error) {
	if err := t.check(); err != nil {
		return nil, nil, err
	}
	py := p.Python
	if py == "" {
		py = DefaultPython
	}
	if _, err := exec.LookPath(py); err != nil {
		return nil, nil, fmt.Errorf("python %s: %w: %w", py, err, ErrUnavailable)
	}
	script := p.Script
	if script == "" {
		var err error
		if script, err = FindRefScript(); err != nil {
			return nil, nil, err
		}
	}
	threads := max(p.Threads, 1)
	argv := append([]string{script, caseName, "--impl", impl, "--threads", strconv.Itoa(threads),
		"--reps", strconv.Itoa(t.Reps), "--warmup", strconv.Itoa(t.Warmup)}, args...)
	cmd := exec.CommandContext(ctx, py, argv...)
	cmd.Env = Env(threads)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out pyOutput
	decErr := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out)
	var ee *exec.ExitError
	switch {
	case runErr == nil && decErr == nil:
	case errors.As(runErr, &ee) && ee.ExitCode() == 3 && decErr == nil && out.Unavailable != "":
		return nil, nil, fmt.Errorf("%s: %s: %w", impl, out.Unavailable, ErrUnavailable)
	case runErr != nil:
		return nil, nil, fmt.Errorf("%s %s: %w: %s", py, strings.Join(argv, " "), runErr, lastLine(stderr.String()))
	default:
		return nil, nil, fmt.Errorf("%s %s: bad JSON output: %w", py, strings.Join(argv, " "), decErr)
	}
	res := make([]Result, 0, len(out.Results))
	for _, r := range out.Results {
		if len(r.TimesS) == 0 {
			return nil, nil, fmt.Errorf("%s %s: result %q has no times", py, caseName, r.Impl)
		}
		res = append(res, NewResult(r.Impl, r.DType, r.TimesS, work(r.Impl)))
	}
	return res, out.Versions, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "(no stderr)"
	}
	return s
}

// PyServer is a running `ref.py --serve` process: one reference whose
// repetitions are requested one at a time, so that they interleave with
// the other implementations'.
type PyServer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *LockedBuffer
	// Impls are the implementations it serves ("torch", "torch.backward")
	// with the dtype each computes in.
	Impls []PyImpl
	// Versions are the library versions it reported.
	Versions map[string]any
}

// PyImpl is one implementation a PyServer serves.
type PyImpl struct {
	Impl  string `json:"impl"`
	DType string `json:"dtype"`
}

// LockedBuffer collects a reference process's stderr: exec copies into it
// from its own goroutine while error paths read it.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// LastLine returns the last non-empty line written, for error messages.
func (l *LockedBuffer) LastLine() string { return lastLine(l.String()) }

// Start runs `ref.py caseName --impl impl --serve args...` and waits until
// it has set up. A missing interpreter, module or case is ErrUnavailable.
// Close the server when done.
func (p PyRef) Start(ctx context.Context, impl, caseName string, args []string) (*PyServer, error) {
	py := p.Python
	if py == "" {
		py = DefaultPython
	}
	if _, err := exec.LookPath(py); err != nil {
		return nil, fmt.Errorf("python %s: %w: %w", py, err, ErrUnavailable)
	}
	script := p.Script
	if script == "" {
		var err error
		if script, err = FindRefScript(); err != nil {
			return nil, err
		}
	}
	threads := max(p.Threads, 1)
	argv := append([]string{script, caseName, "--impl", impl, "--threads", strconv.Itoa(threads), "--serve"}, args...)
	cmd := exec.CommandContext(ctx, py, argv...)
	cmd.Env = Env(threads)
	s := &PyServer{cmd: cmd, stderr: &LockedBuffer{}}
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("%s: %w", impl, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", impl, err)
	}
	s.out = bufio.NewReader(stdout)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", py, script, err)
	}
	var ready struct {
		Ready       bool           `json:"ready"`
		Unavailable string         `json:"unavailable"`
		Versions    map[string]any `json:"versions"`
		Impls       []PyImpl       `json:"impls"`
	}
	line, rerr := s.out.ReadBytes('\n')
	if rerr == nil {
		rerr = json.Unmarshal(line, &ready)
	}
	if rerr != nil || !ready.Ready {
		s.stdin.Close()
		werr := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(werr, &ee) && ee.ExitCode() == 3 && ready.Unavailable != "" {
			return nil, fmt.Errorf("%s: %s: %w", impl, ready.Unavailable, ErrUnavailable)
		}
		if rerr == nil {
			rerr = fmt.Errorf("unexpected first line %q", bytes.TrimSpace(line))
		}
		return nil, fmt.Errorf("%s %s: %w (exit: %v): %s", py, strings.Join(argv, " "), rerr, werr, s.stderr.LastLine())
	}
	if len(ready.Impls) == 0 {
		s.Close()
		return nil, fmt.Errorf("%s %s: serves no implementation", py, caseName)
	}
	s.Impls, s.Versions = ready.Impls, ready.Versions
	return s, nil
}

// Step runs one repetition of impl in the server and returns the time it
// measured.
func (s *PyServer) Step(impl string) (float64, error) {
	if _, err := io.WriteString(s.stdin, "run "+impl+"\n"); err != nil {
		return 0, fmt.Errorf("%s: %w: %s", impl, err, s.stderr.LastLine())
	}
	line, err := s.out.ReadBytes('\n')
	if err != nil {
		return 0, fmt.Errorf("%s: reference process ended: %w: %s", impl, err, s.stderr.LastLine())
	}
	var r struct {
		T     *float64 `json:"t"`
		Error string   `json:"error"`
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return 0, fmt.Errorf("%s: bad reply %q: %w", impl, bytes.TrimSpace(line), err)
	}
	if r.Error != "" || r.T == nil {
		return 0, fmt.Errorf("%s: %s", impl, r.Error)
	}
	return *r.T, nil
}

// Steppers returns a reference Stepper for every implementation served,
// with throughput from work (called with each impl name).
func (s *PyServer) Steppers(work func(impl string) Work) []*Stepper {
	var out []*Stepper
	for _, im := range s.Impls {
		name := im.Impl
		out = append(out, &Stepper{Impl: name, DType: im.DType, Work: work(name), Ref: true,
			Timed: func() (float64, error) { return s.Step(name) }})
	}
	return out
}

// Close ends the server (end of its input) and waits for it.
func (s *PyServer) Close() error {
	s.stdin.Close()
	if err := s.cmd.Wait(); err != nil {
		return fmt.Errorf("reference process: %w: %s", err, s.stderr.LastLine())
	}
	return nil
}
