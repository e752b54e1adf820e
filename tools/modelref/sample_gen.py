#!/usr/bin/env python3
"""Writes models/sample/testdata/processors.json: logits processed by
transformers' own LogitsProcessor classes, the reference the Go package
models/sample is checked against.

    PY="$(tools/modelref/venv.sh)"            # transformers 5.24.0, torch 2.15.0
    "$PY" tools/modelref/sample_gen.py         # rewrite the file
    "$PY" tools/modelref/sample_gen.py --check # exit 1 if the committed file differs

Each case applies either one processor class alone or the list generate()
builds (GenerationMixin._get_logits_processor on a tiny randomly initialised
GPT-2, so the order is transformers' own) to one of a few fixed logit vectors
(several sizes; ties, -inf entries, flat and peaked distributions), with
input_ids = prompt + generated.

Presence and frequency penalties are not in transformers. They are added here
as vLLM's sampler applies them (logits -= frequency*counts; logits -=
presence*(counts > 0), counts over the generated ids only), inserted right
after RepetitionPenaltyLogitsProcessor, which is where the Go package applies
them.

torch.sort(stable=False) on the CPU is not stable for more than 16 elements,
so when tied logits straddle the top-p cut the tokens transformers removes
depend on the sort's internals. For every case the script also runs the same
list with TopPLogitsWarper's sort made stable (ties by ascending id, the Go
package's definition); when the two differ the case carries both ("stable")
and the Go test checks the stable one exactly and that the two differ only
among tied logits.

Output (deterministic; no time or host recorded): "logits" is a list of
vectors as base64 little-endian float32; each case names one, gives its ids
and parameters, and the result as "removed" (base64 bitmask, bit i of byte
i/8 set when token i is -inf after processing, little-endian bit order) and
"kept" (base64 float32 of the remaining values in id order), plus "argmax"
(torch.argmax of the processed scores).
"""
import argparse
import base64
import json
import os
import platform
import sys

import numpy as np
import torch
import transformers
from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel
from transformers.generation.logits_process import (
    LogitsProcessor,
    LogitsProcessorList,
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "models", "sample", "testdata", "processors.json")


def b64f32(a):
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4").tobytes()).decode()


def b64bits(mask):
    return base64.b64encode(np.packbits(np.asarray(mask, dtype=bool), bitorder="little").tobytes()).decode()


def make_logits():
    """The fixed input vectors, by name."""
    rng = np.random.default_rng(20260)
    inf = np.float32(-np.inf)
    out = {}
    out["tiny8"] = np.array([1.5, -0.5, 1.5, -np.inf, 0.0, 2.0, -2.25, 1.5], dtype=np.float32)
    out["equal10"] = np.ones(10, dtype=np.float32)
    # 40 logits from three values: tie groups of ~13 (longer than 16 after
    # sorting: torch's CPU sort is not stable there).
    out["ties40"] = rng.integers(0, 3, 40).astype(np.float32) * np.float32(0.75)
    out["normal100"] = (rng.standard_normal(100) * 2).astype(np.float32)
    a = (rng.standard_normal(1000) * 3).astype(np.float32)
    a[rng.choice(1000, 50, replace=False)] = inf
    a[rng.choice(1000, 40, replace=False)] = a[7]  # a tie group
    out["normal1000_inf"] = a
    a = rng.standard_normal(1000).astype(np.float32)
    a[123] = 14.0
    a[456] = 12.5
    out["peaked1000"] = a
    out["normal4096"] = (rng.standard_normal(4096) * 1.5).astype(np.float32)
    a = (rng.standard_normal(4096) * 2.5).astype(np.float32)
    a[rng.choice(4096, 300, replace=False)] = inf
    a[rng.choice(4096, 64, replace=False)] = np.float32(1.25)  # ties
    a[77] = 11.0
    a[3000] = 10.0
    out["peaked4096_inf"] = a
    return out


class VLLMPenalties(LogitsProcessor):
    """Presence and frequency penalties as vLLM applies them, on the ids
    after the first prompt_len (the generated ones)."""

    def __init__(self, presence, frequency, prompt_len):
        self.presence = presence
        self.frequency = frequency
        self.prompt_len = prompt_len

    def __call__(self, input_ids, scores):
        vocab = scores.shape[-1]
        counts = torch.zeros_like(scores, dtype=torch.int64)
        gen = input_ids[:, self.prompt_len:]
        counts.scatter_add_(1, gen, torch.ones_like(gen))
        freq = torch.full((scores.shape[0],), self.frequency, dtype=scores.dtype)
        pres = torch.full((scores.shape[0],), self.presence, dtype=scores.dtype)
        scores = scores - freq.unsqueeze(1) * counts[:, :vocab]
        scores = scores - pres.unsqueeze(1) * (counts[:, :vocab] > 0)
        return scores


