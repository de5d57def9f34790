# Sourced by start.sh and test.sh: installs node_modules when missing or older than package-lock.json.
# `npm install`, not `npm ci`: the registry this project is built against serves only this platform's
# optional binaries (swc, resolvers), so the lock file cannot list the others and `npm ci` refuses it.
# The lock file still pins every version; `npm install` leaves it unchanged here.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "installing npm dependencies" >&2
  npm install --no-audit --no-fund --loglevel=error
fi
