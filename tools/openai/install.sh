#!/usr/bin/env bash
# Install the official OpenAI client libraries, pinned, into a cache
# directory, for the client tests against gotpu serve
# (cmd/gotpu TestServeOpenAIClients):
#
#   npm  openai@7.60.0   -> $cache/node/node_modules/openai
#   PyPI openai==3.60.0  -> $cache/venv (a Python venv)
#
#   tools/openai/install.sh        # prints the cache directory
#   GOTPU_OPENAI_CACHE=/data/openai tools/openai/install.sh
#
# Needs node/npm (Node 18+) and python3 (3.9+) with venv. Nothing is
# committed; the test skips, naming this script, when the cache lacks a
# client.
set -euo pipefail

NPM_OPENAI=7.60.0
PY_OPENAI=3.60.0
cache="${GOTPU_OPENAI_CACHE:-$HOME/.cache/gotpu-openai}"
mkdir -p "$cache/node"

if ! [[ -f "$cache/node/node_modules/openai/package.json" ]] ||
	! grep -q "\"version\": \"$NPM_OPENAI\"" "$cache/node/node_modules/openai/package.json"; then
	(cd "$cache/node" && npm install --silent --no-audit --no-fund --prefix "$cache/node" "openai@$NPM_OPENAI" >&2)
fi

if ! [[ -x "$cache/venv/bin/python" ]] ||
	! "$cache/venv/bin/python" -c "import openai, sys; sys.exit(openai.__version__ != '$PY_OPENAI')" 2>/dev/null; then
	python3 -m venv "$cache/venv"
	"$cache/venv/bin/python" -m pip install --quiet --disable-pip-version-check "openai==$PY_OPENAI" >&2
fi

echo "$cache"
