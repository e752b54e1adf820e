package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gotpu/gotpu/bench/kernels"
)

// runBench executes "gotpu bench ARGS" in process with every flag of the
// case reset to its default first (cobra keeps flag values between runs).
func runBench(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if len(args) > 0 {
		if cmd, _, err := benchCmd.Find(args[:1]); err == nil {
			cmd.Flags().VisitAll(func(f *pflag.Flag) {
				f.Value.Set(f.DefValue)
				f.Changed = false
			})
		}
	}
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&out)
	defer func() { rootCmd.SetOut(nil); rootCmd.SetErr(nil) }()
	rootCmd.SetArgs(append([]string{"bench"}, args...))
	err := rootCmd.Execute()
	return out.String(), err
}

func benchJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, err := runBench(t, append(args, "--json")...)
	if err != nil {
		t.Fatalf("bench %v: %v\n%s", args, err, out)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench %v: not one JSON object: %v\n%s", args, err, out)
	}
	return rep
}

func resultImpls(rep map[string]any) []string {
	var impls []string
	for _, r := range rep["results"].([]any) {
		impls = append(impls, r.(map[string]any)["impl"].(string))
	}
	return impls
}

func TestBenchJSONShape(t *testing.T) {
	rep := benchJSON(t, "gemm", "--size", "8", "--reps", "3", "--warmup", "0", "--ref", "none", "--threads", "1")
	for _, k := range []string{"case", "size", "shape", "dtype", "threads", "reps", "warmup", "results", "ratios", "ratios_min", "skipped", "notes", "versions"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("report lacks key %q", k)
		}
	}
	if rep["case"] != "gemm" || rep["size"] != 8.0 || rep["dtype"] != "f32" || rep["threads"] != 1.0 || rep["reps"] != 3.0 || rep["warmup"] != 0.0 {
		t.Errorf("header %v %v %v %v %v %v", rep["case"], rep["size"], rep["dtype"], rep["threads"], rep["reps"], rep["warmup"])
	}
	res := rep["results"].([]any)
	if len(res) != 1 {
		t.Fatalf("--ref none gave %d results, want gotpu's only", len(res))
	}
	r := res[0].(map[string]any)
	for _, k := range []string{"impl", "dtype", "median_s", "min_s", "gflops", "times_s"} {
		if _, ok := r[k]; !ok {
			t.Errorf("result lacks key %q: %v", k, r)
		}
	}
	if r["impl"] != "gotpu" || len(r["times_s"].([]any)) != 3 || r["min_s"].(float64) > r["median_s"].(float64) {
		t.Errorf("result %v", r)
	}
	if _, ok := r["gbps"]; ok {
		t.Errorf("gemm reports gbps: %v", r)
	}
	if len(rep["ratios"].(map[string]any)) != 0 || len(rep["skipped"].([]any)) != 0 {
		t.Errorf("ratios %v skipped %v without references", rep["ratios"], rep["skipped"])
	}
	v := rep["versions"].(map[string]any)
	if v["gotpu"] == nil || v["cpu_kernel_level"] == nil {
		t.Errorf("versions %v", v)
	}
}

func TestBenchEveryCaseTiny(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		impls []string
		ratio string
	}{
		{[]string{"gemm", "--size", "8", "--dtype", "medium"}, []string{"gotpu"}, ""},
		{[]string{"gemm", "--size", "8", "--dtype", "bf16", "--ref", "gonum"}, []string{"gotpu", "gonum"}, "gotpu/gonum"},
		{[]string{"gemv", "--size", "8", "--k", "16", "--memmove-mb", "1"}, []string{"gotpu", "go-memmove", "go-memmove-matrix"}, "gotpu/go-memmove-matrix"},
		{[]string{"gemv", "--size", "8", "--k", "16", "--memmove-mb", "0", "--dtype", "bf16"}, []string{"gotpu"}, ""},
		{[]string{"eltwise", "--size", "64"}, []string{"gotpu"}, ""},
		{[]string{"softmax", "--size", "8", "--dtype", "bf16"}, []string{"gotpu"}, ""},
		{[]string{"layernorm", "--size", "8"}, []string{"gotpu"}, ""},
		{[]string{"conv", "--size", "5", "--batch", "1", "--channels", "2", "--cout", "3"}, []string{"gotpu", "gotpu.backward"}, ""},
		{[]string{"conv", "--size", "5", "--batch", "1", "--channels", "2", "--cout", "3", "--backward=false"}, []string{"gotpu"}, ""},
		{[]string{"conv", "--size", "6", "--batch", "2", "--channels", "2", "--cout", "3", "--dtype", "bf16"}, []string{"gotpu", "gotpu.backward"}, ""},
		{[]string{"cnn", "--size", "2"}, []string{"gotpu"}, ""},
	} {
		args := append(slices.Clone(tc.args), "--reps", "2", "--warmup", "0")
		if !slices.Contains(args, "--ref") {
			args = append(args, "--ref", "none")
		}
		rep := benchJSON(t, args...)
		if got := resultImpls(rep); !slices.Equal(got, tc.impls) {
			t.Errorf("%v: impls %v, want %v", tc.args, got, tc.impls)
		}
		if tc.ratio != "" {
			if v, ok := rep["ratios"].(map[string]any)[tc.ratio].(float64); !ok || v <= 0 {
				t.Errorf("%v: ratios %v lack a positive %s", tc.args, rep["ratios"], tc.ratio)
			}
		}
	}
}

