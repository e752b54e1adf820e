#!/usr/bin/env python3
"""Combines the reference (bench_ref.py) and Go (main.go) measurements.

Prints a table of MB/s with the ratios gotpu / HF tokenizers and
gotpu / tiktoken, or with --json one object with stable keys (documented in
bench/README.md):

  {"corpus": {"documents", "bytes"},
   "env": {...},
   "results": [{"tokenizer", "impl", "mb_per_s", "median_s", "runs_s",
                "mb_per_cpu_s", "cpu_median_s", "cpu_runs_s",
                "tokens", "load_s", "ids_sha256", "ids_equal_hf"}],
   "ratios": {"gotpu_over_hf": {NAME: x}, "gotpu_over_tiktoken": {NAME: x}},
   "ratios_cpu": {"gotpu_over_hf": {NAME: x}, "gotpu_over_tiktoken": {NAME: x}},
   "gotpu_error": null or a one-line message}

Exit status: 0, or 1 when an input is unreadable or when gotpu's ids differ
from HF's for some tokenizer (speed of a wrong tokenizer is not a result).
"""

import argparse
import json
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", required=True)
    ap.add_argument("--go", default="")
    ap.add_argument("--go-error", default="", help="why there is no Go measurement")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        ref = load(args.ref)
        gor = load(args.go) if args.go else None
    except (OSError, ValueError) as e:
        print(f"report: {e}", file=sys.stderr)
        return 1

    results, ratios = [], {"gotpu_over_hf": {}, "gotpu_over_tiktoken": {}}
    ratios_cpu = {"gotpu_over_hf": {}, "gotpu_over_tiktoken": {}}
    mismatch = []
    for name, r in ref["hf"].items():
        results.append(dict(tokenizer=name, impl="hf_tokenizers", ids_equal_hf=True, **pick(r)))
        t = ref["tiktoken"].get(name)
        if t:
            results.append(dict(tokenizer=name, impl="tiktoken", ids_equal_hf=t["ids_equal_hf"], **pick(t)))
        g = (gor or {}).get("gotpu", {}).get(name)
        if g:
            eq = g["ids_sha256"] == r["ids_sha256"]
            if not eq:
                mismatch.append(name)
            results.append(dict(tokenizer=name, impl="gotpu", ids_equal_hf=eq, **pick(g)))
            ratios["gotpu_over_hf"][name] = g["mb_per_s"] / r["mb_per_s"]
            ratios_cpu["gotpu_over_hf"][name] = cpu_ratio(g, r)
            if t:
                ratios["gotpu_over_tiktoken"][name] = g["mb_per_s"] / t["mb_per_s"]
                ratios_cpu["gotpu_over_tiktoken"][name] = cpu_ratio(g, t)
    env = dict(ref["env"])
    if gor:
        env["go"] = gor["go"]["version"]
        env["GOMAXPROCS"] = gor["go"]["gomaxprocs"]
    gerr = args.go_error or None
    if gerr is None and gor is None:
        gerr = "no Go measurement"
    out = {"corpus": ref["corpus"], "env": env, "results": results, "ratios": ratios, "ratios_cpu": ratios_cpu,
           "gotpu_error": gerr}

    if args.json:
        print(json.dumps(out, indent=2))
    else:
        c = ref["corpus"]
        print(f"tokenizer benchmark: {c['bytes'] / 1e6:.2f} MB in {c['documents']} documents, one thread each, "
              f"median of {len(results[0]['runs_s']) if results else 0} runs")
        print(f"{'tokenizer':<12}{'impl':<15}{'MB/s':>8}{'MB/cpu-s':>10}{'median s':>10}{'tokens':>10}"
              f"{'load s':>8}  ids==HF")
        for r in results:
            load_s = f"{r['load_s']:.2f}" if r.get("load_s") is not None else "-"
            print(f"{r['tokenizer']:<12}{r['impl']:<15}{r['mb_per_s']:>8.2f}{r['mb_per_cpu_s']:>10.2f}"
                  f"{r['median_s']:>10.3f}{r['tokens']:>10}{load_s:>8}  {'yes' if r['ids_equal_hf'] else 'NO'}")
        print(f"{'ratio':<34}{'wall':>8}{'cpu':>8}")
        for key, label in (("gotpu_over_hf", "gotpu / HF tokenizers"), ("gotpu_over_tiktoken", "gotpu / tiktoken")):
            for name, x in ratios[key].items():
                print(f"{label:<23}{name:<11}{x:7.2f}x{ratios_cpu[key][name]:7.2f}x")
        if gerr:
            print(f"gotpu: not measured: {gerr}")
    if mismatch:
        print(f"report: gotpu ids differ from HF for {', '.join(mismatch)}", file=sys.stderr)
        return 1
    return 0


def pick(r):
    keys = ("mb_per_s", "median_s", "runs_s", "mb_per_cpu_s", "cpu_median_s", "cpu_runs_s",
            "tokens", "load_s", "ids_sha256")
    return {k: r.get(k) for k in keys}


def cpu_ratio(a, b):
    return a["mb_per_cpu_s"] / b["mb_per_cpu_s"] if a.get("mb_per_cpu_s") and b.get("mb_per_cpu_s") else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
