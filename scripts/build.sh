#!/usr/bin/env bash
# `npm run build`: compile, then the generated client, the workflow bundle and the runtime bundle.
set -euo pipefail
# Builtins only until PATH is trusted (scripts/trusted-path.sh): `dirname` would be found through it.
_here=${BASH_SOURCE[0]}
[[ $_here == */* ]] || _here=./$_here
cd "${_here%/*}/.."
source scripts/trusted-path.sh
node node_modules/typescript/bin/tsc -p tsconfig.build.json
node dist/scripts/generate-client.js
node dist/scripts/bundle-workflows.js
node dist/scripts/bundle-runtime.js
