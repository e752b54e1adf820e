package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/hf/safetensors"
)

// writeTinyLlama writes a random-weight Llama checkpoint (hidden 16, 2
// layers, 4 heads, 2 kv heads, vocab 64, tied embeddings) into a temporary
// directory and returns it.
func writeTinyLlama(t *testing.T) string {
	t.Helper()
	const h, inter, layers, heads, kv, vocab = 16, 32, 2, 4, 2, 64
	hd := h / heads
	dir := t.TempDir()
	cfg := map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama",
		"hidden_size": h, "intermediate_size": inter, "num_hidden_layers": layers,
		"num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": vocab,
		"max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
		"tie_word_embeddings": true, "hidden_act": "silu", "torch_dtype": "float32",
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var ts []safetensors.Tensor
	add := func(name string, ones bool, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		b := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			v := float32(1)
			if !ones {
				v = float32(rng.NormFloat64() * 0.2)
			}
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		ts = append(ts, safetensors.Tensor{Name: name, DType: safetensors.F32, Shape: shape, Data: b})
	}
	add("model.embed_tokens.weight", false, vocab, h)
	add("model.norm.weight", true, h)
	for i := 0; i < layers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		add(p+"input_layernorm.weight", true, h)
		add(p+"post_attention_layernorm.weight", true, h)
		add(p+"self_attn.q_proj.weight", false, heads*hd, h)
		add(p+"self_attn.k_proj.weight", false, kv*hd, h)
		add(p+"self_attn.v_proj.weight", false, kv*hd, h)
		add(p+"self_attn.o_proj.weight", false, h, heads*hd)
		add(p+"mlp.gate_proj.weight", false, inter, h)
		add(p+"mlp.up_proj.weight", false, inter, h)
		add(p+"mlp.down_proj.weight", false, h, inter)
	}
	if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestBenchModelJSON runs `gotpu bench model` on a tiny checkpoint and
