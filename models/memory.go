package models

import "github.com/gotpu/gotpu/nn"

// Memory is what a model needs on its device.
type Memory struct {
	// WeightBytes is the parameters' size in the compute dtype (tied
	// weights counted once).
	WeightBytes int64 `json:"weight_bytes"`
	// KVCacheBytes is a KV cache's size for the batch and tokens asked for
	// (bf16 and f16 models keep it in f32).
	KVCacheBytes int64 `json:"kv_cache_bytes"`
}

// Memory returns the bytes of the weights and of a KV cache for batch
// sequences of tokens each. It needs no data: load the model on the meta
// device to size a checkpoint without reading its weights.
func (m *CausalLM) Memory(batch, tokens int) Memory {
	var mem Memory
	seen := map[any]bool{}
	for _, p := range nn.Parameters(m) {
		if p == nil || seen[p] {
			continue
		}
		seen[p] = true
		mem.WeightBytes += int64(p.Numel() * p.DType().Size())
	}
	c := m.Config
	mem.KVCacheBytes = int64(2*len(m.layers)*batch*c.NumKVHeads*tokens*c.HeadDim) * int64(m.cacheDType().Size())
	return mem
}
