#!/usr/bin/env python3
"""Cross-check of testdata/models without transformers.

A float64 numpy re-implementation of the llama-shaped variants (llama,
llama_tied, llama_bias, the five RoPE scalings, mistral's sliding window),
written from the conventions in testdata/models/README.md, compared with the
committed expected outputs. It confirms that the documented semantics (batch
positions, sliding window, tied head, RoPE scalings, and the cached decoding
of dynamic/longrope whose per-call inv_freq makes cache and recompute differ)
are what transformers computed, and doubles as an executable spec for the Go
implementation.

    PY="$(tools/modelref/venv.sh)" && "$PY" tools/modelref/crosscheck.py

Exits non-zero when a logit differs by more than 1e-4 or a greedy id differs.
"""
import json
import math
import os
import sys

import numpy as np
from safetensors.numpy import load_file

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "testdata", "models")
VARIANTS = ["llama", "llama_tied", "llama_bias", "llama_rope_linear", "llama_rope_dynamic",
            "llama_rope_yarn", "llama_rope_llama3", "llama_rope_longrope", "mistral"]


class Model:
    def __init__(self, d):
        self.cfg = json.load(open(os.path.join(d, "config.json")))
        self.w = {k: v.astype(np.float64) for k, v in load_file(os.path.join(d, "model.safetensors")).items()}
        c = self.cfg
        self.heads, self.kv = c["num_attention_heads"], c["num_key_value_heads"]
        self.hd = c.get("head_dim") or c["hidden_size"] // self.heads
        self.window = c.get("sliding_window")
        # dynamic RoPE state: the longest seq_len seen so far (transformers' max_seq_len_cached)
        self.dyn_len = c["max_position_embeddings"]

    def inv_freq(self, seq_len):
        """inv_freq and attention factor for one forward call whose seq_len = max(position)+1."""
        rp, hd = self.cfg["rope_parameters"], self.hd
        base, kind = rp["rope_theta"], rp["rope_type"]
        expo = np.arange(0, hd, 2) / hd
        inv = 1.0 / base ** expo
        if kind == "default":
            return inv, 1.0
        if kind == "linear":
            return inv / rp["factor"], 1.0
        if kind == "dynamic":
            orig = self.cfg["max_position_embeddings"]
            if seq_len > self.dyn_len:
                self.dyn_len = seq_len
            elif seq_len < orig:
                self.dyn_len = orig
            n = self.dyn_len
            if n <= orig:
                return inv, 1.0
            f = rp["factor"]
            b = base * ((f * n / orig) - (f - 1)) ** (hd / (hd - 2))
            return 1.0 / b ** expo, 1.0
        if kind == "yarn":
            f, orig = rp["factor"], rp["original_max_position_embeddings"]
            fast, slow = rp.get("beta_fast") or 32, rp.get("beta_slow") or 1
            corr = lambda rot: hd * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(base))
            lo, hi = max(math.floor(corr(fast)), 0), min(math.ceil(corr(slow)), hd - 1)
            if lo == hi:
                hi += 0.001
            ramp = np.clip((np.arange(hd // 2) - lo) / (hi - lo), 0, 1)
            extra = 1 - ramp  # 1: keep the original frequency, 0: interpolate (divide by factor)
            return inv / f * (1 - extra) + inv * extra, 0.1 * math.log(f) + 1.0
        if kind == "llama3":
            f, lo_f, hi_f = rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"]
            orig = rp["original_max_position_embeddings"]
            wl = 2 * math.pi / inv
            out = np.where(wl > orig / lo_f, inv / f, inv)
            smooth = (orig / wl - lo_f) / (hi_f - lo_f)
            mid = (wl <= orig / lo_f) & (wl >= orig / hi_f)
            return np.where(mid, (1 - smooth) * out / f + smooth * out, out), 1.0
        if kind == "longrope":
            orig = rp["original_max_position_embeddings"]
            ext = np.array(rp["long_factor"] if seq_len > orig else rp["short_factor"])
            return 1.0 / (ext * base ** expo), math.sqrt(1 + math.log(rp["factor"]) / math.log(orig))
        raise ValueError(kind)

    def lin(self, name, x):
        y = x @ self.w[name + ".weight"].T
        return y + self.w[name + ".bias"] if name + ".bias" in self.w else y

    def rms(self, x, name):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.cfg["rms_norm_eps"]) * self.w[name]

    def forward(self, ids, pos, key_ok, cache=None):
        """ids, pos: [B, t]; key_ok: [B, t, S] which keys each query may see (S = cached + t).
        cache: per-layer lists of rotated keys/values, extended in place. Returns logits [B, t, V]."""
        B, t = ids.shape
        inv, att = self.inv_freq(int(pos.max()) + 1)
        ang = pos[..., None] * inv
        cos = np.cos(np.concatenate([ang, ang], -1))[:, None] * att
        sin = np.sin(np.concatenate([ang, ang], -1))[:, None] * att
        half = self.hd // 2
        rope = lambda x: x * cos + np.concatenate([-x[..., half:], x[..., :half]], -1) * sin
        heads = lambda x, n: x.reshape(B, t, n, self.hd).transpose(0, 2, 1, 3)
        x = self.w["model.embed_tokens.weight"][ids]
        for l in range(self.cfg["num_hidden_layers"]):
            p = f"model.layers.{l}."
            h = self.rms(x, p + "input_layernorm.weight")
            q = rope(heads(self.lin(p + "self_attn.q_proj", h), self.heads))
            k = rope(heads(self.lin(p + "self_attn.k_proj", h), self.kv))
            v = heads(self.lin(p + "self_attn.v_proj", h), self.kv)
            if cache is not None:
                cache[l][0].append(k)
                cache[l][1].append(v)
                k, v = np.concatenate(cache[l][0], 2), np.concatenate(cache[l][1], 2)
            rep = self.heads // self.kv
            k, v = np.repeat(k, rep, 1), np.repeat(v, rep, 1)
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(self.hd)
            # finite: a pad query that sees no key gets a harmless uniform row, not NaN
            s = np.where(key_ok[:, None], s, -1e30)
            s = np.exp(s - s.max(-1, keepdims=True))
            o = (s / s.sum(-1, keepdims=True)) @ v
            x = x + self.lin(p + "self_attn.o_proj", o.transpose(0, 2, 1, 3).reshape(B, t, -1))
            h = self.rms(x, p + "post_attention_layernorm.weight")
            g = self.lin(p + "mlp.gate_proj", h)
            x = x + self.lin(p + "mlp.down_proj", g / (1 + np.exp(-g)) * self.lin(p + "mlp.up_proj", h))
        x = self.rms(x, "model.norm.weight")
        return x @ self.w.get("lm_head.weight", self.w["model.embed_tokens.weight"]).T

    def key_ok(self, q_idx, k_idx, mask):
        """causal (+ sliding window) in sequence indices, and the key not padding."""
        ok = k_idx[None, :] <= q_idx[:, None]
        if self.window:
            ok &= k_idx[None, :] > q_idx[:, None] - self.window
        return ok[None] & (mask[:, None, :] == 1)

    def full(self, ids, mask=None, pos=None):
        ids = np.asarray(ids)
        mask = np.ones_like(ids) if mask is None else np.asarray(mask)
        pos = np.broadcast_to(np.arange(ids.shape[1]), ids.shape) if pos is None else np.asarray(pos)
        i = np.arange(ids.shape[1])
        return self.forward(ids, pos, self.key_ok(i, i, mask))

    def greedy_cached(self, prompt, n):
        """transformers' cached decoding: prefill, then one token per call, keys kept as computed."""
        ids = np.asarray([prompt])
        cache = [([], []) for _ in range(self.cfg["num_hidden_layers"])]
        i = np.arange(len(prompt))
        logits = self.forward(ids, i[None], self.key_ok(i, i, np.ones((1, len(prompt)), int)), cache)
        out = []
        for s in range(n):
            out.append(int(logits[0, -1].argmax()))
            q = len(prompt) + s
            ok = self.key_ok(np.array([q]), np.arange(q + 1), np.ones((1, q + 1), int))
            logits = self.forward(np.array([[out[-1]]]), np.array([[q]]), ok, cache)
        return out


def main():
    bad = []
    for v in VARIANTS:
        d = os.path.join(DATA, v)
        e = json.load(open(os.path.join(d, "expected.json")))
        x = load_file(os.path.join(d, "expected.safetensors"))
        diff = {"logits": np.abs(Model(d).full(e["input_ids"]) - x["logits"]).max()}
        m = np.array(e["batch_attention_mask"])
        bl = Model(d).full(e["batch_input_ids"], m, e["batch_position_ids"])
        diff["batch_logits"] = np.abs((bl - x["batch_logits"])[m == 1]).max()
        if "long_logits" in x:
            diff["long_logits"] = np.abs(Model(d).full(e["long_input_ids"]) - x["long_logits"]).max()
        ids = list(e["input_ids"][0])
        for _ in range(16):  # recompute the whole sequence each step (use_cache=False)
            ids.append(int(Model(d).full([ids])[0, -1].argmax()))
        recompute_ok = ids[12:] == e.get("greedy_nocache", e["greedy"])
        cached_ok = Model(d).greedy_cached(e["input_ids"][0], 16) == e["greedy"]
        print(f"{v:20s}", " ".join(f"{k} {y:.1e}" for k, y in diff.items()),
              f"recompute greedy {recompute_ok} cached greedy {cached_ok}")
        bad += [f"{v} {k}" for k, y in diff.items() if not y <= 1e-4]  # NaN fails too
        bad += [f"{v} greedy_nocache"] * (not recompute_ok) + [f"{v} greedy"] * (not cached_ok)
    print("crosscheck:", "OK" if not bad else "MISMATCH " + ", ".join(bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
