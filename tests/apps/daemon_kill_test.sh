#!/usr/bin/env bash
# Real murmurd processes on loopback (issue acceptance, docs/daemon.md):
#  1. kill -9 of 3 of 8 daemons (37.5%) mid-job: the survivors' membership
#     declares them dead within Lifeguard's maximum suspicion time, the
#     survivors go on; the killed ones restart, resume from their checkpoints
#     and catch up; every daemon ends the job at its last round.
#  2. kill -9 of a daemon at random moments of a job that checkpoints every
#     round, 20 times: each restart finds a valid checkpoint and resumes.
# With `choco` part 1 runs CHOCO-SGD (top-10% with error feedback) instead of
# D-PSGD, in a job too long to end before the killed daemons come back
# (survivors whose neighbours are declared dead run hundreds of rounds a
# second), and checks instead of the last round that the restarted daemons
# resynchronised the public copies x^ with their neighbours
# (docs/algorithms.md "Catch-up") and then go on training with them; the
# job is stopped after that. Part 2 is left out.
# usage: daemon_kill_test.sh MURMUR MURMURD SOURCE_DIR [choco]
set -euo pipefail
MURMUR=$1 MURMURD=$2 SRC=$3 VARIANT=${4:-}
FLEET=$(mktemp -d /tmp/murmur-kill.XXXXXX)
# Below the ephemeral range; offsets 0, 10, 20, 30 keep the daemon tests apart.
OFFSET=0; [ -n "$VARIANT" ] && OFFSET=30
BASE_PORT=$((20000 + ($$ % 60) * 200 + OFFSET))
source "$SRC/tools/fleet.sh"
trap 'fleet_stop_all; [ -n "${KEEP:-}" ] || rm -rf "$FLEET"' EXIT
fail() { echo "FAIL: $*"; for i in 0 1 2 5 6; do echo "--- node $i"; tail -n 8 "$FLEET/node$i/log" 2>/dev/null; done; exit 1; }
# metric_within I LINE TENTHS: whether daemon I's `murmur metrics` shows LINE
# within TENTHS tenths of a second.
metric_within() {
  for _ in $(seq "$3"); do
    "$MURMUR" metrics --daemon "127.0.0.1:$((BASE_PORT + 100 + $1))" "${FLEET_OP[@]:2}" 2>/dev/null |
      grep -qx "$2" && return 0
    sleep 0.1
  done
  return 1
}

NODES=8 ROUNDS=400 EXTRA=""
EXTRA='compression: "none"'
[ "$VARIANT" = choco ] && { ROUNDS=100000000; EXTRA='compression: "topk:0.1"'; }
fleet_make $NODES
for i in $(seq 0 $((NODES - 1))); do fleet_start "$i"; done
cat >"$FLEET/job" <<JOB
job_id: "kill-test" checkpoint_every: 5
spec { model: "softmax" dataset: "synthetic:blobs" nodes: $NODES topology: "ring"
       rounds: $ROUNDS lr: 0.05 round_timeout: 1 eval_every: 50 seed: 3 $EXTRA }
JOB
"$MURMUR" job submit "$FLEET/job" "${FLEET_OP[@]}" >/dev/null || fail "submit"

# Let the job get going, then kill 2 and 5 hard.
for _ in $(seq 600); do [ "$(fleet_rounds 0)" -ge 60 ] && break; sleep 0.1; done
[ "$(fleet_rounds 0)" -ge 60 ] || fail "the job did not reach round 60"
fleet_kill 2
fleet_kill 5
fleet_kill 6
killed_at=$(fleet_rounds 0)
t0=$(date +%s.%N)
# Membership (SWIM) declares the three dead at every survivor within
# Lifeguard's maximum suspicion timeout, beta * alpha * log10(n) * T =
# 6 * 5 * log10(8) * 1 s = 27.1 s (docs/membership.md defaults), plus one
# protocol period to detect the failure and one to spread the news: 29.1 s.
limit=$(awk 'BEGIN { printf "%d", (6 * 5 * log(8) / log(10) + 2) * 10 }')
for s in 0 1 3 4 7; do
  metric_within "$s" "murmur_peers_dead 3" "$limit" ||
    fail "daemon $s's membership did not declare 2, 5 and 6 dead within $((limit / 10)) s"
