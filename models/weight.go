package models

import (
	"fmt"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/gguf"
	"github.com/gotpu/gotpu/internal/quant"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// Weight is an [out, in] matrix that a Linear layer multiplies by. A dense
// weight is a tensor; an implementation for block-quantized weights (GGUF's
// Q4_K, ...) keeps its blocks and multiplies without dequantizing the whole
// matrix, behind the same interface.
type Weight interface {
	// Dims returns the matrix's [out, in] sizes.
	Dims() (out, in int)
	// DType is the dtype of the products (the activations' dtype).
	DType() dtype.DType
	// Linear returns x·Wᵀ + b (b may be nil) for x [..., in].
	Linear(x, b *tensor.Tensor) *tensor.Tensor
	// Dense returns the matrix as a tensor (dequantized if it is not dense).
	Dense() *tensor.Tensor
}

// Dense is a Weight held as an ordinary [out, in] tensor.
type Dense struct{ W *tensor.Tensor }

// Dims returns the matrix's [out, in] sizes.
func (d Dense) Dims() (int, int) { return d.W.Size(0), d.W.Size(1) }

// DType returns the tensor's dtype.
func (d Dense) DType() dtype.DType { return d.W.DType() }

// Linear returns x·Wᵀ + b.
func (d Dense) Linear(x, b *tensor.Tensor) *tensor.Tensor { return tensor.Linear(x, d.W, b) }

// Dense returns the tensor.
func (d Dense) Dense() *tensor.Tensor { return d.W }

// Quantized is a Weight kept in a ggml block encoding (a GGUF file's Q4_0,
// Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K or Q6_K tensor): Blocks holds its rows
// as bytes and Linear multiplies with the linear_gguf op, which the CPU
// backend runs with integer block dot products (as llama.cpp does) and
// other backends through its dequantizing decomposition.
type Quantized struct {
	// Blocks is the u8 [out, rowBytes] matrix of encoded rows.
	Blocks *tensor.Tensor
	// Block is the encoding.
	Block op.GGUFBlock
	// In is the number of elements of a row (the matrix's in size).
	In int
	// Compute is the dtype of the products: the activations' dtype.
	Compute dtype.DType
	// Layout is linear_gguf's layout of Blocks: "" row-major, or
	// op.LayoutR16 (groups of 16 rows interleaved for the CPU's SIMD
	// kernels; the loader chooses it where the device runs it natively).
	Layout string
}

// Dims returns the matrix's [out, in] sizes.
func (q Quantized) Dims() (int, int) { return q.Blocks.Size(0), q.In }

// DType returns the dtype the products are computed in.
func (q Quantized) DType() dtype.DType { return q.Compute }

// Linear returns x·Wᵀ + b through linear_gguf; the result has x's dtype.
func (q Quantized) Linear(x, b *tensor.Tensor) *tensor.Tensor {
	a := op.Attrs{"type": q.Block.Name, "k": q.In}
	if q.Layout != "" {
		a["layout"] = q.Layout
	}
	y := tensor.Apply1("linear_gguf", []*tensor.Tensor{x, q.Blocks}, a)
	if b != nil {
		y = y.Add(b)
	}
	return y
}

// Dense returns the dequantized matrix as a [out, in] tensor of dtype
// Compute on the blocks' device (decoded on the host with gguf.Dequantize,
// ggml's reference).
func (q Quantized) Dense() *tensor.Tensor {
	out, in := q.Dims()
	vals := make([]float32, out*in)
	if err := gguf.Dequantize(gguf.Type(q.Block.GGMLType), q.rowMajorBytes(), out*in, vals); err != nil {
		panic(fmt.Errorf("models: dequantizing a %s weight: %w", q.Block.Name, err))
	}
	return uploadFloats(q.Blocks.Device(), vals, []int{out, in}, q.Compute)
}

// rowMajorBytes returns the blocks' bytes in the row-major layout.
func (q Quantized) rowMajorBytes() []byte {
	b := q.Blocks.Bytes()
	if q.Layout == "" {
		return b
	}
	out, rb := q.Blocks.Size(0), q.Blocks.Size(1)
	rm := make([]byte, len(b))
	if err := quant.Unpack(quant.Type(q.Block.GGMLType), rm, b, out, rb); err != nil {
		panic(fmt.Errorf("models: unpacking a %s weight: %w", q.Block.Name, err))
	}
	return rm
}

// RowMajor returns q with its blocks in the row-major layout (q itself when
// they are).
func (q Quantized) RowMajor() Quantized {
	if q.Layout == "" {
		return q
	}
	r := q
	r.Layout = ""
	r.Blocks = tensor.FromBytes(q.Blocks.Device(), dtype.U8, q.Blocks.Shape(), q.rowMajorBytes())
	return r
}

// Linear is a projection y = x·Wᵀ + b whose parameters are named as in
// torch.nn.Linear ("weight", "bias") when the weight is dense.
type Linear struct {
	nn.Base
	W    Weight
	Bias *tensor.Tensor
}

// newLinear reads prefix.weight [out, in] and, with bias, prefix.bias.
func newLinear(l *loader, prefix string, out, in int, bias bool) *Linear {
	m := &Linear{W: l.weight(prefix+".weight", out, in)}
	if bias {
		m.Bias = l.tensor(prefix+".bias", out)
	}
	m.register()
	return m
}

func (m *Linear) register() {
	switch w := m.W.(type) {
	case Dense:
		m.RegisterParameter("weight", w.W)
	case Quantized:
		// Blocks are not trained: a buffer, under the parameter's name.
		m.RegisterBuffer("weight", w.Blocks, true)
	}
	if m.Bias != nil {
		m.RegisterParameter("bias", m.Bias)
	}
}

// Forward returns x·Wᵀ + b.
func (m *Linear) Forward(x *tensor.Tensor) *tensor.Tensor { return m.W.Linear(x, m.Bias) }

// Norm is the normalisation of a family: LayerNorm (with or without bias),
// RMSNorm scaling by w, or Gemma's RMSNorm scaling by (1 + w) computed in
// f32.
type Norm struct {
	nn.Base
	Weight, Bias *tensor.Tensor
	Eps          float64
	Kind         NormKind
}

// NormKind selects a Norm's arithmetic.
type NormKind int

// Norm kinds.
const (
	// LayerNorm is torch.nn.LayerNorm over the last dim.
	LayerNorm NormKind = iota
	// RMSNorm is Llama's: x·rsqrt(mean(x²)+eps) in f32, cast back, times w.
	RMSNorm
	// RMSNormPlusOne is Gemma's: x·rsqrt(mean(x²)+eps)·(1+w), all in f32.
	RMSNormPlusOne
)

func newNorm(l *loader, prefix string, dim int, kind NormKind, eps float64, bias bool) *Norm {
	m := &Norm{Kind: kind, Eps: eps}
	switch kind {
	case RMSNormPlusOne:
		// Gemma computes (1 + w) in f32 whatever the model dtype.
		m.Weight = l.tensorAs(prefix+".weight", dtype.F32, dim)
	default:
		m.Weight = l.tensor(prefix+".weight", dim)
	}
	if bias {
		m.Bias = l.tensor(prefix+".bias", dim)
	}
	m.RegisterParameter("weight", m.Weight)
	if m.Bias != nil {
		m.RegisterParameter("bias", m.Bias)
	}
	return m
}

// Forward normalises x over its last dim.
func (m *Norm) Forward(x *tensor.Tensor) *tensor.Tensor {
	d := x.Size(-1)
	switch m.Kind {
	case LayerNorm:
		return tensor.LayerNorm(x, []int{d}, m.Weight, m.Bias, m.Eps)
	case RMSNorm:
		dt := x.DType()
		if dt == dtype.F32 {
			return tensor.RMSNorm(x, []int{d}, m.Weight, m.Eps)
		}
		// transformers: normalise in f32, cast back, then scale in the
		// weight's dtype.
		y := tensor.RMSNorm(x.ToDType(dtype.F32), []int{d}, nil, m.Eps).ToDType(dt)
		return y.Mul(m.Weight)
	default:
		dt := x.DType()
		y := tensor.RMSNorm(x.ToDType(dtype.F32), []int{d}, nil, m.Eps)
		return y.Mul(m.Weight.AddScalar(1)).ToDType(dt)
	}
}
