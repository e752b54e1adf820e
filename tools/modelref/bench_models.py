#!/usr/bin/env python3
"""Random-weight checkpoints for `gotpu bench model` (never committed).

    PY="$(tools/modelref/venv.sh)"               # transformers 5.24 + torch 2.15 venv
    "$PY" tools/modelref/bench_models.py          # write both, print their directories
    "$PY" tools/modelref/bench_models.py --out DIR smollm2-135m-shape

Writes, with `save_pretrained` (f32 safetensors, tied weights as transformers
saves them), seeded and idempotent:

  smollm2-135m-shape  LlamaForCausalLM shaped like SmolLM2-135M: hidden 576,
                      intermediate 1536, 30 layers, 9 heads, 3 kv heads,
                      vocab 49152, tied embeddings, rope_theta 100000,
                      rms_norm_eps 1e-5, max_position_embeddings 8192
                      (134.5M parameters)
  gpt2-small-shape    GPT2LMHeadModel shaped like GPT-2 small: n_embd 768,
                      12 layers, 12 heads, vocab 50257, n_positions 1024
                      (124.4M parameters)

The weights are transformers' own initialisation (normal, std 0.02) under
torch.manual_seed(SEED): the benchmark measures speed, not quality, so they
only need the real shapes and ordinary magnitudes. Every directory gets a
`bench-model.json` stamp holding its spec; a directory whose stamp matches is
left alone, otherwise it is rebuilt in a temporary directory and renamed into
place. No tokenizer is written: the benchmark feeds token ids.

The output directory is --out, else $GOTPU_BENCH_MODELS, else
~/.cache/gotpu-testdata/bench-models. Prints one line per model: name and
directory.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

SEED = 20260101
STAMP = "bench-model.json"
FORMAT = 1  # bump when what is written changes

SPECS = {
    "smollm2-135m-shape": {
        "class": "LlamaForCausalLM",
        "config": dict(
            hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
            num_attention_heads=9, num_key_value_heads=3, vocab_size=49152,
            tie_word_embeddings=True, rope_theta=100000.0, rms_norm_eps=1e-5,
            max_position_embeddings=8192, hidden_act="silu",
            bos_token_id=1, eos_token_id=2, initializer_range=0.02,
        ),
    },
    "gpt2-small-shape": {
        "class": "GPT2LMHeadModel",
        "config": dict(
            n_embd=768, n_layer=12, n_head=12, vocab_size=50257, n_positions=1024,
            bos_token_id=50256, eos_token_id=50256, initializer_range=0.02,
        ),
    },
}


def default_out():
    return os.environ.get("GOTPU_BENCH_MODELS") or os.path.join(
        os.path.expanduser("~"), ".cache", "gotpu-testdata", "bench-models")


def stamp_of(name):
    return {"format": FORMAT, "seed": SEED, "name": name, **SPECS[name]}


def up_to_date(path, want):
    try:
        with open(os.path.join(path, STAMP)) as f:
            have = json.load(f)
    except (OSError, ValueError):
        return False
    return have == want and os.path.exists(os.path.join(path, "model.safetensors"))


def build(name, path):
    import torch
    import transformers

    spec = SPECS[name]
    cls = getattr(transformers, spec["class"])
    cfg = cls.config_class(**spec["config"])
    # Rope parameters are keyword arguments above; transformers 5 moves
    # rope_theta into rope_parameters, which config.json then carries.
    torch.manual_seed(SEED)
    model = cls(cfg).to(torch.float32).eval()
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="." + name + ".", dir=parent)
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        with open(os.path.join(tmp, STAMP), "w") as f:
            json.dump(stamp_of(name), f, indent=1, sort_keys=True)
            f.write("\n")
        if os.path.exists(path):
            shutil.rmtree(path)
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    n = sum(p.numel() for p in model.parameters())
    print(f"{name}: wrote {n} parameters to {path}", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", help="models to write (default: all): " + ", ".join(SPECS))
    p.add_argument("--out", default=None, help="directory holding one subdirectory per model")
    a = p.parse_args()
    out = a.out or default_out()
    names = a.names or list(SPECS)
    for n in names:
        if n not in SPECS:
            p.error(f"unknown model {n!r} (want {', '.join(SPECS)})")
    for n in names:
        path = os.path.join(out, n)
        if not up_to_date(path, stamp_of(n)):
            build(n, path)
        print(n, path)


if __name__ == "__main__":
    main()
