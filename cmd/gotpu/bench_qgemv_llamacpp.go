package main

// The llama.cpp reference of `gotpu bench qgemv`: ggml's CPU mat-vec of the
// same block type, timed by llama.cpp's own op benchmark, test-backend-ops
// in perf mode (tools/llamacpp/build.sh builds it).
//
// test-backend-ops perf runs every op of its perf list that the filters
// select on the chosen backend: it builds a graph holding the op repeated
// n_runs times, computes it once to warm up, then computes it until at least
// one second has passed and reports the mean wall time per op (time_us).
// The built-in list has one MUL_MAT mat-vec per block type, at m=4096 rows
// by k=14336 columns with one f32 vector (n=1); that shape runs from the
// list (-p selects it). Any other shape runs from a one-line --test-file,
// the format test-export-graph-ops writes, which names the op by ggml's
// enum number: that number is read from the ggml.h of the sources the
// binary was built from (tools/llamacpp/build.sh's src directory next to
// its bin directory), and the result row must then say MUL_MAT with the
// requested shapes, so a wrong number fails loudly instead of timing
// another op. With -b CPU test-backend-ops sets ggml's CPU backend to
// max(1, CPUs/2) threads (hardware_concurrency, not this process's
// affinity) and has no flag to change that, so gotpu is compared only at
// that thread count.

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

// llamaMulMatPrefix is the start of the op parameters of the built-in
// perf case of the mat-vec of type t with an [m,k] weight, as
// test-backend-ops prints them.
func llamaMulMatPrefix(t quant.Type, m, k int) string {
	return fmt.Sprintf("type_a=%s,type_b=f32,m=%d,n=1,k=%d,bs=[1,1],nr=[1,1],", ggmlTypeName(t), m, k)
}

// llamaGenericParams are the op parameters test-backend-ops prints for the
// mat-vec of type t with an [m,k] weight read from a --test-file.
func llamaGenericParams(t quant.Type, m, k int) string {
	return fmt.Sprintf("type=f32,ne=[%d,1,1,1],op_params=[],sources=%s[%d,%d,1,1],f32[%d,1,1,1]", m, ggmlTypeName(t), k, m, k)
}

// llamaTestFileLine is the --test-file line of the mat-vec of type t with an
// [m,k] weight: op, result type (f32: 0), result ne, no op parameters, two
// sources (type, ne, and nb all 0: contiguous), no name. ggml's type
// numbers are GGUF's, which quant.Type keeps.
func llamaTestFileLine(mulMat int, t quant.Type, m, k int) string {
	return fmt.Sprintf("%d 0 %d 1 1 1 0 2 %d %d %d 1 1 0 0 0 0 0 %d 1 1 1 0 0 0 0 -\n", mulMat, m, int(t), k, m, k)
}

// ggmlOpNumber returns the value of GGML_OP_<name> in enum ggml_op of the
// ggml.h at path.
func ggmlOpNumber(path, name string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("ggml op enum: %w", err)
	}
	return parseGGMLOpEnum(string(b), "GGML_OP_"+name)
}

// ggmlEnumEntry is one entry of a C enum: its name and an optional value.
var ggmlEnumEntry = regexp.MustCompile(`^\s*(GGML_OP_[A-Z0-9_]+)\s*(?:=\s*([0-9]+))?\s*,?\s*$`)

// parseGGMLOpEnum finds want in the body of `enum ggml_op { ... };` of a
// ggml.h and returns its value (entries count up from 0 or from an explicit
// "= N").
func parseGGMLOpEnum(header, want string) (int, error) {
	_, body, ok := strings.Cut(header, "enum ggml_op {")
	if !ok {
		return 0, errors.New("ggml op enum: no `enum ggml_op {` in ggml.h")
	}
	body, _, ok = strings.Cut(body, "};")
	if !ok {
		return 0, errors.New("ggml op enum: enum ggml_op is not closed")
	}
	next := 0
	for _, line := range strings.Split(body, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		m := ggmlEnumEntry.FindStringSubmatch(line)
		if m == nil {
			return 0, fmt.Errorf("ggml op enum: cannot read the entry %q", strings.TrimSpace(line))
		}
		if m[2] != "" {
			next, _ = strconv.Atoi(m[2])
		}
		if m[1] == want {
			return next, nil
		}
		next++
	}
	return 0, fmt.Errorf("ggml op enum: no %s", want)
}

