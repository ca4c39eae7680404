#!/usr/bin/env bash
# The real pi (@mariozechner/pi-coding-agent 0.73.1) in RPC mode with compactd's extension
# (clients/pi/compactd.ts) loaded by `pi -e`, against a compactd built from this checkout and
# a fake OpenAI-compatible model: compaction.test.mjs says what is checked. The packages are
# installed with npm from its configured registry, as pinned by package-lock.json (integrity
# hashes, no registry URLs), into target/pi, reused while the lockfile is unchanged. Needs
# Node >= 20.6 (pi's own floor). Run by .ci/run.
#
# COMPACTD_TEST_BIN names another compactd binary (then nothing is built).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

COMPACTD_TEST_BIN="$(bash scripts/test-bin)"
export COMPACTD_TEST_BIN

DIR="${CARGO_TARGET_DIR:-$ROOT/target}/pi"
LOCK=clients/pi/package-lock.json
if ! cmp -s "$LOCK" "$DIR/installed-lock.json" 2>/dev/null; then
	echo "pi: installing the pinned packages into $DIR" >&2
	rm -rf "$DIR"
	mkdir -p "$DIR"
	cp clients/pi/package.json "$LOCK" "$DIR/"
	for attempt in 1 2 3; do
		# No install scripts: pi's compaction, tools and RPC mode are plain JavaScript; the
		# native clipboard and image packages it can use are not needed here.
		if (cd "$DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2); then
			break
		fi
		if [ "$attempt" = 3 ]; then
			echo "pi: npm ci failed three times" >&2
			exit 1
		fi
		sleep $((attempt * 10))
	done
	# Written last: a half-done install is never taken for a complete one.
	cp "$LOCK" "$DIR/installed-lock.json"
fi

export PI_PACKAGE="$DIR/node_modules/@mariozechner/pi-coding-agent"
exec node --test --test-reporter=spec clients/pi/compaction.test.mjs
