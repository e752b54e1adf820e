package models

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/gotpu/gotpu/backend/meta"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/hf/safetensors"
	"github.com/gotpu/gotpu/tensor"
)

// TestMeta loads every decoder variant on the meta device (no weight is
// read), runs a batched forward for its shapes, and sizes the model.
func TestMeta(t *testing.T) {
	meta := device.Device{Type: "meta"}
	for _, v := range decoderVariants(t) {
		dir := filepath.Join(refDir, v)
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			m, err := Load(dir, Options{Device: meta, DType: dt})
			if err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			lm := m.LM
			var logits *tensor.Tensor
			err = tensor.Catch(func() {
				cache := lm.NewCache(3, 20)
				ids := tensor.Zeros(meta, dtype.I64, 3, 7)
				h := lm.Forward(Step{IDs: ids, Positions: ids, Slots: tensor.Zeros(meta, dtype.I64, 7), SeqLen: 7}, cache)
				logits = lm.Logits(h)
			})
			if err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			if got, want := logits.Shape(), []int{3, 7, m.Config.VocabSize}; !slices.Equal(got, want) {
				t.Errorf("%s: logits %v, want %v", v, got, want)
			}
			// The checkpoint holds f32 weights: the model in dt is that
			// many elements at dt's size (a tied head is not stored).
			f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			var want int64
			for _, ti := range f.Tensors() {
				size := int64(dt.Size())
				if lm.a.norm == RMSNormPlusOne && strings.Contains(ti.Name, "norm") {
					size = 4 // Gemma's (1 + w) norms stay f32
				}
				want += ti.NumElements() * size
			}
			f.Close()
			mem := lm.Memory(2, 100)
			if mem.WeightBytes != want {
				t.Errorf("%s %s: weight bytes %d, want %d", v, dt, mem.WeightBytes, want)
			}
			c := m.Config
			// f32 for f32 models; bf16 for bf16 ones (the CPU's attention
			// kernels read bf16 keys and values).
			if want := int64(2*c.NumLayers*2*c.NumKVHeads*100*c.HeadDim) * int64(dt.Size()); mem.KVCacheBytes != want {
				t.Errorf("%s %s: kv cache bytes %d, want %d", v, dt, mem.KVCacheBytes, want)
			}
		}
	}
}
