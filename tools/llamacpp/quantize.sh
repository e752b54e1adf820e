#!/usr/bin/env bash
# quantize.sh — make F32, BF16 and Q8_0 variants of SmolLM2-135M-Instruct
# from the Q4_1 file tools/gguf/fetch.sh downloads, with llama.cpp's
# llama-quantize (tools/llamacpp/build.sh), next to it in the test-data
# cache; print the four paths (Q4_1 first).
#
#   tools/llamacpp/quantize.sh
#   GOTPU_TESTDATA_CACHE=/data tools/llamacpp/quantize.sh
#
# The variants are requantized from Q4_1 (--allow-requantize): their
# weights are the Q4_1 values widened (F32, BF16) or re-rounded (Q8_0), not
# the original checkpoint's, which is what a speed comparison needs (the
# same model in four storage types). Idempotent: an existing variant is
# kept. Each is written to a temporary name and renamed into place.
set -euo pipefail
cd "$(dirname "$0")/../.."

die() { echo "quantize.sh: $*" >&2; exit 1; }
cache="${GOTPU_TESTDATA_CACHE:-$HOME/.cache/gotpu-testdata}"
dir="$cache/gguf"
src="$dir/SmolLM2-135M-Instruct.Q4_1.gguf"
[[ -f "$src" ]] || die "$src not found; run tools/gguf/fetch.sh first"
bin="$(tools/llamacpp/build.sh llama-quantize)"
threads="${GOTPU_LLAMACPP_THREADS:-2}"

echo "$src"
for typ in F32 BF16 Q8_0; do
  out="$dir/SmolLM2-135M-Instruct.$typ.gguf"
  if [[ ! -s "$out" ]]; then
    echo "quantize.sh: making $out" >&2
    "$bin/llama-quantize" --allow-requantize "$src" "$out.tmp" "$typ" "$threads" >&2 ||
      { rm -f "$out.tmp"; die "llama-quantize $typ failed"; }
    mv "$out.tmp" "$out"
  fi
  echo "$out"
done
