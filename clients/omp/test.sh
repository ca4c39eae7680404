#!/usr/bin/env bash
# oh-my-pi's own compaction code (@oh-my-pi/pi-agent-core 18.2.3: `generateSummary` with a
# `remoteEndpoint` ending in /chat/completions, and the generic remote at /v1/summarize through
# `requestRemoteCompaction` and `compact`) run under bun against a compactd built from this
# checkout, in front of a fake model. 18.2.3 is the newest 18.x whose dependencies the registry
# holds in full: 18.2.11 needs pi-natives and pi-utils 18.2.11, which it lacks (the native
# addon checks that its JavaScript loader is of the same release, so no older one stands in).
# The generic remote's code (requestRemoteCompaction, generateShortSummary) is the same in both. The packages (pi-agent-core and bun itself, as the
# registry package @oven/bun-linux-x64) are installed by scripts/pinned-npm as pinned by
# package-lock.json into target/omp. Run by .ci/run.
#
# COMPACTD_TEST_BIN names another compactd binary (then nothing is built).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

COMPACTD_TEST_BIN="$(bash scripts/test-bin)"
export COMPACTD_TEST_BIN

DIR="$(bash scripts/pinned-npm omp clients/omp)"

cp clients/omp/compaction.test.ts "$DIR/"
cd "$DIR"
exec node_modules/@oven/bun-linux-x64/bin/bun test ./compaction.test.ts
