package main

import (
	"slices"
	"strings"
	"testing"
)

func TestBenchSDPATiny(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		impls []string
	}{
		{[]string{"--size", "20", "--heads", "2", "--dim", "8"}, []string{"gotpu", "gotpu-decomposed"}},
		{[]string{"--size", "150", "--heads", "1", "--dim", "5", "--causal", "--batch", "2"}, []string{"gotpu", "gotpu-decomposed"}},
		{[]string{"--size", "9", "--decomposed=false"}, []string{"gotpu"}},
	} {
		rep := benchJSON(t, append([]string{"sdpa", "--reps", "2", "--warmup", "0", "--ref", "none"}, tc.args...)...)
		if got := resultImpls(rep); !slices.Equal(got, tc.impls) {
			t.Errorf("%v: impls %v, want %v", tc.args, got, tc.impls)
		}
		if len(tc.impls) > 1 {
			if v, ok := rep["ratios"].(map[string]any)["gotpu/gotpu-decomposed"].(float64); !ok || v <= 0 {
				t.Errorf("%v: ratios %v lack gotpu/gotpu-decomposed", tc.args, rep["ratios"])
			}
		}
		var peak bool
		for _, n := range rep["notes"].([]any) {
			peak = peak || strings.HasPrefix(n.(string), "gotpu peak memory: device ")
		}
		if !peak {
			t.Errorf("%v: notes %v lack gotpu's peak memory", tc.args, rep["notes"])
		}
	}
}

func TestBenchSDPATorch(t *testing.T) {
	// With PyTorch installed the reference runs (else it is a skipped
	// column, which is also a pass).
	rep := benchJSON(t, "sdpa", "--size", "24", "--heads", "2", "--dim", "4", "--causal", "--reps", "2", "--warmup", "0", "--ref", "torch", "--decomposed=false")
	if slices.Contains(resultImpls(rep), "torch") {
		if v, ok := rep["ratios"].(map[string]any)["gotpu/torch"].(float64); !ok || v <= 0 {
			t.Errorf("ratios %v lack gotpu/torch", rep["ratios"])
		}
	} else if len(rep["skipped"].([]any)) != 1 {
		t.Errorf("torch neither ran nor was skipped: %v", rep)
	}
}

func TestBenchSDPABadFlags(t *testing.T) {
	for _, args := range [][]string{{"--heads", "0"}, {"--dim", "-1"}, {"--batch", "0"}} {
		if out, err := runBench(t, append([]string{"sdpa", "--size", "8", "--ref", "none"}, args...)...); err == nil {
			t.Errorf("%v: no error\n%s", args, out)
		}
	}
}
