#!/usr/bin/env bash
# llamacpp.sh — llama.cpp's llama-bench on the SmolLM2-135M-Instruct GGUF
# files (Q4_1 and the F32/BF16/Q8_0 variants of tools/llamacpp/quantize.sh)
# and Gemma-3-270M Q4_K_M: the same-machine reference for `gotpu bench
# model` on the same files. Prints a markdown table (pp128 and tg64 tokens/s:
# median, range and mean ± sd over the repetitions) and the CPU line; with --json, the
# llama-bench JSON records of every file as one array.
#
#   bench/models/llamacpp.sh [--threads 2] [--reps 3] [--pp 128] [--tg 64] [--json]
#       [--models smollm2-q4_1,smollm2-q8_0,smollm2-bf16,smollm2-f32,gemma3-q4_k_m]
#       [--repack 0|1]
#
# --repack passes llama-bench's --repack (its default is 1: weights
# repacked into its CPU "extra" buffer types, on an AMX CPU the AMX one).
# On the Sapphire Rapids-class Xeon of 2026-12-05 that build segfaulted in
# every pp test with --repack 1 and ran tg; run pp with --repack 0 there.
#
# Builds llama-bench the first time (tools/llamacpp/build.sh llama-bench,
# ~35 min on the loaded 2-core VM) and makes the variants
# (tools/llamacpp/quantize.sh). Records go to $GOTPU_BENCH_DIR (default
# .cache/bench-llamacpp, git-ignored).
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=2; reps=3; pp=128; tg=64; json=0; repack=()
models=smollm2-q4_1,smollm2-q8_0,smollm2-bf16,smollm2-f32,gemma3-q4_k_m
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2;;
    --reps) reps=$2; shift 2;;
    --pp) pp=$2; shift 2;;
    --tg) tg=$2; shift 2;;
    --models) models=$2; shift 2;;
    --repack) repack=(--repack "$2"); shift 2;;
    --json) json=1; shift;;
    *) echo "unknown flag $1" >&2; exit 2;;
  esac
done
bin="$(tools/llamacpp/build.sh llama-bench)"
tools/llamacpp/quantize.sh >/dev/null
dir="${GOTPU_TESTDATA_CACHE:-$HOME/.cache/gotpu-testdata}/gguf"
out="${GOTPU_BENCH_DIR:-.cache/bench-llamacpp}"
mkdir -p "$out"
declare -A files=(
  [smollm2-q4_1]=SmolLM2-135M-Instruct.Q4_1.gguf
  [smollm2-q8_0]=SmolLM2-135M-Instruct.Q8_0.gguf
  [smollm2-bf16]=SmolLM2-135M-Instruct.BF16.gguf
  [smollm2-f32]=SmolLM2-135M-Instruct.F32.gguf
  [gemma3-q4_k_m]=gemma-3-270m-q4_k_m.gguf
)
records=()
for m in ${models//,/ }; do
  f="${files[$m]:-}"
  [[ -n "$f" ]] || { echo "unknown model $m" >&2; exit 2; }
  echo "llama-bench $m (load average: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  "$bin/llama-bench" -m "$dir/$f" -t "$threads" -p "$pp" -n "$tg" -r "$reps" "${repack[@]}" -o json > "$out/$m.json"
  records+=("$out/$m.json")
done
python3 - "$json" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)" \
  "$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx|avx2|fma|f16c|avx512[a-z_0-9]*|amx[a-z_0-9]*)$' | sort | tr '\n' ' ')" "${records[@]}" <<'PY'
import json, sys
asjson, cpu, flags, files = sys.argv[1] == "1", sys.argv[2].strip(), sys.argv[3].strip(), sys.argv[4:]
recs = []
for f in files:
    recs += json.load(open(f))
if asjson:
    json.dump(recs, sys.stdout, indent=1); print(); sys.exit()
print(f"CPU: {cpu}; flags: {flags}")
if recs:
    r = recs[0]
    print(f"llama.cpp {r.get('build_commit')} (build {r.get('build_number')}), backend {r.get('backends')}, threads {r.get('n_threads')}")
    print(f"llama-bench cpu_info: {r.get('cpu_info')}")
print()
print("| file | type | size MiB | test | tokens/s median | min–max | mean ± sd |")
print("|---|---|---:|---|---:|---:|---:|")
for r in recs:
    test = f"pp{r['n_prompt']}" if r["n_prompt"] else f"tg{r['n_gen']}"
    name = r["model_filename"].rsplit("/", 1)[-1]
    ts = sorted(r["samples_ts"])
    med = ts[len(ts) // 2] if len(ts) % 2 else (ts[len(ts) // 2 - 1] + ts[len(ts) // 2]) / 2
    print(f"| {name} | {r['model_type']} | {r['model_size']/2**20:.1f} | {test} | {med:.1f} | {ts[0]:.1f}–{ts[-1]:.1f} | {r['avg_ts']:.1f} ± {r['stddev_ts']:.1f} |")
PY
