#!/usr/bin/env bash
# Regenerate the hermes conformance goldens (goldens.jsonl) from the pinned reference,
# hermes-agent 0.19.0 (requirements.txt, installed by scripts/hermes-venv). Deterministic:
# running it twice gives a byte-identical file. `--check` only verifies they are current.
#
#   tests/conformance/hermes/regen.sh [--check]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$("$HERE/../../../scripts/hermes-venv")"
cd "$HERE"
PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1 "$VENV/bin/python" harness.py "$@"
