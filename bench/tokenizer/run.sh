#!/usr/bin/env bash
# run.sh — tokenizer throughput: gotpu's pure-Go hf/tokenizer against Hugging
# Face tokenizers (Rust, from Python) and tiktoken, one thread each, on the
# same deterministic ~10 MB multilingual corpus.
#
#   bench/tokenizer/run.sh [--json] [--reps N] [--mb MB] [--tokenizers gpt2,llama3,gpt4o]
#
# Steps: (a) make_corpus.py builds the corpus from testdata/tokenizers/
# corpus.jsonl (fixed seed); (b) bench_ref.py times HF encode_batch with
# RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false; (c) it times tiktoken's
# o200k_base (rebuilt offline from the gpt4o tokenizer.json; its ids are
# checked equal to HF's first); (d) main.go times gotpu with GOMAXPROCS=1;
# (e) report.py prints MB/s and the ratios gotpu/HF and gotpu/tiktoken
# (--json: stable keys, see bench/README.md). Median of N runs (default 5)
# after one warm-up.
#
# Exit status: 0; 1 on an error or when gotpu's ids differ from HF's; 3 when
# everything but the Go measurement worked (the report says why).
# Work files go to $GOTPU_BENCH_DIR (default .cache/bench-tokenizer in the
# repository, git-ignored).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/bench/tokenizer"
work="${GOTPU_BENCH_DIR:-$root/.cache/bench-tokenizer}"
json=0 reps=5 mb=10 toks="gpt2,llama3,gpt4o"

die() { echo "run.sh: $*" >&2; exit 1; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --json) json=1 ;;
    --reps) reps="${2:?--reps needs a value}"; shift ;;
    --mb) mb="${2:?--mb needs a value}"; shift ;;
    --tokenizers) toks="${2:?--tokenizers needs a value}"; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
  shift
done
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || die "--reps wants a positive integer"
[[ "$mb" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--mb wants a number"

mkdir -p "$work"
py="$("$root/tools/tokref/venv.sh")" || die "could not set up the Python environment"

# Tokenizer files: committed under testdata, else fetched.
tokdir="${GOTPU_TOKENIZERS_DIR:-$HOME/.cache/gotpu-testdata/tokenizers}"
IFS=',' read -r -a names <<< "$toks"
tokargs=()
for n in "${names[@]}"; do
  p="$root/testdata/tokenizers/$n/tokenizer.json"
  if [[ ! -f "$p" ]]; then
    "$root/tools/tokref/fetch.sh" "$n" >&2 || die "fetch $n failed"
    p="$tokdir/$n/tokenizer.json"
  fi
  tokargs+=(--tok "$n=$p")
done
tiktoken_args=()
for n in "${names[@]}"; do [[ "$n" == gpt4o ]] && tiktoken_args=(--tiktoken gpt4o); done

corpus="$work/corpus-${mb}mb.jsonl"
"$py" "$here/make_corpus.py" --mb "$mb" --out "$corpus"

echo "timing HF tokenizers${tiktoken_args:+ and tiktoken} (reps=$reps) ..." >&2
RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false \
  "$py" "$here/bench_ref.py" --corpus "$corpus" "${tokargs[@]}" "${tiktoken_args[@]}" \
  --reps "$reps" --out "$work/ref.json"

goerr=""
rm -f "$work/go.json"
if ! (cd "$root" && go build -o "$work/tokbench" ./bench/tokenizer) 2> "$work/go-build.log"; then
  goerr="go build failed: $(grep -v '^#' "$work/go-build.log" | head -1)"
else
  echo "timing gotpu (GOMAXPROCS=1, reps=$reps) ..." >&2
  if ! GOMAXPROCS=1 "$work/tokbench" -corpus "$corpus" "${tokargs[@]}" -reps "$reps" -json \
      > "$work/go.json" 2> "$work/go-run.log"; then
    goerr="gotpu run failed: $(tail -1 "$work/go-run.log")"
    rm -f "$work/go.json"
  fi
fi

report=("$py" "$here/report.py" --ref "$work/ref.json")
[[ -f "$work/go.json" ]] && report+=(--go "$work/go.json")
[[ -n "$goerr" ]] && report+=(--go-error "$goerr")
[[ $json -eq 1 ]] && report+=(--json)
"${report[@]}" || exit 1
[[ -z "$goerr" ]] || exit 3
