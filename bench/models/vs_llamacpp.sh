#!/usr/bin/env bash
# vs_llamacpp.sh — gotpu against llama.cpp on the same GGUF files, the two
# interleaved round by round: in every round each file runs llama-bench
# once (pp and tg) and then `gotpu bench model` once, so both see the same
# machine load. Prints, per file, the medians over the rounds of each side's
# prefill (pp) and decode (tg) tokens/s and of the per-round ratios
# gotpu/llama.cpp (above 1: gotpu faster) with their range; --json prints
# every round's numbers and the medians instead.
#
#   bench/models/vs_llamacpp.sh [--rounds 5] [--threads 2] [--pp 128] [--tg 64]
#       [--depth 0] [--models smollm2-q4_1,smollm2-q8_0,smollm2-bf16,smollm2-f32,gemma3-q4_k_m]
#       [--gotpu BIN] [--json]
#
# The machines these notes run on change speed by tens of percent from
# minute to minute: a ratio from one round says little, the median of
# several interleaved ones is what the bench README quotes.
#
# Both sides run the same work: prefill of pp tokens into an empty cache,
# and tg decode steps at the same context depth — llama-bench's tg test
# decodes from an empty context (from --depth cached tokens with -d), so
# gotpu's decode runs after a prompt of max(depth, 1) tokens, not after the
# pp-token prompt (which made gotpu attend over 2-5x more keys a step than
# llama.cpp did). gotpu runs compiled, one repetition after one warm-up per
# round, twice: --prompt-len pp --new-tokens 1 (prefill) and --prompt-len
# max(depth, 1) --new-tokens tg+1 (tg decode steps), in the dtype that
# matches the file: quantized files kept quantized (--dtype keep), BF16 as
# bf16, F32 as f32. --gotpu names a built binary (default: go
# build ./cmd/gotpu into .cache/). Builds llama-bench and the file variants
# as bench/models/llamacpp.sh does.
#
# JSON (one object): cpu, threads, pp, tg, depth, rounds, load_avg {start, end},
# files [{model, file, dtype, rounds [{llama_pp, llama_tg, gotpu_pp,
# gotpu_tg, ratio_pp, ratio_tg}], median {llama_pp, llama_tg, gotpu_pp,
# gotpu_tg, ratio_pp, ratio_tg}, min {ratio_pp, ratio_tg}, max {ratio_pp,
# ratio_tg}}].
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=5; threads=2; pp=128; tg=64; depth=0; json=0; gotpu=""
models=smollm2-q4_1,smollm2-q8_0,smollm2-bf16,smollm2-f32,gemma3-q4_k_m
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2;;
    --threads) threads=$2; shift 2;;
    --pp) pp=$2; shift 2;;
    --tg) tg=$2; shift 2;;
    --depth) depth=$2; shift 2;;
    --models) models=$2; shift 2;;
    --gotpu) gotpu=$2; shift 2;;
    --json) json=1; shift;;
    *) echo "unknown flag $1" >&2; exit 2;;
  esac
done
if [[ -z "$gotpu" ]]; then
  mkdir -p .cache
  gotpu=.cache/gotpu-bench
  go build -o "$gotpu" ./cmd/gotpu
