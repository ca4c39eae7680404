#!/usr/bin/env bash
# Anthropic's compaction requests (POST /v1/messages with `compaction`) with the official
# `anthropic` Python client, pinned with hashes in clients/anthropic/requirements.txt, against
# a compactd built from this checkout in front of a fake model. Run by .ci/run; the tests start
# `compactd serve` themselves on a free loopback port.
#
#   bash clients/anthropic/test.sh                            # all of them
#   bash clients/anthropic/test.sh test_anthropic_client      # one module (or module.Class.test)
#
# COMPACTD_TEST_BIN names another compactd binary (then nothing is built).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

COMPACTD_TEST_BIN="$(bash scripts/test-bin)"
export COMPACTD_TEST_BIN

VENV="$(bash scripts/pinned-venv anthropic clients/anthropic/requirements.txt)"

cd clients/anthropic/tests
export PYTHONDONTWRITEBYTECODE=1
if [ "$#" -gt 0 ]; then
	exec "$VENV/bin/python" -m unittest -v "$@"
fi
exec "$VENV/bin/python" -m unittest discover -v -s . -p 'test_*.py'
