#!/usr/bin/env python3
"""Synthetic GGUF tokenizers covering the builders real test files do not.

The two real GGUF files (SmolLM2: "gpt2" with GPT-2's regex; Gemma 3:
"llama" in a gemma3 file) leave most of transformers' GGUF tokenizer paths
untested: the tokenizer.ggml.pre regexes, the LlamaTokenizer and phi3
pipelines, gemma4, merges derived from scores, add_bos_token defaults, respelled and
duplicated tokens, class default special tokens missing from the vocabulary.
This script builds small GGUF files (metadata only, no tensors) for each
variant below from vocabularies committed to this repository under
permissive licences (GPT-2's, MIT: testdata/tokenizers/gpt2; Mistral-7B's,
Apache-2.0: testdata/tokenizers/llama2), loads each with
AutoTokenizer.from_pretrained(dir, gguf_file=...) like tok_ref.py, and writes

  hf/tokenizer/testdata/gguf/<name>.tokmeta.json.gz   the metadata (tok_extract.py format)
  testdata/tokenizers/gguf/<name>/ref.jsonl, meta.json as tok_ref.py, all
      corpus samples except the six ~5000-character ones, without token
      strings (size; meta.json's vocabulary digest covers them)

    PY=~/.cache/gotpu-modelref/venv/bin/python   # needs the gguf package
    "$PY" tools/gguf/tok_synth.py                # ~1 min
    "$PY" tools/gguf/tok_synth.py --check

Deterministic: the GGUF files go to a temporary directory; the fixtures
record no path or time.
"""

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import tok_extract  # noqa: E402
import tok_ref  # noqa: E402

TOKDATA = os.path.join(ROOT, "testdata", "tokenizers")
N_GPT2 = 8000  # GPT-2's first 8000 tokens (256 bytes + 7744 merges)
N_SPM = 8000  # Mistral's first 8000 pieces, and "▁"

NORMAL, UNKNOWN, CONTROL, USER, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def gpt2_base():
    j = json.load(open(os.path.join(TOKDATA, "gpt2", "tokenizer.json"), encoding="utf-8"))
    inv = {i: t for t, i in j["model"]["vocab"].items()}
    toks = [inv[i] for i in range(N_GPT2)]
    have = set(toks)
    merges = []
    for m in j["model"]["merges"]:
        a, b = m.split(" ") if isinstance(m, str) else m
        if a in have and b in have and a + b in have:
            merges.append(f"{a} {b}")
    return toks, merges


def spm_base():
    j = json.load(open(os.path.join(TOKDATA, "llama2", "tokenizer.json"), encoding="utf-8"))
    inv = {i: t for t, i in j["model"]["vocab"].items()}
    # "▁" (id 28705 in Mistral's vocabulary) lets words with spaces merge.
    toks = [inv[i] for i in range(N_SPM)] + ["\u2581"]
    types, scores = [], []
    for i, t in enumerate(toks):
        if t == "<unk>":
            types.append(UNKNOWN)
        elif t in ("<s>", "</s>"):
            types.append(CONTROL)
        elif t.startswith("<0x") and len(t) == 6:
            types.append(BYTE)
        else:
            types.append(NORMAL)
        scores.append(0.0 if types[-1] != NORMAL else -float(i))
    return toks, types, scores


