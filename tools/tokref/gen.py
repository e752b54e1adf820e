#!/usr/bin/env python3
"""Writes the tokenizer parity references under testdata/tokenizers/<name>/.

For every tokenizer in sources.tsv and every sample of corpus.jsonl it runs
Hugging Face's Rust `tokenizers` (through its Python binding) and writes

  ref.jsonl   one JSON object per line and per (sample, add_special_tokens):
              {"id": sample id, "text": ..., "add_special_tokens": bool,
               "ids": [int], "tokens": [str], "offsets": [[start, end], ...],
               "decoded": decode(ids, skip_special_tokens=True),
               "decoded_keep": decode(ids, skip_special_tokens=False)}
              Offsets are what Python returns: code point (not byte) indices
              into "text". Truncation and padding are switched off (see
              ref_as_loaded.jsonl), so every sample is tokenized whole.
  ref_as_loaded.jsonl
              only for tokenizer.json files that configure truncation or
              padding (bert): a subset of samples encoded with the file's own
              settings, plus "attention_mask", "type_ids" and
              "special_tokens_mask".
  meta.json   where the tokenizer.json came from (package, version, licence,
              digest), the versions of the reference libraries, the corpus
              digest, and the results of the cross-checks below.

Cross-checks (recorded in meta.json; a failure makes gen.py exit non-zero):
  * gpt2 and gpt4o: tiktoken, built offline from the same vocabulary
    (tiktoken_from_hf.py), must give the same ids on the whole corpus; and the
    recomputed rank file must hash to the digest tiktoken pins for r50k_base /
    o200k_base.
  * gpt2: the known ids of a few strings.
  * tokenizers with a tokenizer_config.json: transformers' AutoTokenizer on
    the same directory is compared (ids with and without special tokens, and
    decode); differences are counted and explained, not fatal, because
    transformers applies tokenizer_config.json settings (e.g.
    clean_up_tokenization_spaces) that tokenizer.json does not carry.

The output is deterministic (no timestamps, stable key order). Run it with
the pinned environment: PY="$(tools/tokref/venv.sh)"; "$PY" tools/tokref/gen.py
Options: --names a,b (default: all), --check (compare with the committed
files instead of writing; exit 1 on any difference).
"""

import argparse
import hashlib
import json
import os
import platform
import sys

from fsutil import write_atomic  # noqa: E402  (same directory)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TESTDATA = os.path.join(ROOT, "testdata", "tokenizers")
CORPUS = os.path.join(TESTDATA, "corpus.jsonl")
SOURCES = os.path.join(HERE, "sources.tsv")

sys.path.insert(0, HERE)

# ids of GPT-2 for a few strings, as published in Hugging Face's docs and
# OpenAI's examples.
GPT2_KNOWN = {
    "Hello world": [15496, 995],
    "Hello, my dog is cute": [15496, 11, 616, 3290, 318, 13779],
    " Hello": [18435],
    "<|endoftext|>": [50256],
}

AS_LOADED_EVERY = 6  # every 6th sample (and all long ones) for ref_as_loaded.jsonl


class GenError(Exception):
    """A reference could not be produced or did not pass its cross-checks."""


def tokenizers_dir():
    return os.environ.get("GOTPU_TOKENIZERS_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "gotpu-testdata", "tokenizers"
    )


