#!/usr/bin/env bash
# Regenerate the conformance corpus and goldens from the pinned reference
# (@mariozechner/pi-coding-agent@0.73.1, see package-lock.json). Needs Node >= 20 and npm.
#
#   tests/conformance/regen.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
npm ci --no-audit --no-fund
node generate.mjs
node golden.mjs