func TestBenchSkipsMissingReferences(t *testing.T) {
	// A known reference the case lacks, and Python that is not there, are
	// skipped columns, not failures.
	rep := benchJSON(t, "softmax", "--size", "4", "--reps", "1", "--ref", "gonum,torch",
		"--python", filepath.Join(t.TempDir(), "no-python"))
	var skipped []string
	for _, s := range rep["skipped"].([]any) {
		m := s.(map[string]any)
		skipped = append(skipped, m["impl"].(string))
		if m["reason"] == "" {
			t.Errorf("skipped %v without a reason", m)
		}
	}
	slices.Sort(skipped)
	if !slices.Equal(skipped, []string{"gonum", "torch"}) {
		t.Errorf("skipped %v, want gonum and torch", skipped)
	}
	if got := resultImpls(rep); !slices.Equal(got, []string{"gotpu"}) {
		t.Errorf("impls %v", got)
	}
}

func TestBenchRestoresGOMAXPROCS(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	rep := benchJSON(t, "gemm", "--size", "4", "--reps", "1", "--ref", "none", "--threads", "3")
	if rep["threads"] != 3.0 {
		t.Errorf("threads %v, want 3", rep["threads"])
	}
	if after := runtime.GOMAXPROCS(0); after != before {
		t.Errorf("GOMAXPROCS %d after the run, was %d", after, before)
	}
}

func TestBenchBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"softmax", "--dtype", "medium"}, "--dtype"},
		{[]string{"gemm", "--dtype", "f16"}, "--dtype"},
		{[]string{"gemm", "--size", "0"}, "--size"},
		{[]string{"gemm", "--size", "-3"}, "--size"},
		{[]string{"gemm", "--reps", "0"}, "--reps"},
		{[]string{"gemm", "--warmup", "-1"}, "--warmup"},
		{[]string{"gemm", "--threads", "-2"}, "--threads"},
		{[]string{"gemm", "--ref", "mkl"}, "--ref"},
		{[]string{"gemm", "--size", "abc"}, "size"},
		{[]string{"gemm", "extra"}, "unknown command"},
		{[]string{"gemv", "--k", "0", "--ref", "none"}, "--k"},
		{[]string{"conv", "--size", "2", "--kernel", "7", "--pad", "0", "--ref", "none"}, "conv shape"},
		{[]string{"nosuchcase"}, "unknown command"},
	} {
		out, err := runBench(t, tc.args...)
		if err == nil {
			t.Errorf("%v: accepted\n%s", tc.args, out)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("%v: error %q, want one line mentioning %q", tc.args, msg, tc.want)
		}
	}
}

