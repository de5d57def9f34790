#!/usr/bin/env bash
# README's first command (`npm start`): install, build (when a source changed), then run the launcher
# (servers, api, worker). `npm start -- --demo` also plays the scripted demo conversation.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh
stamp=dist/workflow-bundle.js
if [ ! -f "$stamp" ] || [ -n "$(find src workflows activities worker scripts bench package-lock.json tsconfig*.json -newer "$stamp" -print -quit)" ]; then
  npm run --silent build
fi
exec node dist/scripts/launch.js "$@"
