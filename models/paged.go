package models

import (
	"errors"
	"fmt"

	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// PagedKV is a paged key/value cache shared by many sequences: per layer a
// pool of fixed-size blocks of slots, K[i] and V[i] [(NumBlocks+1) ·
// BlockSize, KVHeads, HeadDim] in the cache dtype (f32 for bf16 and f16
// models, as KVCache). Slot s of block b is row b·BlockSize+s. A sequence
// owns a block table (its blocks in position order); position p of the
// sequence lives in slot p%BlockSize of block table[p/BlockSize]. Which
// sequence owns which block is the caller's business (serve.Engine
// allocates them); the last block, number NumBlocks, is reserved: padding
// tokens write into it and padding keys read from it, so callers hand out
// blocks 0 .. NumBlocks-1 only.
type PagedKV struct {
	K, V                 []*tensor.Tensor
	BlockSize, NumBlocks int
}

// NewPagedKV returns a zeroed paged cache of numBlocks blocks of blockSize
// slots per layer (plus the reserved padding block).
func (m *CausalLM) NewPagedKV(numBlocks, blockSize int) (*PagedKV, error) {
	if m.tp != nil {
		return nil, fmt.Errorf("%w: a paged cache for a tensor-parallel model", ErrUnsupported)
	}
	if numBlocks <= 0 || blockSize <= 0 {
		return nil, fmt.Errorf("%w: paged cache of %d blocks of %d slots", ErrModel, numBlocks, blockSize)
	}
	c := m.Config
	kv := &PagedKV{BlockSize: blockSize, NumBlocks: numBlocks}
	dev := m.dev
	dt := m.cacheDType()
	err := tensor.Catch(func() {
		for range m.layers {
			kv.K = append(kv.K, tensor.Zeros(dev, dt, (numBlocks+1)*blockSize, c.NumKVHeads, c.HeadDim))
			kv.V = append(kv.V, tensor.Zeros(dev, dt, (numBlocks+1)*blockSize, c.NumKVHeads, c.HeadDim))
		}
	})
	if err != nil {
		return nil, fmt.Errorf("paged cache: %w", err)
	}
	return kv, nil
}

// BlockBytes is the memory one block takes over all layers (keys and
// values).
func (m *CausalLM) BlockBytes(blockSize int) int64 {
	c := m.Config
	return int64(len(m.layers)) * 2 * int64(blockSize) * int64(c.NumKVHeads) * int64(c.HeadDim) * int64(m.cacheDType().Size())
}

// padSlot is the slot padding tokens write to and padding keys read.
func (kv *PagedKV) padSlot() int64 { return int64(kv.NumBlocks * kv.BlockSize) }

// CopyBlocks copies the keys and values of block src[i] into block dst[i]
// in every layer (copy-on-write of a shared block).
func (kv *PagedKV) CopyBlocks(src, dst []int) error {
	if len(src) != len(dst) {
		return fmt.Errorf("%w: CopyBlocks of %d blocks into %d", ErrModel, len(src), len(dst))
	}
	if len(src) == 0 {
		return nil
	}
	var from, to []int64
	for i := range src {
		if src[i] < 0 || src[i] >= kv.NumBlocks || dst[i] < 0 || dst[i] >= kv.NumBlocks {
			return fmt.Errorf("%w: CopyBlocks %d -> %d outside [0, %d)", ErrModel, src[i], dst[i], kv.NumBlocks)
		}
		for s := 0; s < kv.BlockSize; s++ {
			from = append(from, int64(src[i]*kv.BlockSize+s))
			to = append(to, int64(dst[i]*kv.BlockSize+s))
		}
	}
	return tensor.Catch(func() {
		dev := kv.K[0].Device()
		f := tensor.FromSlice(dev, from, len(from))
		t := tensor.FromSlice(dev, to, len(to))
		for i := range kv.K {
			kv.K[i].IndexCopyInPlace(0, t, kv.K[i].IndexSelect(0, f))
			kv.V[i].IndexCopyInPlace(0, t, kv.V[i].IndexSelect(0, f))
		}
	})
}

// PagedSeq is one sequence's part of a paged step: Tokens at positions
// Start, Start+1, ... (Start tokens of the sequence are already in the
// cache), written into the slots Blocks names. Blocks must cover
// Start+len(Tokens) positions.
type PagedSeq struct {
	Tokens []int
	Start  int
	Blocks []int
}

// PagedGroup is a set of sequences run with one padded shape: Batch rows
// of Tokens tokens attending over Context keys (rounded up to whole
// blocks). Zero sizes take the exact ones; a caller that wants few
// compiled programs rounds them up to buckets (each distinct shape is one
// program).
type PagedGroup struct {
	Seqs                   []PagedSeq
	Batch, Tokens, Context int
}

// shape returns the group's padded sizes, checked.
func (g PagedGroup) shape() (b, t, l int, err error) {
	for _, s := range g.Seqs {
		t = max(t, len(s.Tokens))
		l = max(l, s.Start+len(s.Tokens))
	}
	b = len(g.Seqs)
	if g.Batch < b && g.Batch != 0 || g.Tokens < t && g.Tokens != 0 || g.Context < l && g.Context != 0 {
		return 0, 0, 0, fmt.Errorf("%w: paged group of %d sequences, %d tokens, %d context padded to %d, %d, %d", ErrModel, b, t, l, g.Batch, g.Tokens, g.Context)
	}
	return max(b, g.Batch), max(t, g.Tokens), max(l, g.Context), nil
}

// maxPagedPrograms bounds the compiled paged step programs (one per
// distinct combination of group shapes); a variable for tests.
var maxPagedPrograms = 256

// ForwardPaged runs one step over sequences of a paged cache, each at its
// own positions with its own block table: decode tokens and prefill
// chunks go in one step as separate groups. The tokens of all groups are
// flattened into one row for the projections and the MLP; attention runs
// per group as paged_attention, reading each sequence's keys from the
// pool through its block table ([B, Context/BlockSize] blocks), with a
// causal (and sliding window) mask from the positions. Keys and values of
// the new tokens are written into their slots first.
//
// It returns, per sequence in group order, the f32 logits of its last
// token (vocab long), or with all of every token (len(Tokens)·vocab).
// Dynamic and LongRoPE frequencies use the longest sequence of the step,
// as a left-padded batch of Generate does. With m.Compiled each distinct
// set of group shapes is one compiled program, replayed once stable;
// past maxPagedPrograms programs new shapes run op by op.
func (m *CausalLM) ForwardPaged(kv *PagedKV, groups []PagedGroup, all bool) ([][]float32, error) {
	if m.tp != nil {
		return nil, fmt.Errorf("%w: paged steps of a tensor-parallel model", ErrUnsupported)
	}
	if len(kv.K) != len(m.layers) {
		return nil, fmt.Errorf("%w: paged cache of %d layers for a model of %d", ErrModel, len(kv.K), len(m.layers))
	}
	dev := m.dev
	vocab := m.Config.VocabSize
	pad := kv.padSlot()
	var in []*tensor.Tensor
	var outIdx []int64
	var rows []int // output rows per sequence
	var runs []writeRun
	off, seqLen := 0, 0
	for gi, g := range groups {
		b, t, l, err := g.shape()
		if err != nil {
			return nil, err
		}
		if len(g.Seqs) == 0 {
			return nil, fmt.Errorf("%w: paged group %d is empty", ErrModel, gi)
		}
		nblk := (l + kv.BlockSize - 1) / kv.BlockSize
		l = nblk * kv.BlockSize
		ids := make([]int64, b*t)
		pos := make([]int64, b*t)
		write := make([]int64, b*t)
		table := make([]int64, b*nblk)
		iota := make([]int64, l)
		for j := range iota {
			iota[j] = int64(j)
		}
		for i := range write {
			write[i] = pad
		}
		for i := range table {
			table[i] = int64(kv.NumBlocks) // the padding block
		}
		for r, s := range g.Seqs {
			n := s.Start + len(s.Tokens)
			if len(s.Tokens) == 0 || s.Start < 0 {
				return nil, fmt.Errorf("%w: paged sequence %d of group %d has %d tokens at %d", ErrModel, r, gi, len(s.Tokens), s.Start)
			}
			if len(s.Blocks)*kv.BlockSize < n {
				return nil, fmt.Errorf("%w: paged sequence %d of group %d: %d blocks of %d cannot hold %d tokens", ErrModel, r, gi, len(s.Blocks), kv.BlockSize, n)
			}
			if m.a.learnedPos && n > m.Config.MaxPositions {
				return nil, fmt.Errorf("%w: %d tokens exceed the model's %d positions", ErrModel, n, m.Config.MaxPositions)
			}
			seqLen = max(seqLen, n)
			for j := 0; j*kv.BlockSize < n; j++ {
				blk := s.Blocks[j]
				if blk < 0 || blk >= kv.NumBlocks {
					return nil, fmt.Errorf("%w: paged sequence %d of group %d names block %d outside [0, %d)", ErrModel, r, gi, blk, kv.NumBlocks)
				}
				table[r*nblk+j] = int64(blk)
			}
			slotOf := func(p int) int { return s.Blocks[p/kv.BlockSize]*kv.BlockSize + p%kv.BlockSize }
			for j := range s.Tokens {
				slot := slotOf(s.Start + j)
				if k := len(runs) - 1; j > 0 && k >= 0 && runs[k].slot+runs[k].n == slot && runs[k].at+runs[k].n == off+r*t+j {
					runs[k].n++
				} else {
					runs = append(runs, writeRun{slot: slot, at: off + r*t + j, n: 1})
				}
			}
			for j, id := range s.Tokens {
				if id < 0 || id >= vocab {
					return nil, fmt.Errorf("%w: token id %d outside the vocabulary [0, %d)", ErrModel, id, vocab)
				}
				ids[r*t+j] = int64(id)
				pos[r*t+j] = int64(s.Start + j)
				write[r*t+j] = int64(slotOf(s.Start + j))
			}
			if all {
				for j := range s.Tokens {
					outIdx = append(outIdx, int64(off+r*t+j))
				}
				rows = append(rows, len(s.Tokens))
			} else {
				outIdx = append(outIdx, int64(off+r*t+len(s.Tokens)-1))
				rows = append(rows, 1)
			}
		}
		off += b * t
		in = append(in,
			tensor.FromSlice(dev, ids, b, t),
			tensor.FromSlice(dev, pos, b, t),
			tensor.FromSlice(dev, write, b*t),
			tensor.FromSlice(dev, table, b, nblk),
			tensor.FromSlice(dev, iota, l))
	}
	if len(groups) == 0 {
		return nil, nil
	}
	// Rows of padded sequences read token 0; the bucket of out rows is the
	// number of padded rows (or tokens), so the shape follows the groups.
	want := 0
	for _, g := range groups {
		b, t, _, _ := g.shape()
		if all {
			want += b * t
		} else {
			want += b
		}
	}
	for len(outIdx) < want {
		outIdx = append(outIdx, 0)
	}
	var lg *tensor.Tensor
	err := tensor.Catch(func() {
		in = append(in, tensor.FromSlice(dev, outIdx, len(outIdx)))
		for _, r := range m.ropes {
			in = append(in, r.invFreq(seqLen))
		}
		for i := range kv.K {
			in = append(in, kv.K[i], kv.V[i])
		}
		if !m.Compiled {
			tensor.NoGrad(func() { lg = m.pagedLogits(in, len(groups), runs) })
			return
		}
		if m.compiledPaged == nil {
			m.compiledPaged = compile.Fn(func(in ...*tensor.Tensor) []*tensor.Tensor {
				var out *tensor.Tensor
				ng := (len(in) - 1 - len(m.ropes) - 2*len(m.layers)) / 5
				tensor.NoGrad(func() { out = m.pagedLogits(in, ng, nil) })
				return []*tensor.Tensor{out}
			}, compile.TraceOnce(), compile.RecompileLimit(maxPagedPrograms), compile.Name(fmt.Sprintf("%s paged step", m.a.family)))
		}
		out, cerr := m.compiledPaged.Call(in...)
		if errors.Is(cerr, compile.ErrTooManyRecompiles) {
			// Past the program limit a new shape runs op by op rather
			// than failing the step.
			tensor.Logf("recompile", "%s: running a paged step of a new shape eagerly: %v", m.a.family, cerr)
			tensor.NoGrad(func() { lg = m.pagedLogits(in, len(groups), runs) })
			return
		}
		if cerr != nil {
			panic(&tensor.Error{Op: "ForwardPaged", Msg: cerr.Error()})
		}
		lg = out[0]
	})
	if err != nil {
		return nil, fmt.Errorf("paged forward: %w", err)
	}
	flat := lg.Float32s()
	res := make([][]float32, len(rows))
	at := 0
	for i, r := range rows {
		res[i] = flat[at*vocab : (at+r)*vocab : (at+r)*vocab]
		at += r
	}
	return res, nil
}

// writeRun is a run of n new tokens, from flat token at on, written into
// consecutive slots from slot.
type writeRun struct{ slot, at, n int }

// pagedLogits is the paged step over its inputs: per group ids, positions
// [B, T], write slots [B·T], block table [B, L/BlockSize] and iota [L]; then the
// output rows, the ropes' inverse frequencies and the pools (K and V per
// layer). It returns the f32 logits of the output rows [R, vocab].
//
// With runs (eager steps), keys and values are written run by run into
// views of the pools, in place: an eager index_copy_ copies the whole pool
// twice per layer, which for a cache of any real size costs more than the
// step. A compiled step (runs nil) writes with one index_copy_ on the
// write slots, which the program does in place.
func (m *CausalLM) pagedLogits(in []*tensor.Tensor, ng int, runs []writeRun) *tensor.Tensor {
	a := &m.a
	type group struct {
		b, t, l          int
		pos, table, iota *tensor.Tensor
	}
	gs := make([]group, ng)
	var ids, pos, write []*tensor.Tensor
	for i := range gs {
		g := in[5*i : 5*i+5]
		gs[i] = group{b: g[0].Size(0), t: g[0].Size(1), l: g[4].Size(0), pos: g[1], table: g[3], iota: g[4]}
		ids = append(ids, g[0].Reshape(1, -1))
		pos = append(pos, g[1].Reshape(1, -1))
		write = append(write, g[2])
	}
	rest := in[5*ng:]
	outIdx := rest[0]
	nr := len(m.ropes)
	inv := rest[1 : 1+nr]
	pools := rest[1+nr:]
	cat := func(ts []*tensor.Tensor, dim int) *tensor.Tensor {
		if len(ts) == 1 {
			return ts[0]
		}
		return tensor.Cat(ts, dim)
	}
	idsAll, posAll, writeAll := cat(ids, 1), cat(pos, 1), cat(write, 0) // [1, N], [1, N], [N]
	x := m.embedTokens(idsAll)
	if a.embedScale {
		x = x.MulScalar(m.sqrtHidden)
	}
	if m.wpe != nil {
		x = x.Add(tensor.Embedding(m.wpe, posAll))
	}
	cos := make([]*tensor.Tensor, nr)
	sin := make([]*tensor.Tensor, nr)
	for i, r := range m.ropes {
		cos[i], sin[i] = r.cosSin(posAll, inv[i], m.DType)
	}
	// Masks [B, 1, T, L] per group and window: key j (position j of the
	// sequence) is seen by the query at position p when j <= p (and j >
	// p-window). Padding keys sit past every real query's position.
	iotas := map[int]*tensor.Tensor{}
	iotaOf := func(n int) *tensor.Tensor {
		if t, ok := iotas[n]; ok {
			return t
		}
		t := tensor.Arange(outIdx.Device(), 0, n, 1, dtype.I64)
		iotas[n] = t
		return t
	}
	masks := make([]map[int]*tensor.Tensor, ng)
	for i := range masks {
		masks[i] = map[int]*tensor.Tensor{}
	}
	maskOf := func(gi, w int) *tensor.Tensor {
		if mk, ok := masks[gi][w]; ok {
			return mk
		}
		g := gs[gi]
		q := g.pos.Unsqueeze(-1)       // [B, T, 1]
		k := g.iota.Reshape(1, 1, g.l) // [1, 1, L]
		allowed := k.Le(q)
		if w > 0 {
			allowed = allowed.LogicalAnd(k.Gt(q.SubScalar(w)))
		}
		mk := allowed.Unsqueeze(1)
		masks[gi][w] = mk
		return mk
	}
	bs := gs[0].l / gs[0].table.Size(1) // slots a block (every group's context is whole blocks)
	for li, b := range m.layers {
		var c, sn *tensor.Tensor
		if nr > 0 {
			c, sn = cos[a.ropeOf[li]], sin[a.ropeOf[li]]
		}
		kp, vp := pools[2*li], pools[2*li+1]
		// The pools seen as blocks, [blocks, BlockSize, kvHeads, hd].
		kb, vb := kp.Reshape(-1, bs, b.kvHeads, b.hd), vp.Reshape(-1, bs, b.kvHeads, b.hd)
		w := a.window[li]
		x = b.forwardWith(x, func(h *tensor.Tensor) *tensor.Tensor {
			n := h.Size(1)
			q, k, v := b.project(h, c, sn)                                                                               // [1, heads, N, hd], [1, kvHeads, N, hd]
			kt, vt := k.Squeeze(0).Transpose(0, 1).ToDType(kp.DType()), v.Squeeze(0).Transpose(0, 1).ToDType(vp.DType()) // [N, kvHeads, hd]
			if runs == nil {
				kp.IndexCopyInPlace(0, writeAll, kt)
				vp.IndexCopyInPlace(0, writeAll, vt)
			}
			for _, r := range runs {
				idx := iotaOf(r.n)
				kp.Narrow(0, r.slot, r.n).IndexCopyInPlace(0, idx, kt.Narrow(0, r.at, r.n))
				vp.Narrow(0, r.slot, r.n).IndexCopyInPlace(0, idx, vt.Narrow(0, r.at, r.n))
			}
			var ctxs []*tensor.Tensor
			o := 0
			for gi, g := range gs {
				bt := g.b * g.t
				gq := q.Squeeze(0).Narrow(1, o, bt).Reshape(b.heads, g.b, g.t, b.hd).Transpose(0, 1) // [B, heads, T, hd]
				ctx := b.attendPaged(gq, kb, vb, g.table, maskOf(gi, w))                             // [B, heads, T, hd]
				ctxs = append(ctxs, ctx.Transpose(1, 2).Reshape(bt, b.heads*b.hd))                   // [B·T, heads·hd]
				o += bt
			}
			return b.o.Forward(cat(ctxs, 0).Reshape(1, n, b.heads*b.hd))
		})
	}
	h := m.norm.Forward(x).IndexSelect(1, outIdx)
	lg := m.Logits(h).ToDType(dtype.F32)
	return lg.Reshape(lg.Size(1), -1)
}
