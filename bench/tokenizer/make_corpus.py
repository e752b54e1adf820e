#!/usr/bin/env python3
"""Builds the tokenizer benchmark corpus from testdata/tokenizers/corpus.jsonl.

Deterministic: the samples are repeated and shuffled with a fixed seed and
joined ("\\n") into documents of 1–8 KB until the total reaches --mb
megabytes (10^6 bytes of UTF-8). Output: one JSON string per line (a
document), the input of both the Python and the Go benchmark.

Usage: make_corpus.py [--mb 10] [--seed 20240229] --out FILE
"""

import argparse
import json
import os
import random
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(ROOT, "testdata", "tokenizers", "corpus.jsonl")


def build(samples, total_bytes, seed):
    """Returns the list of documents."""
    rng = random.Random(seed)
    docs, size, pool = [], 0, []
    while size < total_bytes:
        target = rng.randint(1000, 8000)
        parts, n = [], 0
        while n < target:
            if not pool:
                pool = samples[:]
                rng.shuffle(pool)
            s = pool.pop()
            parts.append(s)
            n += len(s.encode("utf-8")) + 1
        doc = "\n".join(parts)
        docs.append(doc)
        size += len(doc.encode("utf-8"))
    return docs


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=20240229)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    with open(CORPUS, encoding="utf-8") as f:
        samples = [json.loads(line)["text"] for line in f]
    docs = build(samples, int(args.mb * 1e6), args.seed)
    d = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        for doc in docs:
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, 0o644)
    os.replace(tmp, args.out)
    total = sum(len(x.encode("utf-8")) for x in docs)
    print(f"bench corpus: {len(docs)} documents, {total} bytes -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
