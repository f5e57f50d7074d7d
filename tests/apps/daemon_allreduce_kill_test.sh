#!/usr/bin/env bash
# A ring all-reduce on real murmurd processes (docs/algorithms.md, "Ring
# all-reduce"): 8 daemons run diloco-allreduce and daemon 2 is killed with
# kill -9 mid-job. 3000 rounds of a few milliseconds.
#
# MODE restart (the default): the ring stalls, and the other seven neither
# hang nor stop: each round times out after round_timeout (1 s), they keep
# their own models and go on. Daemon 2 restarts from its checkpoint before
# membership declares it dead, jumps to its predecessor's round, and the ring
# averages again: every daemon ends the job at its last round, and the eight
# show the same test accuracy (one averaged model) in murmur job status;
# about 10 s.
#
# MODE reform: daemon 2 stays dead. Once membership declares it dead, each
# survivor forms its rounds' ring from the members its view holds alive,
# logs "ring is 7 of 8 members", and the seven average among themselves at
# full speed again: at least 100 rounds in 2 s (a stalled ring makes at most
# 2), all seven finish the job, and they end with one model.
# usage: daemon_allreduce_kill_test.sh MURMUR MURMURD SOURCE_DIR [restart|reform]
set -euo pipefail
MURMUR=$1 MURMURD=$2 SRC=$3 MODE=${4:-restart}
FLEET=$(mktemp -d /tmp/murmur-ring.XXXXXX)
BASE_PORT=$((20000 + ($$ % 60) * 200 + 52))  # below the ephemeral range; offsets 52-59 are this test's
source "$SRC/tools/fleet.sh"
trap 'fleet_stop_all; [ -n "${KEEP:-}" ] || rm -rf "$FLEET"' EXIT
NODES=8 ROUNDS=3000
fail() {
  echo "FAIL: $*"
  for i in $(seq 0 $((NODES - 1))); do echo "--- node $i"; tail -n 8 "$FLEET/node$i/log" 2>/dev/null; done
  exit 1
}

fleet_make $NODES
for i in $(seq 0 $((NODES - 1))); do fleet_start "$i"; done
cat >"$FLEET/job" <<JOB
job_id: "ring" checkpoint_every: 5
spec { algorithm: "diloco-allreduce" model: "softmax" dataset: "synthetic:blobs" nodes: $NODES
       topology: "ring" local_steps: 2 rounds: $ROUNDS lr: 0.05 round_timeout: 1 eval_every: 1000 seed: 3
       compression: "none" }
JOB
"$MURMUR" job submit "$FLEET/job" "${FLEET_OP[@]}" >/dev/null || fail "submit"
for _ in $(seq 300); do [ "$(fleet_rounds 0)" -ge 20 ] && break; sleep 0.1; done
[ "$(fleet_rounds 0)" -ge 20 ] || fail "the job did not reach round 20"
fleet_kill 2
killed_at=$(fleet_rounds 0)
if [ "$MODE" = reform ]; then
  # Lifeguard's longest suspicion with the defaults is 27.1 s (docs/daemon.md).
  for _ in $(seq 400); do grep -q "ring is 7 of 8 members" "$FLEET/node0/log" && break; sleep 0.1; done
  grep -q "ring is 7 of 8 members" "$FLEET/node0/log" || fail "the survivors never re-formed the ring"
  a=$(fleet_rounds 0)
  sleep 2
  b=$(fleet_rounds 0)
  [ "$b" -ge "$ROUNDS" ] || [ $((b - a)) -ge 100 ] || fail "the re-formed ring does not average at speed ($a -> $b in 2 s)"
  echo "daemon 2 killed at round $killed_at; the ring re-formed by round $a; $a -> $b in 2 s"
  survivors="0 1 3 4 5 6 7"
  for i in $survivors; do
    for _ in $(seq 600); do [ "$(fleet_rounds "$i")" -ge "$ROUNDS" ] && break; sleep 0.1; done
    [ "$(fleet_rounds "$i")" -ge "$ROUNDS" ] || fail "daemon $i did not finish round $ROUNDS"
  done
  accs=$(for i in $survivors; do
    "$MURMUR" job status --daemon "127.0.0.1:$((BASE_PORT + 100 + i))" "${FLEET_OP[@]:2}" 2>/dev/null | awk 'NR == 2 { print $6 }'
  done | sort -u)
  echo "test accuracy of the seven: $accs"
  [ "$(echo "$accs" | wc -l)" -eq 1 ] || fail "the seven ended with different models"
  echo "daemon allreduce reform test passed"
  exit 0
fi
# Each stalled round costs its 1 s timeout: 5 more rounds within 15 s.
for _ in $(seq 150); do [ "$(fleet_rounds 0)" -ge $((killed_at + 5)) ] && break; sleep 0.1; done
now=$(fleet_rounds 0)
[ "$now" -ge $((killed_at + 5)) ] || fail "the survivors stalled after the kill (round $now)"
stalls=$(cat "$FLEET"/node{0,1,3,4,5,6,7}/log | grep -c "all-reduce of round .* timed out" || true)
[ "$stalls" -ge 3 ] || fail "no survivor timed out of a stalled all-reduce ($stalls)"
echo "daemon 2 killed at round $killed_at; the others went on to round $now, $stalls stalled rounds timed out"
fleet_start 2
"$MURMUR" job status --wait --interval 1 "${FLEET_OP[@]}" >"$FLEET/status" || { cat "$FLEET/status"; fail "job status --wait"; }
done_count=$(fleet_done ring "$ROUNDS/$ROUNDS" $NODES "$FLEET/status")
[ "$done_count" -ge $NODES ] || { cat "$FLEET/status"; fail "only $done_count of $NODES daemons finished at round $ROUNDS"; }
r=$(grep -o "resumes after round [0-9]*" "$FLEET/node2/log" | tail -n 1 | awk '{print $4}')
[ -n "$r" ] && [ "$r" -gt 0 ] || fail "daemon 2 did not resume from a checkpoint"
# The last round averaged: the eight models are one, so are their accuracies.
accs=$(awk '$3 == "ring" && $4 == "done" { print $6 }' "$FLEET/status" | sort -u | wc -l)
tail -n $((NODES + 1)) "$FLEET/status"
[ "$accs" -eq 1 ] || fail "the daemons ended with different models"
echo "daemon 2 resumed after round $r; all $NODES finished round $ROUNDS with the same test accuracy"
echo "daemon allreduce kill test passed"
