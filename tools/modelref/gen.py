#!/usr/bin/env python3
"""Reference checkpoints and expected outputs for the Go `models` package.

    PY="$(tools/modelref/venv.sh)"          # transformers 5.24 + torch 2.15 venv
    "$PY" tools/modelref/gen.py              # (re)write testdata/models/<variant>/
    "$PY" tools/modelref/gen.py --check      # regenerate into a temp dir, compare
    "$PY" tools/modelref/gen.py llama gemma2 # only these variants

For every variant (see VARIANTS) it builds a tiny Hugging Face model from a
config, re-randomises every parameter (weights, biases, norm weights) from a
fixed seed so that each one matters, saves it with `save_pretrained` (so the
files and tensor names are exactly what transformers writes, tied weights
included), reloads it from disk and records what transformers computes:

  testdata/models/<variant>/
    config.json, model.safetensors (f32), generation_config.json  -- save_pretrained
    expected.safetensors  -- f32 tensors:
        causal LMs: logits [1,T,V], logits_bf16 [1,T,V], batch_logits [2,T2,V]
                    (+ long_logits [1,24,V] for the rope variants, mistral, gemma2, gemma3)
        encoders:   last_hidden_state [1,T,H], last_hidden_state_bf16,
                    pooler_output [1,H], batch_last_hidden_state [2,T2,H],
                    batch_pooler_output [2,H]
    expected.json         -- inputs, greedy ids, versions and notes

Every measurement starts from a freshly loaded model, because dynamic and
longrope RoPE keep state between forward calls. The run is deterministic
(fixed seeds, one thread); `--check` regenerates everything into a temporary
directory and compares: config/generation_config text and model.safetensors
bytes exactly, ids exactly, float tensors within a small tolerance (CPU
kernels may differ slightly between machines). It exits non-zero on mismatch.
testdata/models/README.md documents the layout and the conventions.
"""
import argparse
import copy
import json
import os
import shutil
import sys
import tempfile
import warnings

import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import (
    BertConfig, BertModel, Gemma2Config, Gemma2ForCausalLM, Gemma3ForCausalLM,
    Gemma3TextConfig, GemmaConfig, GemmaForCausalLM, GPT2Config, GPT2LMHeadModel,
    LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM, Qwen2Config,
    Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM, RobertaConfig, RobertaModel,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "testdata", "models")

T = 12            # prompt length of `input_ids`
BATCH_LENS = (9, 6)
LONG_T = 24       # `long_input_ids`, past every rope variant's original max (16)
NEW = 16          # greedy tokens for the single prompt
BATCH_NEW = 8     # greedy tokens per row of the batch
WEIGHT_STD = 0.2  # std of every re-randomised weight/embedding
BIAS_STD = 0.1
NORM_STD = 0.2    # norm weights: 1 + N(0, NORM_STD), for gemma too (its (1+w) gain is then ~2)
INPUT_SEED = 1234
VOCAB = 128      # 256 would put testdata/models over its 3 MB budget

# Shared small shapes. head_dim = hidden/heads for the llama-shaped models;
# qwen3 and the gemmas use an explicit head_dim that differs from it.
SMALL = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, initializer_range=WEIGHT_STD,
             pad_token_id=0, bos_token_id=1, eos_token_id=2)
ROPE = {"rope_type": "default", "rope_theta": 10000.0}


def llama_cfg(**kw):
    base = dict(SMALL, max_position_embeddings=64, rms_norm_eps=1e-6, tie_word_embeddings=False,
                rope_parameters=dict(ROPE))
    base.update(kw)
    return LlamaConfig(**base)


def gemma_common(**kw):
    base = dict(SMALL, head_dim=16, max_position_embeddings=64, rms_norm_eps=1e-6,
                tie_word_embeddings=True)
    base.update(kw)
    return base