fi
bin="$(tools/llamacpp/build.sh llama-bench)"
tools/llamacpp/quantize.sh >/dev/null
dir="${GOTPU_TESTDATA_CACHE:-$HOME/.cache/gotpu-testdata}/gguf"
declare -A files=(
  [smollm2-q4_1]="SmolLM2-135M-Instruct.Q4_1.gguf keep"
  [smollm2-q8_0]="SmolLM2-135M-Instruct.Q8_0.gguf keep"
  [smollm2-bf16]="SmolLM2-135M-Instruct.BF16.gguf bf16"
  [smollm2-f32]="SmolLM2-135M-Instruct.F32.gguf f32"
  [gemma3-q4_k_m]="gemma-3-270m-q4_k_m.gguf keep"
)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
load0="$(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; r++)); do
  for m in ${models//,/ }; do
    spec="${files[$m]:-}"
    [[ -n "$spec" ]] || { echo "unknown model $m" >&2; exit 2; }
    read -r f dt <<<"$spec"
    echo "round $r/$rounds: $m (load average: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    if [[ "$depth" == 0 ]]; then
      "$bin/llama-bench" -m "$dir/$f" -t "$threads" -p "$pp" -n "$tg" -r 1 -o json > "$tmp/$m.$r.llama.json"
      echo '[]' > "$tmp/$m.$r.llama-tg.json"
    else
      "$bin/llama-bench" -m "$dir/$f" -t "$threads" -p "$pp" -n 0 -r 1 -o json > "$tmp/$m.$r.llama.json"
      "$bin/llama-bench" -m "$dir/$f" -t "$threads" -p 0 -n "$tg" -d "$depth" -r 1 -o json > "$tmp/$m.$r.llama-tg.json"
    fi
    "$gotpu" bench model --model "$dir/$f" --mode compiled --dtype "$dt" --threads "$threads" \
      --prompt-len "$pp" --new-tokens 1 --reps 1 --warmup 1 --json > "$tmp/$m.$r.gotpu.json" 2>/dev/null
    "$gotpu" bench model --model "$dir/$f" --mode compiled --dtype "$dt" --threads "$threads" \
      --prompt-len $((depth > 0 ? depth : 1)) --new-tokens $((tg + 1)) --reps 1 --warmup 1 --json > "$tmp/$m.$r.gotpu-tg.json" 2>/dev/null
  done
done
python3 - "$json" "$tmp" "$rounds" "$models" "$threads" "$pp" "$tg" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" "$depth" \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)" <<'PY'
import json, statistics, sys
asjson, tmp, rounds, models = sys.argv[1] == "1", sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",")
threads, pp, tg, load0, load1, depth, cpu = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), sys.argv[8], sys.argv[9], int(sys.argv[10]), sys.argv[11].strip()
out = {"cpu": cpu, "threads": threads, "pp": pp, "tg": tg, "depth": depth, "rounds": rounds,
       "load_avg": {"start": load0, "end": load1}, "files": []}
for m in models:
    rs = []
    for r in range(1, rounds + 1):
        ll = json.load(open(f"{tmp}/{m}.{r}.llama.json")) + json.load(open(f"{tmp}/{m}.{r}.llama-tg.json"))
        lpp = next(x["avg_ts"] for x in ll if x["n_prompt"])
        ltg = next(x["avg_ts"] for x in ll if x["n_gen"])
        g = json.load(open(f"{tmp}/{m}.{r}.gotpu.json"))
        gt = json.load(open(f"{tmp}/{m}.{r}.gotpu-tg.json"))
        gpp, gtg = g["results"][0]["prefill_tokens_per_s"], gt["results"][0]["decode_tokens_per_s"]
        rs.append({"llama_pp": lpp, "llama_tg": ltg, "gotpu_pp": gpp, "gotpu_tg": gtg,
                   "ratio_pp": gpp / lpp, "ratio_tg": gtg / ltg})
    keys = ["llama_pp", "llama_tg", "gotpu_pp", "gotpu_tg", "ratio_pp", "ratio_tg"]
    out["files"].append({"model": m, "file": ll[0]["model_filename"].rsplit("/", 1)[-1], "dtype": g["results"][0]["dtype"],
                         "rounds": rs, "median": {k: statistics.median(x[k] for x in rs) for k in keys},
                         "min": {k: min(x[k] for x in rs) for k in keys[4:]},
                         "max": {k: max(x[k] for x in rs) for k in keys[4:]}})
if asjson:
    json.dump(out, sys.stdout, indent=1); print(); sys.exit()
print(f"CPU: {cpu}; {threads} threads; pp{pp} / tg{tg} at depth {depth}; {rounds} interleaved rounds; load average {load0} -> {load1}")
print()
print("| file | gotpu dtype | llama.cpp pp | gotpu pp | pp ratio (min–max) | llama.cpp tg | gotpu tg | tg ratio (min–max) |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for f in out["files"]:
    md, lo, hi = f["median"], f["min"], f["max"]
    print(f"| {f['file']} | {f['dtype']} | {md['llama_pp']:.1f} | {md['gotpu_pp']:.1f} | {md['ratio_pp']:.2f}x ({lo['ratio_pp']:.2f}–{hi['ratio_pp']:.2f}) "
          f"| {md['llama_tg']:.1f} | {md['gotpu_tg']:.1f} | {md['ratio_tg']:.2f}x ({lo['ratio_tg']:.2f}–{hi['ratio_tg']:.2f}) |")
PY