// checks the report's keys and shape (never its timings). The PyTorch
// reference is requested with a Python that does not exist, so it must be
// reported as skipped while gotpu's results stand.
func TestBenchModelJSON(t *testing.T) {
	dir := writeTinyLlama(t)
	prof := t.TempDir()
	rep := benchJSON(t, "model", "--model", dir, "--dtype", "f32,bf16", "--mode", "strict,compiled",
		"--reps", "2", "--warmup", "0", "--prompt-len", "8", "--new-tokens", "4", "--threads", "1",
		"--reference", "--python", filepath.Join(t.TempDir(), "no-python"),
		"--cpuprofile", prof, "--profile-reps", "1")

	var keys []string
	for k := range rep {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"device", "family", "load_avg", "memory", "model", "new_tokens", "notes", "params", "profiles",
		"prompt_len", "ratios", "ref_method", "reps", "results", "skipped", "threads", "versions", "warmup"}
	if !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	if rep["family"] != "llama" || rep["prompt_len"].(float64) != 8 || rep["new_tokens"].(float64) != 4 {
		t.Errorf("family %v prompt_len %v new_tokens %v", rep["family"], rep["prompt_len"], rep["new_tokens"])
	}
	// 64*16 embedding + 16 norm + 2 layers of (2*16 norms + 16*16*2 q,o + 8*16*2 k,v + 3*32*16 MLP).
	if p := rep["params"].(float64); p != 64*16+16+2*(2*16+2*16*16+2*8*16+3*32*16) {
		t.Errorf("params = %v", p)
	}

	results := rep["results"].([]any)
	if len(results) != 4 {
		t.Fatalf("%d results, want 4 (2 dtypes x 2 modes): %v", len(results), results)
	}
	resultKeys := []string{"decode_s", "decode_steps", "decode_tokens_per_s", "decode_tokens_per_s_max", "decode_tokens_per_s_min",
		"dtype", "impl", "prefill_s", "prefill_tokens", "prefill_tokens_per_s", "prefill_tokens_per_s_max",
		"prefill_tokens_per_s_min", "tokens"}
	var seen []string
	for _, r := range results {
		m := r.(map[string]any)
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		// CPU-time keys: present wherever the process's CPU time can be read.
		cpuKeys := []string{"decode_cpu_s", "decode_tokens_per_cpu_s", "prefill_cpu_s", "prefill_tokens_per_cpu_s"}
		if processCPUSeconds() >= 0 {
			for _, k := range cpuKeys {
				if _, ok := m[k]; !ok {
					t.Errorf("result lacks %q", k)
				}
			}
		}
		ks = slices.DeleteFunc(ks, func(k string) bool { return slices.Contains(cpuKeys, k) })
		want := resultKeys
		if m["impl"] == "gotpu.compiled" {
			want = append([]string{"compile"}, resultKeys...)
			c := m["compile"].(map[string]any)
			if c["replays"].(float64) == 0 || c["programs"].(float64) == 0 {
				t.Errorf("compiled steps never replayed: %v", c)
			}
		}
		if !slices.Equal(ks, want) {
			t.Errorf("result keys %v, want %v", ks, want)
		}
		seen = append(seen, m["dtype"].(string)+"/"+m["impl"].(string))
		if m["prefill_tokens"].(float64) != 8 || m["decode_steps"].(float64) != 3 || len(m["tokens"].([]any)) != 4 {
			t.Errorf("%v: prefill_tokens %v decode_steps %v tokens %v", seen[len(seen)-1], m["prefill_tokens"], m["decode_steps"], m["tokens"])
		}
		if len(m["prefill_s"].([]any)) != 2 || len(m["decode_s"].([]any)) != 2 {
			t.Errorf("%v: want 2 timed repetitions", seen[len(seen)-1])
		}
		for _, k := range []string{"prefill_tokens_per_s", "decode_tokens_per_s"} {
			v := m[k].(float64)
			if !(v > 0) || m[k+"_min"].(float64) > v || m[k+"_max"].(float64) < v {
				t.Errorf("%v: %s %v not within [%v, %v]", seen[len(seen)-1], k, v, m[k+"_min"], m[k+"_max"])
			}
		}
	}
	slices.Sort(seen)
	if w := []string{"bf16/gotpu.compiled", "bf16/gotpu.strict", "f32/gotpu.compiled", "f32/gotpu.strict"}; !slices.Equal(seen, w) {
		t.Errorf("results %v, want %v", seen, w)
	}

	mem := rep["memory"].([]any)
	if len(mem) != 2 {
		t.Fatalf("%d memory entries, want 2", len(mem))
	}
	wantW := map[string]float64{"f32": 4 * rep["params"].(float64), "bf16": 2 * rep["params"].(float64)}
	for _, e := range mem {
		m := e.(map[string]any)
		for _, k := range []string{"dtype", "weight_bytes", "rss_before_load_bytes", "rss_after_load_bytes", "rss_ratio",
			"rss_delta_ratio", "device_reserved_bytes", "rss_after_empty_cache_bytes", "load_s", "rss_after_runs_bytes"} {
			if _, ok := m[k]; !ok {
				t.Errorf("memory entry lacks %q: %v", k, m)
			}
		}
		if m["weight_bytes"].(float64) != wantW[m["dtype"].(string)] {
			t.Errorf("%v: weight_bytes %v, want %v", m["dtype"], m["weight_bytes"], wantW[m["dtype"].(string)])
		}
	}

	sk := rep["skipped"].([]any)
	if len(sk) != 1 || sk[0].(map[string]any)["impl"] != "torch" {
		t.Errorf("skipped = %v, want the torch reference", sk)
	}
	if len(rep["ratios"].([]any)) != 0 {
		t.Errorf("ratios without a reference: %v", rep["ratios"])
	}
	profiles := rep["profiles"].([]any)
	if len(profiles) != 2*2*2 { // dtype x mode x {prefill, decode}
		t.Errorf("%d profiles, want 8: %v", len(profiles), profiles)
	}
	for _, p := range profiles {
		if st, err := os.Stat(p.(string)); err != nil || st.Size() == 0 || !strings.HasPrefix(p.(string), prof) {
			t.Errorf("profile %v: %v", p, err)
		}
	}
	for _, k := range []string{"start", "end"} {
		if _, ok := rep["load_avg"].(map[string]any)[k]; !ok {
			t.Errorf("load_avg lacks %q", k)
		}
	}
}

// TestBenchModelFlags checks the flag validation.
func TestBenchModelFlags(t *testing.T) {
	dir := writeTinyLlama(t)
	for _, args := range [][]string{
		{"model"},
		{"model", "--model", dir, "--dtype", "f8"},
		{"model", "--model", dir, "--mode", "debug"},
		{"model", "--model", dir, "--reps", "0"},
		{"model", "--model", dir, "--ref-method", "fast"},
	} {
		if out, err := runBench(t, args...); err == nil {
			t.Errorf("bench %v: no error\n%s", args, out)
		}
	}
}

