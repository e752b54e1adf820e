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
