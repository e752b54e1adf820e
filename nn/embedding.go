package nn

import (
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// EmbeddingOpts are torch.nn.Embedding's optional arguments.
type EmbeddingOpts struct {
	// PaddingIdx (used when HasPaddingIdx) is a row that starts at zero and
	// gets no gradient; a negative value counts from the end.
	PaddingIdx    int
	HasPaddingIdx bool
}

// Embedding is a lookup table of NumEmbeddings rows of EmbeddingDim values
// (torch.nn.Embedding); Weight starts as N(0, 1) with the padding row zero.
type Embedding struct {
	Base
	NumEmbeddings, EmbeddingDim int
	// PaddingIdx is the normalised padding row, or -1 for none.
	PaddingIdx int
	Weight     *tensor.Tensor
}

// NewEmbedding returns an Embedding on dev.
func NewEmbedding(dev device.Device, num, dim int, eo EmbeddingOpts, opts ...Option) *Embedding {
	nonNegative("Embedding", "num_embeddings and embedding_dim", num, dim)
	o := makeOptions(opts)
	m := &Embedding{NumEmbeddings: num, EmbeddingDim: dim, PaddingIdx: -1}
	if eo.HasPaddingIdx {
		p := eo.PaddingIdx
		if p < -num || p >= num {
			fail("Embedding", nil, "padding_idx %d must be within num_embeddings %d", p, num)
		}
		if p < 0 {
			p += num
		}
		m.PaddingIdx = p
	}
	w := tensor.NormalGen(o.gen, dev, 0, 1, o.dt, num, dim)
	if m.PaddingIdx >= 0 {
		tensor.NoGrad(func() { w.Select(0, m.PaddingIdx).FillInPlace(0) })
	}
	m.Weight = m.RegisterParameter("weight", w)
	return m
}

// Forward looks up the rows of the integer indices x: the result has shape
// x.Shape() + [EmbeddingDim].
func (m *Embedding) Forward(x *tensor.Tensor) *tensor.Tensor {
	if x.DType().IsFloat() {
		fail("Embedding", []*tensor.Tensor{x}, "expected integer indices, got %s", x.DType())
	}
	if m.PaddingIdx < 0 {
		return tensor.Embedding(m.Weight, x)
	}
	// The embedding op's VJP gives the padding row no gradient.
	return tensor.Apply1("embedding", []*tensor.Tensor{m.Weight, x}, op.Attrs{"padding_idx": m.PaddingIdx})
}
