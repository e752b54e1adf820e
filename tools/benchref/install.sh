#!/usr/bin/env bash
# install.sh — install (once) the reference libraries of `gotpu bench` from
# Debian: NumPy with OpenBLAS (the OpenMP build, so OMP_NUM_THREADS sizes its
# pool) and PyTorch 1.13. Idempotent: it installs nothing when
# /usr/bin/python3 already imports numpy and torch. Needs root (or sudo).
#
#   tools/benchref/install.sh
#
# The references run with /usr/bin/python3, never a pyenv or venv python
# that may be first on PATH (those lack the Debian packages).
set -euo pipefail
py=/usr/bin/python3
pkgs=(python3-numpy python3-torch libopenblas0-openmp)

if [[ -x "$py" ]] && "$py" -c 'import numpy, torch' 2>/dev/null; then
  "$py" -c 'import numpy, torch; print("benchref: numpy", numpy.__version__, "torch", torch.__version__, "already installed")'
  exit 0
fi
sudo=()
if [[ "$(id -u)" != 0 ]]; then
  command -v sudo >/dev/null || { echo "install.sh: run as root (apt-get install ${pkgs[*]})" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get install -y --no-install-recommends "${pkgs[@]}" >&2 || {
  "${sudo[@]}" apt-get update >&2
  "${sudo[@]}" apt-get install -y --no-install-recommends "${pkgs[@]}" >&2
}
"$py" -c 'import numpy, torch; print("benchref: numpy", numpy.__version__, "torch", torch.__version__)'
