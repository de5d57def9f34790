#!/bin/sh
# docker-compose.yml's temporal-namespace job: waits for the Temporal frontend, then registers
# TEMPORAL_NAMESPACE unless it exists (the real server makes none), with workflow histories kept 72 h after
# they close. Tried again for two minutes at most; one that exists already (made meanwhile, or by an
# earlier `up`) is success. The apis and workers start after it.
set -u
# The name is resolved as the system resolves it (passthrough), not by gRPC's own DNS resolver, which
# asks the DNS server for more than the address and, where that server cannot reach upstream (a network
# without internet), waits out every deadline.
address="passthrough:///$TEMPORAL_ADDRESS"
tries=0
while :; do
  if temporal operator cluster health --address "$address" >/dev/null 2>&1; then
    if temporal operator namespace describe --namespace "$TEMPORAL_NAMESPACE" --address "$address" >/dev/null 2>&1; then
      echo "namespace $TEMPORAL_NAMESPACE exists"
      exit 0
    fi
    if out="$(temporal operator namespace create --namespace "$TEMPORAL_NAMESPACE" --retention 72h --address "$address" 2>&1)"; then
      echo "$out"
      exit 0
    fi
    case "$out" in
      *'already'*) echo "namespace $TEMPORAL_NAMESPACE exists"; exit 0 ;;
    esac
  fi
  tries=$((tries + 1))
  if [ "$tries" -ge 120 ]; then
    echo "the namespace $TEMPORAL_NAMESPACE could not be registered at $TEMPORAL_ADDRESS in two minutes: ${out:-the frontend did not answer}" >&2
    exit 1
  fi
  sleep 1
done