def read_sources():
    rows = []
    with open(SOURCES, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            c = line.split("\t")
            if len(c) != 9:
                raise GenError(f"sources.tsv: want 9 columns, got {len(c)}: {line!r}")
            rows.append(
                dict(
                    name=c[0], registry=c[1], package=c[2], version=c[3], member=c[4],
                    sha256=c[5], committed=c[6] == "yes", license=c[7], upstream=c[8],
                )
            )
    return rows


def read_corpus():
    samples = []
    with open(CORPUS, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                samples.append(json.loads(line))
            except ValueError as e:
                raise GenError(f"corpus.jsonl:{n}: {e}") from e
    return samples


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def locate(src):
    """Directory holding the tokenizer.json of src (committed or fetched)."""
    d = os.path.join(TESTDATA, src["name"]) if src["committed"] else os.path.join(tokenizers_dir(), src["name"])
    p = os.path.join(d, "tokenizer.json")
    if not os.path.exists(p):
        raise GenError(f"{src['name']}: {p} missing (run tools/tokref/fetch.sh)")
    got = file_sha256(p)
    if got != src["sha256"]:
        raise GenError(f"{src['name']}: {p} sha256 {got}, want {src['sha256']}")
    return d


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def encode_record(tok, sample, add_special, extra=False):
    enc = tok.encode(sample["text"], add_special_tokens=add_special)
    rec = {
        "id": sample["id"],
        "text": sample["text"],
        "add_special_tokens": add_special,
        "ids": enc.ids,
        "tokens": enc.tokens,
        "offsets": [list(o) for o in enc.offsets],
        "decoded": tok.decode(enc.ids, skip_special_tokens=True),
        "decoded_keep": tok.decode(enc.ids, skip_special_tokens=False),
    }
    if extra:
        rec["attention_mask"] = enc.attention_mask
        rec["type_ids"] = enc.type_ids
        rec["special_tokens_mask"] = enc.special_tokens_mask
    return rec


def check_tiktoken(name, path, samples, tok):
    """Compares tiktoken (rebuilt from the same vocabulary) with tokenizers."""
    import tiktoken_from_hf

    enc, info = tiktoken_from_hf.encoding_from_tokenizer_json(name, path)
    mismatches = []
    for s in samples:
        want = tok.encode(s["text"], add_special_tokens=False).ids
        got = enc.encode(s["text"], allowed_special="all")
        if got != want:
            mismatches.append(s["id"])
    info["samples"] = len(samples)
    info["id_mismatches"] = mismatches
    if mismatches or not info["matches_official_tiktoken_file"]:
        raise GenError(f"{name}: tiktoken cross-check failed: {info}")
    return info


def check_transformers(d, samples, tok):
    """Compares transformers' AutoTokenizer (tokenizer.json + tokenizer_config.json)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from transformers import AutoTokenizer

    ht = AutoTokenizer.from_pretrained(d)
    out = {"class": type(ht).__name__, "samples": len(samples)}
    for add in (True, False):
        diff = []
        for s in samples:
            want = tok.encode(s["text"], add_special_tokens=add).ids
            got = ht(s["text"], add_special_tokens=add)["input_ids"]
            if got != want:
                diff.append(s["id"])
        out[f"ids_differ_add_special_{str(add).lower()}"] = diff
    dec = []
    for s in samples:
        ids = tok.encode(s["text"], add_special_tokens=False).ids
        if ht.decode(ids, skip_special_tokens=True) != tok.decode(ids, skip_special_tokens=True):
            dec.append(s["id"])
    out["decode_differs"] = dec
    cfg = {}
    for k in ("clean_up_tokenization_spaces", "add_bos_token", "add_eos_token", "legacy", "do_lower_case"):
        if k in ht.init_kwargs:
            cfg[k] = ht.init_kwargs[k]
    out["config"] = cfg
    return out


def generate(src, samples, versions, corpus_sha):
    """Returns {filename: bytes} for one tokenizer."""
    from tokenizers import Tokenizer

    d = locate(src)
    path = os.path.join(d, "tokenizer.json")
    tok = Tokenizer.from_file(path)
    trunc, pad = tok.truncation, tok.padding
    tok.no_truncation()
    tok.no_padding()

    lines = []
    for s in samples:
        for add in (True, False):
            lines.append(dumps(encode_record(tok, s, add)))
    files = {"ref.jsonl": ("\n".join(lines) + "\n").encode("utf-8")}

    if trunc is not None or pad is not None:
        loaded = Tokenizer.from_file(path)
        sub = [s for i, s in enumerate(samples) if i % AS_LOADED_EVERY == 0 or s["cat"] == "long"]
        al = [dumps(encode_record(loaded, s, add, extra=True)) for s in sub for add in (True, False)]
        files["ref_as_loaded.jsonl"] = ("\n".join(al) + "\n").encode("utf-8")

    checks = {}
    if src["name"] == "gpt2":
        for text, ids in GPT2_KNOWN.items():
            got = tok.encode(text).ids
            if got != ids:
                raise GenError(f"gpt2: {text!r} -> {got}, want {ids}")
        checks["known_ids"] = {k: v for k, v in GPT2_KNOWN.items()}
    import tiktoken_from_hf

    if src["name"] in tiktoken_from_hf.ENCODINGS:
        checks["tiktoken"] = check_tiktoken(src["name"], path, samples, tok)
    if os.path.exists(os.path.join(d, "tokenizer_config.json")):
        checks["transformers"] = check_transformers(d, samples, tok)

    meta = {
        "name": src["name"],
        "source": {
            "registry": src["registry"],
            "package": src["package"],
            "version": src["version"],
            "member": src["member"],
        },
        "license": src["license"],
        "upstream": src["upstream"],
        "committed": src["committed"],
        "tokenizer_json": {
            "sha256": src["sha256"],
            "bytes": os.path.getsize(path),
            "path": f"testdata/tokenizers/{src['name']}/tokenizer.json"
            if src["committed"]
            else f"$GOTPU_TOKENIZERS_DIR/{src['name']}/tokenizer.json",
            "has_tokenizer_config": os.path.exists(os.path.join(d, "tokenizer_config.json")),
            "truncation": trunc,
            "padding": pad,
        },
        "reference": dict(versions, truncation_and_padding_in_ref_jsonl="disabled"),
        "corpus": {"file": "testdata/tokenizers/corpus.jsonl", "sha256": corpus_sha, "samples": len(samples)},
        "ref_lines": len(lines),
        "checks": checks,
    }
    files["meta.json"] = (json.dumps(meta, ensure_ascii=False, indent=2, sort_keys=False) + "\n").encode("utf-8")
    return files


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--names", default="", help="comma-separated subset of sources.tsv names")
    ap.add_argument("--check", action="store_true", help="compare with the files on disk; write nothing")
    args = ap.parse_args(argv)

    import tiktoken
    import tokenizers
    import transformers

    versions = {
        "tokenizers": tokenizers.__version__,
        "transformers": transformers.__version__,
        "tiktoken": tiktoken.__version__,
        "python": platform.python_version(),
    }
    try:
        sources = read_sources()
        want = [n for n in args.names.split(",") if n]
        known = {s["name"] for s in sources}
        for n in want:
            if n not in known:
                raise GenError(f"unknown tokenizer {n!r}")
        samples = read_corpus()
        corpus_sha = file_sha256(CORPUS)
        stale = []
        for src in sources:
            if want and src["name"] not in want:
                continue
            files = generate(src, samples, versions, corpus_sha)
            for fn, data in sorted(files.items()):
                p = os.path.join(TESTDATA, src["name"], fn)
                if args.check:
                    try:
                        with open(p, "rb") as f:
                            same = f.read() == data
                    except OSError:
                        same = False
                    if not same:
                        stale.append(p)
                else:
                    write_atomic(p, data)
                print(f"{src['name']}: {fn} {len(data)} bytes", file=sys.stderr)
        if stale:
            raise GenError("out of date: " + ", ".join(stale))
    except GenError as e:
        print(f"gen.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
