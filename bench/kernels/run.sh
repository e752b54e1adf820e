#!/usr/bin/env bash
# run.sh — the kernel benchmark table of bench/kernels/README.md: every
# `gotpu bench` case at the sizes below, each with its references
# (NumPy/OpenBLAS, PyTorch 1.13, gonum, Go memmove) measured in the same
# run at the same thread count.
#
#   bench/kernels/run.sh [--json] [--quick] [--reps N] [--threads N]
#                        [--ref SPEC] [--only case,case,...]
#
#   --json     print one JSON array of the reports instead of the markdown table
#   --quick    small sizes (a minute or two), for a smoke test
#   --reps N   timed repetitions per implementation (default 5; median reported)
#   --threads  threads for gotpu and the references (default: nproc)
#   --ref      override every case's --ref (default: each row's own list)
#   --only     run only these cases (gemm,gemv,eltwise,softmax,layernorm,conv,sdpa)
#
# It builds ./cmd/gotpu into the work directory, or uses $GOTPU_BIN if set.
# References need /usr/bin/python3 with numpy and torch
# (tools/benchref/install.sh); without them their columns are "skipped".
# Every report is kept as JSON in $GOTPU_BENCH_DIR (default
# .cache/bench-kernels, git-ignored); `gotpu bench summary FILE...` re-prints
# them. The full table takes about 10-15 minutes on 2 cores (gonum's 4096³
# GEMM alone is a minute and a half).
#
# Exit status: 0; 1 when a case failed (the others still run and print).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="${GOTPU_BENCH_DIR:-$root/.cache/bench-kernels}"
json=0 quick=0 reps=5 threads="$(nproc)" ref="" only=""

die() { echo "run.sh: $*" >&2; exit 1; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --json) json=1 ;;
    --quick) quick=1 ;;
    --reps) reps="${2:?--reps needs a value}"; shift ;;
    --threads) threads="${2:?--threads needs a value}"; shift ;;
    --ref) ref="${2:?--ref needs a value}"; shift ;;
    --only) only="${2:?--only needs a value}"; shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
  shift
done
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || die "--reps wants a positive integer"
[[ "$threads" =~ ^[1-9][0-9]*$ ]] || die "--threads wants a positive integer"

mkdir -p "$work"
bin="${GOTPU_BIN:-}"
if [[ -z "$bin" ]]; then
  bin="$work/gotpu"
  (cd "$root" && go build -o "$bin" ./cmd/gotpu) || die "go build ./cmd/gotpu failed (set GOTPU_BIN to a built gotpu)"
fi
[[ -x "$bin" ]] || die "$bin is not executable"

# One row per line: case, then its flags. A row's --ref list is its
# references; --ref on the command line replaces it.
if [[ $quick == 1 ]]; then
  rows=(
    "gemm --dtype f32 --size 256 --ref all"
    "gemm --dtype medium --size 256 --ref numpy,torch"
    "gemv --dtype f32 --size 768 --k 3072 --memmove-mb 64 --ref all"
    "eltwise --dtype f32 --size 1048576 --ref all"
    "softmax --dtype f32 --size 512 --ref all"
    "layernorm --dtype f32 --size 512 --ref all"
    "conv --dtype f32 --size 14 --batch 2 --ref all"
    "sdpa --dtype f32 --size 128 --heads 2 --ref all"
  )
else
  rows=()
  # gonum's 4096³ would take minutes per repetition on 2 cores: up to 2048.
  for n in 512 1024 2048; do rows+=("gemm --dtype f32 --size $n --ref all"); done
  rows+=("gemm --dtype f32 --size 4096 --ref numpy,torch")
  for n in 512 1024 2048 4096; do rows+=("gemm --dtype medium --size $n --ref numpy,torch"); done
  for n in 512 1024; do rows+=("gemm --dtype bf16 --size $n --ref torch"); done
  for dt in f32 bf16; do
    rows+=("gemv --dtype $dt --size 768 --k 3072 --ref all" "gemv --dtype $dt --size 3072 --k 768 --ref all")
  done
  for dt in f32 bf16; do
    rows+=("eltwise --dtype $dt --size 16777216 --ref all"
      "softmax --dtype $dt --size 4096 --ref all"
      "layernorm --dtype $dt --size 4096 --ref all")
  done
  rows+=("conv --dtype f32 --size 56 --ref all" "conv --dtype medium --size 56 --ref all")
  for n in 512 2048; do rows+=("sdpa --dtype f32 --size $n --ref all" "sdpa --dtype f32 --size $n --causal --ref all"); done
fi

status=0 files=() i=0
for row in "${rows[@]}"; do
  read -r -a args <<< "$row"
  case_name="${args[0]}"
  if [[ -n "$only" && ",$only," != *",$case_name,"* ]]; then continue; fi
  if [[ -n "$ref" ]]; then
    for j in "${!args[@]}"; do [[ "${args[$j]}" == --ref ]] && args[$((j + 1))]="$ref"; done
  fi
  i=$((i + 1))
  out="$work/$(printf '%02d' "$i")-$(tr ' ' '_' <<< "${args[*]}" | tr -cd 'A-Za-z0-9_.,-').json"
  echo "run.sh: [$i] gotpu bench ${args[*]}" >&2
  if "$bin" bench "${args[@]}" --reps "$reps" --threads "$threads" --json > "$out.tmp"; then
    mv "$out.tmp" "$out"
    files+=("$out")
  else
    echo "run.sh: gotpu bench ${args[*]} failed" >&2
    rm -f "$out.tmp"
    status=1
  fi
done
[[ ${#files[@]} -gt 0 ]] || die "no case ran"

if [[ $json == 1 ]]; then
  "$bin" bench summary --json "${files[@]}"
else
  rev="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "Kernel benchmarks: $(date -u +%Y-%m-%dT%H:%MZ), commit $rev, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), threads=$threads, reps=$reps (median)."
  echo "gotpu/impl is gotpu's throughput over impl's (above 1: gotpu faster)."
  echo
  "$bin" bench summary "${files[@]}"
fi
exit $status