def variants():
    """Each variant: name, architecture, metadata dict (tokenizer.* keys)."""
    g_toks, g_merges = gpt2_base()
    out = []

    # Llama-3 style: llama-bpe regex, BOS added, "<|endoftext|>" missing from
    # the vocabulary (GPT2Tokenizer's default: appended after it), a control
    # token outside the byte alphabet (not added), a user-defined token, a
    # normal token respelled onto an existing one ("é" -> "Ã©": the later id
    # wins) and a respelled space run.
    extra = [("<|begin_of_text|>", CONTROL), ("<|end_of_text|>", CONTROL), ("<|bad token|>", CONTROL),
             ("<think>", USER), ("</think>", USER), ("é", NORMAL), ("  ", NORMAL), ("<|eot_id|>", CONTROL)]
    toks = g_toks + [t for t, _ in extra]
    types = [NORMAL] * len(g_toks) + [k for _, k in extra]
    out.append(("synth_llama_bpe", "llama", {
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "llama-bpe",
        "tokenizer.ggml.tokens": toks, "tokenizer.ggml.token_type": types, "tokenizer.ggml.merges": g_merges,
        "tokenizer.ggml.bos_token_id": N_GPT2, "tokenizer.ggml.eos_token_id": N_GPT2 + 1,
        "tokenizer.ggml.padding_token_id": N_GPT2 + 7,
        "tokenizer.ggml.add_bos_token": True,
    }))

    # Qwen2 style: qwen2 regex (single digits), no NFC (GPT2Tokenizer), no
    # add_bos_token key, EOS appended.
    extra = [("<|endoftext|>", CONTROL), ("<|im_start|>", CONTROL), ("<|im_end|>", CONTROL), ("<tool_call>", USER)]
    toks = g_toks + [t for t, _ in extra]
    types = [NORMAL] * len(g_toks) + [k for _, k in extra]
    out.append(("synth_qwen2", "qwen2", {
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "qwen2",
        "tokenizer.ggml.tokens": toks, "tokenizer.ggml.token_type": types, "tokenizer.ggml.merges": g_merges,
        "tokenizer.ggml.eos_token_id": N_GPT2 + 2, "tokenizer.ggml.padding_token_id": N_GPT2,
        "tokenizer.ggml.bos_token_id": N_GPT2, "tokenizer.ggml.add_eos_token": True,
    }))

    # Regexes that run on Go's regexp rather than a hand-written matcher.
    for name, pre in (("synth_tekken", "tekken"), ("synth_qwen35", "qwen35"), ("synth_gpt4o", "gpt-4o")):
        toks = g_toks + ["<|endoftext|>"]
        types = [NORMAL] * len(g_toks) + [CONTROL]
        out.append((name, "llama", {
            "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": pre,
            "tokenizer.ggml.tokens": toks, "tokenizer.ggml.token_type": types, "tokenizer.ggml.merges": g_merges,
            "tokenizer.ggml.eos_token_id": N_GPT2, "tokenizer.ggml.add_bos_token": False,
        }))

    s_toks, s_types, s_scores = spm_base()
    extra = [("<|im_start|>", USER), ("<|im_end|>", CONTROL)]
    toks = s_toks + [t for t, _ in extra]
    types = s_types + [k for _, k in extra]
    scores = s_scores + [0.0] * len(extra)
    common = {
        "tokenizer.ggml.model": "llama", "tokenizer.ggml.pre": "default",
        "tokenizer.ggml.tokens": toks, "tokenizer.ggml.token_type": types, "tokenizer.ggml.scores": scores,
        "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.unknown_token_id": 0,
    }
    # SentencePiece (LlamaTokenizer): merges derived from scores, no
    # add_bos_token key (BOS by default), unk of type UNKNOWN.
    out.append(("synth_llama_spm", "llama", dict(common)))
    # phi3: a Prepend/Replace normalizer instead of Metaspace, BOS and EOS.
    out.append(("synth_phi3", "phi3", dict(common, **{
        "tokenizer.ggml.add_bos_token": True, "tokenizer.ggml.add_eos_token": True})))

    # gemma4: GemmaTokenizer's pipeline, merges by score, BOS never added
    # (the flag is overridden), GemmaTokenizer's default special tokens
    # appended after this vocabulary, which lacks them.
    out.append(("synth_gemma4", "gemma4", dict(common, **{
        "tokenizer.ggml.model": "gemma4", "tokenizer.ggml.add_bos_token": True})))

    # Gemma: merges in token order, space runs stored as spaces, newline and
    # tab runs user-defined.
    head = [("<pad>", CONTROL), ("<eos>", CONTROL), ("<bos>", CONTROL), ("<unk>", UNKNOWN), ("<mask>", USER),
            ("[multimodal]", USER)]
    tail = [("\n", USER), ("\n\n", USER), ("  ", USER), ("   ", USER), ("\t\t", USER), (" \t", USER),
            ("<start_of_turn>", CONTROL), ("<end_of_turn>", CONTROL)]
    body = [(t, k) for t, k in zip(s_toks, s_types) if t not in ("<unk>", "<s>", "</s>")]
    allt = head + body + tail
    out.append(("synth_gemma", "gemma3", {
        "tokenizer.ggml.model": "llama", "tokenizer.ggml.pre": "default",
        "tokenizer.ggml.tokens": [t for t, _ in allt], "tokenizer.ggml.token_type": [k for _, k in allt],
        "tokenizer.ggml.scores": [-1000.0 if k != NORMAL else -float(i) for i, (_, k) in enumerate(allt)],
        "tokenizer.ggml.bos_token_id": 2, "tokenizer.ggml.eos_token_id": 1, "tokenizer.ggml.unknown_token_id": 3,
        "tokenizer.ggml.padding_token_id": 0, "tokenizer.ggml.add_bos_token": True,
        "tokenizer.ggml.add_eos_token": False, "tokenizer.ggml.add_space_prefix": False,
    }))
    return out


