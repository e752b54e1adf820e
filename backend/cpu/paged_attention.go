package cpu

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// The f32 and bf16 kernel of paged_attention: scaled_dot_product_attention's
// kernel (sdpa.go) reading keys and values where the block tables say
// they are, instead of over the gathered [B, Hkv, M·P, E] tensors the
// decomposition builds. A sdpaPlan with page > 0 addresses key j of a
// sequence as row j%P of block table[b, j/P]: the row path (decode steps)
// runs its dot and axpy kernels over each block's run of rows in turn —
// the same FMA chains in the same order as over the gathered rows, so
// the same bits as the decomposition on this backend — and the tiled
// paths pack K and V from the blocks as they pack a dense operand.

func init() {
	RegisterKernel(op.PagedAttention, Kernel{DTypes: 1<<dtype.F32 | 1<<dtype.BF16, Run: pagedAttentionKernel})
}

// pagedRuns counts the kernel's calls (tests check that it ran).
var pagedRuns atomic.Uint64

func pagedAttentionKernel(c *Call) error {
	pagedRuns.Add(1)
	p, err := newPagedPlan(c)
	if err != nil {
		return fmt.Errorf("paged_attention: %w", err)
	}
	if p == nil {
		return nil
	}
	p.run()
	p.finish()
	return nil
}

// newPagedPlan reads paged_attention's operands: query [B, H, T, E],
// key_cache [N, P, Hkv, E], value_cache [N, P, Hkv, Ev], block_table [B,
// M], attn_mask; output [B, H, T, Ev]. It returns nil when there is
// nothing to compute.
func newPagedPlan(c *Call) (*sdpaPlan, error) {
	if len(c.In) < 4 || len(c.Out) != 1 {
		return nil, fmt.Errorf("%w: want query, key_cache, value_cache, block_table and one output, got %d inputs and %d outputs", errSDPAOperand, len(c.In), len(c.Out))
	}
	q, k, v, t, o := c.In[0], c.In[1], c.In[2], c.In[3], c.Out[0]
	for i, x := range []device.Operand{q, k, v, o} {
		if len(x.Shape) != 4 {
			return nil, fmt.Errorf("%w: operand %d is %s %v, want 4 dims", errSDPAOperand, i, x.DType, x.Shape)
		}
	}
	dt, err := sdpaOperandDType(q, k, v, o)
	if err != nil {
		return nil, err
	}
	nb, heads, page, hkv := q.Shape[0], q.Shape[1], k.Shape[1], k.Shape[2]
	if len(t.Shape) != 2 || t.Shape[0] != nb || !t.DType.IsInt() || k.Shape[3] != q.Shape[3] ||
		v.Shape[0] != k.Shape[0] || v.Shape[1] != page || v.Shape[2] != hkv || hkv == 0 || heads%hkv != 0 ||
		o.Shape[0] != nb || o.Shape[1] != heads || o.Shape[2] != q.Shape[2] || o.Shape[3] != v.Shape[3] {
		return nil, fmt.Errorf("%w: shapes query %v, key_cache %v, value_cache %v, block_table %s %v, out %v do not fit", errSDPAOperand, q.Shape, k.Shape, v.Shape, t.DType, t.Shape, o.Shape)
	}
	mb := t.Shape[1]
	p := &sdpaPlan{l: q.Shape[2], e: q.Shape[3], s: mb * page, ev: v.Shape[3], page: page, bf: dt == dtype.BF16, ks: c.kernels()}
	n := op.Numel(o.Shape)
	if n == 0 {
		return nil, nil
	}
	out, err := p.output(c, n)
	if err != nil {
		return nil, err
	}
	if p.s == 0 { // softmax over no keys, times an empty V: zeros
		clear(out)
		p.finish()
		return nil, nil
	}
	scale := 1 / math.Sqrt(float64(p.e))
	if c.Attrs.Has("scale") {
		scale = c.Attrs.Float("scale")
	}
	p.scale = float32(scale)
	ob := []int{nb, heads}
	p.geometry(out, ob)

	p.operands(c)
	p.qsL, p.qsE = q.Strides[2], q.Strides[3]
	_, p.qOff = sdpaBatchMap(ob, q.Shape[:2], q.Strides, q.Offset, 1, -1)

	// Key (value) entry b·Hkv + g is head g of sequence b; query head h
	// reads head h/(H/Hkv).
	p.kIdx, _ = sdpaBatchMap(ob, []int{nb, hkv}, nil, 0, heads/hkv, 1)
	p.vIdx = p.kIdx
	// Every block the tables name, as element offsets into each cache.
	at := ixReader(t, c.InB[3])
	nblk := k.Shape[0]
	kBlk, vBlk := make([]int, nb*mb), make([]int, nb*mb)
	for b := range nb {
		for j := range mb {
			x := at(t.Offset + b*t.Strides[0] + j*t.Strides[1])
			if x < 0 || x >= int64(nblk) {
				return nil, fmt.Errorf("block_table[%d, %d] = %d is outside the cache's %d blocks", b, j, x, nblk)
			}
			kBlk[b*mb+j], vBlk[b*mb+j] = int(x)*k.Strides[0], int(x)*v.Strides[0]
		}
	}
	p.kOffs, p.vOffs = make([]int, nb*hkv), make([]int, nb*hkv)
	p.kPages, p.vPages = make([][]int, nb*hkv), make([][]int, nb*hkv)
	for b := range nb {
		for g := range hkv {
			i := b*hkv + g
			p.kOffs[i], p.vOffs[i] = k.Offset+g*k.Strides[2], v.Offset+g*v.Strides[2]
			p.kPages[i], p.vPages[i] = kBlk[b*mb:(b+1)*mb], vBlk[b*mb:(b+1)*mb]
		}
	}
	if len(c.In) > 4 && c.In[4].Buf != nil {
		if err := p.setMask(c.In[4], c.InB[4], ob); err != nil {
			return nil, err
		}
	}
	p.ksS, p.ksE, p.vsS, p.vsE = k.Strides[1], k.Strides[3], v.Strides[1], v.Strides[3]
	p.prepare()
	return p, nil
}
