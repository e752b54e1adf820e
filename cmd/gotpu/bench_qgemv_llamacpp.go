package main

// The llama.cpp reference of `gotpu bench qgemv`: ggml's CPU mat-vec of the
// same block type, timed by llama.cpp's own op benchmark, test-backend-ops
// in perf mode (tools/llamacpp/build.sh builds it).
//
// test-backend-ops perf runs every op of its built-in perf list that the
// filters select on the chosen backend: it builds a graph holding the op
// repeated n_runs times (enough for 8 GFLOP), computes it once to warm up,
// then computes it until at least one second has passed and reports the
// mean wall time per op (time_us). For MUL_MAT the list has one shape per
// block type that a decode step has, m=4096 rows by k=14336 columns with
// one f32 vector (n=1); --test-file takes other shapes, but only by ggml's
// op enum number, which changes between ggml versions, so it is not used.
// With -b CPU it sets the CPU backend to max(1, CPUs/2) threads (the
// hardware_concurrency, not this process's affinity) and has no flag to
// change that, so gotpu is compared only at that thread count.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/gotpu/gotpu/bench/kernels"
	"github.com/gotpu/gotpu/internal/quant"
)

// llamaCppVersion is the llama-cpp-python sdist tools/llamacpp/build.sh
// builds llama.cpp from.
const llamaCppVersion = "0.3.36"

// llamaPerfM and llamaPerfK are the shape of test-backend-ops' built-in
// MUL_MAT perf cases: an [m,k] weight times one k-vector.
const llamaPerfM, llamaPerfK = 4096, 14336

// defaultTestBackendOps is where --llamacpp-bin looks by default:
// $GOTPU_LLAMACPP_BIN, else the bin directory of tools/llamacpp/build.sh
// ($GOTPU_LLAMACPP_CACHE or ~/.cache/gotpu-llamacpp, then the version).
func defaultTestBackendOps() string {
	if p := os.Getenv("GOTPU_LLAMACPP_BIN"); p != "" {
		return p
	}
	cache := os.Getenv("GOTPU_LLAMACPP_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(home, ".cache", "gotpu-llamacpp")
	}
	return filepath.Join(cache, llamaCppVersion, "bin", "test-backend-ops")
}

// ggmlTypeName is ggml's name of a block type as test-backend-ops prints it
// in its op parameters: lower case but for the K of the k-quants (q4_0,
// q6_K).
func ggmlTypeName(t quant.Type) string {
	s := strings.ToLower(t.String())
	if strings.HasSuffix(s, "_k") {
		s = s[:len(s)-1] + "K"
	}
	return s
}

// llamaCPUThreads is the thread count test-backend-ops gives ggml's CPU
// backend: max(1, hardware_concurrency/2), where libstdc++'s
// hardware_concurrency counts the online CPUs (get_nprocs), not the
// process's affinity mask.
func llamaCPUThreads() int {
	n := runtime.NumCPU()
	if b, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		if c, err := countCPUList(strings.TrimSpace(string(b))); err == nil && c > 0 {
			n = c
		}
	}
	return max(1, n/2)
}

// countCPUList counts the CPUs of a Linux CPU list such as "0-3,8,10-11".
func countCPUList(s string) (int, error) {
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return 0, fmt.Errorf("cpu list %q: %w", s, err)
			}
		}
		if b < a {
			return 0, fmt.Errorf("cpu list %q: range %s runs backwards", s, part)
		}
		n += b - a + 1
	}
	return n, nil
}

// llamaPerf is one result row of `test-backend-ops perf --output sql`.
type llamaPerf struct {
	// Params are the op parameters ("type_a=q4_1,type_b=f32,m=4096,...").
	Params string
	// TimeUS is the mean wall time of one op in microseconds; Runs how
	// many ops that mean is over.
	TimeUS float64
	Runs   int
	// BuildCommit is the llama.cpp commit the binary reports ("unknown"
	// for a build outside a git checkout, such as the sdist's).
	BuildCommit string
}

// llamaMulMatPrefix is the start of the op parameters of the mat-vec case
// of type t with an [m,k] weight, as test-backend-ops prints them.
func llamaMulMatPrefix(t quant.Type, m, k int) string {
	return fmt.Sprintf("type_a=%s,type_b=f32,m=%d,n=1,k=%d,bs=[1,1],nr=[1,1],", ggmlTypeName(t), m, k)
}

// parseTestBackendOpsSQL finds in the --output sql output of
// test-backend-ops perf the MUL_MAT row whose parameters start with prefix.
// The row is one line:
//
//	INSERT INTO test_backend_ops (test_time, ..., time_us, ...) VALUES ('...', ..., '6903.86', ...);
//
// Fields are looked up by name, so a column added by a later llama.cpp does
// not break the parse.
func parseTestBackendOpsSQL(out []byte, prefix string) (llamaPerf, error) {
	const head = "INSERT INTO test_backend_ops ("
	rows := 0
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, head)
		if !ok {
			continue
		}
		rows++
		names, vals, ok := strings.Cut(rest, ") VALUES (")
		if !ok || !strings.HasSuffix(vals, ");") {
			return llamaPerf{}, fmt.Errorf("test-backend-ops: malformed result line %q", line)
		}
		fields := strings.Split(names, ", ")
		values, err := sqlValues(strings.TrimSuffix(vals, ");"))
		if err != nil {
			return llamaPerf{}, fmt.Errorf("test-backend-ops: result line %q: %w", line, err)
		}
		if len(values) != len(fields) {
			return llamaPerf{}, fmt.Errorf("test-backend-ops: %d fields but %d values in %q", len(fields), len(values), line)
		}
		row := map[string]string{}
		for i, f := range fields {
			row[f] = values[i]
		}
		if row["op_name"] != "MUL_MAT" || !strings.HasPrefix(row["op_params"], prefix) {
			continue
		}
		if row["supported"] != "1" {
			return llamaPerf{}, fmt.Errorf("test-backend-ops: MUL_MAT(%s) not supported by backend %s: %s",
				row["op_params"], row["backend_name"], row["error_message"])
		}
		p := llamaPerf{Params: row["op_params"], BuildCommit: row["build_commit"]}
		if p.TimeUS, err = strconv.ParseFloat(row["time_us"], 64); err != nil || p.TimeUS <= 0 {
			return llamaPerf{}, fmt.Errorf("test-backend-ops: MUL_MAT(%s): time_us %q is not a positive number", p.Params, row["time_us"])
		}
		if p.Runs, err = strconv.Atoi(row["n_runs"]); err != nil {
			return llamaPerf{}, fmt.Errorf("test-backend-ops: MUL_MAT(%s): n_runs %q: %w", p.Params, row["n_runs"], err)
		}
		return p, nil
	}
	return llamaPerf{}, fmt.Errorf("test-backend-ops: no MUL_MAT result with parameters %s... among its %d results", prefix, rows)
}