def write_gguf(path, arch, md):
    import gguf

    w = gguf.GGUFWriter(path, arch)
    # The few hyperparameters transformers' config reader needs.
    w.add_context_length(128)
    w.add_embedding_length(8)
    w.add_block_count(1)
    w.add_feed_forward_length(16)
    w.add_head_count(2)
    w.add_head_count_kv(2)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_layer_norm_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_key_length(4)
    w.add_value_length(4)
    for k, v in md.items():
        if k in ("tokenizer.ggml.model", "tokenizer.ggml.pre"):
            w.add_string(k, v)
        elif k == "tokenizer.ggml.tokens":
            w.add_token_list(v)
        elif k == "tokenizer.ggml.token_type":
            w.add_token_types(v)
        elif k == "tokenizer.ggml.merges":
            w.add_token_merges(v)
        elif k == "tokenizer.ggml.scores":
            w.add_token_scores(v)
        elif k.endswith("_token_id"):
            w.add_uint32(k, v)
        elif isinstance(v, bool):
            w.add_bool(k, v)
        else:
            raise ValueError(k)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--names", default="")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    import tokenizers
    import transformers

    versions = {"transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
                "python": __import__("platform").python_version()}
    want = [n for n in args.names.split(",") if n]
    samples = [s for s in tok_ref.read_corpus() if s["cat"] != "long"]
    corpus_sha = tok_extract.sha256_file(tok_ref.CORPUS)
    stale = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, arch, md in variants():
            if want and name not in want:
                continue
            d = os.path.join(tmp, name)
            os.makedirs(d)
            path = os.path.join(d, name + ".gguf")
            write_gguf(path, arch, md)
            m = {
                "name": name, "env": "", "file": name + ".gguf", "sha256": tok_extract.sha256_file(path),
                "package": "synthetic: tools/gguf/tok_synth.py", "upstream": "none (synthetic)",
                "license": "derived from GPT-2's (MIT) or Mistral-7B's (Apache-2.0) vocabulary",
                "ids_only": False, "tokens": False, "path": path,
            }
            _, files = tok_ref.generate(m, samples, versions, corpus_sha)
            fx = tok_extract.fixture(path, m["package"], m["license"])
            fx["source"] = {k: v for k, v in fx["source"].items() if k not in ("file", "sha256", "bytes")}
            fx["source"]["variant"] = name
            files[os.path.join(tok_ref.FIXTURES, name + ".tokmeta.json.gz")] = tok_extract.encode(fx)
            for p, data in sorted(files.items()):
                if args.check:
                    try:
                        same = open(p, "rb").read() == data
                    except OSError:
                        same = False
                    if not same:
                        stale.append(p)
                else:
                    tok_ref.write_atomic(p, data)
                print(f"{name}: {os.path.relpath(p, ROOT)} {len(data)} bytes", file=sys.stderr)
    if stale:
        print("tok_synth.py: out of date: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
