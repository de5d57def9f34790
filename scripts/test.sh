#!/usr/bin/env bash
# README's second command (`npm test`): type-check, lint, then jest against the real Temporal dev server
# and FerretDB, which the jest global setup builds (once, cached) and starts on free loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh
echo "== type-check" >&2
npx --no-install tsc -p tsconfig.json --noEmit
echo "== lint" >&2
npx --no-install eslint --max-warnings=0 .
echo "== build (the tests run the built entry points and the workflow bundle)" >&2
npm run --silent build
echo "== jest" >&2
exec npx --no-install jest "$@"