// sqlValues splits the single-quoted, comma-separated values of an SQL
// VALUES list, such as 'a', 'b,c', 'd', into their contents; two quotes in
// a row inside a value stand for one.
func sqlValues(s string) ([]string, error) {
	var vals []string
	for s = strings.TrimSpace(s); s != ""; {
		if s[0] != '\'' {
			return nil, fmt.Errorf("value does not start with a quote at %q", s)
		}
		var v strings.Builder
		i := 1
		for ; ; i++ {
			if i >= len(s) {
				return nil, errors.New("unterminated quoted value")
			}
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					v.WriteByte('\'')
					i++
					continue
				}
				break
			}
			v.WriteByte(s[i])
		}
		vals = append(vals, v.String())
		s = strings.TrimSpace(s[i+1:])
		if s == "" {
			break
		}
		if s[0] != ',' {
			return nil, fmt.Errorf("want a comma between values at %q", s)
		}
		s = strings.TrimSpace(s[1:])
	}
	return vals, nil
}

// llamaMulMat runs test-backend-ops bin once for the mat-vec of type t with
// an [m,k] weight and returns its result.
func llamaMulMat(ctx context.Context, bin string, t quant.Type, m, k int) (llamaPerf, error) {
	prefix := llamaMulMatPrefix(t, m, k)
	args := []string{"perf", "-b", "CPU", "-o", "MUL_MAT", "-p", "^" + regexp.QuoteMeta(prefix), "--output", "sql"}
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return llamaPerf{}, fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, tail(stderr.String(), 400))
	}
	return parseTestBackendOpsSQL(stdout.Bytes(), prefix)
}

// llamacppQGEMV adds the llama.cpp reference to a qgemv run: a stepper
// that runs test-backend-ops once per repetition and reports its mean time
// of one product, with GB/s of the weight bytes (n rows of rowBytes) as
// gotpu's rows count them; or a skipped entry saying why it cannot run.
func llamacppQGEMV(ctx context.Context, cfg *benchConfig, run *benchRun, bin, clock string, t quant.Type, n, k, rowBytes int) *kernels.Stepper {
	const impl = "llamacpp"
	threads := llamaCPUThreads()
	switch {
	case bin == "":
		run.Skip(impl, "no test-backend-ops binary (--llamacpp-bin, $GOTPU_LLAMACPP_BIN; tools/llamacpp/build.sh test-backend-ops builds it)")
		return nil
	case n != llamaPerfM || k != llamaPerfK:
		run.Skip(impl, fmt.Sprintf("test-backend-ops times MUL_MAT only at its built-in perf shape m=%d k=%d; run with --size %d --k %d",
			llamaPerfM, llamaPerfK, llamaPerfM, llamaPerfK))
		return nil
	case cfg.Threads != threads:
		run.Skip(impl, fmt.Sprintf("test-backend-ops -b CPU runs ggml with %d threads (half the online CPUs) and cannot be told otherwise; run with --threads %d",
			threads, threads))
		return nil
	case clock != "wall":
		run.Skip(impl, "test-backend-ops reports wall time; --clock cpu would compare different clocks")
		return nil
	}
	if _, err := os.Stat(bin); err != nil {
		run.Skip(impl, fmt.Sprintf("%v (tools/llamacpp/build.sh test-backend-ops builds it)", err))
		return nil
	}
	run.Version("llamacpp.test_backend_ops", bin)
	run.Version("llamacpp.threads", threads)
	first := true
	return &kernels.Stepper{Impl: impl, DType: t.String(), Ref: true, Work: kernels.Work{Bytes: float64(n * rowBytes)},
		Timed: func() (float64, error) {
			p, err := llamaMulMat(ctx, bin, t, n, k)
			if err != nil {
				return 0, err
			}
			if first {
				first = false
				run.Version("llamacpp.build_commit", p.BuildCommit)
				run.Note("llamacpp is `test-backend-ops perf -b CPU -o MUL_MAT` on MUL_MAT(%s): ggml's CPU mat-vec on %d thread(s), one "+
					"process per repetition, its time the mean wall time of one product over the ops it ran for at least 1 s (one %.2f MiB "+
					"weight, which ggml reuses op after op; its time includes quantizing the f32 vector to the dot-product type); "+
					"its GB/s count the weight bytes of one product, as gotpu's do",
					p.Params, threads, float64(n*rowBytes)/(1<<20))
			}
			return p.TimeUS * 1e-6, nil
		}}
}