done
echo "every survivor declared daemons 2, 5 and 6 dead $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after the kill (bound 29.1 s)"
# The others keep going without them.
for _ in $(seq 300); do [ "$(fleet_rounds 0)" -ge $((killed_at + 20)) ] && break; sleep 0.1; done
[ "$(fleet_rounds 0)" -ge $((killed_at + 20)) ] || fail "the survivors stalled after the kill (round $(fleet_rounds 0))"
fleet_start 2
fleet_start 5
fleet_start 6
if [ "$VARIANT" = choco ]; then
  # Each killed daemon rolled back to its checkpoint, past which it had sent
  # differences: its neighbours' copies of its x^ were off, and its copies
  # of theirs missed what they sent while it was down.
  # Once every membership view holds all 8 alive again, every neighbour
  # of a restarted daemon mixes with it: 500 more rounds of the slowest.
  for s in $(seq 0 $((NODES - 1))); do
    metric_within "$s" "murmur_peers_alive 7" 600 ||
      fail "daemon $s's membership did not hold all 8 alive again within 60 s"
  done
  slowest=$(for i in $(seq 0 $((NODES - 1))); do fleet_rounds "$i"; done | sort -n | head -n 1)
  resumed_at=$((slowest + 500))
  for _ in $(seq 600); do
    [ "$(fleet_rounds 2)" -ge "$resumed_at" ] && [ "$(fleet_rounds 5)" -ge "$resumed_at" ] &&
      [ "$(fleet_rounds 6)" -ge "$resumed_at" ] && break
    sleep 0.1
  done
  resyncs=$(cat "$FLEET"/node*/log | grep -c "resynchronised its copy" || true)
  grep -h "resynchronised its copy" "$FLEET"/node*/log | sed 's/^.*\] //'
  [ "$resyncs" -ge 1 ] || fail "no daemon resynchronised a copy of x^"
  for i in 2 5 6; do
    [ "$(fleet_rounds "$i")" -ge "$resumed_at" ] || fail "daemon $i did not go on past round $resumed_at"
    r=$(grep -o "resumes after round [0-9]*" "$FLEET/node$i/log" | tail -n 1 | awk '{print $4}')
    [ -n "$r" ] && [ "$r" -gt 0 ] || fail "daemon $i did not resume from a checkpoint"
    echo "daemon $i resumed after round $r and went on past round $resumed_at"
  done
  "$MURMUR" job stop "${FLEET_OP[@]}" >/dev/null || fail "job stop"
  echo "daemon kill test passed ($resyncs copies resynchronised)"
  exit 0
fi
"$MURMUR" job status --wait --interval 1 "${FLEET_OP[@]}" >"$FLEET/status" || { cat "$FLEET/status"; fail "job status --wait"; }
done_count=$(fleet_done kill-test "$ROUNDS/$ROUNDS" $NODES "$FLEET/status")
[ "$done_count" -ge $NODES ] || { cat "$FLEET/status"; fail "only $done_count of $NODES daemons finished at round $ROUNDS"; }
for i in 2 5 6; do
  r=$(grep -o "resumes after round [0-9]*" "$FLEET/node$i/log" | tail -n 1 | awk '{print $4}')
  [ -n "$r" ] && [ "$r" -gt 0 ] || fail "daemon $i did not resume from a checkpoint"
  echo "daemon $i resumed after round $r"
done
echo "part 1: 8 daemons finished round $ROUNDS after 3 were killed at round $killed_at and restarted"
fleet_stop_all

# 2. Kill a daemon repeatedly while it checkpoints every round.
cat >"$FLEET/job2" <<JOB
job_id: "ckpt-test" checkpoint_every: 1
spec { model: "softmax" dataset: "synthetic:blobs" nodes: 2 topology: "ring" compression: "none"
       rounds: 100000 lr: 0.05 round_timeout: 1 eval_every: 0 seed: 4 }
JOB
fleet_start 0
fleet_start 1
"$MURMUR" job submit "$FLEET/job2" --daemon "127.0.0.1:$((BASE_PORT + 100))" \
  --daemon "127.0.0.1:$((BASE_PORT + 101))" "${FLEET_OP[@]:2}" >/dev/null || fail "submit 2"
# The first kill comes once daemon 1 runs the job and has checkpointed (a
# kill before would restart it from scratch). Each restart must log a new
# "job ckpt-test resumes" line: one read from an earlier start would pass
# for it.
resumes() { grep -c "job ckpt-test resumes after round" "$FLEET/node1/log" || true; }
for _ in $(seq 200); do [ "$(fleet_rounds 1 ckpt-test)" -ge 2 ] && break; sleep 0.05; done
[ "$(fleet_rounds 1 ckpt-test)" -ge 2 ] || fail "the second job did not start on daemon 1"
last=0
for k in $(seq 20); do
  sleep "0.$((RANDOM % 4 + 1))"
  before=$(resumes)
  fleet_kill 1
  fleet_start 1 || fail "restart $k: the daemon did not come up"
  for _ in $(seq 100); do [ "$(resumes)" -gt "$before" ] && break; sleep 0.05; done
  r=$(grep -o "job ckpt-test resumes after round [0-9]*" "$FLEET/node1/log" | tail -n 1 | awk '{print $6}')
  [ "$(resumes)" -gt "$before" ] || r=""
  [ -n "$r" ] && [ "$r" -ge "$last" ] || fail "restart $k: no resume, or resumed before round $last"
  last=$r
  if grep -qi "checkpoint.*\(crc\|truncated\|damaged\|invalid\)" "$FLEET/node1/log"; then fail "a damaged checkpoint"; fi
done
[ "$last" -gt 0 ] || fail "no progress across restarts"
echo "part 2: 20 kill -9 restarts, each resumed from a valid checkpoint (last after round $last)"
echo "daemon kill test passed"
