package models

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/hf/tokenizer"
	"github.com/gotpu/gotpu/tensor"
)

// EmbedOptions are the options of EmbedWith.
type EmbedOptions struct {
	// BatchSize is the number of texts per forward pass (0: 32, as
	// sentence-transformers' encode).
	BatchSize int
}

// Embed returns one sentence embedding per text, computed as
// sentence-transformers' encode computes it (see EmbedWith).
func (m *Model) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return m.EmbedWith(ctx, texts, EmbedOptions{})
}

// EmbedWith returns one sentence embedding per text for an encoder model
// (Model.Encoder), following Model.Sentence (DefaultSentenceConfig, mean
// pooling, when Sentence is nil):
//
//  1. each text is lowercased when do_lower_case is set (with Go's
//     strings.ToLower; sentence-transformers prepends the tokenizers
//     library's Lowercase normalizer, which differs on a few characters
//     such as a word-final Σ), then tokenized
//     with the model's tokenizer, special tokens added, and truncated to
//     MaxSeqLength tokens (longest-first, on the tokenizer_config.json
//     side) as sentence-transformers asks its tokenizer to; the
//     tokenizer.json's own truncation and padding settings are replaced, as
//     transformers replaces them;
//  2. texts are sorted by token count and run in batches of BatchSize,
//     right-padded with the pad token and an attention mask;
//  3. the last hidden states of the real tokens are pooled (the pooling
//     modes' results concatenated), in f32;
//  4. with a Normalize module, each vector is divided by its L2 norm
//     (at least 1e-12, as torch.nn.functional.normalize).
//
// Results are in the order of texts. ctx cancels between batches. Errors
// (no encoder or tokenizer, a text longer than the model's positions after
// truncation — a max_seq_length beyond them is only an error for the texts
// that reach it, as in sentence-transformers —, a failing device) are
// returned, never panicked.
func (m *Model) EmbedWith(ctx context.Context, texts []string, o EmbedOptions) (out [][]float32, err error) {
	if m.Encoder == nil {
		return nil, fmt.Errorf("%w: embeddings need an encoder (bert or roberta); this model is %q", ErrUnsupported, m.Config.ModelType)
	}
	if m.Tokenizer == nil {
		return nil, fmt.Errorf("%w: the model has no tokenizer.json to embed text with", ErrModel)
	}
	if o.BatchSize < 0 {
		return nil, fmt.Errorf("%w: batch size %d", ErrModel, o.BatchSize)
	}
	bs := o.BatchSize
	if bs == 0 {
		bs = 32
	}
	sc := m.Sentence
	if sc == nil {
		sc = DefaultSentenceConfig(m.Config)
	}
	if len(sc.Pooling) == 0 || sc.MaxSeqLength <= 0 {
		return nil, fmt.Errorf("%w: sentence config without pooling or max_seq_length: %+v", ErrModel, sc)
	}
	out = make([][]float32, len(texts))
	if len(texts) == 0 {
		return out, nil
	}
	encs, err := m.sentenceTokens(texts, sc)
	if err != nil {
		return nil, err
	}
	order := make([]int, len(encs))
	for i := range order {
		order[i] = i
		if encs[i].Len() == 0 {
			return nil, fmt.Errorf("%w: text %d has no tokens", ErrModel, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return encs[b].Len() - encs[a].Len() })
	pad := int64(0)
	if m.Config.PadTokenID != nil {
		pad = int64(*m.Config.PadTokenID)
	}
	for start := 0; start < len(order); start += bs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch := order[start:min(start+bs, len(order))]
		var vecs [][]float32
		err := tensor.Catch(func() {
			vecs = m.embedBatch(batch, encs, pad, sc)
		})
		if err != nil {
			return nil, fmt.Errorf("%w: embed: %v", ErrModel, err)
		}
		for i, k := range batch {
			out[k] = vecs[i]
		}
	}
	return out, nil
}

// sentenceTokens tokenizes texts as sentence-transformers does for sc:
// lowercased when DoLowerCase, special tokens added, truncated to
// MaxSeqLength, unpadded.
func (m *Model) sentenceTokens(texts []string, sc *SentenceConfig) ([]tokenizer.Encoding, error) {
	// A copy of the tokenizer with sentence-transformers' settings; the
	// model's own stays as loaded.
	tok := *m.Tokenizer
	dir := "Right"
	if sc.TruncateLeft {
		dir = "Left"
	}
	if err := tok.SetTruncation(&tokenizer.Truncation{MaxLength: sc.MaxSeqLength, Strategy: tokenizer.LongestFirst, Direction: dir}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrModel, err)
	}
	tok.SetPadding(nil)
	in := texts
	if sc.DoLowerCase {
		in = make([]string, len(texts))
		for i, t := range texts {
			in[i] = strings.ToLower(t)
		}
	}
	encs, err := tok.EncodeBatch(in, true)
	if err != nil {
		return nil, fmt.Errorf("%w: tokenize: %v", ErrModel, err)
	}
	return encs, nil
}