class StableTopP(TopPLogitsWarper):
    """TopPLogitsWarper with a stable sort (ties by ascending id)."""

    def __call__(self, input_ids, scores):
        sorted_logits, sorted_indices = torch.sort(scores, descending=False, stable=True)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        sorted_indices_to_remove = cumulative_probs <= (1 - self.top_p)
        sorted_indices_to_remove[..., -self.min_tokens_to_keep:] = 0
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        return scores.masked_fill(indices_to_remove, self.filter_value)


def stable_variant(procs):
    out = LogitsProcessorList()
    for p in procs:
        if type(p) is TopPLogitsWarper:
            q = StableTopP(p.top_p, filter_value=p.filter_value, min_tokens_to_keep=p.min_tokens_to_keep)
            out.append(q)
        else:
            out.append(p)
    return out


_models = {}


def tiny_model(vocab):
    if vocab not in _models:
        torch.manual_seed(0)
        cfg = GPT2Config(vocab_size=vocab, n_embd=8, n_layer=1, n_head=2, n_positions=64,
                         bos_token_id=None, eos_token_id=None)
        _models[vocab] = GPT2LMHeadModel(cfg).eval()
    return _models[vocab]


def generate_processors(vocab, params, prompt_len, input_ids):
    """The LogitsProcessorList generate() builds for params, with the vLLM
    penalties inserted after the repetition penalty."""
    kw = dict(do_sample=params.get("temperature", 1.0) != 0)
    if kw["do_sample"]:
        kw["temperature"] = float(params.get("temperature", 1.0))
        kw["top_k"] = int(params.get("top_k", 0))
        kw["top_p"] = float(params.get("top_p", 1.0))
        if params.get("min_p", 0) != 0:
            kw["min_p"] = float(params["min_p"])
    kw["repetition_penalty"] = float(params.get("repetition_penalty", 1.0))
    cfg = GenerationConfig(**kw)
    model = tiny_model(vocab)
    procs = model._get_logits_processor(
        generation_config=cfg,
        input_ids_seq_length=input_ids.shape[-1],
        encoder_input_ids=input_ids,
        prefix_allowed_tokens_fn=None,
        logits_processor=LogitsProcessorList(),
        device="cpu",
    )
    pres, freq = params.get("presence_penalty", 0.0), params.get("frequency_penalty", 0.0)
    if pres or freq:
        at = 0
        for i, p in enumerate(procs):
            if isinstance(p, RepetitionPenaltyLogitsProcessor):
                at = i + 1
        procs.insert(at, VLLMPenalties(float(pres), float(freq), prompt_len))
    return procs


def single_processor(name, params, prompt_len):
    if name == "RepetitionPenaltyLogitsProcessor":
        return RepetitionPenaltyLogitsProcessor(float(params["repetition_penalty"]))
    if name == "TemperatureLogitsWarper":
        return TemperatureLogitsWarper(float(params["temperature"]))
    if name == "TopKLogitsWarper":
        return TopKLogitsWarper(int(params["top_k"]))
    if name == "TopPLogitsWarper":
        return TopPLogitsWarper(float(params["top_p"]))
    if name == "MinPLogitsWarper":
        return MinPLogitsWarper(float(params["min_p"]))
    if name == "VLLMPenalties":
        return VLLMPenalties(float(params.get("presence_penalty", 0.0)),
                             float(params.get("frequency_penalty", 0.0)), prompt_len)
    raise ValueError(name)


