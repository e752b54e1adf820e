package sample

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"testing"
)

// The golden file is written by tools/modelref/sample_gen.py from
// transformers' own LogitsProcessor classes; see that script.

type goldenResult struct {
	Removed string `json:"removed"`
	NKept   int    `json:"n_kept"`
	Kept    string `json:"kept"`
	Argmax  int    `json:"argmax"`
}

type goldenCase struct {
	Name       string             `json:"name"`
	Logits     int                `json:"logits"`
	Via        string             `json:"via"`
	Processors []string           `json:"processors"`
	Params     map[string]float64 `json:"params"`
	Prompt     []int              `json:"prompt"`
	Generated  []int              `json:"generated"`
	goldenResult
	Stable *goldenResult `json:"stable"`
}

type goldenFile struct {
	Reference map[string]string `json:"reference"`
	Logits    []struct {
		Name  string `json:"name"`
		Vocab int    `json:"vocab"`
		F32   string `json:"f32"`
	} `json:"logits"`
	Cases []goldenCase `json:"cases"`
}

func decodeF32(t *testing.T, s string) []float32 {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		t.Fatalf("bad float32 base64: %v", err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func decodeBits(t *testing.T, s string, n int) []bool {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != (n+7)/8 {
		t.Fatalf("bad bitmask base64 for %d bits: %v", n, err)
	}
	out := make([]bool, n)
	for i := range out {
		out[i] = b[i/8]>>(i%8)&1 != 0
	}
	return out
}

func loadGolden(t *testing.T) (goldenFile, [][]float32) {
	t.Helper()
	raw, err := os.ReadFile("testdata/processors.json")
	if err != nil {
		t.Fatal(err)
	}
	var g goldenFile
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	var logits [][]float32
	for _, l := range g.Logits {
		v := decodeF32(t, l.F32)
		if len(v) != l.Vocab {
			t.Fatalf("logits %s: %d values, want %d", l.Name, len(v), l.Vocab)
		}
		logits = append(logits, v)
	}
	return g, logits
}

// paramsOf maps a golden case to Params: processors applied alone use the
// defaults for everything else; "generate" cases give every knob.
func paramsOf(c goldenCase) Params {
	p := DefaultParams()
	get := func(k string, def float64) float64 {
		if v, ok := c.Params[k]; ok {
			return v
		}
		return def
	}
	p.Temperature = get("temperature", 1)
	p.TopK = int(get("top_k", 0))
	p.TopP = get("top_p", 1)
	p.MinP = get("min_p", 0)
	p.RepetitionPenalty = get("repetition_penalty", 1)
	p.PresencePenalty = get("presence_penalty", 0)
	p.FrequencyPenalty = get("frequency_penalty", 0)
	return p
}

// closeF32 is torch.testing.assert_close's float32 default.
func closeF32(got, want float32) bool {
	d := math.Abs(float64(got) - float64(want))
	return d <= 1e-5+1.3e-6*math.Abs(float64(want))
}

// checkResult compares processed scores with a golden result: the same -Inf
// set exactly, the finite values within tolerance.
func checkResult(t *testing.T, got []float32, want goldenResult) {
	t.Helper()
	removed := decodeBits(t, want.Removed, len(got))
	kept := decodeF32(t, want.Kept)
	if len(kept) != want.NKept {
		t.Fatalf("golden kept %d values, n_kept %d", len(kept), want.NKept)
	}
	k, bad := 0, 0
	for i, v := range got {
		isInf := math.IsInf(float64(v), -1)
		if isInf != removed[i] {
			if bad++; bad <= 5 {
				t.Errorf("token %d: got %v, transformers removed=%v", i, v, removed[i])
			}
			if !removed[i] {
				k++
			}
			continue
		}
		if !isInf {
			if !closeF32(v, kept[k]) {
				if bad++; bad <= 5 {
					t.Errorf("token %d: got %v, transformers %v", i, v, kept[k])
				}
			}
			k++
		}
	}
	if bad > 5 {
		t.Errorf("... %d mismatches in all", bad)
	}
}

// forcePaths runs f once with the default thresholds and once with each
// fast path forced on and off.
func forcePaths(t *testing.T, f func(t *testing.T)) {
	defer func(k, p int) { topKHeapMax, topPSortMax = k, p }(topKHeapMax, topPSortMax)
	for _, th := range []struct {
		name string
		k, p int
	}{{"default", topKHeapMax, topPSortMax}, {"radix+buckets", 0, 0}, {"heap+sort", math.MaxInt, math.MaxInt}} {
		topKHeapMax, topPSortMax = th.k, th.p
		t.Run(th.name, f)
	}
}

func TestGoldenProcessors(t *testing.T) {
	g, logits := loadGolden(t)
	if len(g.Cases) < 30 {
		t.Fatalf("only %d golden cases", len(g.Cases))
	}
	t.Logf("reference: %v", g.Reference)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			p := paramsOf(c)
			s, err := New(p)
			if err != nil {
				t.Fatal(err)
			}
			in := logits[c.Logits]
			forcePaths(t, func(t *testing.T) {
				got, err := s.Process(nil, in, c.Prompt, c.Generated)
				if err != nil {
					t.Fatal(err)
				}
				if c.Stable == nil {
					checkResult(t, got, c.goldenResult)
				} else {
					// Ties straddle the top-p cut and torch's unstable
					// CPU sort orders them its own way: match the stable
					// order exactly, and transformers' own result up to
					// which of the tied tokens survive.
					checkResult(t, got, *c.Stable)
					q := p
					q.TopP, q.MinP = 1, 0
					sq, err := New(q)
					if err != nil {
						t.Fatal(err)
					}
					pre, err := sq.Process(nil, in, c.Prompt, c.Generated)
					if err != nil {
						t.Fatal(err)
					}
					checkTiePermutation(t, got, pre, decodeBits(t, c.Removed, len(got)), c.NKept)
				}
				if p.IsGreedy() {
					tok, err := s.Next(in, c.Prompt, c.Generated)
					if err != nil || tok != c.Argmax {
						t.Errorf("greedy Next = %d, %v; transformers argmax %d", tok, err, c.Argmax)
					}
				}
			})
		})
	}
}

// checkTiePermutation checks that got keeps as many tokens as transformers
// (removed is its -Inf set) and that every token on which they disagree has
// the same value in pre, the scores before the top-p cut.
func checkTiePermutation(t *testing.T, got, pre []float32, removed []bool, nKept int) {
	t.Helper()
	n, diff := 0, 0
	var tie float32
	for i, v := range got {
		isInf := math.IsInf(float64(v), -1)
		if !isInf {
			n++
		}
		if isInf == removed[i] {
			continue
		}
		if diff == 0 {
			tie = pre[i]
		} else if pre[i] != tie {
			t.Errorf("token %d (%v) differs from transformers outside the tie at %v", i, pre[i], tie)
		}
		diff++
	}
	if n != nKept {
		t.Errorf("kept %d tokens, transformers %d", n, nKept)
	}
	if diff == 0 {
		t.Logf("no disagreement with torch's unstable sort this time")
	}
}
