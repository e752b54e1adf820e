package models

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/hf/safetensors"
)

// rewriteShards copies a reference variant's config.json into a new directory
// and writes its weights after edit, which may rename, drop, add or split
// them into shards (each returned slice is one shard).
func rewriteShards(t *testing.T, variant string, edit func([]safetensors.Tensor) [][]safetensors.Tensor) string {
	t.Helper()
	src := filepath.Join(refDir, variant)
	dir := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644)
	f, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ts []safetensors.Tensor
	for tn, err := range f.All() {
		if err != nil {
			t.Fatal(err)
		}
		tn.Data = slices.Clone(tn.Data)
		ts = append(ts, tn)
	}
	shards := edit(ts)
	if len(shards) == 1 {
		if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), shards[0], nil); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	index := map[string]any{"metadata": map[string]any{}, "weight_map": map[string]string{}}
	for i, sh := range shards {
		name := "model-0000" + string(rune('1'+i)) + "-of-0000" + string(rune('0'+len(shards))) + ".safetensors"
		if err := safetensors.Write(filepath.Join(dir, name), sh, nil); err != nil {
			t.Fatal(err)
		}
		for _, tn := range sh {
			index["weight_map"].(map[string]string)[tn.Name] = name
		}
	}
	b, _ := json.Marshal(index)
	os.WriteFile(filepath.Join(dir, safetensors.IndexFileName), b, 0o644)
	return dir
}

// sameLogits loads dir and checks its logits equal the reference variant's.
func sameLogits(t *testing.T, dir, variant string, o Options) *Model {
	t.Helper()
	m, err := Load(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	ref := readReference(t, filepath.Join(refDir, variant))
	got, _, err := m.LM.ForwardLogits(ref.InputIDs, 0)
	if err != nil {
		t.Fatal(err)
	}
	compare(t, "logits", got, ref.tensors["logits"].data, tolF32, nil)
	return m
}

func TestLoadLayouts(t *testing.T) {
	t.Run("no model. prefix", func(t *testing.T) {
		dir := rewriteShards(t, "qwen3", func(ts []safetensors.Tensor) [][]safetensors.Tensor {
			for i := range ts {
				ts[i].Name = strings.TrimPrefix(ts[i].Name, "model.")
			}
			return [][]safetensors.Tensor{ts}
		})
		sameLogits(t, dir, "qwen3", Options{})
	})
	t.Run("sharded", func(t *testing.T) {
		dir := rewriteShards(t, "gemma2", func(ts []safetensors.Tensor) [][]safetensors.Tensor {
			return [][]safetensors.Tensor{ts[:len(ts)/2], ts[len(ts)/2:]}
		})
		sameLogits(t, dir, "gemma2", Options{})
	})
	t.Run("gpt2 buffers and no transformer. prefix", func(t *testing.T) {
		dir := rewriteShards(t, "gpt2", func(ts []safetensors.Tensor) [][]safetensors.Tensor {
			for i := range ts {
				ts[i].Name = strings.TrimPrefix(ts[i].Name, "transformer.")
			}
			mask := make([]byte, 4*4)
			ts = append(ts, safetensors.Tensor{Name: "h.0.attn.bias", DType: safetensors.F32, Shape: []int{1, 1, 2, 2}, Data: mask},
				safetensors.Tensor{Name: "h.0.attn.masked_bias", DType: safetensors.F32, Shape: []int{}, Data: mask[:4]})
			return [][]safetensors.Tensor{ts}
		})
		m := sameLogits(t, dir, "gpt2", Options{})
		if len(m.Unused) != 0 {
			t.Errorf("unused %v: GPT-2's attention buffers should be ignored", m.Unused)
		}
	})
	t.Run("bf16 checkpoint as f32", func(t *testing.T) {
		dir := rewriteShards(t, "llama", func(ts []safetensors.Tensor) [][]safetensors.Tensor {
			for i := range ts {
				vals, _ := safetensors.DecodeFloat32(ts[i].DType, ts[i].Data)
				ts[i].Data, _ = safetensors.EncodeFloat32(safetensors.BF16, vals)
				ts[i].DType = safetensors.BF16
			}
			return [][]safetensors.Tensor{ts}
		})
		m, err := Load(dir, Options{DType: dtype.F32})
		if err != nil {
			t.Fatal(err)
		}
		if m.LM.DType != dtype.F32 {
			t.Errorf("dtype %s, want f32", m.LM.DType)
		}
		if _, _, err := m.LM.ForwardLogits([][]int{{1, 2, 3}}, 0); err != nil {
			t.Fatal(err)
		}
	})
}

func TestLoadErrors(t *testing.T) {
	missing := rewriteShards(t, "llama", func(ts []safetensors.Tensor) [][]safetensors.Tensor {
		return [][]safetensors.Tensor{slices.DeleteFunc(ts, func(tn safetensors.Tensor) bool {
			return tn.Name == "model.layers.1.mlp.up_proj.weight"
		})}
	})
	if _, err := Load(missing, Options{}); !errors.Is(err, ErrMissingWeight) || !strings.Contains(err.Error(), "layers.1.mlp.up_proj") {
		t.Errorf("missing weight: %v", err)
	}
	shape := rewriteShards(t, "llama", func(ts []safetensors.Tensor) [][]safetensors.Tensor {
		for i := range ts {
			if ts[i].Name == "model.norm.weight" {
				ts[i].Shape = []int{ts[i].Shape[0] / 2, 2}
			}
		}
		return [][]safetensors.Tensor{ts}
	})
	if _, err := Load(shape, Options{}); !errors.Is(err, ErrWeights) || !strings.Contains(err.Error(), "model.norm.weight") {
		t.Errorf("wrong shape: %v", err)
	}
	arch := t.TempDir()
	os.WriteFile(filepath.Join(arch, "config.json"), []byte(`{"model_type": "mamba", "architectures": ["MambaForCausalLM"]}`), 0o644)
	if _, err := Load(arch, Options{}); err == nil || !strings.Contains(err.Error(), "mamba") || !strings.Contains(err.Error(), "llama") {
		t.Errorf("unsupported architecture: %v", err)
	}
	if _, err := Load(filepath.Join(refDir, "llama"), Options{DType: dtype.I32}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("i32 dtype: %v", err)
	}
	noWeights := t.TempDir()
	cfg, _ := os.ReadFile(filepath.Join(refDir, "llama", "config.json"))
	os.WriteFile(filepath.Join(noWeights, "config.json"), cfg, 0o644)
	if _, err := Load(noWeights, Options{}); err == nil || !strings.Contains(err.Error(), "weights") {
		t.Errorf("no weights: %v", err)
	}
}
