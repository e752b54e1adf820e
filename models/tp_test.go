package models

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotpu/gotpu/checkpoint"
	"github.com/gotpu/gotpu/dist"
	"github.com/gotpu/gotpu/hf/config"
	"github.com/gotpu/gotpu/tensor"
)

// Tensor-parallel subprocess tests: the test binary re-executes itself as
// the ranks of a job (GOTPU_TP_TEST_MODEL names the model directory);
// each rank shards the model, generates and prints its tokens and logits,
// which the test compares with the unsharded model's.

func TestMain(m *testing.M) {
	if dir := os.Getenv("GOTPU_TP_TEST_MODEL"); dir != "" {
		if err := tpRank(dir); err != nil {
			fmt.Println("ERROR:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// tpPrompts are the test's prompts: two of different lengths, so that
// the batch is left-padded.
var tpPrompts = [][]int{{5, 6, 7, 8, 9}, {17, 3, 99}}

const tpNewTokens = 8

// tpResult is what a rank (or the unsharded model) computes.
type tpResult struct {
	Tokens [][]int   `json:"tokens"`
	Logits []float32 `json:"logits"`
	Plan   *TPPlan   `json:"plan,omitempty"`
}

func tpRun(m *CausalLM) (tpResult, error) {
	res, err := m.Generate(context.Background(), tpPrompts, GenerateOptions{MaxNewTokens: tpNewTokens, EOS: []int{-1}})
	if err != nil {
		return tpResult{}, err
	}
	lg, _, err := m.ForwardLogits(tpPrompts, 0)
	if err != nil {
		return tpResult{}, err
	}
	return tpResult{Tokens: res.Tokens, Logits: lg}, nil
}

func tpRank(dir string) error {
	ctx := context.Background()
	g, err := dist.Init(ctx, dist.Options{Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	defer g.Close()
	mod, err := Load(dir, Options{})
	if err != nil {
		return err
	}
	if err := mod.LM.ShardTensorParallel(g); err != nil {
		return err
	}
	r, err := tpRun(mod.LM)
	if err != nil {
		return err
	}
	_, r.Plan = mod.LM.TensorParallel()
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Printf("RESULT %s\n", b)
	return nil
}

var tpRunCounter int

// spawnTP runs n ranks on the model in dir and returns each rank's result.
func spawnTP(t *testing.T, dir string, n int) []tpResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := dist.ListenStore(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	port := srv.Addr()[strings.LastIndex(srv.Addr(), ":")+1:]
	tpRunCounter++
	outs := make([]bytes.Buffer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "GOTPU_TP_TEST_MODEL="+dir,
			"RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n),
			"LOCAL_RANK="+strconv.Itoa(r), "LOCAL_WORLD_SIZE="+strconv.Itoa(n),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+port, "GOTPU_STORE_SERVED=1", "GOMAXPROCS=1",
			fmt.Sprintf("GOTPU_RUN_ID=%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "_"), os.Getpid(), tpRunCounter))
		cmd.Stdout, cmd.Stderr = &outs[r], &outs[r]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = cmd.Wait()
		}()
	}
	wg.Wait()
	res := make([]tpResult, n)
	for r := range n {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v\n%s", r, errs[r], outs[r].String())
		}
		found := false
		sc := bufio.NewScanner(&outs[r])
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "RESULT "); ok {
				if err := json.Unmarshal([]byte(line), &res[r]); err != nil {
					t.Fatal(err)
				}
				found = true
			}
		}
		if !found {
			t.Fatalf("rank %d printed no result:\n%s", r, outs[r].String())
		}
	}
	return res
}

// writeGQA3 writes a tiny random Llama checkpoint whose shares are uneven
// over 2 ranks and whose heads allow 3: 6 query heads over 3 key/value
// heads (SmolLM2-135M's 3:1 grouping), an intermediate size of 70, a
// vocabulary of 131 and biases on every attention projection.
func writeGQA3(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join(refDir, "llama", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	const hidden, heads, kv, hd, inter, vocab, layers = 24, 6, 3, 4, 70, 131, 2
	for k, v := range map[string]any{"hidden_size": hidden, "num_attention_heads": heads, "num_key_value_heads": kv,
		"head_dim": hd, "intermediate_size": inter, "vocab_size": vocab, "num_hidden_layers": layers, "attention_bias": true} {
		c[k] = v
	}
	raw, _ = json.Marshal(c)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(16, 3))
	mat := func(shape ...int) *tensor.Tensor {
		n := 1
		for _, s := range shape {
			n *= s
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 0.3)
		}
		return tensor.FromSlice(tensor.MustDevice("cpu"), v, shape...)
	}
	ts := []checkpoint.Named{
		{Name: "model.embed_tokens.weight", Tensor: mat(vocab, hidden)},
		{Name: "model.norm.weight", Tensor: mat(hidden).AddScalar(1)},
		{Name: "lm_head.weight", Tensor: mat(vocab, hidden)},
	}
	for i := range layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		ts = append(ts,
			checkpoint.Named{Name: p + "input_layernorm.weight", Tensor: mat(hidden).AddScalar(1)},
			checkpoint.Named{Name: p + "post_attention_layernorm.weight", Tensor: mat(hidden).AddScalar(1)},
			checkpoint.Named{Name: p + "self_attn.q_proj.weight", Tensor: mat(heads*hd, hidden)},
			checkpoint.Named{Name: p + "self_attn.q_proj.bias", Tensor: mat(heads * hd)},
			checkpoint.Named{Name: p + "self_attn.k_proj.weight", Tensor: mat(kv*hd, hidden)},
			checkpoint.Named{Name: p + "self_attn.k_proj.bias", Tensor: mat(kv * hd)},
			checkpoint.Named{Name: p + "self_attn.v_proj.weight", Tensor: mat(kv*hd, hidden)},
			checkpoint.Named{Name: p + "self_attn.v_proj.bias", Tensor: mat(kv * hd)},
			checkpoint.Named{Name: p + "self_attn.o_proj.weight", Tensor: mat(hidden, heads*hd)},
			checkpoint.Named{Name: p + "self_attn.o_proj.bias", Tensor: mat(hidden)},
			checkpoint.Named{Name: p + "mlp.gate_proj.weight", Tensor: mat(inter, hidden)},
			checkpoint.Named{Name: p + "mlp.up_proj.weight", Tensor: mat(inter, hidden)},
			checkpoint.Named{Name: p + "mlp.down_proj.weight", Tensor: mat(hidden, inter)},
		)
	}
	if err := checkpoint.Save(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTensorParallelGenerate checks that a decoder sharded over 2 or 3
// ranks generates the unsharded model's greedy tokens, with its logits
// (every position of a left-padded batch) within f32 tolerance.
func TestTensorParallelGenerate(t *testing.T) {
	gqa3 := writeGQA3(t)
	tests := []struct {
		name  string
		dir   string
		ranks int
	}{
		{"llama/2", filepath.Join(refDir, "llama"), 2},
		{"llama_tied/2", filepath.Join(refDir, "llama_tied"), 2},
		{"llama_bias/2", filepath.Join(refDir, "llama_bias"), 2},
		{"qwen3/2", filepath.Join(refDir, "qwen3"), 2},
		{"gemma2/2", filepath.Join(refDir, "gemma2"), 2},
		{"gqa3_uneven/2", gqa3, 2},
		{"gqa3/3", gqa3, 3},
		{"gqa3/1", gqa3, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mod, err := Load(tc.dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := tpRun(mod.LM)
			if err != nil {
				t.Fatal(err)
			}
			for r, got := range spawnTP(t, tc.dir, tc.ranks) {
				if fmt.Sprint(got.Tokens) != fmt.Sprint(want.Tokens) {
					t.Errorf("rank %d of %d: tokens %v, unsharded %v", r, tc.ranks, got.Tokens, want.Tokens)
				}
				allClose(t, fmt.Sprintf("rank %d of %d: logits", r, tc.ranks), got.Logits, want.Logits, 1e-5, 1.3e-6, nil)
				if got.Plan == nil || got.Plan.Ranks != tc.ranks {
					t.Errorf("rank %d: plan %+v", r, got.Plan)
				}
			}
		})
	}
}

func TestPlanTensorParallel(t *testing.T) {
	parse := func(js string) *config.Config {
		c, err := config.Parse([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// SmolLM2-135M's shapes.
	smol := parse(`{"model_type": "llama", "vocab_size": 49152, "hidden_size": 576, "num_attention_heads": 9, "num_key_value_heads": 3, "intermediate_size": 1536, "num_hidden_layers": 30, "hidden_act": "silu"}`)
	tests := []struct {
		name    string
		c       *config.Config
		ranks   int
		want    TPPlan
		wantErr string
	}{
		{"smollm2/2", smol, 2, TPPlan{Ranks: 2, KVHeads: []int{2, 1}, Heads: []int{6, 3}, Intermediate: []int{768, 768}, Vocab: []int{24576, 24576}}, ""},
		{"smollm2/3", smol, 3, TPPlan{Ranks: 3, KVHeads: []int{1, 1, 1}, Heads: []int{3, 3, 3}, Intermediate: []int{512, 512, 512}, Vocab: []int{16384, 16384, 16384}}, ""},
		{"smollm2/1", smol, 1, TPPlan{Ranks: 1, KVHeads: []int{3}, Heads: []int{9}, Intermediate: []int{1536}, Vocab: []int{49152}}, ""},
		{"smollm2/4", smol, 4, TPPlan{}, "at most 3 ranks"},
		{"zero", smol, 0, TPPlan{}, "over 0 ranks"},
		{"gpt2", parse(`{"model_type": "gpt2", "n_embd": 32, "n_head": 4, "n_layer": 1, "vocab_size": 128}`), 2, TPPlan{}, "gpt2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlanTensorParallel(tc.c, tc.ranks)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("plan %+v, want %+v", got, tc.want)
			}
		})
	}
	// The tiny llama's 2 key/value heads cannot go to 3 ranks.
	mod, err := Load(filepath.Join(refDir, "llama"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = PlanTensorParallel(mod.Config, 3)
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("llama over 3 ranks: err = %v, want ErrUnsupported", err)
	}
}
