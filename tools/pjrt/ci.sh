#!/usr/bin/env bash
# CI hook for the PJRT backend (backend/pjrt, build tag pjrt): fetches
# XLA's CPU plugin (tools/pjrt/fetch.sh, cached) and runs the tagged tests
# with the plugin required, so a missing plugin fails instead of skipping.
#
#   tools/pjrt/ci.sh            -short: at most 2 conformance cases per op
#   GOTPU_PJRT_FULL=1 tools/pjrt/ci.sh   every golden case (several minutes)
#
# It also checks that the default build stays pure Go: without the tag the
# package is its doc.go alone and builds with CGO_ENABLED=0.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v gcc >/dev/null 2>&1 && ! command -v cc >/dev/null 2>&1; then
  echo "pjrt ci: a C compiler is needed for the pjrt build tag (apt-get install gcc)" >&2
  exit 1
fi

echo "pjrt ci: default build without cgo"
CGO_ENABLED=0 go vet ./backend/pjrt/

so="$(tools/pjrt/fetch.sh)"
echo "pjrt ci: plugin $so"

short=-short
if [[ "${GOTPU_PJRT_FULL:-}" == "1" ]]; then
  short=
fi

echo "pjrt ci: vet"
go vet -tags pjrt ./backend/pjrt/ ./dist/xla/

echo "pjrt ci: tests"
GOTPU_PJRT_REQUIRE=1 GOTPU_PJRT_PLUGIN="xla=$so" \
  go test -tags pjrt $short -count=1 -timeout 30m \
  ./backend/pjrt/ ./tensor/ ./cmd/gotpu/ ./compile/ ./models/ ./serve/ ./dist/xla/ -run 'PJRT|XLA'