// parseTestBackendOpsSQL finds in the --output sql output of
// test-backend-ops perf the MUL_MAT row whose parameters match (what
// describes them in errors). The row is one line:
//
//	INSERT INTO test_backend_ops (test_time, ..., time_us, ...) VALUES ('...', ..., '6903.86', ...);
//
// Fields are looked up by name, so a column added by a later llama.cpp does
// not break the parse.
func parseTestBackendOpsSQL(out []byte, match func(params string) bool, what string) (llamaPerf, error) {
	const head = "INSERT INTO test_backend_ops ("
	var seen []string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, head)
		if !ok {
			continue
		}
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
		if row["op_name"] != "MUL_MAT" || !match(row["op_params"]) {
			seen = append(seen, row["op_name"]+"("+row["op_params"]+")")
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
	return llamaPerf{}, fmt.Errorf("test-backend-ops: no MUL_MAT result with parameters %s among its %d results %s", what, len(seen),
		tail(strings.Join(seen, " "), 300))
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

// llamaQuery is one way of asking test-backend-ops for the mat-vec: the
// arguments after the binary and the op parameters of the result row.
type llamaQuery struct {
	args  []string
	match func(params string) bool
	what  string
	// line is the --test-file line, if the query uses one.
	line string
}

// run runs test-backend-ops bin once and returns the product's result.
func (q llamaQuery) run(ctx context.Context, bin string) (llamaPerf, error) {
	cmd := exec.CommandContext(ctx, bin, q.args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return llamaPerf{}, fmt.Errorf("%s %s: %w: %s", bin, strings.Join(q.args, " "), err, tail(stderr.String(), 400))
	}
	return parseTestBackendOpsSQL(stdout.Bytes(), q.match, q.what)
}

// llamaMulMatQuery returns the query of the mat-vec of type t with an
// [m,k] weight: the built-in perf case at its shape, else a test file
// written into dir (with GGML_OP_MUL_MAT's number from ggmlH).
func llamaMulMatQuery(t quant.Type, m, k int, dir, ggmlH string) (llamaQuery, error) {
	perf := []string{"perf", "-b", "CPU", "-o", "MUL_MAT"}
	if m == llamaPerfM && k == llamaPerfK {
		prefix := llamaMulMatPrefix(t, m, k)
		return llamaQuery{args: append(perf, "-p", "^"+regexp.QuoteMeta(prefix), "--output", "sql"),
			match: func(p string) bool { return strings.HasPrefix(p, prefix) }, what: prefix + "..."}, nil
	}
	op, err := ggmlOpNumber(ggmlH, "MUL_MAT")
	if err != nil {
		return llamaQuery{}, err
	}
	file := filepath.Join(dir, "qgemv.txt")
	if err := os.WriteFile(file, []byte(llamaTestFileLine(op, t, m, k)), 0o644); err != nil {
		return llamaQuery{}, fmt.Errorf("test-backend-ops test file: %w", err)
	}
	want := llamaGenericParams(t, m, k)
	return llamaQuery{args: append(perf, "--test-file", file, "--output", "sql"),
		match: func(p string) bool { return p == want }, what: want, line: llamaTestFileLine(op, t, m, k)}, nil
}

// llamaGGMLHeader is the ggml.h of the sources a test-backend-ops in
// tools/llamacpp/build.sh's bin directory was built from.
func llamaGGMLHeader(bin string) string {
	return filepath.Join(filepath.Dir(bin), "..", "src", "ggml", "include", "ggml.h")
}

// llamacppQGEMV adds the llama.cpp reference to a qgemv run: a stepper
// that runs test-backend-ops once per repetition and reports its mean time
// of one product, with GB/s of the weight bytes (n rows of rowBytes) as
// gotpu's rows count them; or nil and a skipped entry saying why it cannot
// run. done removes the stepper's temporary files (nil with a nil stepper).
func llamacppQGEMV(ctx context.Context, cfg *benchConfig, run *benchRun, bin, clock string, t quant.Type, n, k, rowBytes, streamMB int, minRepS float64) (
	s *kernels.Stepper, done func()) {
	const impl = "llamacpp"
	threads := llamaCPUThreads()
	switch {
	case bin == "":
		run.Skip(impl, "no test-backend-ops binary (--llamacpp-bin, $GOTPU_LLAMACPP_BIN; tools/llamacpp/build.sh test-backend-ops builds it)")
		return nil, nil
	case cfg.Threads != threads:
		run.Skip(impl, fmt.Sprintf("test-backend-ops -b CPU runs ggml with %d threads (half the online CPUs) and cannot be told otherwise; run with --threads %d",
			threads, threads))
		return nil, nil
	case clock != "wall":
		run.Skip(impl, "test-backend-ops reports wall time; --clock cpu would compare different clocks")
		return nil, nil
	}
	if _, err := os.Stat(bin); err != nil {
		run.Skip(impl, fmt.Sprintf("%v (tools/llamacpp/build.sh test-backend-ops builds it)", err))
		return nil, nil
	}
	dir, err := os.MkdirTemp("", "gotpu-qgemv-")
	if err != nil {
		run.Skip(impl, fmt.Sprintf("temporary directory for the test file: %v", err))
		return nil, nil
	}
	done = func() { os.RemoveAll(dir) }
	q, err := llamaMulMatQuery(t, n, k, dir, llamaGGMLHeader(bin))
	if err != nil {
		done()
		run.Skip(impl, fmt.Sprintf("%v (needed for shapes other than test-backend-ops' built-in m=%d k=%d: --size %d --k %d)",
			err, llamaPerfM, llamaPerfK, llamaPerfM, llamaPerfK))
		return nil, nil
	}
	run.Version("llamacpp.test_backend_ops", bin)
	run.Version("llamacpp.threads", threads)
	wbytes := n * rowBytes
	first := true
	return &kernels.Stepper{Impl: impl, DType: t.String(), Ref: true, Work: kernels.Work{Bytes: float64(wbytes)},
		Timed: func() (float64, error) {
			p, err := q.run(ctx, bin)
			if err != nil {
				return 0, err
			}
			if first {
				first = false
				run.Version("llamacpp.build_commit", p.BuildCommit)
				run.Note("llamacpp is `test-backend-ops %s` on MUL_MAT(%s): ggml's CPU mat-vec on %d thread(s), one process per "+
					"repetition, its time the mean wall time of one product over the products it ran for at least 1 s (one %.2f MiB "+
					"weight, which ggml reuses product after product; its time includes quantizing the f32 vector to the dot-product "+
					"type); its GB/s count the weight bytes of one product, as gotpu's do",
					strings.Join(q.args, " "), p.Params, threads, float64(wbytes)/(1<<20))
				if q.line != "" {
					run.Note("llamacpp's test file (op MUL_MAT = %s in ggml.h) holds the line: %s", strings.Fields(q.line)[0], strings.TrimSpace(q.line))
				}
				if minRepS == 0 {
					run.Note("gotpu's repetitions are one pass each and llamacpp's the mean over 1 s: --min-rep-s 1 measures both alike")
				}
				if streamMB > 0 && wbytes < 32<<20 {
					run.Note("llamacpp's %.2f MiB weight may stay in cache across its products while gotpu streams %d MiB of copies; "+
						"--stream-mb 0 runs gotpu on one copy too", float64(wbytes)/(1<<20), streamMB)
				}
				if t == quant.Q4_0 || t == quant.Q4_K {
					run.Note("test-backend-ops keeps %v in ggml's plain layout; llama.cpp's model loader repacks %v weights on AVX2 "+
						"CPUs (CPU_REPACK, 8x8 interleaved), a path this reference does not time", t, t)
				}
			}
			return p.TimeUS * 1e-6, nil
		}}, done
}
