"""Builds a tiktoken.Encoding from a byte-level BPE tokenizer.json, offline.

tiktoken normally downloads its rank files from a blob host that is not
reachable here. For byte-level BPE vocabularies whose token ids are the BPE
ranks (GPT-2 / r50k_base, o200k_base) the ranks can be recomputed from the
Hugging Face tokenizer.json: each token string maps back to bytes through
GPT-2's byte-to-unicode table, and its rank is its id.

The regex and special tokens are taken from tiktoken's own encoding
definitions (tiktoken_ext.openai_public) with the download stubbed out.

`tiktoken_file_sha256` renders the ranks in tiktoken's .tiktoken format
(base64 token, space, rank, newline) and hashes it: equal to the digest that
tiktoken pins for the official file proves the vocabulary is the same.
"""

import base64
import hashlib
import json

# Which tiktoken encoding each testdata tokenizer corresponds to.
ENCODINGS = {"gpt2": "r50k_base", "gpt4o": "o200k_base"}

# Digests that tiktoken pins for the official .tiktoken rank files.
OFFICIAL_SHA256 = {
    "r50k_base": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + list(
        range(ord("\u00ae"), ord("\u00ff") + 1)
    )
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def ranks_from_tokenizer_json(path):
    """Returns ({token bytes: rank}, {special string: id}) from tokenizer.json."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    dec = {c: b for b, c in bytes_to_unicode().items()}
    ranks = {}
    added = {a["content"] for a in doc.get("added_tokens", [])}
    for tok, idx in doc["model"]["vocab"].items():
        if tok in added:
            continue
        try:
            ranks[bytes(dec[c] for c in tok)] = idx
        except KeyError as e:
            raise ValueError(f"{path}: token {tok!r} is not byte-level") from e
    specials = {a["content"]: a["id"] for a in doc.get("added_tokens", []) if a.get("special")}
    return ranks, specials


def spec_for(encoding_name):
    """tiktoken's definition of encoding_name (pattern, specials), without downloading."""
    import tiktoken_ext.openai_public as op

    saved = (op.load_tiktoken_bpe, op.data_gym_to_mergeable_bpe_ranks)
    op.load_tiktoken_bpe = lambda *a, **k: {}
    op.data_gym_to_mergeable_bpe_ranks = lambda *a, **k: {}
    try:
        return getattr(op, encoding_name)()
    finally:
        op.load_tiktoken_bpe, op.data_gym_to_mergeable_bpe_ranks = saved


def tiktoken_file_sha256(ranks):
    """SHA-256 of the ranks rendered in tiktoken's .tiktoken file format."""
    h = hashlib.sha256()
    for tok, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        h.update(base64.b64encode(tok) + b" " + str(rank).encode() + b"\n")
    return h.hexdigest()


def encoding_from_tokenizer_json(name, path):
    """Returns (tiktoken.Encoding, info dict) for testdata tokenizer `name`."""
    import tiktoken

    enc_name = ENCODINGS[name]
    spec = spec_for(enc_name)
    ranks, specials = ranks_from_tokenizer_json(path)
    if specials != spec["special_tokens"]:
        raise ValueError(f"{path}: special tokens {specials} differ from tiktoken's {spec['special_tokens']}")
    digest = tiktoken_file_sha256(ranks)
    enc = tiktoken.Encoding(
        name=enc_name + "_from_tokenizer_json",
        pat_str=spec["pat_str"],
        mergeable_ranks=ranks,
        special_tokens=spec["special_tokens"],
    )
    info = {
        "encoding": enc_name,
        "ranks": len(ranks),
        "tiktoken_file_sha256": digest,
        "matches_official_tiktoken_file": digest == OFFICIAL_SHA256[enc_name],
    }
    return enc, info