func TestBenchTableOutput(t *testing.T) {
	out, err := runBench(t, "gemv", "--size", "8", "--k", "8", "--memmove-mb", "1", "--reps", "2", "--ref", "none")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bench gemv", "median ms", "gotpu", "go-memmove", "gotpu/go-memmove", "go-memmove-matrix", "note: fewer than 5"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchList(t *testing.T) {
	out, err := runBench(t, "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []benchCaseInfo
	if err := json.Unmarshal([]byte(out), &cases); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var names []string
	for _, c := range cases {
		names = append(names, c.Name)
		if _, registered := benchCases[c.Name]; c.Description == "" || registered && (len(c.DTypes) == 0 || c.DefaultSize < 1) {
			t.Errorf("case %+v incomplete", c)
		}
	}
	for _, want := range []string{"conv", "eltwise", "gemm", "gemv", "layernorm", "softmax"} {
		if !slices.Contains(names, want) {
			t.Errorf("list lacks %s: %v", want, names)
		}
	}
	// Reset list's --json for later runs.
	if cmd, _, err := benchCmd.Find([]string{"list"}); err == nil {
		cmd.Flags().Set("json", "false")
	}
}

func TestRegisterBenchCase(t *testing.T) {
	for _, bad := range []benchCase{
		{Name: "gemm", DTypes: []string{"f32"}, Run: func(context.Context, *benchConfig, *benchRun) error { return nil }},
		{Name: "list", DTypes: []string{"f32"}, Run: func(context.Context, *benchConfig, *benchRun) error { return nil }},
		{Name: "nodtypes", Run: func(context.Context, *benchConfig, *benchRun) error { return nil }},
		{Name: "norun", DTypes: []string{"f32"}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("registerBenchCase(%q) did not panic", bad.Name)
				}
			}()
			registerBenchCase(bad)
		}()
	}

	// A case registered from outside this file gets the common flags and its
	// own, and its results go through the same report.
	var extra int
	registerBenchCase(benchCase{
		Name: "testcase", Description: "test", DTypes: []string{"f32", "bf16"}, DefaultSize: 2, Refs: []string{"fake"},
		Flags: func(fs *pflag.FlagSet) { fs.IntVar(&extra, "extra", 1, "extra") },
		Run: func(ctx context.Context, cfg *benchConfig, run *benchRun) error {
			run.Shape = "s"
			run.Add(kernels.NewResult("gotpu", cfg.DType, []float64{1, 1}, kernels.Work{Bytes: float64(2e9 * extra)}))
			if cfg.WantRef("fake") {
				run.Add(kernels.NewResult("fake", "f32", []float64{2, 2}, kernels.Work{Bytes: float64(2e9 * extra)}))
			}
			return nil
		},
	})
	defer func() {
		delete(benchCases, "testcase")
		if cmd, _, err := benchCmd.Find([]string{"testcase"}); err == nil {
			benchCmd.RemoveCommand(cmd)
		}
	}()
	rep := benchJSON(t, "testcase", "--extra", "3", "--dtype", "bf16", "--reps", "2")
	if got := rep["ratios"].(map[string]any)["gotpu/fake"]; got != 2.0 {
		t.Errorf("ratio gotpu/fake %v, want 2", got)
	}
	if r := rep["results"].([]any)[0].(map[string]any); r["gbps"] != 6.0 || r["dtype"] != "bf16" {
		t.Errorf("result %v: the case flag or dtype did not reach Run", r)
	}
}

func TestBenchRatios(t *testing.T) {
	res := func(impl string, med, gf, gb float64) benchResult {
		return benchResult{Impl: impl, MedianS: med, MinS: med, GFLOPS: gf, GBPS: gb}
	}
	for _, tc := range []struct {
		name string
		in   []benchResult
		want map[string]float64
	}{
		{"flops", []benchResult{res("gotpu", 1, 10, 0), res("numpy", 2, 5, 0)}, map[string]float64{"gotpu/numpy": 2}},
		{"bytes when flops missing", []benchResult{res("gotpu", 1, 0, 8), res("go-memmove", 1, 0, 16)}, map[string]float64{"gotpu/go-memmove": 0.5}},
		{"time when no throughput", []benchResult{res("gotpu", 2, 0, 0), res("torch", 1, 0, 0)}, map[string]float64{"gotpu/torch": 0.5}},
		{"variants pair", []benchResult{res("gotpu", 1, 4, 0), res("gotpu.backward", 1, 2, 0), res("torch", 1, 8, 0), res("torch.backward", 1, 1, 0)},
			map[string]float64{"gotpu/torch": 0.5, "gotpu.backward/torch.backward": 2}},
		{"no gotpu of that variant", []benchResult{res("gotpu", 1, 4, 0), res("torch.backward", 1, 1, 0)}, map[string]float64{}},
		{"only gotpu", []benchResult{res("gotpu", 1, 4, 0)}, map[string]float64{}},
	} {
		got, gotMin := benchRatios(tc.in)
		if !maps.Equal(got, gotMin) {
			t.Errorf("%s: min ratios %v differ from the median's %v with min = median", tc.name, gotMin, got)
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", tc.name, k, got[k], v)
			}
		}
	}
}

