#!/usr/bin/env bash
# Gossiped-address amplification (docs/security.md "Attacks and their
# bounds"): a certified node (id 7) sends daemon 0 a JOIN with 20 fake
# members, member i pointing at port P+1+i of a listener of its own, a JOIN
# of 256 more fake members pointing at port P, and the own signed
# statements of 20 certified members it controls (ids 100-119), all pointing
# at port P+21. Asserted over 8 s: each fake member's port sees at most 2
# connection attempts; the 20 certified members together cause at most 2
# each at their shared port (dials are limited by address, whatever node id
# they are for); neither daemon 0 nor daemon 1 (which hears of members from
# 0) holds any fake member alive.
# usage: attack_gossip_amplification_test.sh MURMUR MURMURD SOURCE_DIR HOSTILE_PEER
set -euo pipefail
MURMUR=$1 MURMURD=$2 SRC=$3 HOSTILE=$4 NAME=gossip_amplification
FLEET=$(mktemp -d /tmp/murmur-gossip.XXXXXX)
BASE_PORT=$((20000 + ($$ % 60) * 200 + 70))
source "$SRC/tests/apps/attack_lib.sh"

fleet_make 2
attacker_make 7
certified=()
for id in $(seq 100 119); do
  certified_make "certified$id" "$id" >/dev/null
  certified+=("$FLEET/certified$id")
done
for i in 0 1; do fleet_start "$i"; done
for i in 0 1; do wait_connected "$i" 1; done
# A legitimate handshake while the gossip is digested (its latency is printed).
(sleep 1; "$HOSTILE" handshake --daemon "127.0.0.1:$BASE_PORT" --from 127.0.0.9 --as 8 --count 5 \
  "${LEGIT[@]}" >"$FLEET/handshakes" 2>&1) &
ATTACK_PIDS+=($!)
"$HOSTILE" gossip --daemon "127.0.0.1:$BASE_PORT" --as 7 --victim-id 0 --fake 20 --fake-base 1000 \
  --join-updates 256 --listen "127.0.0.1:$((BASE_PORT + 2))" --seconds 8 "${ATTACKER[@]}" \
  --statements "$(IFS=,; echo "${certified[*]}")" >"$FLEET/gossip" ||
  { cat "$FLEET/gossip"; fail "hostile_peer gossip"; }
cat "$FLEET/gossip"
worst=$(awk '/^gossip: port/ && !/certified/ { if ($4 > m) m = $4 } END { print m + 0 }' "$FLEET/gossip")
shared=$(awk '/^gossip: port/ && /certified/ { print $4 }' "$FLEET/gossip")
echo "most connection attempts at one fake member's port in 8 s: $worst"
echo "connection attempts at the 20 certified members' shared address in 8 s: $shared"
[ "$worst" -le 2 ] || fail "a fake member caused $worst connection attempts"
echo "legitimate handshakes meanwhile: $(tail -n 1 "$FLEET/handshakes")"
grep -q "handshakes: 5 of 5 completed" "$FLEET/handshakes" || fail "a legitimate handshake failed"
[ "$shared" -le 40 ] || fail "20 members at one address caused $shared connection attempts"
for i in 0 1; do
  "$MURMUR" peers --daemon "127.0.0.1:$((BASE_PORT + 100 + i))" "${FLEET_OP[@]:2}" >"$FLEET/peers$i"
  fakes=$(awk '$1 >= 1000 && $4 == "alive"' "$FLEET/peers$i" | wc -l)
  echo "daemon $i holds $fakes fake members alive"
  [ "$fakes" -eq 0 ] || fail "daemon $i holds $fakes fake members alive"
done
echo "attack gossip_amplification test passed"
