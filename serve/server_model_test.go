package serve

import (
	"encoding/json"
	"github.com/gotpu/gotpu/internal/testreq"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/models"
)

// miniLMDir is where tools/stref/fetch_minilm.sh puts all-MiniLM-L6-v2
// (GOTPU_MINILM_DIR overrides it), as in models/embed_test.go.
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

// TestEmbeddingsMiniLM serves the real all-MiniLM-L6-v2 on /v1/embeddings
// and checks the vectors against sentence-transformers'
// (testdata/models/minilm_expected.json) and the usage against the
// tokens the model read (truncated to max_seq_length).
func TestEmbeddingsMiniLM(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: embedding with the real MiniLM takes ~10 s")
	}
	dir := miniLMDir()
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err != nil {
		msg := "all-MiniLM-L6-v2 not found in " + dir + "; run tools/stref/fetch_minilm.sh"
		testreq.Missing(t, "%s", msg)
	}
	data, err := os.ReadFile(filepath.Join("..", "testdata", "models", "minilm_expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Sentences  []string    `json:"sentences"`
		InputIDs   [][]int     `json:"input_ids"` // what the model saw (truncated)
		Embeddings [][]float64 `json:"embeddings"`
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	m, err := models.LoadPath(dir, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewModelEmbedder(m)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(ServerOptions{EmbedModelName: "all-MiniLM-L6-v2", Embedder: e})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(ref.Sentences)
	w := do(t, s, "POST", "/v1/embeddings", `{"model":"all-MiniLM-L6-v2","input":`+string(in)+`}`)
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
		Usage embeddingUsage `json:"usage"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	tokens := 0
	for _, ids := range ref.InputIDs {
		tokens += len(ids)
	}
	if out.Usage.PromptTokens != tokens || len(out.Data) != len(ref.Sentences) {
		t.Errorf("usage %+v (want %d tokens), %d embeddings", out.Usage, tokens, len(out.Data))
	}
	worst := 1.0
	for i, d := range out.Data {
		want := ref.Embeddings[d.Index]
		var dot, a, b float64
		for j := range want {
			dot += d.Embedding[j] * want[j]
			a += d.Embedding[j] * d.Embedding[j]
			b += want[j] * want[j]
		}
		c := dot / math.Sqrt(a*b)
		if d.Index != i || !(c >= 0.99999) {
			t.Errorf("embedding %d (%.30q): index %d, cosine %.7f", i, ref.Sentences[i], d.Index, c)
		}
		worst = min(worst, c)
	}
	t.Logf("%d sentences, min cosine %.8f", len(out.Data), worst)
	// Without a language model the completion endpoints answer 404.
	if w := do(t, s, "POST", "/v1/completions", `{"prompt":"x"}`); w.Code != 404 || !strings.Contains(w.Body.String(), "model_not_found") {
		t.Errorf("completions without a model: %d %s", w.Code, w.Body)
	}
}
