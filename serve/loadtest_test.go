package serve

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRunLoad runs the load generator against the API over the fake
// engine and checks its completeness checks pass and fail when they must.
func TestRunLoad(t *testing.T) {
	tests := []struct {
		name       string
		maxTokens  int
		ignoreEOS  bool
		wantFailed bool
		wantTokens int // completion tokens per request
		wantEOS    bool
	}{
		{name: "length", maxTokens: 4, ignoreEOS: true, wantTokens: 4},
		{name: "stop at EOS", maxTokens: 20, wantTokens: 9, wantEOS: true},
		// The fake ends every reply after 9 tokens, so ignore_eos cannot
		// reach 20 tokens: every response is incomplete.
		{name: "short of max_tokens", maxTokens: 20, ignoreEOS: true, wantFailed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gen := newFakeGen("abcdefgh")
			gen.delay = time.Millisecond
			hs := httptest.NewServer(newTestServer(t, gen, nil).Handler())
			defer hs.Close()
			o := LoadOptions{URL: hs.URL, Model: "test-model", Requests: 24, Concurrency: 6, PromptTokens: 5,
				TokenLo: 32, TokenHi: 127, Seed: 3, MaxTokens: tc.maxTokens, IgnoreEOS: tc.ignoreEOS, RequireUsage: true, Timeout: time.Minute}
			rep, err := RunLoad(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantFailed {
				if rep.Failed != o.Requests || rep.Completed != 0 || len(rep.Errors) == 0 || !strings.Contains(rep.Errors[0], "ignore_eos") {
					t.Fatalf("report %+v, want every request failed", rep)
				}
				return
			}
			if rep.Completed != o.Requests || rep.Failed != 0 {
				t.Fatalf("report %+v, errors %v", rep, rep.Errors)
			}
			if rep.CompletionTokens != o.Requests*tc.wantTokens || rep.PromptTokens != o.Requests*o.PromptTokens {
				t.Errorf("%d completion and %d prompt tokens, want %d and %d", rep.CompletionTokens, rep.PromptTokens, o.Requests*tc.wantTokens, o.Requests*o.PromptTokens)
			}
			if rep.TTFT.N != o.Requests || rep.TTFT.P50 <= 0 || rep.TTFT.P99 < rep.TTFT.P50 || rep.ITL.N == 0 || rep.TokensPerS <= 0 {
				t.Errorf("latencies %+v / %+v, %v tok/s", rep.TTFT, rep.ITL, rep.TokensPerS)
			}
			reqs := gen.requests()
			if len(reqs) != o.Requests {
				t.Fatalf("%d requests reached the engine", len(reqs))
			}
			for _, r := range reqs {
				if (len(r.EOS) > 0) != tc.wantEOS {
					t.Fatalf("request EOS %v with ignore_eos=%v", r.EOS, tc.ignoreEOS)
				}
			}
		})
	}
}

func TestPercentiles(t *testing.T) {
	tests := []struct {
		in            []float64
		p50, p99, max float64
	}{
		{in: nil},
		{in: []float64{3}, p50: 3, p99: 3, max: 3},
		{in: []float64{4, 1, 3, 2}, p50: 2, p99: 4, max: 4},
	}
	for _, tc := range tests {
		p := Summarize(tc.in)
		if p.P50 != tc.p50 || p.P99 != tc.p99 || p.Max != tc.max || p.N != len(tc.in) {
			t.Errorf("Summarize(%v) = %+v", tc.in, p)
		}
	}
	v := make([]float64, 100)
	for i := range v {
		v[i] = float64(100 - i)
	}
	if p := Summarize(v); p.P50 != 50 || p.P99 != 99 || p.Mean != 50.5 {
		t.Errorf("1..100: %+v", p)
	}
}
