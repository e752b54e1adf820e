#!/usr/bin/env bash
# `gotpu bench gemv` on the batch-1 linear layers of SmolLM2-135M and GPT-2
# small ([in→out]: W is [out, in], so --size out --k in), f32 and bf16,
# with Go's memmove measured in each run; prints one line per shape and
# dtype: gotpu's GB/s (bytes read) and its share of memmove's read rate,
# for the whole-buffer copy (DRAM) and a copy of the matrix's own bytes
# (cache-resident like the matrix if it fits).
#
#   bench/kernels/gemv_decode.sh [--reps N] [--threads N] [--dtype f32,bf16] [--ref none|torch]
#
# GOTPU_CPU_LEVEL caps the kernel level (avx2, avx512, avx512bf16).
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=7; threads=1; dtypes=f32,bf16; ref=none
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2;;
    --threads) threads=$2; shift 2;;
    --dtype) dtypes=$2; shift 2;;
    --ref) ref=$2; shift 2;;
    *) echo "unknown flag $1" >&2; exit 2;;
  esac
done
out="${GOTPU_BENCH_DIR:-.cache/bench-gemv}"
mkdir -p "$out"
go build -o "$out/gotpu" ./cmd/gotpu
echo "level ${GOTPU_CPU_LEVEL:-best}, threads $threads, reps $reps (median), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for dt in ${dtypes//,/ }; do
  for sh in 576:576 576:192 576:1536 1536:576 768:2304 3072:768 576:49152 768:50257; do
    in=${sh%:*}; o=${sh#*:}
    "$out/gotpu" bench gemv --dtype "$dt" --size "$o" --k "$in" --reps "$reps" --threads "$threads" \
      --memmove-mb 256 --ref "$ref" --json > "$out/gemv-$dt-$in-$o.json"
    python3 - "$out/gemv-$dt-$in-$o.json" "$dt" "$in" "$o" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
g = {x["impl"]: x for x in r["results"]}
got = g["gotpu"]["gbps"]
line = f"{sys.argv[2]:5} [{sys.argv[3]:>5}→{sys.argv[4]:>5}]  gotpu {got:6.1f} GB/s"
for m in ("go-memmove", "go-memmove-matrix"):
    if m in g:
        line += f"  {m} read {g[m]['gbps']/2:6.1f} GB/s ({100*got/(g[m]['gbps']/2):4.0f}%)"
for ref in ("torch", "numpy"):
    if ref in g:
        line += f"  {ref} {g[ref]['gbps']:6.1f} GB/s"
print(line)
PY
  done
done
