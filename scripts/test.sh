#!/usr/bin/env bash
# README's second command (`npm test`): type-check, lint, then jest against the real Temporal dev server
# and FerretDB, which the jest global setup builds (once, cached) and starts on free loopback ports.
set -euo pipefail
# Builtins only until PATH is trusted (scripts/trusted-path.sh): `dirname` would be found through it.
_here=${BASH_SOURCE[0]}
[[ $_here == */* ]] || _here=./$_here
cd "${_here%/*}/.."
source scripts/trusted-path.sh
source scripts/ensure-deps.sh
echo "== type-check" >&2
node node_modules/typescript/bin/tsc -p tsconfig.json --noEmit
echo "== lint" >&2
node node_modules/eslint/bin/eslint.js --max-warnings=0 .
node node_modules/prettier/bin/prettier.cjs --check --log-level warn .
echo "== build (the tests run the built entry points and the workflow bundle)" >&2
bash scripts/build.sh
echo "== jest" >&2
exec node node_modules/jest/bin/jest.js "$@"