// TestBenchPromptIDs pins the prompt formula bench_ref.py repeats.
func TestBenchPromptIDs(t *testing.T) {
	if got, want := benchPromptIDs(4, 49152), []int{17, 7936, 15855, 23774}; !slices.Equal(got, want) {
		t.Errorf("benchPromptIDs = %v, want %v", got, want)
	}
	for _, id := range benchPromptIDs(1000, 50257) {
		if id < 0 || id >= 50257 {
			t.Fatalf("id %d outside the vocabulary", id)
		}
	}
}

// TestBenchModelReference runs the PyTorch reference (tools/modelref's
// venv) on the tiny checkpoint: its results, ratios and token agreement
// come back. Skipped in -short mode or without the venv.
func TestBenchModelReference(t *testing.T) {
	if testing.Short() {
		t.Skip("starts transformers + PyTorch (slow)")
	}
	if _, _, err := modelRefCommand("", ""); err != nil {
		t.Skip(err)
	}
	dir := writeTinyLlama(t)
	for _, method := range []string{"generate", "loop"} {
		rep := benchJSON(t, "model", "--model", dir, "--dtype", "f32", "--mode", "strict",
			"--reps", "1", "--warmup", "0", "--prompt-len", "8", "--new-tokens", "4", "--threads", "1",
			"--reference", "--ref-method", method)
		if sk := rep["skipped"].([]any); len(sk) != 0 {
			t.Fatalf("%s: skipped %v", method, sk)
		}
		if impls := resultImpls(rep); !slices.Equal(impls, []string{"gotpu.strict", "torch"}) {
			t.Fatalf("%s: results %v", method, impls)
		}
		var toks [][]any
		for _, r := range rep["results"].([]any) {
			toks = append(toks, r.(map[string]any)["tokens"].([]any))
		}
		g := rep["results"].([]any)[0].(map[string]any)
		// f32 greedy on the same weights: the same tokens.
		if n := g["tokens_agree_torch"]; n != float64(4) {
			t.Errorf("%s: tokens_agree_torch %v (gotpu %v, torch %v)", method, n, toks[0], toks[1])
		}
		r := rep["ratios"].([]any)
		if len(r) != 1 || r[0].(map[string]any)["impl"] != "gotpu.strict" || rep["ref_method"] != method {
			t.Errorf("%s: ratios %v ref_method %v", method, r, rep["ref_method"])
		}
		if m := rep["memory"].([]any)[0].(map[string]any); m["torch_rss_after_load_bytes"] == nil {
			t.Errorf("%s: no torch memory in %v", method, m)
		}
	}
}

// TestBenchModelStepProfile: --step-profile reports, per dtype, a prefill
// and a decode table of the compiled programs' steps, whose calls add up
// to the generations run (the decode's products once per layer per step).
func TestBenchModelStepProfile(t *testing.T) {
	dir := writeTinyLlama(t)
	rep := benchJSON(t, "model", "--model", dir, "--dtype", "f32", "--mode", "compiled",
		"--reps", "1", "--warmup", "0", "--prompt-len", "8", "--new-tokens", "4", "--threads", "1",
		"--step-profile", "--profile-reps", "2")
	phases, _ := rep["step_profile"].([]any)
	if len(phases) != 2 {
		t.Fatalf("step_profile has %d phases, want prefill and decode: %v", len(phases), rep["step_profile"])
	}
	for i, want := range []string{"prefill", "decode"} {
		ph := phases[i].(map[string]any)
		if ph["phase"] != want || ph["dtype"] != "f32" || ph["runs"].(float64) != 2 {
			t.Errorf("phase %d: %v", i, ph)
		}
		steps := ph["steps"].([]any)
		if len(steps) == 0 {
			t.Fatalf("%s: no steps", want)
		}
		var total float64
		var products float64
		for _, s := range steps {
			m := s.(map[string]any)
			total += m["total_s"].(float64)
			if name := m["step"].(string); strings.Contains(name, "dot_general") || strings.Contains(name, "fused") {
				products += m["calls"].(float64)
			}
		}
		if total <= 0 || products == 0 {
			t.Errorf("%s: total %v s, %v product steps", want, total, products)
		}
	}
	// The tiny model has 2 layers; 3 decode steps a run, 2 runs: its
	// output products (o and down) at least once per layer and step.
	if n := stepCalls(phases[1], "dot_general"); n < 2*3*2 {
		t.Errorf("decode: %v dot_general steps, want at least %d", n, 2*3*2)
	}
}

// stepCalls sums the calls of a phase's steps whose name contains s.
func stepCalls(phase any, s string) float64 {
	var n float64
	for _, st := range phase.(map[string]any)["steps"].([]any) {
		m := st.(map[string]any)
		if strings.Contains(m["step"].(string), s) {
			n += m["calls"].(float64)
		}
	}
	return n
}
