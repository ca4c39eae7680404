#!/usr/bin/env bash
# The OpenAI-compatible routes (POST /v1/chat/completions, GET /v1/models and
# POST /v1/responses/compact) with real clients, against a compactd built from this checkout
# in front of a fake model: the official `openai` Python package (plain, streaming, models,
# errors; `responses.compact` plain and fed back) and hermes-agent 0.19.0's own
# ContextCompressor with its auxiliary compression model pointed at compactd. Both come from
# the pinned, hashed venv of scripts/hermes-venv (openai 2.24.0 is a hermes dependency there).
# Run by .ci/run; the tests start `compactd serve` themselves on a free loopback port.
#
#   bash clients/openai/test.sh                         # all of them
#   bash clients/openai/test.sh test_openai_client      # one module (or module.Class.test)
#
# COMPACTD_TEST_BIN names another compactd binary (then nothing is built).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

COMPACTD_TEST_BIN="$(bash scripts/test-bin)"
export COMPACTD_TEST_BIN
VENV="$(bash scripts/hermes-venv)"

cd clients/openai/tests
export PYTHONDONTWRITEBYTECODE=1
if [ "$#" -gt 0 ]; then
	exec "$VENV/bin/python" -m unittest -v "$@"
fi
exec "$VENV/bin/python" -m unittest discover -v -s . -p 'test_*.py'