func TestBenchRatiosAtMin(t *testing.T) {
	// gotpu: 4 GFLOP at median 2 s (2 GFLOP/s), min 1 s; numpy: median 1 s
	// (4 GFLOP/s), min 0.5 s. At the median gotpu is 0.5×, at the min also
	// 0.5× (4/8); with numpy's min at 1 s it is 1×.
	g := benchResult{Impl: "gotpu", MedianS: 2, MinS: 1, GFLOPS: 2}
	for _, tc := range []struct {
		nmin, want float64
	}{{0.5, 0.5}, {1, 1}} {
		n := benchResult{Impl: "numpy", MedianS: 1, MinS: tc.nmin, GFLOPS: 4}
		med, min := benchRatios([]benchResult{g, n})
		if med["gotpu/numpy"] != 0.5 || min["gotpu/numpy"] != tc.want {
			t.Errorf("numpy min %v: ratios %v / %v, want 0.5 / %v", tc.nmin, med, min, tc.want)
		}
	}
}

func TestParseRefs(t *testing.T) {
	c := &benchCase{Name: "x", Refs: []string{"numpy", "torch"}}
	for _, tc := range []struct {
		spec string
		want []string
		err  bool
	}{
		{"none", nil, false},
		{"all", []string{"numpy", "torch"}, false},
		{"torch,numpy,torch", []string{"torch", "numpy"}, false},
		{"gonum", []string{"gonum"}, false},
		{"Torch", []string{"torch"}, false},
		{"numpy,mkl", nil, true},
	} {
		got, err := parseRefs(c, tc.spec)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("parseRefs(%q) = %v, %v; want %v (error %v)", tc.spec, got, err, tc.want, tc.err)
		}
	}
}

func TestBenchSummary(t *testing.T) {
	dir := t.TempDir()
	a, err := runBench(t, "gemm", "--size", "4", "--reps", "1", "--ref", "gonum", "--json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := runBench(t, "softmax", "--size", "4", "--reps", "1", "--ref", "gonum", "--json")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"a.json": a, "b.json": "[" + b + "]", "bad.json": `{"case": "x"}`, "junk.json": "not json"}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := runBench(t, "summary", filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| gemm | 4x4 @ 4x4 | f32 |", "| gonum | f32 |", "| softmax | 4x4 | f32 |", "skipped: case softmax has no gonum reference"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if rows := strings.Count(out, "\n"); rows != 2+2+2 {
		t.Errorf("summary has %d lines, want 6 (header, rule, 2 gemm rows, softmax row and its skipped row):\n%s", rows, out)
	}
	for _, bad := range []string{"bad.json", "junk.json", "missing.json"} {
		if _, err := runBench(t, "summary", filepath.Join(dir, bad)); err == nil {
			t.Errorf("summary accepted %s", bad)
		}
	}
	out, err = runBench(t, "summary", "--json", filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json"))
	if err != nil {
		t.Fatal(err)
	}
	var reps []map[string]any
	if err := json.Unmarshal([]byte(out), &reps); err != nil || len(reps) != 2 {
		t.Fatalf("summary --json: %d reports, %v\n%s", len(reps), err, out)
	}
}

// TestBenchCaseDefaults: a case's own --warmup and --reps defaults (the
// CNN training step measures its steady state), the common ones
// elsewhere.
func TestBenchCaseDefaults(t *testing.T) {
	want := map[string][2]string{"cnn": {"20", "30"}, "gemm": {"1", "5"}}
	for name, w := range want {
		var found bool
		for _, c := range benchCmd.Commands() {
			if c.Name() != name {
				continue
			}
			found = true
			if got := c.Flags().Lookup("warmup").DefValue; got != w[0] {
				t.Errorf("bench %s --warmup default %s, want %s", name, got, w[0])
			}
			if got := c.Flags().Lookup("reps").DefValue; got != w[1] {
				t.Errorf("bench %s --reps default %s, want %s", name, got, w[1])
			}
		}
		if !found {
			t.Errorf("no bench %s", name)
		}
	}
}
