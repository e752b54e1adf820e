package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/gotpu/gotpu/hf/tokenizer"
	"github.com/gotpu/gotpu/models"
)

// HFTokenizer adapts a Hugging Face tokenizer (safe for concurrent use
// once loaded) to the API's Tokenizer.
func HFTokenizer(t *tokenizer.Tokenizer) Tokenizer { return hfTokenizer{t} }

type hfTokenizer struct{ t *tokenizer.Tokenizer }

func (h hfTokenizer) Encode(text string, addSpecial bool) ([]int, error) {
	e, err := h.t.TryEncode(text, addSpecial)
	if err != nil {
		return nil, err
	}
	return e.IDs, nil
}

func (h hfTokenizer) Decode(ids []int, skipSpecial bool) (string, error) {
	return h.t.Decode(ids, skipSpecial)
}

// ModelEmbedder serves /v1/embeddings with a sentence-embedding model
// (models.Model with an Encoder), one batch at a time.
type ModelEmbedder struct {
	m   *models.Model
	tok *tokenizer.Tokenizer // m's, without padding or truncation, for CountTokens
	mu  sync.Mutex
	// BatchSize is the number of texts per forward pass (0: 32).
	BatchSize int
}

// NewModelEmbedder checks that m can embed text.
func NewModelEmbedder(m *models.Model) (*ModelEmbedder, error) {
	if m.Encoder == nil {
		return nil, errors.New("serve: the embedding model is not an encoder (bert, roberta)")
	}
	if m.Tokenizer == nil {
		return nil, errors.New("serve: the embedding model has no tokenizer.json")
	}
	tok := *m.Tokenizer
	tok.SetPadding(nil)
	if err := tok.SetTruncation(nil); err != nil {
		return nil, fmt.Errorf("serve: the embedding model's tokenizer: %w", err)
	}
	return &ModelEmbedder{m: m, tok: &tok}, nil
}

// Embed embeds texts as models.Model.EmbedWith does.
func (e *ModelEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.m.EmbedWith(ctx, texts, models.EmbedOptions{BatchSize: e.BatchSize})
}

// CountTokens is the number of tokens the model reads of text (special
// tokens included, truncated to max_seq_length).
func (e *ModelEmbedder) CountTokens(text string) (int, error) {
	sc := e.m.Sentence
	if sc != nil && sc.DoLowerCase {
		text = strings.ToLower(text)
	}
	enc, err := e.tok.TryEncode(text, true)
	if err != nil {
		return 0, err
	}
	n := len(enc.IDs)
	if sc != nil && sc.MaxSeqLength > 0 && n > sc.MaxSeqLength {
		n = sc.MaxSeqLength
	}
	return n, nil
}
