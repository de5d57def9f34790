#!/usr/bin/env bash
# README's first command (`npm start`): install, build (when a source changed), then run the launcher
# (servers, api, worker). `npm start -- --demo` also plays the scripted demo conversation.
set -euo pipefail
# Builtins only until PATH is trusted (scripts/trusted-path.sh): `dirname` would be found through it.
_here=${BASH_SOURCE[0]}
[[ $_here == */* ]] || _here=./$_here
cd "${_here%/*}/.."
source scripts/trusted-path.sh
source scripts/ensure-deps.sh
stamp=dist/workflow-bundle.js
if [ ! -f "$stamp" ] || [ -n "$(find src workflows activities worker scripts bench package-lock.json tsconfig*.json -newer "$stamp" -print -quit)" ]; then
  bash scripts/build.sh
fi
exec node dist/scripts/launch.js "$@"
