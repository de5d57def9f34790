#!/bin/sh
# docker-compose.yml's temporal-namespace job: waits for the Temporal frontend (two minutes at most),
# then registers TEMPORAL_NAMESPACE unless it exists (the real server makes none). The apis and workers
# start after it.
set -u
# The name is resolved as the system resolves it (passthrough), not by gRPC's own DNS resolver, which
# asks the DNS server for more than the address and, where that server cannot reach upstream (a network
# without internet), waits out every deadline.
address="passthrough:///$TEMPORAL_ADDRESS"
tries=0
until temporal operator cluster health --address "$address" >/dev/null 2>&1; do
  tries=$((tries + 1))
  if [ "$tries" -ge 120 ]; then
    echo "the Temporal frontend at $TEMPORAL_ADDRESS did not answer in two minutes" >&2
    exit 1
  fi
  sleep 1
done
if temporal operator namespace describe --namespace "$TEMPORAL_NAMESPACE" --address "$address" >/dev/null 2>&1; then
  echo "namespace $TEMPORAL_NAMESPACE exists"
  exit 0
fi
exec temporal operator namespace create --namespace "$TEMPORAL_NAMESPACE" --retention 72h --address "$address"
