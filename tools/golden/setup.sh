#!/usr/bin/env bash
# Installs the golden-data reference: Debian's PyTorch 1.13 (CPU) with
# OpenBLAS (OpenMP build) and NumPy. Idempotent.
set -euo pipefail
if /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null; then exit 0; fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq python3-torch python3-numpy libopenblas0-openmp >/dev/null
