#!/usr/bin/env python3
"""Reference outputs of the real GGUF models from transformers + PyTorch.

transformers loads each GGUF file (dequantizing every tensor to f32) with its
own GGUF tokenizer; for six varied prompts this records the prompt ids, the
last position's logits (the 256 largest, and 2048 entries at seeded random
indices — the whole vocabulary would be megabytes), and 32 greedy tokens with
their top-2 margins. models/gguf_test.go compares gotpu's run of the same
file with it.

    PY="$(tools/modelref/venv.sh)"
    "$PY" tools/gguf/model_ref.py              # writes testdata/gguf/<name>.ref.json
    "$PY" tools/gguf/model_ref.py --check      # recompute and compare

The GGUF files come from tools/gguf/fetch.sh (its cache directory), or from
$GOTPU_GGUF_DIR.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "testdata", "gguf")

MODELS = {
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "gemma3": "gemma-3-270m-q4_k_m.gguf",
}

PROMPTS = [
    {"text": "The capital of France is"},
    {"text": "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"},
    {"text": "Once upon a time, in a small village by the sea, there lived"},
    {"text": "Translate to German: The weather is nice today.\nGerman:"},
    {"text": "1, 1, 2, 3, 5, 8, 13,"},
    {"chat": "What is the boiling point of water at sea level, in Celsius? Answer briefly."},
]

NEW_TOKENS = 32
TOP = 256
SAMPLES = 2048


def gguf_dir():
    if os.environ.get("GOTPU_GGUF_DIR"):
        return os.environ["GOTPU_GGUF_DIR"]
    out = subprocess.run([os.path.join(ROOT, "tools", "gguf", "fetch.sh")], check=True, capture_output=True, text=True).stdout.split()
    return os.path.dirname(out[0])


def reference(path_dir, fname):
    tok = AutoTokenizer.from_pretrained(path_dir, gguf_file=fname)
    model = AutoModelForCausalLM.from_pretrained(path_dir, gguf_file=fname, dtype=torch.float32).eval()
    # Exactly NEW_TOKENS tokens: no end-of-sequence stop.
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    vocab = model.config.vocab_size
    rng = np.random.default_rng(1234)
    sample_idx = sorted(rng.choice(vocab, size=min(SAMPLES, vocab), replace=False).tolist())
    cases = []
    for p in PROMPTS:
        if "chat" in p and tok.chat_template:
            ids = tok.apply_chat_template([{"role": "user", "content": p["chat"]}], add_generation_prompt=True, tokenize=True, return_dict=False)
            if isinstance(ids, dict):
                ids = ids["input_ids"]
        elif "chat" in p:
            # No chat template in the file (Gemma-3-270M is the base model).
            ids = tok("Question: " + p["chat"] + "\nAnswer:")["input_ids"]
        else:
            ids = tok(p["text"])["input_ids"]
        ids = list(map(int, ids))
        x = torch.tensor([ids])
        with torch.inference_mode():
            logits = model(x).logits[0, -1].float().numpy()
            out = model.generate(x, do_sample=False, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                 output_scores=True, return_dict_in_generate=True)
        gen = out.sequences[0, len(ids):].tolist()
        margins = []
        for s in out.scores:
            top2 = torch.topk(s[0].float(), 2).values
            margins.append(float(top2[0] - top2[1]))
        order = np.argsort(-logits, kind="stable")[:TOP]
        cases.append({
            "prompt": p,
            "ids": ids,
            "top_ids": order.tolist(),
            "top_logits": [float(logits[i]) for i in order],
            "sample_ids": sample_idx,
            "sample_logits": [float(logits[i]) for i in sample_idx],
            "greedy": gen,
            "greedy_margins": margins,
            "text": tok.decode(gen, skip_special_tokens=True),
        })
    return {
        "file": fname,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "vocab_size": vocab,
        "model_type": model.config.model_type,
        "notes": "transformers loads the GGUF with dequantization to f32; logits of the last prompt position; greedy with eos disabled",
        "cases": cases,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--only", help="one model name (smollm2, gemma3)")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(2)
    d = gguf_dir()
    os.makedirs(OUT, exist_ok=True)
    bad = 0
    for name, fname in MODELS.items():
        if args.only and name != args.only:
            continue
        ref = reference(d, fname)
        path = os.path.join(OUT, name + ".ref.json")
        text = json.dumps(ref, indent=None, separators=(",", ":")) + "\n"
        if args.check:
            with open(path) as f:
                old = json.load(f)
            for a, b in zip(old["cases"], ref["cases"]):
                if a["ids"] != b["ids"] or a["greedy"] != b["greedy"] or a["top_ids"][:10] != b["top_ids"][:10]:
                    print(f"{name}: case {a['prompt']} differs", file=sys.stderr)
                    bad += 1
                d2 = max(abs(x - y) for x, y in zip(a["sample_logits"], b["sample_logits"]))
                if d2 > 1e-4:
                    print(f"{name}: logits differ by {d2}", file=sys.stderr)
                    bad += 1
        else:
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, path)
            print(f"wrote {path}: {[c['text'][:40] for c in ref['cases']]}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