# Seed of the re-randomised weights per `weights` key. Variants sharing a key
# and parameter shapes get byte-identical model.safetensors (the llama rope
# variants and mistral differ from llama only in config.json). Picked among
# 0..15 for varied greedy output (random tiny models fall into loops) and
# top1-top2 logit gaps that are not tiny; any seed would be a valid reference.
WEIGHT_SEEDS = {"gpt2": 15, "llama": 2, "llama_bias": 15, "qwen2": 15, "qwen3": 12, "gemma": 4,
                "gemma2": 3, "gemma3": 14, "bert": 0, "roberta": 1}

# name -> dict(cls, config (callable), kind, weights (key of WEIGHT_SEEDS),
# checks: [(label, config overrides)] that must change long_logits, notes)
VARIANTS = {
    "gpt2": dict(
        cls=GPT2LMHeadModel, kind="causal", weights="gpt2",
        config=lambda: GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=4,
                                  n_inner=None, activation_function="gelu_new",
                                  initializer_range=WEIGHT_STD, bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1,
                                  pad_token_id=None, tie_word_embeddings=True),
        pad=0,
        notes="GPT-2: learned absolute positions (wpe), Conv1D weights stored [in, out] (transposed "
              "vs nn.Linear), c_attn packs q|k|v along the output dim, n_inner null -> 4*n_embd, "
              "gelu_new (tanh approximation), LayerNorm eps 1e-5, lm_head tied to wte. "
              "pad_token_id is null in the config; the batch pads with id 0."),
    "llama": dict(cls=LlamaForCausalLM, kind="causal", weights="llama", config=lambda: llama_cfg(),
                  notes="Plain RoPE (theta 1e4), GQA 4 query / 2 kv heads, untied lm_head."),
    "llama_tied": dict(cls=LlamaForCausalLM, kind="causal", weights="llama",
                       config=lambda: llama_cfg(tie_word_embeddings=True),
                       notes="tie_word_embeddings true: save_pretrained writes no lm_head.weight; "
                             "the head is model.embed_tokens.weight. Weights otherwise identical to llama."),
    "llama_rope_linear": dict(
        cls=LlamaForCausalLM, kind="causal", weights="llama",
        config=lambda: llama_cfg(rope_parameters=dict(ROPE, rope_type="linear", factor=2.0)),
        checks=[("plain rope", {"rope_parameters": dict(ROPE)})],
        notes="Linear RoPE: inv_freq / factor (positions divided by 2). Weights identical to llama."),
    "llama_rope_dynamic": dict(
        cls=LlamaForCausalLM, kind="causal", weights="llama",
        config=lambda: llama_cfg(max_position_embeddings=16,
                                 rope_parameters=dict(ROPE, rope_type="dynamic", factor=2.0)),
        checks=[("plain rope", {"rope_parameters": dict(ROPE)})],
        notes="Dynamic NTK RoPE, factor 2, max_position_embeddings 16 (the 'original' length). For a "
              "forward call with seq_len = max(position_ids)+1 > 16 transformers uses base' = "
              "base*((factor*seq_len/16)-(factor-1))**(dim/(dim-2)); otherwise plain inv_freq. The "
              "prompt (12) and the batch (max position 8) stay below 16, so `logits` and `batch_logits` "
              "equal plain rope; long_logits (24 tokens) use seq_len 24. During cached generation "
              "each decode step recomputes inv_freq from its own seq_len (growing), while the "
              "cached keys keep the rotation they were made with, so cache and recompute can differ. "
              "Weights identical to llama."),
    "llama_rope_yarn": dict(
        cls=LlamaForCausalLM, kind="causal", weights="llama",
        config=lambda: llama_cfg(rope_parameters=dict(ROPE, rope_type="yarn", factor=4.0,
                                                      original_max_position_embeddings=16)),
        checks=[("plain rope", {"rope_parameters": dict(ROPE)})],
        notes="YaRN: factor 4, original_max_position_embeddings 16, beta_fast 32 / beta_slow 1 "
              "(defaults), truncate true (default): correction range floor/ceil'd. attention_factor "
              "defaults to 0.1*ln(factor)+1 and multiplies BOTH cos and sin (so q.k is scaled by its "
              "square). Static: independent of sequence length. Weights identical to llama."),
    "llama_rope_llama3": dict(
        cls=LlamaForCausalLM, kind="causal", weights="llama",
        config=lambda: llama_cfg(rope_parameters=dict(ROPE, rope_type="llama3", factor=8.0,
                                                      low_freq_factor=1.0, high_freq_factor=4.0,
                                                      original_max_position_embeddings=16)),
        checks=[("plain rope", {"rope_parameters": dict(ROPE)})],
        notes="Llama 3 RoPE: factor 8, low_freq_factor 1, high_freq_factor 4, "
              "original_max_position_embeddings 16 (so wavelengths 4..16 are smoothed, > 16 divided "
              "by 8). Static. Weights identical to llama."),
    "llama_rope_longrope": dict(
        cls=LlamaForCausalLM, kind="causal", weights="llama",
        config=lambda: llama_cfg(rope_parameters=dict(
            ROPE, rope_type="longrope", factor=4.0, original_max_position_embeddings=16,
            short_factor=[1.0, 1.25, 1.5, 2.0], long_factor=[1.0, 2.0, 4.0, 8.0])),
        checks=[("plain rope", {"rope_parameters": dict(ROPE)})],
        notes="LongRoPE: inv_freq = 1/(ext_factor * base**(2i/dim)), ext_factor = long_factor when "
              "the forward call's seq_len = max(position_ids)+1 > original_max_position_embeddings "
              "(16), else short_factor; the choice is per forward call for the whole batch. "
              "attention_factor = sqrt(1 + ln(factor)/ln(16)) with factor 4 multiplies cos and sin "
              "ALWAYS (short and long). `logits` (12) and `batch_logits` use short_factor, "
              "long_logits (24) long_factor. In cached generation the decode steps past position 15 "
              "switch to long_factor while the cached keys keep short_factor, so cache and "
              "recompute can differ. Weights identical to llama."),
    "llama_bias": dict(cls=LlamaForCausalLM, kind="causal", weights="llama_bias",
                       config=lambda: llama_cfg(attention_bias=True, mlp_bias=True),
                       notes="attention_bias true (q/k/v/o biases) and mlp_bias true (gate/up/down biases)."),
    "mistral": dict(
        cls=MistralForCausalLM, kind="causal", weights="llama",
        config=lambda: MistralConfig(**dict(SMALL, max_position_embeddings=64, rms_norm_eps=1e-6,
                                            tie_word_embeddings=False, sliding_window=4,
                                            rope_parameters=dict(ROPE))),
        checks=[("no sliding window", {"sliding_window": None})],
        notes="Mistral = llama architecture + sliding_window 4 on every layer: query i attends keys "
              "j with i-4 < j <= i (4 keys including itself), in sequence-index space. Weights "
              "identical to llama (same parameter names and shapes)."),
    "qwen2": dict(
        cls=Qwen2ForCausalLM, kind="causal", weights="qwen2",
        config=lambda: Qwen2Config(**dict(SMALL, max_position_embeddings=64, rms_norm_eps=1e-6,
                                          tie_word_embeddings=False, rope_parameters=dict(ROPE))),
        notes="Qwen2: q/k/v projections have biases, o_proj none. use_sliding_window false."),
    "qwen3": dict(
        cls=Qwen3ForCausalLM, kind="causal", weights="qwen3",
        config=lambda: Qwen3Config(**dict(SMALL, head_dim=16, max_position_embeddings=64,
                                          rms_norm_eps=1e-6, tie_word_embeddings=False,
                                          rope_parameters=dict(ROPE))),
        notes="Qwen3: RMSNorm over head_dim on q and k (q_norm/k_norm, weight [head_dim]) applied "
              "per head before RoPE; explicit head_dim 16 != hidden/heads = 8 (q_proj 32->64, "
              "o_proj 64->32); no biases."),
    "gemma": dict(
        cls=GemmaForCausalLM, kind="causal", weights="gemma",
        config=lambda: GemmaConfig(**gemma_common(hidden_act="gelu_pytorch_tanh",
                                                  rope_parameters=dict(ROPE))),
        notes="Gemma 1: embeddings * sqrt(hidden) (the scale is cast to the weight dtype first: "
              "bf16(sqrt(32)) = 5.65625 in the bf16 run), RMSNorm computed in f32 as "
              "x/rms * (1 + w) with w stored zero-centred, GeGLU with gelu tanh approximation, "
              "head_dim 16 != hidden/heads, tied lm_head."),
    "gemma2": dict(
        cls=Gemma2ForCausalLM, kind="causal", weights="gemma2",
        config=lambda: Gemma2Config(**gemma_common(
            num_hidden_layers=3, hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=24,
            sliding_window=4, layer_types=["sliding_attention", "full_attention", "sliding_attention"],
            attn_logit_softcapping=5.0, final_logit_softcapping=8.0, rope_parameters=dict(ROPE))),
        checks=[("no attn softcap", {"attn_logit_softcapping": None}),
                ("no final softcap", {"final_logit_softcapping": None}),
                ("all layers global", {"layer_types": ["full_attention"] * 3}),
                ("query_pre_attn_scalar = head_dim", {"query_pre_attn_scalar": 16})],
        notes="Gemma 2: like gemma plus: attention scores scaled by query_pre_attn_scalar**-0.5 "
              "(24, not head_dim 16), attention logits soft-capped tanh(s/5)*5 before the mask, "
              "final logits soft-capped tanh(l/8)*8, post_attention_layernorm applied to the "
              "attention OUTPUT before the residual add, pre_/post_feedforward_layernorm around "
              "the MLP, layers 0 and 2 sliding window 4, layer 1 global. Eager attention "
              "(transformers does not offer sdpa for softcapping)."),
    "gemma3": dict(
        cls=Gemma3ForCausalLM, kind="causal", weights="gemma3",
        config=lambda: Gemma3TextConfig(**gemma_common(
            num_hidden_layers=3, hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=24,
            sliding_window=4, layer_types=["sliding_attention", "sliding_attention", "full_attention"],
            rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                             "full_attention": {"rope_type": "linear", "factor": 8.0,
                                                "rope_theta": 1000000.0}})),
        checks=[("all layers global", {"layer_types": ["full_attention"] * 3}),
                ("one rope for all layers", {"rope_parameters": {
                    "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                    "full_attention": {"rope_type": "default", "rope_theta": 10000.0}}}),
                ("query_pre_attn_scalar = head_dim", {"query_pre_attn_scalar": 16})],
        notes="Gemma 3 text (Gemma3ForCausalLM, model_type gemma3_text): gemma2's block layout "
              "(4 norms per layer, (1+w) RMSNorm, embed * sqrt(hidden)) without softcapping, plus "
              "q_norm/k_norm ((1+w) RMSNorm over head_dim, before RoPE). layer_types: layers 0,1 "
              "sliding (window 4, rope_theta 1e4 default rope = the old rope_local_base_freq), "
              "layer 2 full (rope_theta 1e6 with linear scaling factor 8, as the real 4B+ "
              "checkpoints). rope_parameters is a dict keyed by layer type. "
              "query_pre_attn_scalar 24."),
    "bert": dict(
        cls=BertModel, kind="encoder", weights="bert",
        config=lambda: BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=4, intermediate_size=64, hidden_act="gelu",
                                  max_position_embeddings=64, type_vocab_size=2,
                                  initializer_range=WEIGHT_STD, layer_norm_eps=1e-12, pad_token_id=0),
        notes="BertModel (with pooler): absolute learned positions 0..T-1 (also for padded rows), "
              "token_type_ids not passed = all 0 (type embedding row 0 is added), post-LN, exact "
              "erf gelu, LayerNorm eps 1e-12, pooler = tanh(dense(h[:,0])). Batch padded on the "
              "right with id 0 and attention_mask; hidden states at pad positions are well defined "
              "(pad queries attend to the unmasked keys) and recorded."),
    "roberta": dict(
        cls=RobertaModel, kind="encoder", weights="roberta",
        config=lambda: RobertaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64, hidden_act="gelu",
                                     max_position_embeddings=64, type_vocab_size=1,
                                     initializer_range=WEIGHT_STD, layer_norm_eps=1e-5,
                                     pad_token_id=1, bos_token_id=0, eos_token_id=2),
        notes="RobertaModel: like BERT but position ids are made from input_ids: "
              "padding_idx + cumsum(ids != padding_idx) for real tokens and padding_idx (1) for pad "
              "tokens, i.e. real tokens start at position 2 (see position_ids / "
              "batch_position_ids); type_vocab_size 1, LayerNorm eps 1e-5. Batch padded on the "
              "right with padding_idx 1."),
}


