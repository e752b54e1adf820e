package models

import (
	"context"
	"fmt"

	"github.com/gotpu/gotpu/dist"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/hf/config"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// Tensor parallelism of the decoder (Megatron-LM's layout): every rank of
// a group holds a share of each layer and runs every step.
//
//   - Attention is split by whole key/value heads: rank r holds KVHeads[r]
//     key/value heads with their query heads (q, k, v projections
//     column-parallel: their rows), attends over its own heads, and the
//     output projection o is row-parallel (its columns): the partial
//     products are all-reduced. A rank's KV cache holds its heads only.
//   - The MLP's gate and up projections are column-parallel over the
//     intermediate features, down row-parallel + all-reduce.
//   - The token embedding is vocab-parallel (rows split, looked up where
//     held, all-reduced), the output head column-parallel over the
//     vocabulary (a tied head uses the embedding's share) with the logits
//     all-gathered, so every rank gets the whole logits and picks the same
//     token.
//
// Norms, rotary embeddings and biases of row-parallel layers are kept
// whole on every rank. Shares may be uneven (SmolLM2-135M's 3 key/value
// heads split 2+1 over two ranks).
//
// The collectives are host operations between ops: a sharded model runs
// eagerly (Strict or Debug mode), not as compiled programs.

// TPPlan is how a decoder's layers split over the ranks of a
// tensor-parallel group: rank r holds KVHeads[r] key/value heads with
// their Heads[r] query heads, Intermediate[r] MLP features and Vocab[r]
// token ids (all contiguous, in rank order).
type TPPlan struct {
	Ranks                               int
	KVHeads, Heads, Intermediate, Vocab []int
}

// PlanTensorParallel splits the decoder described by c over ranks. It is
// an error (ErrUnsupported) when a rank would get no whole key/value head
// (more ranks than key/value heads), no MLP feature or no token id, and
// for GPT-2, whose fused attention projection is not split.
func PlanTensorParallel(c *config.Config, ranks int) (TPPlan, error) {
	if ranks < 1 {
		return TPPlan{}, fmt.Errorf("%w: tensor parallelism over %d ranks", ErrModel, ranks)
	}
	if c.Family() == "gpt2" {
		return TPPlan{}, fmt.Errorf("%w: tensor parallelism of gpt2 (its fused c_attn projection)", ErrUnsupported)
	}
	kv, heads := c.NumKVHeads, c.NumHeads
	if kv <= 0 || heads%kv != 0 {
		return TPPlan{}, fmt.Errorf("%w: %d query heads do not group over %d key/value heads", ErrModel, heads, kv)
	}
	group := heads / kv
	if ranks > kv {
		return TPPlan{}, fmt.Errorf("%w: tensor parallelism over %d ranks: the model has %d key/value heads (each with %d query heads) and a rank needs at least one whole key/value head, so at most %d ranks", ErrUnsupported, ranks, kv, group, kv)
	}
	if ranks > c.IntermediateSize || ranks > c.VocabSize {
		return TPPlan{}, fmt.Errorf("%w: tensor parallelism over %d ranks: %d MLP features and %d token ids cannot give every rank a share", ErrUnsupported, ranks, c.IntermediateSize, c.VocabSize)
	}
	p := TPPlan{Ranks: ranks, KVHeads: dist.Split(kv, ranks), Intermediate: dist.Split(c.IntermediateSize, ranks), Vocab: dist.Split(c.VocabSize, ranks)}
	p.Heads = make([]int, ranks)
	for r, n := range p.KVHeads {
		p.Heads[r] = n * group
	}
	return p, nil
}

// tpState is a sharded model's group and its rank's shares.
type tpState struct {
	g    *dist.Group
	plan TPPlan
	// ctx bounds the collectives of the current Generate call.
	ctx        context.Context
	vocabStart int
}

func (t *tpState) context() context.Context {
	if t.ctx == nil {
		return context.Background()
	}
	return t.ctx
}

// tpPanic raises a collective's error inside a forward pass as a
// *tensor.Error wrapping it, which stepLogits' tensor.Catch returns.
func tpPanic(what string, err error) {
	panic(&tensor.Error{Op: "tensor-parallel " + what, Msg: err.Error(), Err: err})
}

// TensorParallel returns the group the model is sharded over and the
// plan, or nil when it is not sharded.
func (m *CausalLM) TensorParallel() (*dist.Group, *TPPlan) {
	if m.tp == nil {
		return nil, nil
	}
	return m.tp.g, &m.tp.plan
}

// ShardTensorParallel splits the loaded model over the ranks of g in
// place (see PlanTensorParallel): every rank of g must call it on the
// same model, and from then on run the same steps (Generate, ForwardLogits)
// in the same order, since each step runs collectives on g. The rank keeps
// its shares and drops the rest of the weights. A group of one rank is
// allowed (it shards nothing but runs the same code path).
//
// A sharded model runs in Strict or Debug mode only (not Compiled, and
// not through ForwardPaged).
func (m *CausalLM) ShardTensorParallel(g *dist.Group) error {
	if m.tp != nil {
		return fmt.Errorf("%w: the model is already sharded over %d ranks", ErrModel, m.tp.plan.Ranks)
	}
	plan, err := PlanTensorParallel(m.Config, g.Size())
	if err != nil {
		return err
	}
	r := g.Rank()
	hd := m.Config.HeadDim
	headOff := dist.Offsets(plan.Heads)[r] * hd
	kvOff := dist.Offsets(plan.KVHeads)[r] * hd
	iOff := dist.Offsets(plan.Intermediate)[r]
	tp := &tpState{g: g, plan: plan, vocabStart: dist.Offsets(plan.Vocab)[r]}
	nq, nkv, ni, nv := plan.Heads[r]*hd, plan.KVHeads[r]*hd, plan.Intermediate[r], plan.Vocab[r]
	err = tensor.Catch(func() {
		tensor.NoGrad(func() {
			for _, b := range m.layers {
				shardRows(b.q, headOff, nq)
				shardRows(b.k, kvOff, nkv)
				shardRows(b.v, kvOff, nkv)
				shardRowParallel(b.o, tp, headOff, nq, plan.Heads, hd)
				b.heads, b.kvHeads = plan.Heads[r], plan.KVHeads[r]
				if b.a.gated {
					shardRows(b.gate, iOff, ni)
					shardRows(b.up, iOff, ni)
				} else {
					shardRows(b.fc, iOff, ni)
				}
				shardRowParallel(b.down, tp, iOff, ni, plan.Intermediate, 1)
			}
			if m.embedQ != nil {
				// The vocab-parallel lookup takes a dense share: decode
				// this rank's rows of the blocks.
				q := *m.embedQ
				q.Blocks = q.Blocks.Narrow(0, tp.vocabStart, nv).Contiguous()
				m.embed, m.embedQ = q.Dense(), nil
				*m.embedMod = module{}
				m.embedMod.RegisterParameter("weight", m.embed)
			}
			full := m.embed
			m.embed = full.Narrow(0, tp.vocabStart, nv).Contiguous()
			m.embedMod.SetParameter("weight", m.embed)
			h := m.head
			var local Weight
			switch w := h.W.(type) {
			case Dense:
				if m.Config.TieWordEmbeddings && w.W == full {
					local = Dense{W: m.embed}
				} else {
					local = narrowRows(w, tp.vocabStart, nv)
				}
			default:
				local = narrowRows(w, tp.vocabStart, nv)
			}
			var bias *tensor.Tensor
			if h.Bias != nil {
				bias = h.Bias.Narrow(0, tp.vocabStart, nv).Contiguous()
			}
			out, in := h.W.Dims()
			*h = Linear{W: vocabGathered{local: local, tp: tp, out: out, in: in}, Bias: bias}
			registerLocal(h, local)
		})
	})
	if err != nil {
		return fmt.Errorf("models: sharding over %d ranks: %w", g.Size(), err)
	}
	m.tp = tp
	releaseCached(m.dev)
	return nil
}

// registerLocal registers this rank's share of a sharded Linear under
// the unsharded parameter names.
func registerLocal(l *Linear, w Weight) {
	switch w := w.(type) {
	case Dense:
		l.RegisterParameter("weight", w.W)
	case Quantized:
		l.RegisterBuffer("weight", w.Blocks, true)
	}
	if l.Bias != nil {
		l.RegisterParameter("bias", l.Bias)
	}
}

// shardRows keeps rows [off, off+n) of a column-parallel Linear.
func shardRows(l *Linear, off, n int) {
	w := narrowRows(l.W, off, n)
	var bias *tensor.Tensor
	if l.Bias != nil {
		bias = l.Bias.Narrow(0, off, n).Contiguous()
	}
	*l = Linear{W: w, Bias: bias}
	l.register()
}

// shardRowParallel keeps columns [off, off+n) of a row-parallel Linear,
// whose products are then all-reduced; the bias stays whole. sizes are the
// ranks' shares in units of unit columns.
func shardRowParallel(l *Linear, tp *tpState, off, n int, sizes []int, unit int) {
	out, in := l.W.Dims()
	local := narrowCols(l.W, off, n)
	cols := make([]int, len(sizes))
	for i, s := range sizes {
		cols[i] = s * unit
	}
	bias := l.Bias
	*l = Linear{W: rowReduced{local: local, tp: tp, out: out, in: in, cols: cols}, Bias: bias}
	registerLocal(l, local)
}

// narrowRows returns rows [off, off+n) of w as their own weight.
func narrowRows(w Weight, off, n int) Weight {
	switch w := w.(type) {
	case Dense:
		return Dense{W: w.W.Narrow(0, off, n).Contiguous()}
	case Quantized:
		w = w.RowMajor()
		return Quantized{Blocks: w.Blocks.Narrow(0, off, n).Contiguous(), Block: w.Block, In: w.In, Compute: w.Compute}
	}
	return Dense{W: w.Dense().Narrow(0, off, n).Contiguous()}
}

// narrowCols returns columns [off, off+n) of w as their own weight. A
// quantized weight keeps its blocks when the columns fall on block
// boundaries and is dequantized otherwise.
func narrowCols(w Weight, off, n int) Weight {
	if q, ok := w.(Quantized); ok {
		q = q.RowMajor()
		bs, ts := q.Block.BlockSize, q.Block.TypeSize
		if off%bs == 0 && n%bs == 0 {
			return Quantized{Blocks: q.Blocks.Narrow(1, off/bs*ts, n/bs*ts).Contiguous(), Block: q.Block, In: n, Compute: q.Compute}
		}
	}
	return Dense{W: w.Dense().Narrow(1, off, n).Contiguous()}
}

// rowReduced is a row-parallel weight: this rank's columns, the partial
// products summed over the group, the bias added once after.
type rowReduced struct {
	local   Weight
	tp      *tpState
	out, in int
	cols    []int // the ranks' column shares
}

// Dims returns the whole matrix's sizes.
func (w rowReduced) Dims() (int, int) { return w.out, w.in }

// DType returns the products' dtype.
func (w rowReduced) DType() dtype.DType { return w.local.DType() }

// Linear returns x·Wᵀ + b for x holding this rank's input features.
func (w rowReduced) Linear(x, b *tensor.Tensor) *tensor.Tensor {
	y, err := dist.AllReduceSum(w.tp.context(), w.tp.g, w.local.Linear(x, nil))
	if err != nil {
		tpPanic("all_reduce", err)
	}
	if b != nil {
		y = y.Add(b)
	}
	return y
}

// Dense all-gathers the whole matrix (a collective: every rank calls it).
func (w rowReduced) Dense() *tensor.Tensor {
	d, err := dist.AllGatherLastDim(w.tp.context(), w.tp.g, w.local.Dense(), w.cols)
	if err != nil {
		tpPanic("all_gather", err)
	}
	return d
}

// vocabGathered is the column-parallel output head: this rank's rows
// (token ids), the logits all-gathered over the group.
type vocabGathered struct {
	local   Weight
	tp      *tpState
	out, in int
}

// Dims returns the whole matrix's sizes.
func (w vocabGathered) Dims() (int, int) { return w.out, w.in }

// DType returns the products' dtype.
func (w vocabGathered) DType() dtype.DType { return w.local.DType() }

// Linear returns the whole logits x·Wᵀ + b on every rank (b is this
// rank's share of the bias).
func (w vocabGathered) Linear(x, b *tensor.Tensor) *tensor.Tensor {
	y, err := dist.AllGatherLastDim(w.tp.context(), w.tp.g, w.local.Linear(x, b), w.tp.plan.Vocab)
	if err != nil {
		tpPanic("all_gather", err)
	}
	return y
}

// Dense all-gathers the whole matrix (a collective: every rank calls it).
func (w vocabGathered) Dense() *tensor.Tensor {
	d, err := dist.AllGatherLastDim(w.tp.context(), w.tp.g, w.local.Dense().Transpose(0, 1).Contiguous(), w.tp.plan.Vocab)
	if err != nil {
		tpPanic("all_gather", err)
	}
	return d.Transpose(0, 1).Contiguous()
}

// embedTokens looks the ids up in the token embedding (vocab-parallel
// when sharded).
func (m *CausalLM) embedTokens(ids *tensor.Tensor) *tensor.Tensor {
	if m.tp == nil {
		if m.embedQ != nil {
			return m.embedQuantized(ids)
		}
		return tensor.Embedding(m.embed, ids)
	}
	e, err := dist.EmbedVocabParallel(m.tp.context(), m.tp.g, m.embed, m.tp.vocabStart, ids)
	if err != nil {
		tpPanic("embedding", err)
	}
	return e
}

// embedQuantized looks ids up in the token embedding kept in its blocks:
// the rows of the ids gathered as bytes and decoded (dequantize_gguf), in
// the model's dtype, the values the dequantized table would give.
func (m *CausalLM) embedQuantized(ids *tensor.Tensor) *tensor.Tensor {
	q := m.embedQ
	rb := q.Blocks.Size(1)
	rows := tensor.Embedding(q.Blocks, ids).Reshape(-1, rb)
	x := tensor.Apply1("dequantize_gguf", []*tensor.Tensor{rows}, op.Attrs{"type": q.Block.Name, "k": q.In})
	x = x.Reshape(append(ids.Shape(), q.In)...)
	if m.DType != dtype.F32 {
		x = x.ToDType(m.DType)
	}
	return x
}

// kvHeads is the number of key/value heads a cache holds: this rank's
// when sharded.
func (m *CausalLM) kvHeads() int {
	if m.tp != nil {
		return m.tp.plan.KVHeads[m.tp.g.Rank()]
	}
	return m.Config.NumKVHeads
}

// checkEager refuses to run a sharded model as a compiled program.
func (m *CausalLM) checkEager(what string) error {
	if m.tp != nil && m.Compiled {
		return fmt.Errorf("%w: %s of a tensor-parallel model: its collectives run eagerly between ops, so it runs in strict or debug mode, not compiled", ErrUnsupported, what)
	}
	return nil
}
