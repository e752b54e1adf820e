#!/usr/bin/env python3
"""Times the reference tokenizers on the benchmark corpus, on one thread.

* Hugging Face `tokenizers` (Rust): Tokenizer.encode_batch(docs,
  add_special_tokens=False). Run with RAYON_NUM_THREADS=1 and
  TOKENIZERS_PARALLELISM=false (run.sh sets both) so the batch is encoded
  by one thread.
* tiktoken: o200k_base built offline from the gpt4o tokenizer.json
  (tools/tokref/tiktoken_from_hf.py), encode_batch(docs, num_threads=1,
  allowed_special="all"). Before timing, its ids are compared with HF's on
  every document.

Each measurement is one untimed warm-up and then --reps timed runs; the
median is reported. MB/s = UTF-8 input bytes / 10^6 / median seconds, from
wall time (mb_per_s) and from the process's CPU time (mb_per_cpu_s; steadier
on a machine shared with other jobs).
ids_sha256 is SHA-256 over every document's ids joined by "," with "\\n"
after each document; the Go benchmark computes the same digest, so equal
digests mean identical token ids.

Output: one JSON object (see bench/README.md) on stdout or --out.
"""

import argparse
import hashlib
import json
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "tokref"))


def ids_digest(batch_ids):
    h = hashlib.sha256()
    for ids in batch_ids:
        h.update(",".join(map(str, ids)).encode())
        h.update(b"\n")
    return h.hexdigest()


def timed(fn, reps):
    """Returns (wall seconds, CPU seconds) of reps runs after one warm-up."""
    fn()  # warm-up (also fills BPE word caches, as a long-running service would)
    runs, cpu = [], []
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return runs, cpu


def speeds(nbytes, runs, cpu):
    med, cmed = statistics.median(runs), statistics.median(cpu)
    return {
        "runs_s": runs,
        "median_s": med,
        "mb_per_s": nbytes / 1e6 / med,
        "cpu_runs_s": cpu,
        "cpu_median_s": cmed,
        "mb_per_cpu_s": nbytes / 1e6 / cmed if cmed > 0 else 0.0,
    }


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--tok", action="append", default=[], help="name=path/to/tokenizer.json (repeatable)")
    ap.add_argument("--tiktoken", default="", help="name of the --tok entry to also time with tiktoken (o200k: gpt4o)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)

    import tiktoken
    import tokenizers
    from tokenizers import Tokenizer

    with open(args.corpus, encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    out = {
        "corpus": {"documents": len(docs), "bytes": nbytes},
        "env": {
            "python": platform.python_version(),
            "tokenizers": tokenizers.__version__,
            "tiktoken": tiktoken.__version__,
            "RAYON_NUM_THREADS": os.environ.get("RAYON_NUM_THREADS"),
            "TOKENIZERS_PARALLELISM": os.environ.get("TOKENIZERS_PARALLELISM"),
        },
        "hf": {},
        "tiktoken": {},
    }
    paths = dict(t.split("=", 1) for t in args.tok)
    hf_ids = {}
    for name, path in paths.items():
        t0 = time.perf_counter()
        tok = Tokenizer.from_file(path)
        load_s = time.perf_counter() - t0
        tok.no_truncation()
        tok.no_padding()
        encs = tok.encode_batch(docs, add_special_tokens=False)
        ids = [e.ids for e in encs]
        hf_ids[name] = ids
        del encs
        runs, cpu = timed(lambda: tok.encode_batch(docs, add_special_tokens=False), args.reps)
        r = dict(load_s=load_s, **speeds(nbytes, runs, cpu))
        r.update(tokens=sum(len(x) for x in ids), ids_sha256=ids_digest(ids))
        out["hf"][name] = r
        print(f"hf {name}: {r['mb_per_s']:.2f} MB/s ({r['mb_per_cpu_s']:.2f} per CPU second)", file=sys.stderr)

    if args.tiktoken:
        import tiktoken_from_hf

        name = args.tiktoken
        enc, info = tiktoken_from_hf.encoding_from_tokenizer_json(name, paths[name])
        ids = enc.encode_batch(docs, num_threads=1, allowed_special="all")
        mism = [i for i, (a, b) in enumerate(zip(ids, hf_ids[name])) if a != b]
        runs, cpu = timed(lambda: enc.encode_batch(docs, num_threads=1, allowed_special="all"), args.reps)
        med = statistics.median(runs)
        out["tiktoken"][name] = dict(
            info,
            **speeds(nbytes, runs, cpu),
            tokens=sum(len(x) for x in ids),
            ids_sha256=ids_digest(ids),
            ids_equal_hf=not mism,
            documents_differing_from_hf=len(mism),
        )
        print(f"tiktoken {info['encoding']}: {nbytes / 1e6 / med:.2f} MB/s, ids equal to HF: {not mism}", file=sys.stderr)

    text = json.dumps(out, indent=2) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
