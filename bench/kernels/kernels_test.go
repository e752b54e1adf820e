package kernels

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{9, 9, 1, 1, 5}, 5},
	} {
		in := slices.Clone(tc.in)
		if got := Median(in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("Median reordered its input: %v", in)
		}
	}
}

func TestNewResultThroughput(t *testing.T) {
	for _, tc := range []struct {
		name             string
		times            []float64
		w                Work
		med, min, gf, gb float64
	}{
		{"flops", []float64{2, 1, 4}, Work{Flops: 4e9}, 2, 1, 2, 0},
		{"bytes", []float64{0.5, 0.5}, Work{Bytes: 1e9}, 0.5, 0.5, 0, 2},
		{"both", []float64{1}, Work{Flops: 3e9, Bytes: 6e9}, 1, 1, 3, 6},
		{"no work", []float64{1, 3}, Work{}, 2, 1, 0, 0},
	} {
		r := NewResult("x", F32, tc.times, tc.w)
		if r.MedianS != tc.med || r.MinS != tc.min || r.GFLOPS != tc.gf || r.GBPS != tc.gb {
			t.Errorf("%s: got median %v min %v gflops %v gbps %v, want %v %v %v %v",
				tc.name, r.MedianS, r.MinS, r.GFLOPS, r.GBPS, tc.med, tc.min, tc.gf, tc.gb)
		}
		if len(r.TimesS) != len(tc.times) {
			t.Errorf("%s: %d times, want %d", tc.name, len(r.TimesS), len(tc.times))
		}
	}
}

