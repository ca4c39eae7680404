#!/usr/bin/env bash
# Tests of the hermes plugin (clients/hermes/compactd/) inside the real hermes-agent 0.19.0
# (the pinned venv of scripts/hermes-venv) against a compactd built from this checkout.
# Run by .ci/run; the tests start `compactd serve` themselves on a free loopback port.
#
#   bash clients/hermes/test.sh                  # all of them
#   bash clients/hermes/test.sh test_engine      # one module (or module.Class.test)
#
# COMPACTD_TEST_BIN names another compactd binary (then nothing is built).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

COMPACTD_TEST_BIN="$(bash scripts/test-bin)"
export COMPACTD_TEST_BIN
VENV="$(bash scripts/hermes-venv)"

cd clients/hermes/tests
# No bytecode beside the sources (the plugin directory is what users copy).
export PYTHONDONTWRITEBYTECODE=1
if [ "$#" -gt 0 ]; then
	exec "$VENV/bin/python" -m unittest -v "$@"
fi
exec "$VENV/bin/python" -m unittest discover -v -s . -p 'test_*.py'
