# Sourced by start.sh and test.sh: installs node_modules when missing or older than package-lock.json.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "installing npm dependencies (npm ci)" >&2
  npm ci --no-audit --no-fund --loglevel=error
fi
