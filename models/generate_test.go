package models

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/models/sample"
	"github.com/gotpu/gotpu/tensor"
)

func tinyModel(t *testing.T, variant string) *CausalLM {
	t.Helper()
	m, err := Load(filepath.Join(refDir, variant), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m.LM
}

func TestGenerateControl(t *testing.T) {
	lm := tinyModel(t, "llama")
	ref := readReference(t, filepath.Join(refDir, "llama"))
	prompt := ref.InputIDs

	// Cancellation stops between steps with the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	res, err := lm.Generate(ctx, prompt, GenerateOptions{MaxNewTokens: 16, OnToken: func(_, _ int) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) || len(res.Tokens[0]) != 3 {
		t.Errorf("cancelled after 3 tokens: err %v, %d tokens", err, len(res.Tokens[0]))
	}
	// An end-of-sequence id ends the sequence and is kept.
	eos := ref.Greedy[4]
	res, err = lm.Generate(context.Background(), prompt, GenerateOptions{MaxNewTokens: 16, EOS: []int{eos}})
	if err != nil {
		t.Fatal(err)
	}
	if want := ref.Greedy[:slices.Index(ref.Greedy, eos)+1]; !slices.Equal(res.Tokens[0], want) {
		t.Errorf("eos %d: %v, want %v", eos, res.Tokens[0], want)
	}
	// Stop ends a sequence; an OnToken error is returned.
	res, _ = lm.Generate(context.Background(), prompt, GenerateOptions{MaxNewTokens: 16, Stop: func(_ int, g []int) bool { return len(g) == 2 }})
	if len(res.Tokens[0]) != 2 {
		t.Errorf("Stop after 2: %v", res.Tokens[0])
	}
	boom := errors.New("boom")
	if _, err := lm.Generate(context.Background(), prompt, GenerateOptions{MaxNewTokens: 4, OnToken: func(_, _ int) error { return boom }}); !errors.Is(err, boom) {
		t.Errorf("OnToken error: %v", err)
	}
	for _, tc := range []struct {
		prompts [][]int
		o       GenerateOptions
		want    string
	}{
		{nil, GenerateOptions{MaxNewTokens: 1}, "no prompts"},
		{[][]int{{}}, GenerateOptions{MaxNewTokens: 1}, "empty"},
		{[][]int{{1, 128}}, GenerateOptions{MaxNewTokens: 1}, "outside the vocabulary"},
		{[][]int{{1}}, GenerateOptions{}, "MaxNewTokens"},
		{[][]int{{1, 2}}, GenerateOptions{MaxNewTokens: 4, CacheSize: 3}, "cannot hold"},
	} {
		if _, err := lm.Generate(context.Background(), tc.prompts, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %+v: %v, want %q", tc.prompts, tc.o, err, tc.want)
		}
	}
}

// TestSamplingModes checks that a seed gives the same tokens in every mode
// and that the rows of a batch draw differently.
func TestSamplingModes(t *testing.T) {
	p := sample.DefaultParams()
	p.Temperature, p.TopK, p.TopP, p.Seed = 0.9, 50, 0.95, 42
	prompts := [][]int{{5, 6, 7, 8}, {5, 6, 7, 8}}
	var first [][]int
	for _, md := range modes {
		func() {
			old := tensor.SetMode(md.mode)
			defer tensor.SetMode(old)
			lm := tinyModel(t, "gemma3")
			lm.Compiled = md.compiled
			choose, err := Sampling(p, len(prompts))
			if err != nil {
				t.Fatal(err)
			}
			res, err := lm.Generate(context.Background(), prompts, GenerateOptions{MaxNewTokens: 12, Choose: choose})
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = res.Tokens
				if slices.Equal(res.Tokens[0], res.Tokens[1]) {
					t.Errorf("both rows drew %v", res.Tokens[0])
				}
				return
			}
			for i := range first {
				if !slices.Equal(res.Tokens[i], first[i]) {
					t.Errorf("%s row %d: %v, strict %v", md.name, i, res.Tokens[i], first[i])
				}
			}
		}()
	}
}
