package models

import (
	"context"
	"encoding/json"
	"github.com/gotpu/gotpu/internal/testreq"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// ggufRef is testdata/gguf/<name>.ref.json, written by
// tools/gguf/model_ref.py from transformers loading the same GGUF file.
type ggufRef struct {
	File      string `json:"file"`
	VocabSize int    `json:"vocab_size"`
	Cases     []struct {
		IDs           []int     `json:"ids"`
		TopIDs        []int     `json:"top_ids"`
		TopLogits     []float64 `json:"top_logits"`
		SampleIDs     []int     `json:"sample_ids"`
		SampleLogits  []float64 `json:"sample_logits"`
		Greedy        []int     `json:"greedy"`
		GreedyMargins []float64 `json:"greedy_margins"`
	} `json:"cases"`
}

// ggufFile returns the path of a real GGUF model fetched by
// tools/gguf/fetch.sh; without it the test is skipped, except in CI.
func ggufFile(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("GOTPU_GGUF_DIR")
	if dir == "" {
		cache := os.Getenv("GOTPU_TESTDATA_CACHE")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache", "gotpu-testdata")
		}
		dir = filepath.Join(cache, "gguf")
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		testreq.Missing(t, "%s not found; run tools/gguf/fetch.sh", p)
	}
	return p
}

func readGGUFRef(t *testing.T, name string) *ggufRef {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "gguf", name+".ref.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r ggufRef
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestGGUFParity runs the real SmolLM2-135M and Gemma-3-270M GGUF files
// against transformers loading the same files: last-position logits within
// 1e-3, top-10 ids identical, 32 greedy tokens identical.
func TestGGUFParity(t *testing.T) {
	for _, name := range []string{"smollm2", "gemma3"} {
		t.Run(name, func(t *testing.T) { ggufParity(t, name) })
	}
}

func ggufParity(t *testing.T, name string) {
	ms := modes
	if testing.Short() {
		ms = ms[:1] // Strict in CI; Fused and compiled in the full run
	}
	ggufParityOn(t, name, device.Device{Type: "cpu"}, ms, 0)
}

// ggufParityOn checks one real GGUF model on dev in the given modes, on
// the first cases prompts (0: all).
func ggufParityOn(t *testing.T, name string, dev device.Device, ms []runMode, cases int) {
	ref := readGGUFRef(t, name)
	path := ggufFile(t, ref.File)
	if cases > 0 && cases < len(ref.Cases) {
		ref.Cases = ref.Cases[:cases]
	}
	{
		for _, md := range ms {
			t.Run(md.name, func(t *testing.T) {
				old := tensor.SetMode(md.mode)
				defer tensor.SetMode(old)
				m, err := LoadGGUF(path, Options{Device: dev, DType: dtype.F32})
				if err != nil {
					t.Fatal(err)
				}
				if len(m.Unused) > 0 {
					t.Errorf("unused tensors: %v", m.Unused)
				}
				m.LM.Compiled = md.compiled
				for ci, c := range ref.Cases {
					got, tl, err := m.LM.ForwardLogits([][]int{c.IDs}, 0)
					if err != nil {
						t.Fatal(err)
					}
					last := got[(tl-1)*ref.VocabSize:]
					worst := 0.0
					for i, id := range c.SampleIDs {
						worst = math.Max(worst, math.Abs(float64(last[id])-c.SampleLogits[i]))
					}
					for i, id := range c.TopIDs {
						worst = math.Max(worst, math.Abs(float64(last[id])-c.TopLogits[i]))
					}
					if worst > 1e-3 {
						t.Errorf("case %d: logits differ by %g (> 1e-3)", ci, worst)
					}
					order := make([]int, len(last))
					for i := range order {
						order[i] = i
					}
					slices.SortStableFunc(order, func(a, b int) int {
						switch {
						case last[a] > last[b]:
							return -1
						case last[a] < last[b]:
							return 1
						}
						return 0
					})
					if !slices.Equal(order[:10], c.TopIDs[:10]) {
						t.Errorf("case %d: top-10 %v, want %v", ci, order[:10], c.TopIDs[:10])
					}
					res, err := m.LM.Generate(context.Background(), [][]int{c.IDs}, GenerateOptions{MaxNewTokens: len(c.Greedy)})
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(res.Tokens[0], c.Greedy) {
						t.Errorf("case %d: greedy %v, want %v", ci, res.Tokens[0], c.Greedy)
					}
					t.Logf("case %d: max logit diff %.2e", ci, worst)
				}
			})
		}
	}
}

// TestGGUFTiny loads tiny GGUF files of several architectures, written
// with llama.cpp's conventions by tools/gguf/tiny_gguf.py, and compares
// all-position logits (within 1e-4) and 8 greedy tokens with transformers
// loading the same files.
func TestGGUFTiny(t *testing.T) {
	for _, v := range []string{"llama", "qwen2", "mistral", "gemma2", "gemma3"} {
		t.Run(v, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", "gguf", "tiny")
			b, err := os.ReadFile(filepath.Join(dir, v+".ref.json"))
			if err != nil {
				t.Fatal(err)
			}
			var ref struct {
				ModelType string      `json:"model_type"`
				IDs       []int       `json:"ids"`
				Logits    [][]float32 `json:"logits"`
				Greedy    []int       `json:"greedy"`
			}
			if err := json.Unmarshal(b, &ref); err != nil {
				t.Fatal(err)
			}
			m, err := LoadGGUF(filepath.Join(dir, v+".gguf"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if m.Config.ModelType != ref.ModelType || len(m.Unused) > 0 {
				t.Errorf("model_type %q (transformers: %q), unused %v", m.Config.ModelType, ref.ModelType, m.Unused)
			}
			got, _, err := m.LM.ForwardLogits([][]int{ref.IDs}, 0)
			if err != nil {
				t.Fatal(err)
			}
			var want []float32
			for _, row := range ref.Logits {
				want = append(want, row...)
			}
			compare(t, "logits", got, want, tolF32, nil)
			res, err := m.LM.Generate(context.Background(), [][]int{ref.IDs}, GenerateOptions{MaxNewTokens: len(ref.Greedy)})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Tokens[0], ref.Greedy) {
				t.Errorf("greedy %v, want %v", res.Tokens[0], ref.Greedy)
			}
		})
	}
}

// TestGGUFTinyQwen3 loads the tiny Qwen3 checkpoint written as GGUF (its
// head_dim differs from hidden/heads, which transformers 5.24's GGUF loader
// cannot express) and compares with transformers' run of the original
// checkpoint: the GGUF holds the same f32 weights.
func TestGGUFTinyQwen3(t *testing.T) {
	ref := readReference(t, filepath.Join(refDir, "qwen3"))
	m, err := LoadGGUF(filepath.Join("..", "testdata", "gguf", "tiny", "qwen3.gguf"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkDecoder(t, m.LM, ref, false)
}
