#!/usr/bin/env bash
# Is every route's cost linear in the session? Builds the release binary, times each route
# at 2k, 20k and 200k messages (bench/scaling.py), prints the table and the per-message
# ratios, and draws docs/scaling.svg.
#
#   bash bench/scaling.sh                 # the whole curve (about two minutes)
#   bash bench/scaling.sh --check         # also exit 1 when a per-message ratio is over 2
#   SIZES=2000,20000 bash bench/scaling.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build --release --locked >&2
exec python3 bench/scaling.py --bin "$TARGET_DIR/release/compactd" \
	--sizes "${SIZES:-2000,20000,200000}" "$@"
