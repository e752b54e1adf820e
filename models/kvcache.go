package models

import (
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// KVCache holds the keys and values of every layer for a batch of
// sequences, preallocated at its full size: K[i] and V[i] are [B, KVHeads,
// Size, HeadDim]. A forward step writes its tokens' keys and values into
// the slots it names (Step.Slots) and attends to every valid slot up to its
// own, so decoding with the cache computes what a full forward computes.
type KVCache struct {
	K, V []*tensor.Tensor
	// Batch and Size are the number of sequences and of slots.
	Batch, Size int
	// valid [B, Size] (bool) marks the slots that hold a real token (false
	// for left padding).
	valid *tensor.Tensor
	iota  *tensor.Tensor // [Size] i64: 0 .. Size-1
}

// cacheDType is the dtype the cache holds: the model's, except that f16
// keys and values — and bf16 ones on a device without bf16 attention
// kernels — are kept widened to f32 (exactly: they are values of the
// narrow type), because attention reads them in f32 — as PyTorch's CPU
// kernels do — and widening the whole cache at every step would cost more
// than the attention itself. Where the device's attention kernels take
// bf16 operands (the CPU's widen them to f32 as they read them and round
// the output once: the same bits as attention over the widened cache), a
// bf16 cache reads half the bytes.
func (m *CausalLM) cacheDType() dtype.DType {
	switch {
	case m.DType == dtype.BF16 && m.bf16Attention():
		return dtype.BF16
	case m.DType == dtype.BF16 || m.DType == dtype.F16:
		return dtype.F32
	}
	return m.DType
}

// bf16Attention reports whether the model's device has direct bf16
// kernels for both attention ops (dense and paged).
func (m *CausalLM) bf16Attention() bool {
	_, be, err := device.Get(m.dev.String())
	return err == nil && be.Supports(op.ScaledDotProductAttention, dtype.BF16) && be.Supports(op.PagedAttention, dtype.BF16)
}

// NewCache returns an empty cache for batch sequences of up to size tokens.
func (m *CausalLM) NewCache(batch, size int) *KVCache {
	c := m.Config
	dev := m.dev
	kc := &KVCache{Batch: batch, Size: size}
	dt := m.cacheDType()
	for range m.layers {
		kc.K = append(kc.K, tensor.Zeros(dev, dt, batch, m.kvHeads(), size, c.HeadDim))
		kc.V = append(kc.V, tensor.Zeros(dev, dt, batch, m.kvHeads(), size, c.HeadDim))
	}
	kc.iota = tensor.Arange(dev, 0, size, 1, dtype.I64)
	kc.valid = tensor.Full(dev, dtype.Bool, true, batch, size)
	return kc
}

// SetPadding marks the first pad[b] slots of sequence b as padding: no
// token attends to them.
func (kc *KVCache) SetPadding(dev device.Device, pad []int) {
	valid := make([]bool, kc.Batch*kc.Size)
	for b := 0; b < kc.Batch; b++ {
		for s := 0; s < kc.Size; s++ {
			valid[b*kc.Size+s] = s >= pad[b]
		}
	}
	kc.valid = tensor.FromSlice(dev, valid, kc.Batch, kc.Size)
}

// tensors lists the cache's tensors in a fixed order: iota, valid, then
// K and V of each layer (the state a compiled step reads and writes).
func (kc *KVCache) tensors() []*tensor.Tensor {
	out := []*tensor.Tensor{kc.iota, kc.valid}
	for i := range kc.K {
		out = append(out, kc.K[i], kc.V[i])
	}
	return out
}

// cacheOf rebuilds a cache over tensors in the order of tensors().
func cacheOf(ts []*tensor.Tensor) *KVCache {
	kc := &KVCache{Batch: ts[1].Size(0), Size: ts[1].Size(1), iota: ts[0], valid: ts[1]}
	for i := 2; i < len(ts); i += 2 {
		kc.K = append(kc.K, ts[i])
		kc.V = append(kc.V, ts[i+1])
	}
	return kc
}

// mask returns the attention mask [B, 1, T, Size] (true attends) of
// queries in slots [T]: causal, within window slots when window > 0, and
// over valid slots. A query always sees its own slot, so rows of padding
// never have every key masked (their outputs are never used).
func (kc *KVCache) mask(slots *tensor.Tensor, window int) *tensor.Tensor {
	q := slots.Unsqueeze(1)   // [T, 1]
	k := kc.iota.Unsqueeze(0) // [1, S]
	allowed := k.Le(q)
	if window > 0 {
		allowed = allowed.LogicalAnd(k.Gt(q.SubScalar(window)))
	}
	allowed = allowed.Unsqueeze(0).LogicalAnd(kc.valid.Unsqueeze(1)) // [B, T, S]
	return allowed.LogicalOr(k.Eq(q).Unsqueeze(0)).Unsqueeze(1)
}
