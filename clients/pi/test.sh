#!/usr/bin/env bash
# The real pi (@mariozechner/pi-coding-agent 0.73.1) in RPC mode with compactd's extension
# (clients/pi/compactd.ts) loaded by `pi -e`, against a compactd built from this checkout and
# a fake OpenAI-compatible model: compaction.test.mjs says what is checked. The packages are
# installed by scripts/pinned-npm as pinned by package-lock.json into target/pi. Needs
# Node >= 20.6 (pi's own floor). Run by .ci/run.
#
# COMPACTD_TEST_BIN names another compactd binary (then nothing is built).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

COMPACTD_TEST_BIN="$(bash scripts/test-bin)"
export COMPACTD_TEST_BIN

DIR="$(bash scripts/pinned-npm pi clients/pi)"
export PI_PACKAGE="$DIR/node_modules/@mariozechner/pi-coding-agent"
exec node --test --test-reporter=spec clients/pi/compaction.test.mjs