def is_norm(mod):
    return "norm" in type(mod).__name__.lower()


@torch.no_grad()
def rerandomise(model, seed):
    """Draw every parameter from a seeded normal (tied parameters once)."""
    g = torch.Generator().manual_seed(seed)
    norm_params = set()
    for mod in model.modules():
        if is_norm(mod):
            for p in mod.parameters(recurse=False):
                norm_params.add(id(p))
    for name, p in model.named_parameters():  # named_parameters yields a tied parameter once
        noise = torch.randn(p.shape, generator=g, dtype=torch.float32)
        if id(p) in norm_params:
            if name.endswith("bias"):
                p.copy_(noise * BIAS_STD)
            else:
                p.copy_(noise * NORM_STD + 1.0)
        elif name.endswith("bias"):
            p.copy_(noise * BIAS_STD)
        else:
            p.copy_(noise * WEIGHT_STD)


def make_inputs():
    g = torch.Generator().manual_seed(INPUT_SEED)
    # ids 3..VOCAB-2: never a pad/bos/eos id of any variant (0, 1, 2, VOCAB-1)
    draw = lambda n: torch.randint(3, VOCAB - 1, (n,), generator=g)
    ids = draw(T).unsqueeze(0)
    rows = [draw(n) for n in BATCH_LENS]
    long_ids = draw(LONG_T).unsqueeze(0)
    return ids, rows, long_ids


