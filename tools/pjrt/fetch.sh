#!/usr/bin/env bash
# Fetches XLA's CPU PJRT plugin (PyPI package xla-cpu-pjrt) into a cache
# directory, for the pjrt backend (go build -tags pjrt) and its tests.
#
# Usage: tools/pjrt/fetch.sh [--print]
#   GOTPU_PJRT_CACHE  cache directory (default $HOME/.cache/gotpu/pjrt)
#   XLA_CPU_PJRT_VERSION  package version (default 0.0.1)
#
# Idempotent: when the plugin is already in the cache nothing is downloaded.
# The wheel is unpacked into a temporary directory next to the final one and
# renamed into place, so a killed run never leaves a half-extracted plugin.
# On success the plugin's path is printed on stdout (the only stdout line).
set -euo pipefail

cache="${GOTPU_PJRT_CACHE:-$HOME/.cache/gotpu/pjrt}"
version="${XLA_CPU_PJRT_VERSION:-0.0.1}"
dest="$cache/xla_cpu_pjrt-$version"
so="$dest/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so"

if [[ -s "$so" ]]; then
  echo "$so"
  exit 0
fi

py="$(command -v python3 || true)"
if [[ -z "$py" ]]; then
  echo "fetch.sh: python3 (with pip) is needed to download xla-cpu-pjrt" >&2
  exit 1
fi

mkdir -p "$cache"
tmp="$(mktemp -d "$cache/.fetch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

echo "fetch.sh: downloading xla-cpu-pjrt==$version from PyPI" >&2
"$py" -m pip download --quiet --no-deps --only-binary=:all: \
  --dest "$tmp/wheel" "xla-cpu-pjrt==$version" >&2
whl="$(ls "$tmp"/wheel/xla_cpu_pjrt-*.whl 2>/dev/null | head -n 1 || true)"
if [[ -z "$whl" ]]; then
  echo "fetch.sh: pip did not produce an xla_cpu_pjrt wheel" >&2
  exit 1
fi

# A wheel is a zip file; python's zipfile avoids depending on unzip.
"$py" - "$whl" "$tmp/out" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for n in z.namelist():
        if n.startswith("/") or ".." in n.split("/"):
            sys.exit("fetch.sh: unsafe path in wheel: " + n)
    z.extractall(sys.argv[2])
PY
if [[ ! -s "$tmp/out/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so" ]]; then
  echo "fetch.sh: the wheel has no xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so" >&2
  exit 1
fi
sync -f "$tmp/out/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so" 2>/dev/null || sync

# Another run may have finished first: keep its copy.
if ! mv -T "$tmp/out" "$dest" 2>/dev/null; then
  if [[ ! -s "$so" ]]; then
    echo "fetch.sh: cannot move the plugin into $dest" >&2
    exit 1
  fi
fi
sync -f "$cache" 2>/dev/null || true
echo "$so"
