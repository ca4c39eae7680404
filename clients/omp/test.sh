#!/usr/bin/env bash
# oh-my-pi's own compaction code (@oh-my-pi/pi-agent-core 18.2.3: `generateSummary` with a
# `remoteEndpoint` ending in /chat/completions, and the generic remote at /v1/summarize through
# `requestRemoteCompaction` and `compact`) run under bun against a compactd built from this
# checkout, in front of a fake model. 18.2.3 is the newest 18.x whose dependencies the registry
# holds in full: 18.2.11 needs pi-natives and pi-utils 18.2.11, which it lacks (the native
# addon checks that its JavaScript loader is of the same release, so no older one stands in).
# The generic remote's code (requestRemoteCompaction, generateShortSummary) is the same in both. The packages (pi-agent-core and bun itself, as the
# registry package @oven/bun-linux-x64) are installed with npm from its configured registry,
# as pinned by package-lock.json (integrity hashes, no registry URLs), into
# target/omp, reused while the lockfile is unchanged. Run by .ci/run.
#
# COMPACTD_TEST_BIN names another compactd binary (then nothing is built).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

COMPACTD_TEST_BIN="$(bash scripts/test-bin)"
export COMPACTD_TEST_BIN

DIR="${CARGO_TARGET_DIR:-$ROOT/target}/omp"
LOCK=clients/omp/package-lock.json
if ! cmp -s "$LOCK" "$DIR/installed-lock.json" 2>/dev/null; then
	echo "omp: installing the pinned packages into $DIR" >&2
	rm -rf "$DIR"
	mkdir -p "$DIR"
	cp clients/omp/package.json "$LOCK" "$DIR/"
	for attempt in 1 2 3; do
		# `npm install` with the lockfile in place installs the locked versions and checks
		# their integrity; not `npm ci`, which refuses a lockfile without the other
		# platforms' optional native packages (pi-natives-darwin-*, …), absent here. No
		# install scripts: bun is a plain binary inside its package, and nothing else needs
		# building for the compaction code.
		if (cd "$DIR" && npm install --ignore-scripts --no-save --no-audit --no-fund --loglevel=error >&2); then
			break
		fi
		if [ "$attempt" = 3 ]; then
			echo "omp: npm ci failed three times" >&2
			exit 1
		fi
		sleep $((attempt * 10))
	done
	# Written last: a half-done install is never taken for a complete one.
	cp "$LOCK" "$DIR/installed-lock.json"
fi

cp clients/omp/compaction.test.ts "$DIR/"
cd "$DIR"
exec node_modules/@oven/bun-linux-x64/bin/bun test ./compaction.test.ts
