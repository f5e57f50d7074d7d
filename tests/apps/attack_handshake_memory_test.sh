#!/usr/bin/env bash
# Memory per pending handshake (docs/security.md "Attacks and their bounds"):
# 1,000 connections from 200 source addresses each send Noise message 1 to a
# daemon's peer port and then nothing. Asserted: the idle daemon's RSS is
# under 20 MB; it rises by less than 32 MB while they are held; it is back
# within 10% of where it started once they are closed; a legitimate
# handshake meanwhile completes (its latency is printed). "Where it
# started" is after a warm-up (3 legitimate handshakes, 20 pending ones
# from 20 addresses, closed), so that the code pages and pools every
# connection touches once are in the baseline.
# usage: attack_handshake_memory_test.sh MURMUR MURMURD SOURCE_DIR HOSTILE_PEER
set -euo pipefail
MURMUR=$1 MURMURD=$2 SRC=$3 HOSTILE=$4 NAME=handshake_memory
FLEET=$(mktemp -d /tmp/murmur-memory.XXXXXX)
BASE_PORT=$((20000 + ($$ % 60) * 200 + 67))
source "$SRC/tests/apps/attack_lib.sh"

fleet_make 1
attacker_make 7
fleet_start 0
pid=${FLEET_PIDS[0]}
sleep 2
idle=$(rss_kb "$pid")
echo "idle RSS $((idle / 1024)) MB ($idle kB)"
[ "$idle" -lt $((20 * 1024)) ] || fail "idle RSS $idle kB is not under 20 MB"
"$HOSTILE" handshake --daemon "127.0.0.1:$BASE_PORT" --from 127.0.0.9 --as 8 --count 3 "${LEGIT[@]}" >/dev/null
"$HOSTILE" hold --daemon "127.0.0.1:$BASE_PORT" --count 20 --from 127.0.3.1-20 --message1 --seconds 1 >/dev/null
sleep 1
start=$(rss_kb "$pid")
echo "RSS after the warm-up $start kB"
"$HOSTILE" hold --daemon "127.0.0.1:$BASE_PORT" --count 1000 --from 127.0.3.1-200 --message1 --seconds 4 \
  >"$FLEET/hold" &
hold=$!
ATTACK_PIDS+=($hold)
peak=$start
sleep 0.5
"$HOSTILE" handshake --daemon "127.0.0.1:$BASE_PORT" --from 127.0.0.9 --as 8 --count 5 "${LEGIT[@]}" \
  >"$FLEET/handshakes" &
ATTACK_PIDS+=($!)
while kill -0 "$hold" 2>/dev/null; do
  r=$(rss_kb "$pid")
  [ "$r" -gt "$peak" ] && peak=$r
  sleep 0.1
done
wait "$hold" || true
cat "$FLEET/hold"
sleep 2
end=$(rss_kb "$pid")
cat "$FLEET/handshakes"
echo "RSS: start $start kB, peak $peak kB (+$(((peak - start) / 1024)) MB), after close $end kB"
[ $((peak - start)) -lt $((32 * 1024)) ] || fail "1,000 pending handshakes raised RSS by $((peak - start)) kB"
[ $((end * 10)) -le $((start * 11)) ] || fail "RSS $end kB after close is not within 10% of $start kB"
grep -q "handshakes: 5 of 5 completed" "$FLEET/handshakes" || fail "a legitimate handshake failed"
echo "attack handshake_memory test passed"
