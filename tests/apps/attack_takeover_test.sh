#!/usr/bin/env bash
# Node-id takeover (docs/security.md "Attacks and their bounds"): a certified
# node (id 7) sends HELLO with node 1's id to daemons 0 and 2, then a signed
# membership "node 1 left" and 12 undecodable payloads under that id. Asserted:
# both daemons refuse the session, keep their session with the real node 1
# (never "replaced by a newer session"), hold it alive, book nothing against
# it (no graylisting), and after daemon 1 restarts its redial is taken. A
# legitimate handshake (node 8) during the attack completes; its latency is
# printed.
# usage: attack_takeover_test.sh MURMUR MURMURD SOURCE_DIR HOSTILE_PEER
set -euo pipefail
MURMUR=$1 MURMURD=$2 SRC=$3 HOSTILE=$4 NAME=takeover
FLEET=$(mktemp -d /tmp/murmur-takeover.XXXXXX)
BASE_PORT=$((20000 + ($$ % 60) * 200 + 60))  # offsets 60-99 are the attack tests'
source "$SRC/tests/apps/attack_lib.sh"

fleet_make 3
attacker_make 7
for i in 0 1 2; do fleet_start "$i"; done
for i in 0 1 2; do wait_connected "$i" 2; done

for victim in 0 2; do
  "$HOSTILE" takeover --daemon "127.0.0.1:$((BASE_PORT + victim))" --as 1 --victim-id "$victim" "${ATTACKER[@]}" ||
    fail "hostile_peer takeover"
  "$HOSTILE" handshake --daemon "127.0.0.1:$((BASE_PORT + victim))" --from 127.0.0.9 --as 8 --count 3 \
    --interval-ms 20 "${LEGIT[@]}" >"$FLEET/handshakes" || true
  echo "daemon $victim after the takeover attempt: $(tail -n 1 "$FLEET/handshakes")"
  grep -q "handshakes: 3 of 3 completed" "$FLEET/handshakes" || fail "a legitimate handshake failed"
done
sleep 1
for victim in 0 2; do
  ! grep -q "replaced by a newer session" "$FLEET/node$victim/log" || fail "daemon $victim replaced node 1's session"
  ! grep -q "node 1 graylisted" "$FLEET/node$victim/log" || fail "daemon $victim graylisted the real node 1"
  ! grep -q "member 1 left" "$FLEET/node$victim/log" || fail "daemon $victim believes node 1 left"
  [ "$(fleet_metric "$victim" murmur_peers_connected)" = 2 ] || fail "daemon $victim lost a session"
  [ "$(fleet_metric "$victim" murmur_peer_graylistings_total)" = 0 ] || fail "daemon $victim graylisted someone"
  "$MURMUR" peers --daemon "127.0.0.1:$((BASE_PORT + 100 + victim))" "${FLEET_OP[@]:2}" >"$FLEET/peers"
  grep -Eq "^ +1 +[^ ]+ +up +alive" "$FLEET/peers" || { cat "$FLEET/peers"; fail "daemon $victim: node 1 not connected and alive"; }
done
# The real node 1's reputation: its redial after a restart is taken at once.
fleet_kill 1 TERM
fleet_start 1
for i in 0 1 2; do wait_connected "$i" 2; done
for victim in 0 2; do
  [ "$(fleet_metric "$victim" murmur_peer_sessions_refused_total)" = 0 ] || fail "daemon $victim refused node 1"
done
echo "attack takeover test passed"