def case_list():
    """(name, logits, via, params, prompt, generated); via is a processor
    class name or "generate"."""
    c = []
    # Repetition penalty: duplicates, ids on positive, zero, negative and -inf
    # logits, penalty above and below 1.
    c.append(("rep_tiny8", "tiny8", "RepetitionPenaltyLogitsProcessor", {"repetition_penalty": 1.3},
              [0, 1, 3, 4], [1, 5, 5]))
    c.append(("rep_normal100", "normal100", "RepetitionPenaltyLogitsProcessor", {"repetition_penalty": 1.2},
              list(range(0, 100, 3)), [5, 7, 7, 11]))
    c.append(("rep_reward_normal100", "normal100", "RepetitionPenaltyLogitsProcessor", {"repetition_penalty": 0.8},
              [1, 2, 3, 50, 99], [60, 61, 2]))
    c.append(("rep_normal1000_inf", "normal1000_inf", "RepetitionPenaltyLogitsProcessor",
              {"repetition_penalty": 1.7}, list(range(0, 1000, 7)), list(range(500, 520))))
    # Presence / frequency (vLLM definition).
    c.append(("presfreq_normal100", "normal100", "VLLMPenalties",
              {"presence_penalty": 0.5, "frequency_penalty": 0.25}, [0, 1, 2, 3], [4, 4, 4, 9, 1, 9]))
    c.append(("presfreq_neg_tiny8", "tiny8", "VLLMPenalties",
              {"presence_penalty": -1.0, "frequency_penalty": 1.5}, [5], [5, 3, 0, 0, 0]))
    # Temperature.
    c.append(("temp07_normal100", "normal100", "TemperatureLogitsWarper", {"temperature": 0.7}, [], []))
    c.append(("temp15_normal1000_inf", "normal1000_inf", "TemperatureLogitsWarper", {"temperature": 1.5}, [], []))
    # Top-k: ties at the k-th value, k = 1, more than the finite count.
    c.append(("topk2_tiny8", "tiny8", "TopKLogitsWarper", {"top_k": 2}, [], []))
    c.append(("topk1_tiny8", "tiny8", "TopKLogitsWarper", {"top_k": 1}, [], []))
    c.append(("topk5_ties40", "ties40", "TopKLogitsWarper", {"top_k": 5}, [], []))
    c.append(("topk50_normal1000_inf", "normal1000_inf", "TopKLogitsWarper", {"top_k": 50}, [], []))
    c.append(("topk990_normal1000_inf", "normal1000_inf", "TopKLogitsWarper", {"top_k": 990}, [], []))
    c.append(("topk300_normal4096", "normal4096", "TopKLogitsWarper", {"top_k": 300}, [], []))
    c.append(("topk3000_peaked4096_inf", "peaked4096_inf", "TopKLogitsWarper", {"top_k": 3000}, [], []))
    # Top-p: ties at the cut (short and long groups), flat and peaked, tiny
    # and large top_p.
    c.append(("topp035_equal10", "equal10", "TopPLogitsWarper", {"top_p": 0.35}, [], []))
    c.append(("topp05_ties40", "ties40", "TopPLogitsWarper", {"top_p": 0.5}, [], []))
    c.append(("topp08_ties40", "ties40", "TopPLogitsWarper", {"top_p": 0.8}, [], []))
    c.append(("topp09_tiny8", "tiny8", "TopPLogitsWarper", {"top_p": 0.9}, [], []))
    c.append(("topp09_normal100", "normal100", "TopPLogitsWarper", {"top_p": 0.9}, [], []))
    c.append(("topp05_normal1000_inf", "normal1000_inf", "TopPLogitsWarper", {"top_p": 0.5}, [], []))
    c.append(("topp03_peaked1000", "peaked1000", "TopPLogitsWarper", {"top_p": 0.3}, [], []))
    c.append(("topp099_peaked1000", "peaked1000", "TopPLogitsWarper", {"top_p": 0.99}, [], []))
    c.append(("topp1e-4_normal1000_inf", "normal1000_inf", "TopPLogitsWarper", {"top_p": 1e-4}, [], []))
    c.append(("topp02_normal4096", "normal4096", "TopPLogitsWarper", {"top_p": 0.2}, [], []))
    c.append(("topp095_normal4096", "normal4096", "TopPLogitsWarper", {"top_p": 0.95}, [], []))
    c.append(("topp08_peaked4096_inf", "peaked4096_inf", "TopPLogitsWarper", {"top_p": 0.8}, [], []))
    c.append(("topp09999_peaked4096_inf", "peaked4096_inf", "TopPLogitsWarper", {"top_p": 0.9999}, [], []))
    # Min-p.
    c.append(("minp05_tiny8", "tiny8", "MinPLogitsWarper", {"min_p": 0.5}, [], []))
    c.append(("minp005_normal1000_inf", "normal1000_inf", "MinPLogitsWarper", {"min_p": 0.05}, [], []))
    c.append(("minp01_normal4096", "normal4096", "MinPLogitsWarper", {"min_p": 0.1}, [], []))
    c.append(("minp02_peaked1000", "peaked1000", "MinPLogitsWarper", {"min_p": 0.2}, [], []))
    c.append(("minp1_equal10", "equal10", "MinPLogitsWarper", {"min_p": 1.0}, [], []))
    # generate()'s order.
    c.append(("gen_t07_k50_p09_normal1000_inf", "normal1000_inf", "generate",
              {"temperature": 0.7, "top_k": 50, "top_p": 0.9}, [], []))
    c.append(("gen_t07_k50_p09_normal4096", "normal4096", "generate",
              {"temperature": 0.7, "top_k": 50, "top_p": 0.9}, [], []))
    c.append(("gen_t13_p095_minp005_rep12_normal1000_inf", "normal1000_inf", "generate",
              {"temperature": 1.3, "top_p": 0.95, "min_p": 0.05, "repetition_penalty": 1.2},
              list(range(3, 1000, 11)), [40, 41, 41, 800]))
    c.append(("gen_all_normal4096", "normal4096", "generate",
              {"temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.02, "repetition_penalty": 1.1,
               "presence_penalty": 0.5, "frequency_penalty": 0.3},
              list(range(0, 4096, 13)), [10, 20, 20, 20, 4000, 77]))
    c.append(("gen_t05_k300_p08_peaked4096_inf", "peaked4096_inf", "generate",
              {"temperature": 0.5, "top_k": 300, "top_p": 0.8}, [], []))
    c.append(("gen_t2_p07_minp01_normal4096", "normal4096", "generate",
              {"temperature": 2.0, "top_p": 0.7, "min_p": 0.01}, [], []))
    c.append(("gen_k10_p05_ties40", "ties40", "generate",
              {"temperature": 1.0, "top_k": 10, "top_p": 0.5}, [], []))
    c.append(("gen_greedy_rep_presfreq_normal1000_inf", "normal1000_inf", "generate",
              {"temperature": 0.0, "repetition_penalty": 1.5, "presence_penalty": 1.0, "frequency_penalty": 0.5},
              list(range(0, 1000, 5)), [1, 1, 2, 3]))
    c.append(("gen_greedy_ties_tiny8", "tiny8", "generate", {"temperature": 0.0}, [], []))
    return c


