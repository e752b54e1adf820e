package models

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/gotpu/gotpu/internal/testreq"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/hf/config"
	st "github.com/gotpu/gotpu/hf/safetensors"
	"github.com/gotpu/gotpu/hf/tokenizer"
	"github.com/gotpu/gotpu/tensor"
)

// MiniLMDir is where tools/stref/fetch_minilm.sh puts all-MiniLM-L6-v2
// (GOTPU_MINILM_DIR overrides it, GOTPU_TESTDATA_CACHE moves the cache).
func miniLMDir() string {
	if d := os.Getenv("GOTPU_MINILM_DIR"); d != "" {
		return d
	}
	cache := os.Getenv("GOTPU_TESTDATA_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "gotpu-testdata")
	}
	return filepath.Join(cache, "all-MiniLM-L6-v2")
}

// needMiniLM returns the MiniLM directory. Under CI (CI=true) a missing
// model fails the test, since .ci/run fetches it first; elsewhere the test
// skips, naming the fetch script.
func needMiniLM(t *testing.T) string {
	t.Helper()
	dir := miniLMDir()
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err != nil {
		msg := "all-MiniLM-L6-v2 not found in " + dir + "; run tools/stref/fetch_minilm.sh (honours GOTPU_TESTDATA_CACHE) to download it"
		testreq.Missing(t, "%s", msg)
	}
	return dir
}

// miniLMRef is testdata/models/minilm_expected.json: sentence-transformers'
// embeddings of the sentences (tools/modelref/minilm.py).
type miniLMRef struct {
	Sentences    []string    `json:"sentences"`
	InputIDs     [][]int     `json:"input_ids"`
	Embeddings   [][]float64 `json:"embeddings"`
	MaxSeqLength int         `json:"max_seq_length"`
}

func cosine(a []float32, b []float64) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * b[i]
		aa += float64(a[i]) * float64(a[i])
		bb += b[i] * b[i]
	}
	return ab / math.Sqrt(aa*bb)
}