def pad_batch(rows, pad, left):
    n = max(len(r) for r in rows)
    ids = torch.full((len(rows), n), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), n), dtype=torch.long)
    for i, r in enumerate(rows):
        if left:
            ids[i, n - len(r):] = r
            mask[i, n - len(r):] = 1
        else:
            ids[i, :len(r)] = r
            mask[i, :len(r)] = 1
    return ids, mask


def generate_positions(mask):
    # transformers 5.24 GenerationMixin._prepare_position_ids_for_generation
    return (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)


def load(spec, d, dtype=torch.float32, config=None):
    """A fresh model from d. bf16 is from_pretrained(dtype=bf16): the f32 weights rounded to
    bf16 at load, while the RoPE inv_freq buffers stay f32 (model.to(bf16) would round them
    to bf16 too, which is not how bf16 checkpoints are normally run)."""
    kw = {"config": config} if config is not None else {}
    m = spec["cls"].from_pretrained(d, dtype=dtype, **kw).eval()
    if spec["kind"] == "causal":
        # generation must always make the requested number of tokens
        m.generation_config.eos_token_id = None
        if m.generation_config.pad_token_id is None:
            m.generation_config.pad_token_id = spec.get("pad", 0)
    return m


@torch.no_grad()
def logits_of(m, ids, mask=None, pos=None):
    out = m(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False)
    return out.logits.float()