func TestMeasureCountsRunsAndStopsOnError(t *testing.T) {
	ctx := context.Background()
	var setups, runs int
	r, err := MeasureSetup(ctx, "x", F32, Timing{Warmup: 2, Reps: 3}, Work{},
		func() error { setups++; return nil }, func() error { runs++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if setups != 5 || runs != 5 || len(r.TimesS) != 3 {
		t.Fatalf("setups %d runs %d times %d, want 5 5 3", setups, runs, len(r.TimesS))
	}

	boom := errors.New("boom")
	runs = 0
	_, err = Measure(ctx, "x", F32, Timing{Reps: 5}, Work{}, func() error {
		runs++
		if runs == 2 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || runs != 2 {
		t.Fatalf("err %v after %d runs, want boom after 2", err, runs)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Measure(cctx, "x", F32, Timing{Reps: 1}, Work{}, func() error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: err %v", err)
	}
	for _, bad := range []Timing{{Reps: 0}, {Reps: 1, Warmup: -1}} {
		if _, err := Measure(ctx, "x", F32, bad, Work{}, func() error { return nil }); err == nil {
			t.Errorf("timing %+v accepted", bad)
		}
	}
}

// TestGotpuCasesRunTiny runs every gotpu measurement at a tiny size in each
// dtype it takes, so a broken op or a wrong work count shows up here.
func TestGotpuCasesRunTiny(t *testing.T) {
	ctx := context.Background()
	tm := Timing{Warmup: 1, Reps: 2}
	type tiny struct {
		name string
		run  func() (Result, error)
		w    Work
	}
	for _, dt := range []string{F32, Medium, BF16} {
		cases := []tiny{
			{"gemm", func() (Result, error) { return GEMM(ctx, tm, dt, 16) }, GEMMWork(16)},
			{"gemv", func() (Result, error) { return GEMV(ctx, tm, dt, 8, 24) }, GEMVWork(8, 24, dt)},
		}
		if dt != Medium {
			cases = append(cases,
				tiny{"eltwise", func() (Result, error) { return Eltwise(ctx, tm, dt, 100) }, EltwiseWork(100, dt)},
				tiny{"softmax", func() (Result, error) { return Softmax(ctx, tm, dt, 4, 8) }, RowWork(4, 8, 0, dt)},
				tiny{"layernorm", func() (Result, error) { return LayerNorm(ctx, tm, dt, 4, 8) }, RowWork(4, 8, 16, dt)},
			)
		}
		for _, c := range cases {
			r, err := c.run()
			if err != nil {
				t.Errorf("%s %s: %v", c.name, dt, err)
				continue
			}
			if r.Impl != "gotpu" || r.DType != dt || len(r.TimesS) != 2 || r.MedianS <= 0 {
				t.Errorf("%s %s: bad result %+v", c.name, dt, r)
			}
			if want := c.w.Flops / r.MedianS / 1e9; math.Abs(r.GFLOPS-want) > 1e-9*want {
				t.Errorf("%s %s: gflops %v, want %v", c.name, dt, r.GFLOPS, want)
			}
			if want := c.w.Bytes / r.MedianS / 1e9; math.Abs(r.GBPS-want) > 1e-9*want {
				t.Errorf("%s %s: gbps %v, want %v", c.name, dt, r.GBPS, want)
			}
		}
		res, err := Conv(ctx, tm, dt, ConvShape{N: 1, C: 2, Cout: 3, H: 5, K: 3, Pad: 1}, true)
		if err != nil {
			t.Errorf("conv %s: %v", dt, err)
		} else if len(res) != 2 || res[0].Impl != "gotpu" || res[1].Impl != "gotpu.backward" {
			t.Errorf("conv %s: results %+v", dt, res)
		}
	}
	for _, f := range []func() (Result, error){
		func() (Result, error) { return Eltwise(ctx, tm, Medium, 10) },
		func() (Result, error) { return Softmax(ctx, tm, Medium, 2, 2) },
	} {
		if _, err := f(); !errors.Is(err, ErrUnavailable) {
			t.Errorf("medium elementwise: err %v, want ErrUnavailable", err)
		}
	}
	if _, err := GEMM(ctx, tm, "f16", 4); err == nil {
		t.Error("dtype f16 accepted")
	}
	if _, err := Conv(ctx, tm, F32, ConvShape{N: 1, C: 1, Cout: 1, H: 2, K: 5}, false); err == nil {
		t.Error("kernel larger than the input accepted")
	}
}

func TestConvWork(t *testing.T) {
	s := ConvShape{N: 8, C: 64, Cout: 64, H: 56, K: 3, Pad: 1}
	if s.OutH() != 56 {
		t.Fatalf("OutH %d", s.OutH())
	}
	// 2·N·Cout·56·56·C·9 = 1.85 GFLOP for the batch (ResNet-18's 3×3 64-channel
	// layer is 0.116 GMAC per image).
	if got, want := ConvWork(s, F32).Flops, 2.0*8*64*56*56*64*9; got != want {
		t.Fatalf("flops %v, want %v", got, want)
	}
}

func TestMemmoveAndGonum(t *testing.T) {
	ctx := context.Background()
	r, err := Memmove(ctx, Timing{Reps: 2}, 1<<16)
	if err != nil || r.Impl != "go-memmove" || r.GBPS <= 0 {
		t.Fatalf("memmove: %+v %v", r, err)
	}
	if _, err := Memmove(ctx, Timing{Reps: 1}, 0); err == nil {
		t.Error("memmove of 0 bytes accepted")
	}
	g, err := GonumGEMM(ctx, Timing{Reps: 2}, 8)
	if err != nil || g.Impl != "gonum" || g.GFLOPS <= 0 {
		t.Fatalf("gonum: %+v %v", g, err)
	}
}

// fakePython writes an executable shell script standing in for the
// interpreter: it ignores its arguments, prints out and exits with code.
func fakePython(t *testing.T, out string, code int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "python")
	script := "#!/bin/sh\ncat <<'EOF'\n" + out + "\nEOF\necho 'some trace' >&2\nexit " + string(rune('0'+code)) + "\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPyRefOutcomes(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	ctx := context.Background()
	tm := Timing{Reps: 2}
	work := func(impl string) Work { return Work{Flops: 1e9} }
	for _, tc := range []struct {
		name, out   string
		code        int
		unavailable bool
		fails       bool
		n           int
	}{
		{"ok", `{"results": [{"impl": "torch", "dtype": "f32", "times_s": [0.5, 0.25]}], "versions": {"torch": "1.13"}}`, 0, false, false, 1},
		{"unavailable", `{"unavailable": "torch is not installed"}`, 3, true, false, 0},
		{"crash", `Traceback`, 1, false, true, 0},
		{"bad json", `not json`, 0, false, true, 0},
		{"no times", `{"results": [{"impl": "torch", "dtype": "f32", "times_s": []}]}`, 0, false, true, 0},
	} {
		p := PyRef{Python: fakePython(t, tc.out, tc.code), Script: "ref.py", Threads: 2}
		res, vers, err := p.Run(ctx, "torch", "gemm", tm, nil, work)
		switch {
		case tc.unavailable:
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "not installed") {
				t.Errorf("%s: err %v, want ErrUnavailable with the reason", tc.name, err)
			}
		case tc.fails:
			if err == nil || errors.Is(err, ErrUnavailable) {
				t.Errorf("%s: err %v, want a failure", tc.name, err)
			}
		default:
			if err != nil || len(res) != tc.n || vers["torch"] != "1.13" {
				t.Fatalf("%s: %v %v %v", tc.name, res, vers, err)
			}
			if res[0].MedianS != 0.375 || res[0].GFLOPS != 1e9/0.375/1e9 {
				t.Errorf("%s: result %+v", tc.name, res[0])
			}
		}
	}
	p := PyRef{Python: filepath.Join(t.TempDir(), "no-such-python")}
	if _, _, err := p.Run(ctx, "numpy", "gemm", tm, nil, work); !errors.Is(err, ErrUnavailable) {
		t.Errorf("missing interpreter: err %v, want ErrUnavailable", err)
	}
}

func TestEnvSetsThreadPools(t *testing.T) {
	t.Setenv("OMP_NUM_THREADS", "99")
	env := Env(3)
	for _, want := range []string{"OMP_NUM_THREADS=3", "OPENBLAS_NUM_THREADS=3", "MKL_NUM_THREADS=3", "OMP_WAIT_POLICY=PASSIVE", "OPENBLAS_THREAD_TIMEOUT=4"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s", want)
		}
	}
	if slices.Contains(env, "OMP_NUM_THREADS=99") {
		t.Error("env kept the caller's OMP_NUM_THREADS")
	}
}

// TestRefScriptArguments runs tools/benchref/ref.py's argument handling
// with Debian's python (skipped when it is absent).
func TestRefScriptArguments(t *testing.T) {
	if _, err := os.Stat(DefaultPython); err != nil {
		t.Skip("no " + DefaultPython)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", RefScriptPath))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOTPU_BENCHREF", script)
	if got, err := FindRefScript(); err != nil || got != script {
		t.Fatalf("FindRefScript = %q, %v", got, err)
	}
	ctx := context.Background()
	p := PyRef{Threads: 1}
	work := func(string) Work { return Work{Flops: 1} }
	for _, tc := range []struct {
		name        string
		impl, cas   string
		args        []string
		unavailable bool
		fails       bool
	}{
		{"numpy gemm", "numpy", "gemm", []string{"--size", "8"}, false, false},
		{"numpy gemv", "numpy", "gemv", []string{"--size", "4", "--k", "6"}, false, false},
		{"numpy has no conv", "numpy", "conv", []string{"--size", "4"}, true, false},
		{"unknown case", "numpy", "fft", nil, false, true},
		{"bad size", "numpy", "gemm", []string{"--size", "0"}, false, true},
		{"bad dtype", "numpy", "gemm", []string{"--dtype", "f16"}, false, true},
		{"conv kernel too big", "torch", "conv", []string{"--size", "2", "--kernel", "5", "--pad", "0"}, false, true},
	} {
		res, _, err := p.Run(ctx, tc.impl, tc.cas, Timing{Reps: 2}, tc.args, work)
		switch {
		case tc.unavailable:
			if !errors.Is(err, ErrUnavailable) {
				t.Errorf("%s: err %v, want ErrUnavailable", tc.name, err)
			}
		case tc.fails:
			if err == nil || errors.Is(err, ErrUnavailable) {
				t.Errorf("%s: err %v, want an argument error", tc.name, err)
			}
		case errors.Is(err, ErrUnavailable):
			t.Skipf("%s: %v", tc.name, err)
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case len(res) != 1 || len(res[0].TimesS) != 2 || res[0].DType != F32:
			t.Errorf("%s: results %+v", tc.name, res)
		}
	}
}

func TestInterleaveRotatesAndDropsFailedReferences(t *testing.T) {
	ctx := context.Background()
	var order []string
	step := func(name string, ref bool, failAt int) *Stepper {
		n := 0
		return &Stepper{Impl: name, DType: F32, Ref: ref, Work: Work{Flops: 1e9}, Run: func() error {
			n++
			order = append(order, name)
			if n == failAt {
				return errors.New(name + " broke")
			}
			return nil
		}}
	}
	res, skipped, err := Interleave(ctx, Timing{Warmup: 1, Reps: 3},
		[]*Stepper{step("gotpu", false, 0), step("a", true, 0), step("b", true, 3)})
	if err != nil {
		t.Fatal(err)
	}
	// Round r starts at stepper r mod 3; b fails in its third run (round 2)
	// and is not run again.
	want := []string{"gotpu", "a", "b", "a", "b", "gotpu", "b", "gotpu", "a", "gotpu", "a"}
	if !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if len(res) != 2 || res[0].Impl != "gotpu" || res[1].Impl != "a" || len(res[0].TimesS) != 3 || len(res[1].TimesS) != 3 {
		t.Errorf("results %+v", res)
	}
	if len(skipped) != 1 || skipped[0].Impl != "b" || !strings.Contains(skipped[0].Reason, "b broke") {
		t.Errorf("skipped %+v", skipped)
	}

	order = nil
	if _, _, err := Interleave(ctx, Timing{Reps: 2}, []*Stepper{step("a", true, 0), step("gotpu", false, 2)}); err == nil ||
		!strings.Contains(err.Error(), "gotpu broke") {
		t.Errorf("a failing gotpu stepper: err %v", err)
	}
	timed := &Stepper{Impl: "t", Ref: true, Timed: func() (float64, error) { return 0.25, nil }}
	res, _, err = Interleave(ctx, Timing{Reps: 2}, []*Stepper{timed})
	if err != nil || res[0].MedianS != 0.25 {
		t.Errorf("self-timed stepper: %+v %v", res, err)
	}
	for _, bad := range []*Stepper{{Impl: "none"}, {Impl: "both", Run: func() error { return nil }, Timed: timed.Timed}} {
		if _, _, err := Interleave(ctx, Timing{Reps: 1}, []*Stepper{bad}); err == nil {
			t.Errorf("stepper %s accepted", bad.Impl)
		}
	}
}

// fakeServer writes a shell script speaking ref.py's --serve protocol:
// body runs after the arguments are ignored.
func fakeServer(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "python")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPyServerProtocol(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	ctx := context.Background()
	ready := `echo '{"ready": true, "versions": {"torch": "1.13"}, "impls": [{"impl": "torch", "dtype": "f32"}, {"impl": "torch.backward", "dtype": "bf16"}]}'` + "\n"
	for _, tc := range []struct {
		name        string
		body        string
		unavailable bool
		startFails  bool
		stepFails   bool
	}{
		{"ok", ready + "while read cmd name; do echo '{\"t\": 0.5}'; done\n", false, false, false},
		{"unavailable", `echo '{"unavailable": "no torch"}'; exit 3` + "\n", true, false, false},
		{"dies at start", "echo oops >&2; exit 1\n", false, true, false},
		{"not ready", "echo '{\"hello\": 1}'\n", false, true, false},
		{"dies mid-run", ready + "read cmd; exit 1\n", false, false, true},
		{"reports an error", ready + "while read cmd name; do echo '{\"error\": \"RuntimeError: x\"}'; done\n", false, false, true},
	} {
		p := PyRef{Python: fakeServer(t, tc.body), Script: "ref.py", Threads: 2}
		srv, err := p.Start(ctx, "torch", "conv", nil)
		switch {
		case tc.unavailable:
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no torch") {
				t.Errorf("%s: err %v", tc.name, err)
			}
			continue
		case tc.startFails:
			if err == nil || errors.Is(err, ErrUnavailable) {
				t.Errorf("%s: err %v, want a start failure", tc.name, err)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		steps := srv.Steppers(func(impl string) Work { return Work{Flops: 1e9} })
		if len(steps) != 2 || steps[1].Impl != "torch.backward" || steps[1].DType != "bf16" || !steps[0].Ref {
			t.Errorf("%s: steppers %+v", tc.name, steps)
		}
		el, err := srv.Step("torch")
		if tc.stepFails {
			if err == nil {
				t.Errorf("%s: step succeeded", tc.name)
			}
		} else if err != nil || el != 0.5 || srv.Versions["torch"] != "1.13" {
			t.Errorf("%s: step %v %v", tc.name, el, err)
		}
		srv.Close()
	}
}

// TestRefScriptServe drives the real ref.py --serve (numpy) when Debian's
// python with numpy is present.
func TestRefScriptServe(t *testing.T) {
	if _, err := os.Stat(DefaultPython); err != nil {
		t.Skip("no " + DefaultPython)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", RefScriptPath))
	if err != nil {
		t.Fatal(err)
	}
	p := PyRef{Script: script, Threads: 1}
	srv, err := p.Start(context.Background(), "numpy", "softmax", []string{"--size", "8"})
	if errors.Is(err, ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if len(srv.Impls) != 1 || srv.Impls[0] != (PyImpl{"numpy", F32}) {
		t.Fatalf("impls %+v", srv.Impls)
	}
	if el, err := srv.Step("numpy"); err != nil || el <= 0 {
		t.Fatalf("step: %v %v", el, err)
	}
	if _, err := srv.Step("torch"); err == nil {
		t.Fatal("a numpy server ran torch")
	}
	if el, err := srv.Step("numpy"); err != nil || el <= 0 {
		t.Fatalf("step after a bad command: %v %v", el, err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRunScriptArguments checks run.sh's argument handling (it fails before
// building or running anything).
func TestRunScriptArguments(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, tc := range []struct {
		args []string
		ok   bool
		want string
	}{
		{[]string{"--help"}, true, "--quick"},
		{[]string{"--reps", "0"}, false, "--reps wants a positive integer"},
		{[]string{"--threads", "two"}, false, "--threads wants a positive integer"},
		{[]string{"--bogus"}, false, "unknown argument --bogus"},
		{[]string{"--quick"}, false, "is not executable"}, // GOTPU_BIN below does not exist
	} {
		cmd := exec.Command(bash, append([]string{"run.sh"}, tc.args...)...)
		cmd.Env = append(os.Environ(), "GOTPU_BIN="+filepath.Join(t.TempDir(), "no-gotpu"), "GOTPU_BENCH_DIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if (err == nil) != tc.ok || !strings.Contains(string(out), tc.want) {
			t.Errorf("run.sh %v: err %v, output %q; want ok=%v and %q", tc.args, err, out, tc.ok, tc.want)
		}
	}
}
