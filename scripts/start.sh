#!/usr/bin/env bash
# README's first command (`npm start`): install, build, then run the launcher (servers, api, worker).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh
npm run --silent build
exec node dist/scripts/launch.js
