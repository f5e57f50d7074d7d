#!/usr/bin/env bash
# The file-descriptor limit (docs/security.md "Attacks and their bounds"): a
# daemon under RLIMIT_NOFILE 64 gets 100 idle connections from 10 source
# addresses, reopened when closed. Asserted: its CPU stays under 20% of a
# core and a legitimate handshake completes within 0.5 s, 5 times out of 5.
# usage: attack_fd_limit_test.sh MURMUR MURMURD SOURCE_DIR HOSTILE_PEER
set -euo pipefail
MURMUR=$1 MURMURD=$2 SRC=$3 HOSTILE=$4 NAME=fd_limit
FLEET=$(mktemp -d /tmp/murmur-fd.XXXXXX)
BASE_PORT=$((20000 + ($$ % 60) * 200 + 49))
source "$SRC/tests/apps/attack_lib.sh"

fleet_make 1
attacker_make 7
FLEET_LAUNCH=(prlimit --nofile=64:64)
fleet_start 0
pid=${FLEET_PIDS[0]}
"$HOSTILE" hold --daemon "127.0.0.1:$BASE_PORT" --count 100 --from 127.0.4.1-10 --reopen-ms 100 --seconds 15 \
  >"$FLEET/hold" &
ATTACK_PIDS+=($!)
sleep 2
cpu=$(cpu_percent "$pid" 5)
echo "CPU with 100 idle connections at the fd limit: $cpu% of a core"
"$HOSTILE" handshake --daemon "127.0.0.1:$BASE_PORT" --from 127.0.0.9 --as 7 --count 5 "${ATTACKER[@]}" \
  >"$FLEET/handshakes" || true
cat "$FLEET/handshakes"
[ "$cpu" -lt 20 ] || fail "CPU $cpu% at the fd limit"
grep -q "handshakes: 5 of 5 completed" "$FLEET/handshakes" || fail "a legitimate handshake failed"
max=$(awk '/^handshakes:/ { print int($NF) }' "$FLEET/handshakes")
[ "$max" -lt 500 ] || fail "a legitimate handshake took $max ms"
echo "attack fd_limit test passed"
