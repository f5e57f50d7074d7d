#!/usr/bin/env bash
# A ring all-reduce on real murmurd processes (docs/algorithms.md, "Ring
# all-reduce"): 8 daemons run diloco-allreduce; kill -9 of daemon 2 mid-job
# stalls the ring, and the other seven neither hang nor stop: each round
# times out after round_timeout (1 s), they keep their own models and go on.
# Daemon 2 restarts from its checkpoint, jumps to its predecessor's round,
# and the ring averages again: every daemon ends the job at its last round,
# and the eight show the same test accuracy (one averaged model) in murmur
# job status; no round times out more than 15 rounds after daemon 2 is
# back. 3000 rounds of a few milliseconds, so that the job is still
# running when daemon 2 comes back: about 10 s. With a fourth argument
# "overlap" the job overlaps each all-reduce with the next inner phase
# (docs/algorithms.md, "Overlapped rounds"), whose checkpoint adds the anchor.
# usage: daemon_allreduce_kill_test.sh MURMUR MURMURD SOURCE_DIR [overlap]
set -euo pipefail
MURMUR=$1 MURMURD=$2 SRC=$3 OVERLAP=${4:+overlap: true}
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
       compression: "none" $OVERLAP }
JOB
"$MURMUR" job submit "$FLEET/job" "${FLEET_OP[@]}" >/dev/null || fail "submit"
for _ in $(seq 300); do [ "$(fleet_rounds 0)" -ge 20 ] && break; sleep 0.1; done
[ "$(fleet_rounds 0)" -ge 20 ] || fail "the job did not reach round 20"
fleet_kill 2
killed_at=$(fleet_rounds 0)
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
# Once daemon 2 is back the ring averages again within a few rounds (its
# start-up and catch-up), not after many: nodes that stayed a round apart
# would time out of every round for good.
last=$(cat "$FLEET"/node*/log | grep -o "all-reduce of round [0-9]* timed out" | awk '{print $4}' | sort -n | tail -n 1)
[ "$last" -le $((now + 15)) ] || fail "rounds still timed out at round $last, 15 after daemon 2 came back at $now"
r=$(grep -o "resumes after round [0-9]*" "$FLEET/node2/log" | tail -n 1 | awk '{print $4}')
[ -n "$r" ] && [ "$r" -gt 0 ] || fail "daemon 2 did not resume from a checkpoint"
# The last round averaged: the eight models are one, so are their accuracies.
accs=$(awk '$3 == "ring" && $4 == "done" { print $6 }' "$FLEET/status" | sort -u | wc -l)
tail -n $((NODES + 1)) "$FLEET/status"
[ "$accs" -eq 1 ] || fail "the daemons ended with different models"
echo "daemon 2 resumed after round $r; the last round that timed out was $last; all $NODES finished round $ROUNDS with the same test accuracy"
echo "daemon allreduce kill test passed"
