#!/usr/bin/env bash
# venv.sh — create (once) the Python environment with transformers and
# PyTorch 2.x used to make and check the model references, and print the path
# of its python. Idempotent: when the venv already has the pinned
# requirements it only prints the path.
#
#   PY="$(tools/modelref/venv.sh)" && "$PY" tools/modelref/gen.py
#
# Location: $GOTPU_MODELREF_VENV, default ~/.cache/gotpu-modelref/venv.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${GOTPU_MODELREF_VENV:-$HOME/.cache/gotpu-modelref/venv}"
req="$here/requirements.txt"
stamp="$venv/.gotpu-requirements"
if [[ -x "$venv/bin/python" && -f "$stamp" ]] && cmp -s "$req" "$stamp"; then
  echo "$venv/bin/python"
  exit 0
fi
python3 -m venv "$venv" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
cp "$req" "$stamp"
echo "$venv/bin/python"
