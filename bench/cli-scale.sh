#!/usr/bin/env bash
# Time and peak RSS of `compactd prepare` and `compactd compact` (no model) on one generated
# pi session of 200,000 short messages, and their ratios (bench/cli_scale.py). Builds the
# release binary first.
#
#   bash bench/cli-scale.sh                    # the README's table (about a minute)
#   bash bench/cli-scale.sh --check            # also exit 1 when a ratio is over its bound
#   MESSAGES=20000 bash bench/cli-scale.sh     # a smaller session
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build --release --locked >&2
exec python3 bench/cli_scale.py --bin "$TARGET_DIR/release/compactd" \
	--messages "${MESSAGES:-200000}" "$@"