def run_case(logits, via, params, prompt, generated):
    vocab = logits.shape[0]
    ids = torch.tensor([list(prompt) + list(generated)], dtype=torch.long)
    if ids.shape[1] == 0:
        ids = torch.zeros((1, 0), dtype=torch.long)
    scores = torch.from_numpy(logits.copy()).unsqueeze(0)
    if via == "generate":
        procs = generate_processors(vocab, params, len(prompt), ids)
    else:
        procs = LogitsProcessorList([single_processor(via, params, len(prompt))])
    out = procs(ids, scores.clone())
    stable = stable_variant(procs)(ids, scores.clone())
    names = [type(p).__name__ for p in procs]
    return out[0].numpy(), stable[0].numpy(), names


def encode_result(out):
    removed = np.isneginf(out)
    assert not np.isnan(out).any()
    return {
        "removed": b64bits(removed),
        "n_kept": int((~removed).sum()),
        "kept": b64f32(out[~removed]),
        "argmax": int(np.argmax(out)),  # first maximum, like torch.argmax
    }


def build():
    torch.set_num_threads(1)
    logits = make_logits()
    names = list(logits)
    doc = {
        "about": "transformers LogitsProcessor outputs for models/sample; see tools/modelref/sample_gen.py",
        "reference": {
            "transformers": transformers.__version__,
            "torch": torch.__version__.split("+")[0],
            "python": platform.python_version(),
        },
        "logits": [{"name": n, "vocab": int(logits[n].shape[0]), "f32": b64f32(logits[n])} for n in names],
        "cases": [],
    }
    for name, lname, via, params, prompt, generated in case_list():
        out, stable, procs = run_case(logits[lname], via, params, prompt, generated)
        case = {
            "name": name,
            "logits": names.index(lname),
            "via": via,
            "processors": procs,
            "params": params,
            "prompt": prompt,
            "generated": generated,
        }
        case.update(encode_result(out))
        if not np.array_equal(np.isneginf(out), np.isneginf(stable)):
            case["stable"] = encode_result(stable)
        doc["cases"].append(case)
    lines = ["{"]
    for k in ("about", "reference"):
        lines.append(f"{json.dumps(k)}: {json.dumps(doc[k])},")
    lines.append('"logits": [')
    lines.append(",\n".join(json.dumps(x) for x in doc["logits"]))
    lines.append('],\n"cases": [')
    lines.append(",\n".join(json.dumps(x) for x in doc["cases"]))
    lines.append("]}")
    return "\n".join(lines) + "\n", doc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the committed file differs")
    args = ap.parse_args()
    text, doc = build()
    if args.check:
        with open(OUT) as f:
            same = f.read() == text
        print("processors.json", "up to date" if same else "DIFFERS")
        sys.exit(0 if same else 1)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write(text)
    unstable = [c["name"] for c in doc["cases"] if "stable" in c]
    print(f"{OUT}: {len(doc['cases'])} cases, {len(text)} bytes; tie order differs from stable in: {unstable}")


if __name__ == "__main__":
    main()
