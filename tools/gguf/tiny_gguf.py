#!/usr/bin/env python3
"""Tiny GGUF files for models/gguf_test.go, written from the tiny random
checkpoints of testdata/models with llama.cpp's conventions (tensor names,
llama's Q/K row permutation, Gemma's norms stored as 1 + w) by the gguf
package's writer, plus the logits and greedy tokens transformers computes
when it loads each file (its own GGUF reader, independent of gotpu's).

    PY="$(tools/modelref/venv.sh)"
    for v in llama qwen2 mistral gemma2 gemma3; do
      "$PY" tools/gguf/tiny_gguf.py testdata/models/$v testdata/gguf/tiny/$v.gguf
    done

Writes DEST and DEST with .gguf replaced by .ref.json. For qwen3 the
transformers step fails (its GGUF loader cannot express a head_dim other
than the class default): the file is written and the Go test compares it
with the original checkpoint's reference instead. Gemma 1 is left out
(transformers 5.24 has no gemma GGUF support).
"""
import sys, json, os, numpy as np, torch
import gguf
from safetensors.numpy import load_file
from transformers import AutoModelForCausalLM

src = sys.argv[1]; out = sys.argv[2]
cfg = json.load(open(os.path.join(src, "config.json")))
mt = cfg["model_type"]
arch = {"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "gemma": "gemma", "gemma2": "gemma2", "gemma3_text": "gemma3", "mistral": "llama"}[mt]
w = load_file(os.path.join(src, "model.safetensors"))
H, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
hd = cfg.get("head_dim") or H // nh
writer = gguf.GGUFWriter(out, arch)
writer.add_name("tiny " + mt)
writer.add_context_length(cfg["max_position_embeddings"])
writer.add_embedding_length(H)
writer.add_block_count(cfg["num_hidden_layers"])
writer.add_feed_forward_length(cfg["intermediate_size"])
writer.add_head_count(nh)
writer.add_head_count_kv(nkv)
writer.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
writer.add_rope_freq_base(cfg.get("rope_theta", (cfg.get("rope_parameters") or {}).get("rope_theta", 10000.0)) if "rope_theta" in cfg else 10000.0)
writer.add_key_length(hd); writer.add_value_length(hd)
if arch == "llama":
    writer.add_rope_dimension_count(hd)
writer.add_vocab_size(cfg["vocab_size"])
if cfg.get("sliding_window"):
    writer.add_sliding_window(cfg["sliding_window"])
def permute(x, n):
    return x.reshape(n, 2, x.shape[0] // n // 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)
names = {
 "model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight", "lm_head.weight": "output.weight",
}
for k, v in w.items():
    n = names.get(k)
    if n is None:
        parts = k.split(".")
        l = parts[2]; rest = ".".join(parts[3:])
        m = {"input_layernorm.weight": "attn_norm.weight", "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
             "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
             "self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias", "self_attn.v_proj.bias": "attn_v.bias",
             "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
             "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight",
             "pre_feedforward_layernorm.weight": "ffn_norm.weight", "post_feedforward_layernorm.weight": "post_ffw_norm.weight"}
        if rest == "post_attention_layernorm.weight":
            m[rest] = "post_attention_norm.weight" if arch in ("gemma2", "gemma3") else "ffn_norm.weight"
        n = "blk.%s.%s" % (l, m[rest])
    v = v.astype(np.float32)
    if arch == "llama" and n.endswith("attn_q.weight"): v = permute(v, nh)
    if arch == "llama" and n.endswith("attn_k.weight"): v = permute(v, nkv)
    if arch.startswith("gemma") and n.endswith("norm.weight"): v = v + 1
    writer.add_tensor(n, v)
writer.write_header_to_file(); writer.write_kv_data_to_file(); writer.write_tensors_to_file(); writer.close()
d, f = os.path.dirname(os.path.abspath(out)), os.path.basename(out)
m = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32).eval()
m.generation_config.eos_token_id = None
m.generation_config.pad_token_id = 0
ids = torch.tensor([[3, 14, 15, 92, 65, 35, 89, 79, 32, 38]])
with torch.no_grad():
    lg = m(ids).logits[0]
    g = m.generate(ids, do_sample=False, max_new_tokens=8)
ref = {"variant": os.path.basename(src), "model_type": m.config.model_type, "ids": ids[0].tolist(),
       "logits": [[float(x) for x in row] for row in lg], "greedy": g[0, ids.shape[1]:].tolist()}
json.dump(ref, open(out[:-5] + ".ref.json", "w"), separators=(",", ":"))
print(mt, "ok", m.config.model_type, ref["greedy"])
