package main

import (
	"strings"
	"testing"
	"time"

	"github.com/gotpu/gotpu/train"
)

// TestTrainRejectsMeaninglessFlags checks that zero or negative values are
// an error naming the flag, before any data is loaded (a zero used to mean
// "the default" silently).
func TestTrainRejectsMeaninglessFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--epochs", "0"}, "--epochs must be at least 1, got 0"},
		{[]string{"--epochs", "-2"}, "--epochs must be at least 1, got -2"},
		{[]string{"--batch-size", "0"}, "--batch-size must be at least 1, got 0"},
		{[]string{"--train-limit", "-5"}, "--train-limit must not be negative, got -5"},
		{[]string{"--max-steps", "-1"}, "--max-steps must not be negative, got -1"},
		{[]string{"--lr", "-0.1"}, "--lr must not be negative, got -0.1"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := runCmd(t, append([]string{"train", "mnist", "--data", t.TempDir()}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestProgressEndsItsLine checks that a bar left open when training stops
// mid-epoch (Ctrl-C) is ended before anything else is printed, and that a
// finished epoch's bar is not ended twice.
func TestProgressEndsItsLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tty   bool
		steps []int // steps reported, of 10 per epoch
		want  string
	}{
		{"interrupted bar", true, []int{1, 2, 3}, "   \n"},
		{"finished epoch", true, []int{9, 10}, "   \n"},
		{"no progress", true, nil, ""},
		{"plain lines", false, []int{1, 10}, "ETA 0s\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			p := &progressPrinter{out: &out, tty: tc.tty}
			for _, s := range tc.steps {
				p.last = time.Time{} // no rate limit in the test
				p.update(train.Progress{Epoch: 1, Epochs: 1, Step: s, StepsPerEpoch: 10})
			}
			p.end()
			p.end()
			got := out.String()
			if !strings.HasSuffix(got, tc.want) || strings.HasSuffix(got, "\n\n") || (tc.want == "" && got != "") {
				t.Errorf("output %q: want it to end with %q, once", got, tc.want)
			}
		})
	}
}

// TestTrainResultNothingToDo checks the summary of a resumed run that had
// no step left: it says so instead of "0 examples/s".
func TestTrainResultNothingToDo(t *testing.T) {
	base := train.Result{Model: "mlp", Device: "cpu", Epochs: 5, Mode: "strict", TestAccuracy: 0.9, ExamplesPerSec: 0}
	for _, tc := range []struct {
		name     string
		c        train.Config
		steps    int
		resumed  int
		want     string
		wantNot  string
		examples float64
	}{
		{"fresh run", train.Config{}, 100, 0, "examples/s", "nothing to do", 1000},
		{"resumed with steps left", train.Config{Resume: true}, 100, 60, "1000 examples/s", "nothing to do", 1000},
		{"resumed finished run", train.Config{Resume: true}, 100, 100, "nothing to do: already trained 5 epochs (100 steps)", "examples/s", 0},
		{"resumed at --max-steps", train.Config{Resume: true, MaxSteps: 50}, 50, 50, "nothing to do: the checkpoint is already at step 50 (--max-steps 50)", "examples/s", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := base
			res.Steps, res.ResumedFromStep, res.ExamplesPerSec = tc.steps, tc.resumed, tc.examples
			var out strings.Builder
			writeTrainResult(&out, tc.c, &res)
			if got := out.String(); !strings.Contains(got, tc.want) || strings.Contains(got, tc.wantNot) || !strings.Contains(got, "test accuracy 90.00%") {
				t.Errorf("summary:\n%s\nwant %q and the test accuracy, not %q", got, tc.want, tc.wantNot)
			}
		})
	}
}
