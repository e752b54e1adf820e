// Package kernels measures gotpu's CPU kernels (GEMM, GEMV, elementwise
// chains, softmax, layer_norm, conv2d) and the references they are compared
// with: gonum's pure-Go BLAS in process, NumPy (OpenBLAS) and PyTorch through
// the Python runner tools/benchref/ref.py.
//
// The package is the measuring half of `gotpu bench` (cmd/gotpu/bench.go);
// bench/kernels/run.sh runs the whole table and README.md holds the numbers.
// Every measurement is warm-up runs followed by timed repetitions; a Result
// carries every repetition's time, their median and minimum, and the
// throughput of the median.
package kernels

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrUnavailable reports that a reference implementation cannot run on this
// machine (no Python, no torch, an unsupported dtype, ...). Callers report it
// as a skipped column and carry on.
var ErrUnavailable = errors.New("reference unavailable")

// Work is the amount of work one repetition does, for throughput figures.
// Flops counts multiply and add separately (a GEMM is 2·m·n·k); Bytes counts
// the bytes a repetition must move at least (every input read once, every
// output written once). Zero means "not reported".
type Work struct {
	Flops float64
	Bytes float64
}

// Result is one implementation's timing of one case.
type Result struct {
	// Impl names the implementation: "gotpu", "numpy", "torch", "gonum",
	// "go-memmove", with an optional ".variant" suffix ("gotpu.backward")
	// pairing it with the reference of the same variant.
	Impl string `json:"impl"`
	// DType is the element type the implementation actually computed in
	// (a reference may run in f32 where gotpu runs medium).
	DType string `json:"dtype"`
	// MedianS and MinS are the median and minimum of the timed repetitions,
	// in seconds.
	MedianS float64 `json:"median_s"`
	MinS    float64 `json:"min_s"`
	// GFLOPS is Work.Flops / MedianS / 1e9 (absent when the case reports no
	// flops); GBPS is Work.Bytes / MedianS / 1e9 (absent likewise).
	GFLOPS float64 `json:"gflops,omitempty"`
	GBPS   float64 `json:"gbps,omitempty"`
	// TimesS are the timed repetitions in the order they ran.
	TimesS []float64 `json:"times_s"`
}

// Skipped is a column that could not be measured, with the reason.
type Skipped struct {
	Impl   string `json:"impl"`
	Reason string `json:"reason"`
}

// Median returns the median of v (the mean of the middle two for an even
// count) and 0 for an empty slice.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// NewResult summarises the repetition times of one implementation.
func NewResult(impl, dt string, times []float64, w Work) Result {
	r := Result{Impl: impl, DType: dt, TimesS: slices.Clone(times), MedianS: Median(times)}
	if len(times) > 0 {
		r.MinS = slices.Min(times)
	}
	if r.MedianS > 0 {
		if w.Flops > 0 {
			r.GFLOPS = w.Flops / r.MedianS / 1e9
		}
		if w.Bytes > 0 {
			r.GBPS = w.Bytes / r.MedianS / 1e9
		}
	}
	return r
}

// Timing is how many untimed warm-up runs and timed repetitions to do.
type Timing struct {
	Warmup int
	Reps   int
}

func (t Timing) check() error {
	if t.Reps < 1 {
		return fmt.Errorf("kernels: reps must be at least 1, got %d", t.Reps)
	}
	if t.Warmup < 0 {
		return fmt.Errorf("kernels: warmup must not be negative, got %d", t.Warmup)
	}
	return nil
}

// Measure runs fn t.Warmup times untimed, then t.Reps times timed, and
// returns the summary. It stops at the first error of fn or when ctx is
// done (checked between runs).
func Measure(ctx context.Context, impl, dt string, t Timing, w Work, fn func() error) (Result, error) {
	return MeasureSetup(ctx, impl, dt, t, w, nil, fn)
}

