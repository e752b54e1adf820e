#!/usr/bin/env bash
# build.sh — build llama.cpp's CPU tools (llama-bench, llama-server,
# llama-quantize, llama-cli, and ggml's test-backend-ops, whose perf mode
# times single ops such as the quantized mat-vec of `gotpu bench qgemv
# --ref llamacpp`) as a same-machine reference for gotpu, from the
# llama.cpp source that the llama-cpp-python sdist on PyPI vendors
# (vendor/llama.cpp). Prints the bin directory.
#
#   tools/llamacpp/build.sh            # e.g. ~/.cache/gotpu-llamacpp/0.3.36/bin
#   tools/llamacpp/build.sh llama-bench llama-quantize   # only these (faster)
#   tools/llamacpp/build.sh test-backend-ops             # the op benchmark only
#   GOTPU_LLAMACPP_CACHE=/data tools/llamacpp/build.sh
#   GOTPU_LLAMACPP_JOBS=4 tools/llamacpp/build.sh
#
# The sdist is pinned by version and SHA-256; pip checks the digest
# (--require-hashes) and the script checks it again before extracting, so a
# mismatch fails loudly and nothing is built. Release build, GGML_NATIVE=ON
# (tuned for this CPU, so the numbers are the best llama.cpp does here), no
# CUDA/Metal/Vulkan, no curl/OpenSSL, no web UI download, static libraries.
# Idempotent: when the binaries asked for exist it only prints the bin
# directory; an interrupted build resumes. With -j2 on the shared 2-core VM
# (load 10-20), llama-bench + llama-quantize took ~35 minutes;
# llama-server + llama-cli are about as much again; test-backend-ops (one
# source file on top of the libraries) under a minute more (2026-12-04).
# A build directory configured earlier without the tests (LLAMA_BUILD_TESTS
# =OFF, as this script did before test-backend-ops) is reconfigured in place
# with the tests on when test-backend-ops is asked for; nothing is rebuilt
# but the new target.
# Needs python3 with pip, cmake, a C/C++ compiler, sha256sum; ninja if present.
set -euo pipefail

VERSION="0.3.36"
SDIST="llama_cpp_python-${VERSION}.tar.gz"
SDIST_SHA="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
TOOLS=(llama-bench llama-server llama-quantize llama-cli test-backend-ops)
if [[ $# -gt 0 ]]; then
  for t in "$@"; do
    [[ " ${TOOLS[*]} " == *" $t "* ]] || { echo "build.sh: unknown tool $t (one of ${TOOLS[*]})" >&2; exit 2; }
  done
  TOOLS=("$@")
fi

cache="${GOTPU_LLAMACPP_CACHE:-$HOME/.cache/gotpu-llamacpp}"
root="$cache/$VERSION"
bin="$root/bin"
jobs="${GOTPU_LLAMACPP_JOBS:-2}"

die() { echo "build.sh: $*" >&2; exit 1; }

built=1
for t in "${TOOLS[@]}"; do [[ -x "$bin/$t" ]] || built=0; done
if [[ $built == 1 ]]; then echo "$bin"; exit 0; fi

for c in python3 cmake sha256sum tar; do command -v "$c" >/dev/null || die "$c not found"; done
mkdir -p "$root"
tmp="$(mktemp -d "$root/tmp.XXXXXX")"
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT

# 1. the sdist, digest-checked by pip and again here.
if [[ ! -f "$root/$SDIST" ]]; then
  printf 'llama-cpp-python==%s --hash=sha256:%s\n' "$VERSION" "$SDIST_SHA" > "$tmp/req.txt"
  echo "build.sh: downloading $SDIST from PyPI" >&2
  python3 -m pip download --quiet --no-deps --no-binary :all: \
    --require-hashes -r "$tmp/req.txt" -d "$tmp/dl" >&2 ||
    die "pip download of llama-cpp-python $VERSION failed (digest mismatch or no network)"
  [[ -f "$tmp/dl/$SDIST" ]] || die "pip did not produce $SDIST"
  mv "$tmp/dl/$SDIST" "$tmp/$SDIST.part"
  got="$(sha256sum "$tmp/$SDIST.part" | cut -d' ' -f1)"
  [[ "$got" == "$SDIST_SHA" ]] || die "SHA-256 mismatch for $SDIST: got $got, want $SDIST_SHA"
  mv "$tmp/$SDIST.part" "$root/$SDIST"
fi
got="$(sha256sum "$root/$SDIST" | cut -d' ' -f1)"
[[ "$got" == "$SDIST_SHA" ]] || die "SHA-256 mismatch for $root/$SDIST: got $got, want $SDIST_SHA (delete it to re-download)"

# 2. vendor/llama.cpp only.
src="$root/src"
if [[ ! -f "$src/CMakeLists.txt" ]]; then
  echo "build.sh: extracting vendor/llama.cpp" >&2
  tar -xzf "$root/$SDIST" -C "$tmp" "llama_cpp_python-$VERSION/vendor/llama.cpp"
  rm -rf "$src"
  mv "$tmp/llama_cpp_python-$VERSION/vendor/llama.cpp" "$src"
fi

# 3. configure (once) and build the tools. The tests are configured (not
# built: only the targets asked for are) so that test-backend-ops exists.
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
build="$root/build"
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$src" -B "$build" "${gen[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON \
    -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_OPENCL=OFF -DGGML_RPC=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON >&2
elif [[ " ${TOOLS[*]} " == *" test-backend-ops "* ]] &&
  ! grep -qx 'LLAMA_BUILD_TESTS:BOOL=ON' "$build/CMakeCache.txt"; then
  # An existing cache keeps its generator and options; only the tests are
  # switched on (re-running the full command could clash with its generator).
  echo "build.sh: reconfiguring $build with LLAMA_BUILD_TESTS=ON for test-backend-ops" >&2
  cmake -S "$src" -B "$build" -DLLAMA_BUILD_TESTS=ON >&2 || die "reconfiguring $build with the tests failed"
fi
cmake --build "$build" --config Release -j "$jobs" --target "${TOOLS[@]}" >&2
mkdir -p "$bin"
for t in "${TOOLS[@]}"; do
  [[ -x "$build/bin/$t" ]] || die "$t was not built (see $build)"
  cp "$build/bin/$t" "$bin/$t.tmp" && mv "$bin/$t.tmp" "$bin/$t"
done
echo "$bin"
