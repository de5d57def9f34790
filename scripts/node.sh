#!/usr/bin/env bash
# `npm run <script>` entries that run a Node.js program: PATH made trusted first (scripts/trusted-path.sh),
# then node runs the file given (a path in dist/ or in node_modules) with the rest of the arguments.
set -euo pipefail
# Builtins only until PATH is trusted (scripts/trusted-path.sh): `dirname` would be found through it.
_here=${BASH_SOURCE[0]}
[[ $_here == */* ]] || _here=./$_here
cd "${_here%/*}/.."
source scripts/trusted-path.sh
exec node "$@"