// MeasureSetup is Measure with an untimed setup run before every run of fn
// (warm-up and timed alike); a nil setup is skipped.
func MeasureSetup(ctx context.Context, impl, dt string, t Timing, w Work, setup, fn func() error) (Result, error) {
	if err := t.check(); err != nil {
		return Result{}, err
	}
	run := func(what string, i int) (float64, error) {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("%s %s %d: %w", impl, what, i, err)
		}
		if setup != nil {
			if err := setup(); err != nil {
				return 0, fmt.Errorf("%s %s %d setup: %w", impl, what, i, err)
			}
		}
		start := time.Now()
		err := fn()
		el := time.Since(start).Seconds()
		if err != nil {
			return 0, fmt.Errorf("%s %s %d: %w", impl, what, i, err)
		}
		return el, nil
	}
	for i := 0; i < t.Warmup; i++ {
		if _, err := run("warm-up", i); err != nil {
			return Result{}, err
		}
	}
	times := make([]float64, 0, t.Reps)
	for i := 0; i < t.Reps; i++ {
		el, err := run("rep", i)
		if err != nil {
			return Result{}, err
		}
		times = append(times, el)
	}
	return NewResult(impl, dt, times, w), nil
}

// Stepper is one implementation taking part in an interleaved measurement:
// Interleave runs one repetition of every stepper in turn, round after
// round, so that all of them see the same machine (load from other
// processes, thermal state) instead of one getting a quiet minute and the
// next a busy one.
type Stepper struct {
	// Impl and DType name the result; Work gives its throughput.
	Impl, DType string
	Work        Work
	// Ref marks a reference: when it fails, Interleave drops it and reports
	// it as skipped instead of failing the measurement.
	Ref bool
	// Setup, if set, runs untimed before every run of Run.
	Setup func() error
	// Run is one repetition, timed by Interleave. Exactly one of Run and
	// Timed is set.
	Run func() error
	// Timed is one repetition that measures itself (a reference in another
	// process reports its own time, without the pipe round trip).
	Timed func() (float64, error)
}

func (s *Stepper) once() (float64, error) {
	if s.Setup != nil {
		if err := s.Setup(); err != nil {
			return 0, fmt.Errorf("setup: %w", err)
		}
	}
	if s.Timed != nil {
		return s.Timed()
	}
	start := time.Now()
	err := s.Run()
	return time.Since(start).Seconds(), err
}

// Interleave measures the steppers together: t.Warmup untimed rounds, then
// t.Reps timed rounds, each round running every stepper once, starting one
// further along the list every round so that no implementation always runs
// first. It returns one Result per surviving stepper, in list order, and
// the references that failed. A failure of a non-reference stepper, or a
// done ctx, is an error.
func Interleave(ctx context.Context, t Timing, steppers []*Stepper) ([]Result, []Skipped, error) {
	if err := t.check(); err != nil {
		return nil, nil, err
	}
	for _, s := range steppers {
		if (s.Run == nil) == (s.Timed == nil) {
			return nil, nil, fmt.Errorf("kernels: stepper %s needs exactly one of Run and Timed", s.Impl)
		}
	}
	times := make([][]float64, len(steppers))
	alive := make([]bool, len(steppers))
	for i := range alive {
		alive[i] = true
	}
	var skipped []Skipped
	n := len(steppers)
	for round := 0; round < t.Warmup+t.Reps; round++ {
		timed := round >= t.Warmup
		for j := 0; j < n; j++ {
			i := (round + j) % n
			if !alive[i] {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", steppers[i].Impl, err)
			}
			s := steppers[i]
			el, err := s.once()
			if err != nil {
				what := "warm-up"
				if timed {
					what = "rep " + fmt.Sprint(round-t.Warmup)
				}
				if !s.Ref {
					return nil, nil, fmt.Errorf("%s %s: %w", s.Impl, what, err)
				}
				alive[i] = false
				skipped = append(skipped, Skipped{Impl: s.Impl, Reason: fmt.Sprintf("failed in %s: %v", what, err)})
				continue
			}
			if timed {
				times[i] = append(times[i], el)
			}
		}
	}
	var res []Result
	for i, s := range steppers {
		if alive[i] {
			res = append(res, NewResult(s.Impl, s.DType, times[i], s.Work))
		}
	}
	return res, skipped, nil
}
