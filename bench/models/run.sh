#!/usr/bin/env bash
# gotpu against transformers + PyTorch 2.x on the two benchmark checkpoints
# (SmolLM2-135M-shaped Llama, GPT-2 small-shaped), f32 and bf16, interleaved
# rep by rep in each run; prints one markdown table (or, with --json, the
# reports of `gotpu bench model --json` as one JSON array).
#
#   bench/models/run.sh [--reps N] [--threads N] [--mode strict,compiled]
#       [--dtype f32,bf16] [--models smollm2-135m-shape,gpt2-small-shape]
#       [--ref-method generate|loop] [--cpuprofile DIR] [--json]
#
# Makes the venv (tools/modelref/venv.sh; the first time it downloads
# PyTorch) and the checkpoints (tools/modelref/bench_models.py, cached in
# $GOTPU_BENCH_MODELS, default ~/.cache/gotpu-testdata/bench-models). Reports
# go to $GOTPU_BENCH_DIR (default .cache/bench-models, git-ignored).
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=5; threads=2; mode=strict,compiled; dtype=f32,bf16; json=0; method=generate; prof=""
models=smollm2-135m-shape,gpt2-small-shape
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2;;
    --threads) threads=$2; shift 2;;
    --mode) mode=$2; shift 2;;
    --dtype) dtype=$2; shift 2;;
    --models) models=$2; shift 2;;
    --ref-method) method=$2; shift 2;;
    --cpuprofile) prof=$2; shift 2;;
    --json) json=1; shift;;
    *) echo "unknown flag $1" >&2; exit 2;;
  esac
done
py="${GOTPU_MODELREF_PYTHON:-$(tools/modelref/venv.sh)}"
out="${GOTPU_BENCH_DIR:-.cache/bench-models}"
mkdir -p "$out"
declare -A dirs
while read -r name dir; do dirs[$name]=$dir; done < <("$py" tools/modelref/bench_models.py ${models//,/ })
go build -o "$out/gotpu" ./cmd/gotpu
reports=()
for m in ${models//,/ }; do
  extra=()
  [ -z "$prof" ] || extra=(--cpuprofile "$prof/$m")
  echo "bench model $m (load average: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  "$out/gotpu" bench model --model "${dirs[$m]}" --dtype "$dtype" --mode "$mode" --reps "$reps" \
    --threads "$threads" --reference --python "$py" --ref-method "$method" "${extra[@]}" --json > "$out/$m.json"
  reports+=("$out/$m.json")
done
python3 - "$json" "${reports[@]}" <<'PY'
import json, os, sys
asjson, files = sys.argv[1] == "1", sys.argv[2:]
reps = [json.load(open(f)) for f in files]
if asjson:
    json.dump(reps, sys.stdout, indent=2); print(); sys.exit(0)
print("| model | dtype | impl | prefill tok/s | decode tok/s | prefill vs torch | decode vs torch | prefill vs torch, CPU time | decode vs torch, CPU time | tokens = torch |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
fx = lambda q, k: ('%.2fx' % q[k]) if q and q.get(k) else ''
for r in reps:
    name = os.path.basename(r["model"].rstrip("/"))
    ratio = {(x["dtype"], x["impl"]): x for x in r["ratios"]}
    for x in r["results"]:
        q = ratio.get((x["dtype"], x["impl"]))
        agree = x.get("tokens_agree_torch")
        print(f"| {name} | {x['dtype']} | {x['impl']} | {x['prefill_tokens_per_s']:.1f} "
              f"({x['prefill_tokens_per_s_min']:.1f}–{x['prefill_tokens_per_s_max']:.1f}) | "
              f"{x['decode_tokens_per_s']:.2f} ({x['decode_tokens_per_s_min']:.2f}–{x['decode_tokens_per_s_max']:.2f}) | "
              f"{fx(q, 'prefill')} | {fx(q, 'decode')} | {fx(q, 'prefill_cpu')} | {fx(q, 'decode_cpu')} | "
              f"{'' if agree is None else '%d/%d' % (agree, len(x['tokens']))} |")
print()
print("| model | dtype | weights MB | RSS after load MB | RSS / weights | load added / weights | RSS, allocator cache emptied MB |")
print("|---|---|---:|---:|---:|---:|---:|")
for r in reps:
    name = os.path.basename(r["model"].rstrip("/"))
    for m in r["memory"]:
        print(f"| {name} | {m['dtype']} | {m['weight_bytes']/1e6:.1f} | {m['rss_after_load_bytes']/1e6:.1f} | "
              f"{m['rss_ratio']:.2f}x | {m['rss_delta_ratio']:.2f}x | {m['rss_after_empty_cache_bytes']/1e6:.1f} |")
print()
for r in reps:
    name = os.path.basename(r["model"].rstrip("/"))
    la = r["load_avg"]
    print(f"{name}: threads {r['threads']}, prompt {r['prompt_len']}, {r['new_tokens']} new tokens, "
          f"median of {r['reps']} (min–max), reference: {r['ref_method']}; load average {la['start']} -> {la['end']}")
    for s in r["skipped"]:
        print(f"  skipped {s['impl']}: {s['reason']}")
v = reps[0]["versions"] if reps else {}
print(f"cpu: {v.get('cpu')} ({v.get('cpu_kernel_level')}); torch {v.get('torch.torch')}, transformers {v.get('torch.transformers')}, {v.get('go')}")
PY