@torch.no_grad()
def greedy(m, ids, mask, n, use_cache):
    out = m.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=n, use_cache=use_cache,
                     output_logits=True, return_dict_in_generate=True)
    new = out.sequences[:, ids.shape[1]:]
    assert new.shape[1] == n, f"generate made {new.shape[1]} tokens, wanted {n}"
    steps = torch.stack([l.float() for l in out.logits], dim=1)  # [B, n, V]
    return new, steps


@torch.no_grad()
def manual_greedy(m, ids, mask, n):
    """Greedy decoding recomputing the whole sequence each step, positions as generate."""
    for _ in range(n):
        lg = logits_of(m, ids, mask, generate_positions(mask))
        nxt = lg[:, -1].argmax(-1, keepdim=True)
        ids = torch.cat([ids, nxt], 1)
        mask = torch.cat([mask, torch.ones_like(nxt)], 1)
    return ids[:, -n:]


def margins(steps):
    """top1 - top2 logit gap of every generated step ([n] or [B][n]), rounded."""
    top2 = steps.topk(2, dim=-1).values
    return [round(x, 5) if isinstance(x, float) else [round(y, 5) for y in x]
            for x in (top2[..., 0] - top2[..., 1]).tolist()]


def rope_state(m):
    """inv_freq and attention_scaling of the model's rotary embedding as they are now."""
    inner = getattr(m, "model", None)
    rot = getattr(inner, "rotary_emb", None)
    if rot is None:
        return None
    r = lambda t: [float(f"{x:.9g}") for x in t.tolist()]
    if isinstance(rot.rope_type, dict):  # gemma3: one rope per layer type
        return {lt: {"rope_type": rot.rope_type[lt], "inv_freq": r(getattr(rot, f"{lt}_inv_freq")),
                     "attention_scaling": float(getattr(rot, f"{lt}_attention_scaling"))}
                for lt in sorted(rot.rope_type)}
    return {"rope_type": rot.rope_type, "inv_freq": r(rot.inv_freq),
            "attention_scaling": float(rot.attention_scaling)}


