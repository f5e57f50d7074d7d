#!/usr/bin/env bash
# Control-port lockout without a certificate (docs/security.md "Attacks and
# their bounds"): 64 connections from 8 source addresses send Noise message 1
# to a daemon's control port and then nothing, reopened as soon as the daemon
# closes them. Asserted: `murmur job status` is answered within 1 s, 10 times
# out of 10, while they are held.
# usage: attack_control_lockout_test.sh MURMUR MURMURD SOURCE_DIR HOSTILE_PEER
set -euo pipefail
MURMUR=$1 MURMURD=$2 SRC=$3 HOSTILE=$4 NAME=control_lockout
FLEET=$(mktemp -d /tmp/murmur-lockout.XXXXXX)
BASE_PORT=$((20000 + ($$ % 60) * 200 + 65))
source "$SRC/tests/apps/attack_lib.sh"

fleet_make 1
fleet_start 0
"$HOSTILE" hold --daemon "127.0.0.1:$((BASE_PORT + 100))" --count 64 --from 127.0.2.1-8 --message1 \
  --reopen-ms 20 --seconds 25 >"$FLEET/hold" &
ATTACK_PIDS+=($!)
sleep 2
worst=0
for k in $(seq 10); do
  t0=$(now_ms)
  "$MURMUR" job status --daemon "127.0.0.1:$((BASE_PORT + 100))" "${FLEET_OP[@]:2}" >"$FLEET/status" 2>&1 ||
    { cat "$FLEET/status"; fail "status $k was not answered"; }
  ms=$(($(now_ms) - t0))
  [ "$ms" -gt "$worst" ] && worst=$ms
  echo "status $k answered in $ms ms"
  [ "$ms" -le 1000 ] || fail "status $k took $ms ms"
  sleep 0.5
done
echo "control port under 64 unauthenticated connections: 10 of 10 status requests answered, worst $worst ms"
echo "attack control_lockout test passed"
