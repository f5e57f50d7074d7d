#!/usr/bin/env bash
# Real murmurd processes on loopback (docs/daemon.md "Certificate renewal"):
# 3 daemons run a gossip job; daemon 1's certificate expires EXPIRES_S seconds
# after it was issued. A bad renewal (another network) delivered with SIGHUP
# is refused and the old certificate stays; then a renewed certificate and
# SIGHUP again. Asserted past the old not_after: no session ended on a
# certificate expiry, every daemon still holds 2 peers connected and none
# dead, daemons 0 and 2 took daemon 1's renewed certificate on their open
# sessions, the job completes on all 3, and `murmur cert reload` answers.
# Every message carries an injected 50 ms delay so that the job runs through
# the old expiry.
# usage: daemon_cert_renewal_test.sh MURMUR MURMURD SOURCE_DIR
set -euo pipefail
MURMUR=$1 MURMURD=$2 SRC=$3
FLEET=$(mktemp -d /tmp/murmur-cert.XXXXXX)
BASE_PORT=$((20000 + ($$ % 60) * 200 + 20))  # below the ephemeral range; offsets 0, 10, 20, 30 keep the daemon tests apart
source "$SRC/tools/fleet.sh"
trap 'fleet_stop_all; [ -n "${KEEP:-}" ] || rm -rf "$FLEET"' EXIT
fail() { echo "FAIL: $*"; for i in 0 1 2; do echo "--- node $i"; tail -n 8 "$FLEET/node$i/log"; done; exit 1; }
issue() {  # issue NODE NETWORK NOT_BEFORE OUT
  "$MURMUR" cert issue --coordinator-key "$FLEET/coordinator/identity.key" --node-pub "$FLEET/node$1/identity.pub" --node-id "$1" \
    --network "$2" --roles node --days 1 --not-before "$3" --out "$4" >/dev/null 2>&1
}

NODES=3 ROUNDS=300 EXPIRES_S=${EXPIRES_S:-8}
fleet_make $NODES
# Daemon 1: a certificate whose day ends EXPIRES_S seconds from now.
old_not_after=$(($(date +%s) + EXPIRES_S))
issue 1 "$FLEET_NETWORK" $((old_not_after - 86400)) "$FLEET/node1/node.cert" || fail "cert issue"
for i in $(seq 0 $((NODES - 1))); do
  printf 'fault_injection: true\nfaults { delay: 0.05 }\n' >>"$FLEET/node$i/node.conf"
  fleet_start "$i"
done
cat >"$FLEET/job" <<JOB
job_id: "cert-test" checkpoint_every: 100
spec { model: "softmax" dataset: "synthetic:blobs" nodes: $NODES topology: "ring" compression: "none"
       rounds: $ROUNDS lr: 0.05 batch: 32 round_timeout: 5 eval_every: $ROUNDS seed: 3 }
JOB
"$MURMUR" job submit "$FLEET/job" "${FLEET_OP[@]}" >/dev/null || fail "submit"
for _ in $(seq 100); do
  ok=1
  for i in 0 1 2; do [ "$(fleet_metric "$i" murmur_peers_connected)" = 2 ] || ok=0; done
  [ "$ok" -eq 1 ] && break
  sleep 0.1
done
[ "$ok" -eq 1 ] || fail "the daemons did not connect"

# A bad renewal: refused, the daemon runs on with the old certificate.
cp "$FLEET/node1/node.cert" "$FLEET/old.cert"
issue 1 other-network $(($(date +%s) - 60)) "$FLEET/node1/node.cert" || fail "cert issue (bad)"
kill -HUP "${FLEET_PIDS[1]}"
for _ in $(seq 50); do [ "$(fleet_metric 1 murmur_certificate_reload_failures_total)" = 1 ] && break; sleep 0.1; done
[ "$(fleet_metric 1 murmur_certificate_reload_failures_total)" = 1 ] || fail "the bad renewal was not refused"
grep -q "SIGHUP: certificate reload refused.*network 'other-network'" "$FLEET/node1/log" ||
  fail "no log line naming the refused network"
[ "$(fleet_metric 1 murmur_certificate_not_after_seconds)" = "$old_not_after" ] || fail "daemon 1 left its certificate"

# The renewal.
issue 1 "$FLEET_NETWORK" $(($(date +%s) - 60)) "$FLEET/node1/node.cert" || fail "cert issue (renewal)"
kill -HUP "${FLEET_PIDS[1]}"
for _ in $(seq 50); do [ "$(fleet_metric 1 murmur_certificate_reloads_total)" = 1 ] && break; sleep 0.1; done
[ "$(fleet_metric 1 murmur_certificate_reloads_total)" = 1 ] || fail "the renewal was not taken"
renewed_at=$(date +%s)
[ "$renewed_at" -lt "$old_not_after" ] || fail "renewed only after the old certificate expired: raise EXPIRES_S"
new_not_after=$(fleet_metric 1 murmur_certificate_not_after_seconds)
echo "daemon 1: certificate renewed $((old_not_after - renewed_at)) s before it expired; not_after $old_not_after -> $new_not_after"
"$MURMUR" cert reload --daemon "127.0.0.1:$((BASE_PORT + 101))" "${FLEET_OP[@]:2}" >"$FLEET/reload" ||
  { cat "$FLEET/reload"; fail "murmur cert reload"; }
grep -q "node 1 .*presenting serial" "$FLEET/reload" || { cat "$FLEET/reload"; fail "murmur cert reload output"; }

# Past the old not_after.
while [ "$(date +%s)" -le $((old_not_after + 1)) ]; do sleep 0.2; done
for i in 0 1 2; do
  expired=$(fleet_metric "$i" murmur_sessions_expired_total)
  connected=$(fleet_metric "$i" murmur_peers_connected)
  dead=$(fleet_metric "$i" murmur_peers_dead)
  updates=$(fleet_metric "$i" murmur_peer_certificate_updates_total)
  rounds=$(fleet_rounds "$i")
  echo "daemon $i past the old not_after: $expired sessions expired, $connected connected, $dead dead, $updates peer certificates renewed, round $rounds"
  [ "$expired" = 0 ] || fail "daemon $i: $expired sessions ended on the old certificate"
  [ "$connected" = 2 ] || fail "daemon $i: $connected peers connected"
  [ "$dead" = 0 ] || fail "daemon $i: $dead members dead"
  [ "$i" -eq 1 ] || [ "$updates" = 1 ] || fail "daemon $i did not take daemon 1's renewed certificate"
  [ "$rounds" -lt "$ROUNDS" ] || fail "daemon $i finished before the old expiry: make the job longer"
done
"$MURMUR" job status --wait --interval 1 "${FLEET_OP[@]}" >"$FLEET/status" || { cat "$FLEET/status"; fail "job status --wait"; }
done_count=$(fleet_done cert-test "$ROUNDS/$ROUNDS" $NODES "$FLEET/status")
[ "$done_count" -eq $NODES ] || { cat "$FLEET/status"; fail "only $done_count of $NODES daemons finished"; }
! grep -q "declared dead" "$FLEET"/node*/log || fail "a daemon declared a member dead"
echo "daemon certificate renewal test passed"