def check_config_effect(spec, d, ref_long, long_ids, label, overrides):
    cfg = spec["cls"].config_class.from_pretrained(d)
    for k, v in overrides.items():
        setattr(cfg, k, copy.deepcopy(v))
    m = load(spec, d, config=cfg)
    diff = float((logits_of(m, long_ids) - ref_long).abs().max())
    if diff < 1e-3:
        raise SystemExit(f"{label}: changing {overrides} does not change the logits ({diff})")
    return diff


def generate_variant(name, spec, root, inputs):
    d = os.path.join(root, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    ids, rows, long_ids = inputs
    cfg = spec["config"]()
    torch.manual_seed(0)
    model = spec["cls"](cfg).eval()
    rerandomise(model, WEIGHT_SEEDS[spec["weights"]])
    model.save_pretrained(d)
    st = load_file(os.path.join(d, "model.safetensors"))
    # the reloaded model must hold exactly the parameters drawn
    re = load(spec, d)
    for k, v in re.state_dict().items():
        if k in st:
            assert torch.equal(v, st[k]), k
    sd = model.state_dict()
    for k, v in st.items():
        assert torch.equal(v, sd[k]), k

    exp = {"family": cfg.model_type, "architecture": type(model).__name__,
           "attn_implementation": re.config._attn_implementation,
           "transformers": transformers.__version__, "torch": torch.__version__.split("+")[0],
           "weights_seed_key": spec["weights"], "weight_keys": sorted(st.keys())}
    tensors = {}
    notes = [spec["notes"]]
    if spec["kind"] == "causal":
        pad = cfg.pad_token_id if cfg.pad_token_id is not None else spec.get("pad", 0)
        bids, bmask = pad_batch(rows, pad, left=True)
        bpos = generate_positions(bmask)
        one = torch.ones_like(ids)
        tensors["logits"] = logits_of(load(spec, d), ids)
        tensors["logits_bf16"] = logits_of(load(spec, d, torch.bfloat16), ids)
        bl = logits_of(load(spec, d), bids, bmask, bpos)
        assert torch.isfinite(bl[bmask.bool()]).all()
        tensors["batch_logits"] = bl.masked_fill(bmask[..., None] == 0, 0.0)
        # the last prompt position of each batch row must agree with the same prompt alone
        for i, r in enumerate(rows):
            alone = logits_of(load(spec, d), r[None])
            diff = float((alone[0, -1] - bl[i, -1]).abs().max())
            exp.setdefault("batch_row_vs_alone_max_diff", []).append(diff)
        m = load(spec, d)
        if (rope := rope_state(m)) is not None:
            exp["rope"] = rope
        if spec.get("checks"):
            tensors["long_logits"] = logits_of(m, long_ids)
            exp["long_input_ids"] = long_ids.tolist()
            if (after := rope_state(m)) != rope:
                exp["rope_after_long_forward"] = after
            exp["feature_checks"] = {
                label: check_config_effect(spec, d, tensors["long_logits"], long_ids, label, ov)
                for label, ov in spec["checks"]}
        g, gsteps = greedy(load(spec, d), ids, one, NEW, True)
        g_nc, gsteps_nc = greedy(load(spec, d), ids, one, NEW, False)
        bg, bsteps = greedy(load(spec, d), bids, bmask, BATCH_NEW, True)
        bg_nc, bsteps_nc = greedy(load(spec, d), bids, bmask, BATCH_NEW, False)
        g16, g16steps = greedy(load(spec, d, torch.bfloat16), ids, one, NEW, True)
        man = manual_greedy(load(spec, d), ids, one, NEW)
        bman = manual_greedy(load(spec, d), bids, bmask, BATCH_NEW)
        assert torch.equal(man, g_nc), (name, man, g_nc)
        assert torch.equal(bman, bg_nc), (name, bman, bg_nc)
        # generate's first step is the prompt's last position
        assert float((gsteps[0, 0] - tensors["logits"][0, -1]).abs().max()) < 1e-4
        exp.update({
            "input_ids": ids.tolist(),
            "batch_input_ids": bids.tolist(), "batch_attention_mask": bmask.tolist(),
            "batch_position_ids": bpos.tolist(), "batch_pad_id": pad, "batch_padding": "left",
            "greedy": g[0].tolist(), "batch_greedy": bg.tolist(), "bf16_greedy": g16[0].tolist(),
            "cache_equals_recompute": bool(torch.equal(g, g_nc) and torch.equal(bg, bg_nc)),
            "cache_vs_recompute_max_logit_diff": max(float((gsteps - gsteps_nc).abs().max()),
                                                     float((bsteps - bsteps_nc).abs().max())),
            "greedy_margins": margins(gsteps[0]), "batch_greedy_margins": margins(bsteps),
            "bf16_greedy_margins": margins(g16steps[0]),
        })
        if not exp["cache_equals_recompute"]:
            exp["greedy_nocache"] = g_nc[0].tolist()
            exp["batch_greedy_nocache"] = bg_nc.tolist()
        notes.append(
            "logits: one forward over input_ids, no attention_mask, positions 0..T-1. "
            "batch_logits: forward over the left-padded batch with attention_mask and explicit "
            "position_ids = cumsum(mask)-1 with pads set to 0 (what transformers 5.24 generate "
            "computes; a plain forward without position_ids would use 0..T2-1 for every row); "
            "entries at pad positions (mask 0) are zeroed, do not compare them. greedy/batch_greedy/"
            "bf16_greedy: model.generate(do_sample=False) with the KV cache and eos disabled; "
            "generate continues the batch positions as last+1, +2, .... *_margins: top1-top2 logit "
            "gap at each generated step (an exact id match is only meaningful while the gap "
            "exceeds the comparison's error; bf16 logits tie often). "
            "logits_bf16/bf16_greedy: from_pretrained(dtype=torch.bfloat16): weights rounded "
            "(nearest-even) to bf16, activations bf16 as torch computes them on CPU, RoPE "
            "inv_freq/angles in f32 with cos/sin cast to bf16, logits cast to f32. rope: inv_freq and "
            "attention_scaling (multiplies cos and sin) of the freshly loaded model; "
            "rope_after_long_forward: the same after the forward over long_input_ids, where "
            "dynamic/longrope replaced them.")
    else:
        pad = cfg.pad_token_id
        bids, bmask = pad_batch(rows, pad, left=False)
        m = load(spec, d)
        with torch.no_grad():
            out = m(input_ids=ids)
            bout = m(input_ids=bids, attention_mask=bmask)
            out16 = load(spec, d, torch.bfloat16)(input_ids=ids)
        tensors["last_hidden_state"] = out.last_hidden_state.float()
        tensors["last_hidden_state_bf16"] = out16.last_hidden_state.float()
        tensors["pooler_output"] = out.pooler_output.float()
        tensors["batch_last_hidden_state"] = bout.last_hidden_state.float()
        tensors["batch_pooler_output"] = bout.pooler_output.float()
        if cfg.model_type == "roberta":
            mk = lambda x: (x.ne(pad).int().cumsum(1) * x.ne(pad).int()).long() + pad
            position_ids, batch_position_ids = mk(ids), mk(bids)
        else:
            position_ids = torch.arange(T)[None]
            batch_position_ids = torch.arange(bids.shape[1])[None].expand(2, -1)
        exp.update({
            "input_ids": ids.tolist(), "position_ids": position_ids.tolist(),
            "batch_input_ids": bids.tolist(), "batch_attention_mask": bmask.tolist(),
            "batch_position_ids": batch_position_ids.tolist(), "batch_pad_id": pad,
            "batch_padding": "right",
        })
        notes.append("Encoders get no position_ids from the caller: the model makes them (recorded "
                     "as position_ids / batch_position_ids). last_hidden_state_bf16: "
                     "from_pretrained(dtype=torch.bfloat16). token_type_ids all zero.")
    exp["notes"] = " ".join(notes)
    for k in list(tensors):
        tensors[k] = tensors[k].contiguous().float()
    save_file(tensors, os.path.join(d, "expected.safetensors"))
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump(exp, f, indent=1)
        f.write("\n")


def run(root, names):
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    inputs = make_inputs()
    for name in names:
        generate_variant(name, VARIANTS[name], root, inputs)
        print(f"wrote {os.path.relpath(os.path.join(root, name), ROOT) if root == OUT else name}",
              file=sys.stderr)


def json_diff(a, b, path):
    """Ids, strings and structure exactly; floats (margins, diagnostics) within 1e-3."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}/{k}: only in one" for k in set(a) ^ set(b)]
        for k in sorted(set(a) & set(b)):
            out += json_diff(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [m for x, y in zip(a, b) for m in json_diff(x, y, path)]
    if isinstance(a, float) or isinstance(b, float):
        return [] if abs(a - b) <= 1e-3 else [f"{path}: {a} != {b}"]
    return [] if a == b else [f"{path}: {a} != {b}"]


def compare(a_dir, b_dir, names):
    bad = []
    for name in names:
        a, b = os.path.join(a_dir, name), os.path.join(b_dir, name)
        fa, fb = sorted(os.listdir(a)), sorted(os.listdir(b))
        if fa != fb:
            bad.append(f"{name}: files {fa} != {fb}")
            continue
        for f in fa:
            pa, pb = os.path.join(a, f), os.path.join(b, f)
            if f == "expected.safetensors":
                ta, tb = load_file(pa), load_file(pb)
                if sorted(ta) != sorted(tb):
                    bad.append(f"{name}/{f}: keys differ")
                    continue
                for k in ta:
                    tol = 2e-2 if k.endswith("_bf16") else 1e-4
                    if ta[k].shape != tb[k].shape:
                        bad.append(f"{name}/{f}:{k}: shape {list(ta[k].shape)} != {list(tb[k].shape)}")
                    elif (d := float((ta[k] - tb[k]).abs().max())) > tol:
                        bad.append(f"{name}/{f}:{k}: max abs diff {d} > {tol}")
            elif f == "expected.json":
                with open(pa) as ja, open(pb) as jb:
                    bad += [f"{name}/{f}: {m}" for m in json_diff(json.load(ja), json.load(jb), "")]
            else:
                if open(pa, "rb").read() != open(pb, "rb").read():
                    bad.append(f"{name}/{f}: bytes differ")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="regenerate into a temp dir and compare")
    ap.add_argument("variants", nargs="*", help="subset of: " + " ".join(VARIANTS))
    args = ap.parse_args()
    names = args.variants or list(VARIANTS)
    for n in names:
        if n not in VARIANTS:
            ap.error(f"unknown variant {n}")
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            run(tmp, names)
            bad = compare(OUT, tmp, names)
        for b in bad:
            print("MISMATCH", b)
        print(f"checked {len(names)} variants: {'OK' if not bad else f'{len(bad)} mismatches'}")
        sys.exit(1 if bad else 0)
    os.makedirs(OUT, exist_ok=True)
    run(OUT, names)


if __name__ == "__main__":
    main()
