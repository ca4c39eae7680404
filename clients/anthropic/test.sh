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

if [ -z "${COMPACTD_TEST_BIN:-}" ]; then
	cargo build --quiet --locked --bin compactd
	COMPACTD_TEST_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/compactd"
fi
export COMPACTD_TEST_BIN

# The venv is reused while the pins are unchanged; changed pins rebuild it from scratch.
VENV="${CARGO_TARGET_DIR:-$ROOT/target}/anthropic-venv"
REQS="$ROOT/clients/anthropic/requirements.txt"
if ! cmp -s "$REQS" "$VENV/requirements.txt" 2>/dev/null; then
	echo "anthropic-venv: installing the pinned client into $VENV" >&2
	rm -rf "$VENV"
	"${PYTHON:-python3}" -m venv "$VENV"
	# The package index can hiccup: retry the whole install before giving up.
	for attempt in 1 2 3; do
		if "$VENV/bin/pip" install --quiet --disable-pip-version-check --retries 5 --timeout 60 \
			--require-hashes --no-deps -r "$REQS" >&2; then
			break
		fi
		if [ "$attempt" = 3 ]; then
			echo "anthropic-venv: pip install failed three times" >&2
			exit 1
		fi
		sleep $((attempt * 10))
	done
	# Written last: a half-built venv is never taken for a complete one.
	cp "$REQS" "$VENV/requirements.txt"
fi

cd clients/anthropic/tests
export PYTHONDONTWRITEBYTECODE=1
if [ "$#" -gt 0 ]; then
	exec "$VENV/bin/python" -m unittest -v "$@"
fi
exec "$VENV/bin/python" -m unittest discover -v -s . -p 'test_*.py'