// embedBatch runs the encoder on the encodings encs[batch] and pools.
func (m *Model) embedBatch(batch []int, encs []tokenizer.Encoding, pad int64, sc *SentenceConfig) [][]float32 {
	e := m.Encoder
	dev := e.word.Device()
	b, t := len(batch), 0
	for _, k := range batch {
		t = max(t, encs[k].Len())
	}
	ids := make([]int64, b*t)
	mask := make([]int64, b*t)
	types := make([]int64, b*t)
	lens := make([]int, b)
	for i, k := range batch {
		enc := &encs[k]
		lens[i] = enc.Len()
		for j := 0; j < t; j++ {
			if j < enc.Len() {
				ids[i*t+j] = int64(enc.IDs[j])
				mask[i*t+j] = 1
				if j < len(enc.TypeIDs) {
					types[i*t+j] = int64(enc.TypeIDs[j])
				}
			} else {
				ids[i*t+j] = pad
			}
		}
	}
	for _, id := range ids {
		if id < 0 || int(id) >= m.Config.VocabSize {
			panic(&tensor.Error{Op: "models.Embed", Msg: fmt.Sprintf("token id %d outside the vocabulary [0, %d)", id, m.Config.VocabSize)})
		}
	}
	var tt *tensor.Tensor
	if e.types != nil {
		tt = tensor.FromSlice(dev, types, b, t)
	}
	maskT := tensor.FromSlice(dev, mask, b, t)
	hidden := e.Forward(tensor.FromSlice(dev, ids, b, t), maskT, tt)
	pooled := pool(hidden, maskT, lens, sc.Pooling).Float32s()
	d := len(pooled) / b
	vecs := make([][]float32, b)
	for i := range vecs {
		v := pooled[i*d : (i+1)*d : (i+1)*d]
		if sc.Normalize {
			normalize(v)
		}
		vecs[i] = v
	}
	return vecs
}

// pool reduces hidden [B, T, H] over the real tokens (mask [B, T], lens the
// real tokens of each row, right-padded) to [B, len(modes)·H] f32, as
// sentence-transformers' Pooling does.
func pool(hidden, mask *tensor.Tensor, lens []int, modes []PoolingMode) *tensor.Tensor {
	b, t, h := hidden.Size(0), hidden.Size(1), hidden.Size(2)
	x := hidden.ToDType(dtype.F32)
	dev := x.Device()
	f := mask.ToDType(dtype.F32).Unsqueeze(-1) // [B, T, 1]
	var outs []*tensor.Tensor
	var sum, count *tensor.Tensor
	rows := func(pos func(i int) int) *tensor.Tensor {
		idx := make([]int64, b)
		for i := range idx {
			idx[i] = int64(i*t + pos(i))
		}
		return x.Reshape(b*t, h).IndexSelect(0, tensor.FromSlice(dev, idx, b))
	}
	for _, mode := range modes {
		switch mode {
		case PoolCLS:
			outs = append(outs, rows(func(int) int { return 0 }))
		case PoolLastToken:
			outs = append(outs, rows(func(i int) int { return lens[i] - 1 }))
		case PoolMax:
			v, _ := x.MaskedFill(f.EqScalar(0), math.Inf(-1)).MaxDim(1, false)
			outs = append(outs, v)
		case PoolMean, PoolMeanSqrtLen:
			if sum == nil {
				sum = x.Mul(f).Sum([]int{1}, false)
				count = f.Sum([]int{1}, false).ClampMin(1e-9)
			}
			if mode == PoolMean {
				outs = append(outs, sum.Div(count))
			} else {
				outs = append(outs, sum.Div(count.Sqrt()))
			}
		case PoolWeightedMean:
			w := tensor.Arange(dev, 1, t+1, 1, dtype.F32).Reshape(1, t, 1).Mul(f)
			outs = append(outs, x.Mul(w).Sum([]int{1}, false).Div(w.Sum([]int{1}, false).ClampMin(1e-9)))
		default:
			panic(&tensor.Error{Op: "models.Embed", Msg: fmt.Sprintf("pooling mode %q", mode)})
		}
	}
	if len(outs) == 1 {
		return outs[0]
	}
	return tensor.Cat(outs, -1)
}

// normalize divides v by max(‖v‖₂, 1e-12) in place.
func normalize(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	n := max(math.Sqrt(ss), 1e-12)
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
}