// TestEmbedMiniLM embeds the reference sentences with the real
// all-MiniLM-L6-v2 (mean pooling, Normalize, max_seq_length 256 from its
// sentence-transformers files) and requires cosine similarity ≥ 0.99999
// with sentence-transformers' embedding of every sentence, whatever the
// batch size (4: the longest sentences padded together; 1: none padded).
func TestEmbedMiniLM(t *testing.T) {
	dir := needMiniLM(t)
	data, err := os.ReadFile(filepath.Join("..", "testdata", "models", "minilm_expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref miniLMRef
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	m, err := Load(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sc := m.Sentence
	if sc == nil || !sc.FromModules || len(sc.Pooling) != 1 || sc.Pooling[0] != PoolMean || !sc.Normalize || sc.MaxSeqLength != ref.MaxSeqLength {
		t.Fatalf("sentence config %+v, want mean pooling, normalized, max_seq_length %d", sc, ref.MaxSeqLength)
	}
	// The tokens the model sees (truncated to max_seq_length) are
	// sentence-transformers'.
	encs, err := m.sentenceTokens(ref.Sentences, sc)
	if err != nil {
		t.Fatal(err)
	}
	if len(ref.InputIDs) != len(ref.Sentences) {
		t.Fatalf("reference has %d input_ids for %d sentences", len(ref.InputIDs), len(ref.Sentences))
	}
	for i, e := range encs {
		if !reflect.DeepEqual(e.IDs, ref.InputIDs[i]) {
			t.Errorf("sentence %d %.40q: ids %v, want %v", i, ref.Sentences[i], e.IDs, ref.InputIDs[i])
		}
	}
	for _, bs := range []int{4, 1} {
		got, err := m.EmbedWith(context.Background(), ref.Sentences, EmbedOptions{BatchSize: bs})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(ref.Sentences) {
			t.Fatalf("%d embeddings for %d sentences", len(got), len(ref.Sentences))
		}
		worst := 1.0
		for i, v := range got {
			if len(v) != 384 {
				t.Fatalf("embedding %d has %d values", i, len(v))
			}
			c := cosine(v, ref.Embeddings[i])
			if !(c >= 0.99999) {
				t.Errorf("batch size %d: sentence %d %.40q: cosine %.7f < 0.99999", bs, i, ref.Sentences[i], c)
			}
			worst = min(worst, c)
		}
		t.Logf("batch size %d: %d sentences, min cosine %.8f", bs, len(got), worst)
	}
}

// tinyEmbedder is the tiny BERT checkpoint with a word-level tokenizer
// (the words w0..w127 are the ids) and the given sentence config.
func tinyEmbedder(t *testing.T, family string, sc *SentenceConfig) *Model {
	t.Helper()
	m := loadTiny(t, family, Options{})
	m.Sentence = sc
	m.Tokenizer = wordTokenizer(t, m.Config)
	return m
}

// TestEmbedPooling checks each pooling mode's arithmetic on the tiny BERT
// against the same reduction done by hand on Encoder.Forward's states, and
// that batching, padding and the order of texts do not change a result.
func TestEmbedPooling(t *testing.T) {
	texts := []string{"w5 w9 w17 w3", "w40", "w7 w7 w8 w100 w101 w2 w64", ""}
	for _, family := range []string{"bert", "roberta"} {
		for _, mode := range []PoolingMode{PoolCLS, PoolMax, PoolMean, PoolMeanSqrtLen, PoolWeightedMean, PoolLastToken} {
			sc := &SentenceConfig{Pooling: []PoolingMode{mode}, MaxSeqLength: 16}
			m := tinyEmbedder(t, family, sc)
			got, err := m.EmbedWith(context.Background(), texts, EmbedOptions{BatchSize: 3})
			if err != nil {
				t.Fatal(err)
			}
			h := m.Config.HiddenSize
			// The tokenizer.json's truncation to 2 and padding to 64 are
			// what Embed must replace; the reference encodes without them.
			plain := *m.Tokenizer
			plain.SetTruncation(nil)
			plain.SetPadding(nil)
			for i, text := range texts {
				enc := plain.Encode(text, true)
				ids := make([]int64, enc.Len())
				for j, id := range enc.IDs {
					ids[j] = int64(id)
				}
				var states []float32
				if err := tensor.Catch(func() {
					states = m.Encoder.Forward(tensor.FromSlice(cpu, ids, 1, len(ids)), nil, nil).Float32s()
				}); err != nil {
					t.Fatal(err)
				}
				want := make([]float32, h)
				n := len(ids)
				for d := 0; d < h; d++ {
					var acc, wsum float64
					best := math.Inf(-1)
					for j := 0; j < n; j++ {
						v := float64(states[j*h+d])
						acc += v
						best = max(best, v)
						wsum += float64(j+1) * v
					}
					switch mode {
					case PoolCLS:
						want[d] = states[d]
					case PoolLastToken:
						want[d] = states[(n-1)*h+d]
					case PoolMax:
						want[d] = float32(best)
					case PoolMean:
						want[d] = float32(acc / float64(n))
					case PoolMeanSqrtLen:
						want[d] = float32(acc / math.Sqrt(float64(n)))
					case PoolWeightedMean:
						want[d] = float32(wsum / float64(n*(n+1)/2))
					}
				}
				allClose(t, family+" "+string(mode)+" "+text, got[i], want, 1e-5, 1e-5, nil)
			}
		}
	}
}

// TestEmbedConcatNormalize: several modes concatenate in order, Normalize
// makes unit vectors, and do_lower_case lowercases before tokenizing.
func TestEmbedConcatNormalize(t *testing.T) {
	m := tinyEmbedder(t, "bert", &SentenceConfig{Pooling: []PoolingMode{PoolCLS, PoolMean}, MaxSeqLength: 16})
	texts := []string{"w1 w2 w3", "w4"}
	cat, err := m.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	m.Sentence = &SentenceConfig{Pooling: []PoolingMode{PoolCLS}, MaxSeqLength: 16}
	cls, _ := m.Embed(context.Background(), texts)
	m.Sentence = &SentenceConfig{Pooling: []PoolingMode{PoolMean}, MaxSeqLength: 16}
	mean, _ := m.Embed(context.Background(), texts)
	for i := range texts {
		allClose(t, "concat", cat[i], append(append([]float32{}, cls[i]...), mean[i]...), 0, 0, nil)
	}
	m.Sentence = &SentenceConfig{Pooling: []PoolingMode{PoolMean}, MaxSeqLength: 16, Normalize: true, DoLowerCase: true}
	norm, err := m.Embed(context.Background(), []string{"W1 W2 W3", "W4"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		var ss float64
		for _, v := range norm[i] {
			ss += float64(v) * float64(v)
		}
		if math.Abs(ss-1) > 1e-5 {
			t.Errorf("|v|² = %g", ss)
		}
		if c := cosine(norm[i], f64(mean[i])); c < 0.999999 {
			t.Errorf("normalized lowercased embedding differs from the mean: cosine %g", c)
		}
	}
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// TestEmbedTruncation: texts longer than MaxSeqLength keep their first
// MaxSeqLength tokens, special tokens included; a text longer than the
// model's positions is an error.
func TestEmbedTruncation(t *testing.T) {
	m := tinyEmbedder(t, "bert", &SentenceConfig{Pooling: []PoolingMode{PoolMean}, MaxSeqLength: 5})
	long, err := m.Embed(context.Background(), []string{"w10 w11 w12 w13 w14 w15 w16"})
	if err != nil {
		t.Fatal(err)
	}
	m.Sentence.MaxSeqLength = 16
	short, err := m.Embed(context.Background(), []string{"w10 w11 w12"})
	if err != nil {
		t.Fatal(err)
	}
	allClose(t, "truncated", long[0], short[0], 1e-6, 1e-6, nil)
	// A max_seq_length beyond the model's positions fails only the texts
	// that reach them, as in sentence-transformers.
	m.Sentence.MaxSeqLength = 1000
	if _, err := m.Embed(context.Background(), []string{"w1"}); err != nil {
		t.Errorf("short text, max_seq_length beyond the positions: %v", err)
	}
	words := strings.Repeat("w9 ", m.Config.MaxPositions)
	if _, err := m.Embed(context.Background(), []string{"w1", words}); err == nil || !strings.Contains(err.Error(), "positions") {
		t.Errorf("text beyond the positions: %v", err)
	}
}

// TestEmbedErrors: misuse returns errors, never panics.
func TestEmbedErrors(t *testing.T) {
	m := tinyEmbedder(t, "bert", nil)
	ctx := context.Background()
	if out, err := m.Embed(ctx, nil); err != nil || len(out) != 0 {
		t.Errorf("no texts: %v %v", out, err)
	}
	// The default configuration (no modules.json): mean pooling.
	if out, err := m.Embed(ctx, []string{"w1 w2"}); err != nil || len(out[0]) != m.Config.HiddenSize {
		t.Errorf("default pooling: %v", err)
	}
	if _, err := m.EmbedWith(ctx, []string{"w1"}, EmbedOptions{BatchSize: -1}); err == nil {
		t.Error("negative batch size accepted")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.Embed(cancelled, []string{"w1"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	m.Sentence = &SentenceConfig{Pooling: []PoolingMode{"median"}, MaxSeqLength: 8}
	if _, err := m.Embed(ctx, []string{"w1"}); err == nil || !strings.Contains(err.Error(), "median") {
		t.Errorf("unknown pooling mode: %v", err)
	}
	m.Sentence = nil
	tok := m.Tokenizer
	m.Tokenizer = nil
	if _, err := m.Embed(ctx, []string{"w1"}); !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), "tokenizer") {
		t.Errorf("no tokenizer: %v", err)
	}
	m.Tokenizer = tok
	enc := m.Encoder
	m.Encoder = nil
	if _, err := m.Embed(ctx, []string{"w1"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("no encoder: %v", err)
	}
	m.Encoder = enc
	// A tokenizer whose ids exceed the model's vocabulary.
	big := *m.Config
	big.VocabSize = 1000
	m.Tokenizer = wordTokenizer(t, &big)
	if _, err := m.Embed(ctx, []string{"w999"}); err == nil || !strings.Contains(err.Error(), "vocabulary") {
		t.Errorf("id out of range: %v", err)
	}
}

// TestSentenceConfig reads sentence-transformers' files: legacy and new
// pooling keys, Normalize, max_seq_length, tokenizer_config.json, and the
// errors for what gotpu does not run.
func TestSentenceConfig(t *testing.T) {
	cfgData, err := os.ReadFile(filepath.Join("..", "testdata", "models", "bert", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(cfgData)
	if err != nil {
		t.Fatal(err)
	}
	h := c.HiddenSize
	transformer := map[string]any{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}
	pooling := map[string]any{"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}
	normalize := map[string]any{"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
	dense := map[string]any{"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}
	type files map[string]any
	write := func(fs files) string {
		dir := t.TempDir()
		for name, v := range fs {
			p := filepath.Join(dir, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			var data []byte
			if s, ok := v.(string); ok {
				data = []byte(s)
			} else {
				data, _ = json.Marshal(v)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tc := range []struct {
		name  string
		files files
		want  *SentenceConfig
		err   error
		say   string
	}{
		{"no modules.json: mean", files{}, &SentenceConfig{Pooling: []PoolingMode{PoolMean}, MaxSeqLength: c.MaxPositions}, nil, ""},
		{"tokenizer_config caps", files{"tokenizer_config.json": map[string]any{"model_max_length": 32, "truncation_side": "left"}},
			&SentenceConfig{Pooling: []PoolingMode{PoolMean}, MaxSeqLength: 32, TruncateLeft: true}, nil, ""},
		{"huge model_max_length", files{"tokenizer_config.json": map[string]any{"model_max_length": 1e30}},
			&SentenceConfig{Pooling: []PoolingMode{PoolMean}, MaxSeqLength: c.MaxPositions}, nil, ""},
		{"legacy cls + normalize", files{
			"modules.json":              []any{transformer, pooling, normalize},
			"1_Pooling/config.json":     map[string]any{"word_embedding_dimension": h, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false},
			"sentence_bert_config.json": map[string]any{"max_seq_length": 40, "do_lower_case": true}},
			&SentenceConfig{FromModules: true, Pooling: []PoolingMode{PoolCLS}, Normalize: true, MaxSeqLength: 40, DoLowerCase: true}, nil, ""},
		{"legacy several, none", files{
			"modules.json":          []any{pooling, transformer},
			"1_Pooling/config.json": map[string]any{"pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": true, "pooling_mode_lasttoken": false}},
			&SentenceConfig{FromModules: true, Pooling: []PoolingMode{PoolMax, PoolMean}, MaxSeqLength: c.MaxPositions}, nil, ""},
		{"legacy all false means mean", files{
			"modules.json":          []any{transformer, pooling},
			"1_Pooling/config.json": map[string]any{"pooling_mode_cls_token": false}},
			&SentenceConfig{FromModules: true, Pooling: []PoolingMode{PoolMean}, MaxSeqLength: c.MaxPositions}, nil, ""},
		{"new pooling_mode list", files{
			"modules.json":          []any{transformer, pooling},
			"1_Pooling/config.json": map[string]any{"embedding_dimension": h, "pooling_mode": []string{"lasttoken", "weightedmean"}}},
			&SentenceConfig{FromModules: true, Pooling: []PoolingMode{PoolLastToken, PoolWeightedMean}, MaxSeqLength: c.MaxPositions}, nil, ""},
		{"unknown pooling mode", files{
			"modules.json":          []any{transformer, pooling},
			"1_Pooling/config.json": map[string]any{"pooling_mode": "median"}}, nil, ErrUnsupported, "median"},
		{"unknown legacy key", files{
			"modules.json":          []any{transformer, pooling},
			"1_Pooling/config.json": map[string]any{"pooling_mode_median_tokens": true}}, nil, ErrUnsupported, "pooling_mode_median_tokens"},
		{"wrong dimension", files{
			"modules.json":          []any{transformer, pooling},
			"1_Pooling/config.json": map[string]any{"word_embedding_dimension": h + 1}}, nil, ErrModel, "hidden_size"},
		{"missing pooling config", files{"modules.json": []any{transformer, pooling}}, nil, ErrModel, "1_Pooling"},
		{"dense module", files{
			"modules.json":          []any{transformer, pooling, dense},
			"1_Pooling/config.json": map[string]any{}}, nil, ErrUnsupported, "Dense"},
		{"no pooling", files{"modules.json": []any{transformer}}, nil, ErrUnsupported, "Pooling"},
		{"transformer in a subfolder", files{"modules.json": []any{map[string]any{"idx": 0, "name": "0", "path": "0_Transformer", "type": "sentence_transformers.models.Transformer"}, pooling}},
			nil, ErrUnsupported, "0_Transformer"},
		{"malformed modules.json", files{"modules.json": "[{"}, nil, ErrModel, "modules.json"},
		{"bad max_seq_length", files{
			"modules.json":              []any{transformer, pooling},
			"1_Pooling/config.json":     map[string]any{},
			"sentence_bert_config.json": map[string]any{"max_seq_length": 0}}, nil, ErrModel, "max_seq_length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadSentenceConfig(write(tc.files), c)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.say) {
					t.Errorf("err = %v, want %v mentioning %q", err, tc.err, tc.say)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !sameSentence(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func sameSentence(a, b *SentenceConfig) bool { return reflect.DeepEqual(a, b) }

// TestLoadEncoderDir: Load reads the sentence-transformers files next to an
// encoder checkpoint and fails on an unsupported one.
func TestLoadEncoderDir(t *testing.T) {
	dir := rewrite(t, "roberta", func(*st.Tensor) {})
	m, err := Load(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Sentence == nil || m.Sentence.FromModules || m.Sentence.MaxSeqLength != m.Config.MaxPositions-2 {
		t.Errorf("default sentence config %+v (RoBERTa: positions minus padding_idx+1)", m.Sentence)
	}
	os.WriteFile(filepath.Join(dir, "modules.json"), []byte(`[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}]`), 0o644)
	os.MkdirAll(filepath.Join(dir, "1_Pooling"), 0o755)
	os.WriteFile(filepath.Join(dir, "1_Pooling", "config.json"), []byte(`{"pooling_mode": "centroid"}`), 0o644)
	if _, err := Load(dir, Options{}); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "centroid") {
		t.Errorf("unsupported pooling: %v", err)
	}
}

// wordTokenizer is a word-level tokenizer.json for the tiny checkpoints:
// "wN" is id N (N < c.VocabSize), anything else is w0, and sequences are
// framed as "w3 … w4" (a [CLS] / [SEP] pair).
func wordTokenizer(t *testing.T, c *config.Config) *tokenizer.Tokenizer {
	t.Helper()
	vocab := map[string]int{}
	for i := 0; i < c.VocabSize; i++ {
		vocab["w"+strconv.Itoa(i)] = i
	}
	spec := map[string]any{
		"version":       "1.0",
		"normalizer":    nil,
		"pre_tokenizer": map[string]any{"type": "WhitespaceSplit"},
		"model":         map[string]any{"type": "WordLevel", "vocab": vocab, "unk_token": "w0"},
		"decoder":       nil,
		"added_tokens":  []any{},
		"truncation":    map[string]any{"max_length": 2, "strategy": "LongestFirst", "stride": 0},
		"padding":       map[string]any{"strategy": map[string]any{"Fixed": 64}, "direction": "Right", "pad_id": 0, "pad_type_id": 0, "pad_token": "w0"},
		"post_processor": map[string]any{
			"type":           "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 0}}},
			"pair":           []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
			"special_tokens": map[string]any{"[CLS]": map[string]any{"id": "[CLS]", "ids": []int{3}, "tokens": []string{"w3"}}, "[SEP]": map[string]any{"id": "[SEP]", "ids": []int{4}, "tokens": []string{"w4"}}},
		},
	}
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
