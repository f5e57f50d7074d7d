#!/usr/bin/env bash
# The operator's commands against 3 real murmurd processes on loopback, as
# docs/daemon.md "Operator commands" and "Submitting a job" describe them:
#  1. a job for 8 daemons sent to 3 is refused before any daemon takes it;
#  2. when one daemon refuses (it runs another job), the submission says
#     which and why, and no daemon starts the job (all or nothing);
#  3. a gossip job runs to its end; `murmur job stop` on the done daemons
#     answers for each with its own node id and state "done";
#  4. a completed job id is refused after another job ran, and the same job
#     with more rounds goes on from its checkpoint;
#  5. `murmur job status --wait` on a federated job reports the aggregator's
#     global model, and the clients (their last global model and their own
#     training loss) apart from it;
#  6. the daemons' measured round trips (`murmur peers --rtt-csv`) choose a
#     ring (`murmur topology --measured`), and a job runs on it;
#  7. a job with models large enough to time gives every link its measured
#     throughput, in `murmur peers` and in the fourth column of --rtt-csv;
#  8. `murmur job submit` chooses a link-aware topology from those
#     measurements itself and sends it as edges:...; the job runs on it;
#  9. a running job stopped and submitted again on a graph chosen anew goes
#     on from its checkpoints (how a job follows links that changed);
# 10. `murmur job relink` keeps a graph the measured links do not improve on,
#     refuses a file of another configuration before stopping anything,
#     replaces it when told to (the job goes on from its checkpoints), then
#     finds the job on the graph they choose; with --every it follows the
#     job until it ends.
# usage: daemon_operator_test.sh MURMUR MURMURD SOURCE_DIR
set -euo pipefail
MURMUR=$1 MURMURD=$2 SRC=$3
FLEET=$(mktemp -d /tmp/murmur-operator.XXXXXX)
BASE_PORT=$((20000 + ($$ % 60) * 200 + 40))  # below the ephemeral range; offsets 0-40 keep the daemon tests apart
source "$SRC/tools/fleet.sh"
trap 'fleet_stop_all; [ -n "${KEEP:-}" ] || rm -rf "$FLEET"' EXIT
fail() {
  echo "FAIL: $*"
  for i in 0 1 2; do
    echo "--- node $i"
    tail -n 8 "$FLEET/node$i/log"
  done
  exit 1
}
# job ID ROUNDS [ALGORITHM NODES]: a job file on synthetic blobs.
job() {
  local file=$FLEET/$1.job
  {
    echo "job_id: \"$1\""
    echo "spec {"
    echo "  algorithm: \"${3:-dpsgd}\" topology: \"ring\" model: \"softmax\" dataset: \"synthetic:blobs\""
    echo "  nodes: ${4:-3} rounds: $2 lr: 0.1 eval_every: 5 compression: \"none\""
    echo "}"
  } >"$file"
  echo "$file"
}
# states: the state column of `murmur job status`, one word per daemon.
states() { "$MURMUR" job status "${FLEET_OP[@]}" | awk 'NR > 1 { printf "%s ", $4 }'; }
# min_round: the fewest rounds any daemon has done of its job (0 when none).
min_round() {
  "$MURMUR" job status "${FLEET_OP[@]}" | awk 'NR > 1 { split($5, r, "/"); if (min == "" || r[1] < min) min = r[1] } END { print min + 0 }'
}

NODES=3
fleet_make $NODES
for i in 0 1 2; do fleet_start "$i" || fail "start $i"; done

# 1. The fleet against the job.
if "$MURMUR" job submit "$(job wide 10 dpsgd 8)" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1; then
  cat "$FLEET/out"; fail "a job of 8 daemons was taken by 3"
fi
grep -q "job 'wide' runs on 8 daemons (nodes 0..7), 3 named: no daemon for node 3, 4, 5, 6, 7" "$FLEET/out" ||
  { cat "$FLEET/out"; fail "the fleet mismatch is not named"; }
grep -q "was started nowhere" "$FLEET/out" || { cat "$FLEET/out"; fail "no word that nothing started"; }
[ "$(states)" = "idle idle idle " ] || fail "after a refused submission: $(states)"
echo "1. a job of 8 daemons sent to 3: refused, all idle"

# 2. One daemon refuses: nobody starts.
"$MURMUR" job submit "$(job busy 1000000)" --partial --daemon "127.0.0.1:$((BASE_PORT + 102))" "${FLEET_OP[@]:2}" \
  >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "the busy job on daemon 2 alone"; }
if "$MURMUR" job submit "$(job g1 30)" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1; then
  cat "$FLEET/out"; fail "g1 was taken while daemon 2 runs another job"
fi
grep -q "daemon 127.0.0.1:$((BASE_PORT + 102)) (node 2) refused: job 'busy' is running; stop it first" \
  "$FLEET/out" || { cat "$FLEET/out"; fail "the refusal does not name daemon 2 and why"; }
[ "$(states)" = "idle idle running " ] || fail "after daemon 2 refused: $(states)"
"$MURMUR" job stop --daemon "127.0.0.1:$((BASE_PORT + 102))" "${FLEET_OP[@]:2}" >/dev/null
for _ in $(seq 100); do [ "$(states)" = "idle idle stopped " ] && break; sleep 0.1; done
[ "$(states)" = "idle idle stopped " ] || fail "daemon 2 did not stop: $(states)"
echo "2. daemon 2 busy: it is named, daemons 0 and 1 stay idle"

# 3. A job runs to its end; stop on done daemons.
"$MURMUR" job submit "$FLEET/g1.job" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "submit g1"; }
"$MURMUR" job status --wait --interval 0.2 "${FLEET_OP[@]}" >"$FLEET/status" ||
  { cat "$FLEET/status"; fail "g1 did not complete"; }
grep -q "mean test accuracy 0\.[5-9][0-9]* over 3 daemons (3 done)" "$FLEET/status" ||
  { cat "$FLEET/status"; fail "g1's summary"; }
"$MURMUR" job stop "${FLEET_OP[@]}" >"$FLEET/out" || { cat "$FLEET/out"; fail "stop on done daemons"; }
for i in 0 1 2; do
  awk -v d="127.0.0.1:$((BASE_PORT + 100 + i))" -v i="$i" '$1 == d && $2 == i && $3 == "g1" && $4 == "done"' \
    "$FLEET/out" | grep -q . || { cat "$FLEET/out"; fail "stop: daemon $i's line"; }
done
echo "3. g1 done; stop on done daemons names each node and its state"

# 4. A completed id after another job; the same job with more rounds.
"$MURMUR" job submit "$(job g2 10)" "${FLEET_OP[@]}" >/dev/null 2>&1 || fail "submit g2"
"$MURMUR" job status --wait --interval 0.2 "${FLEET_OP[@]}" >/dev/null || fail "g2 did not complete"
if "$MURMUR" job submit "$FLEET/g1.job" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1; then
  cat "$FLEET/out"; fail "the completed job g1 ran again"
fi
grep -q "job 'g1' already completed on this daemon" "$FLEET/out" || { cat "$FLEET/out"; fail "g1's refusal"; }
"$MURMUR" job submit "$(job g1 40)" "${FLEET_OP[@]}" >/dev/null 2>&1 || fail "g1 with 40 rounds"
first=$(min_round)
[ "$first" -ge 30 ] || fail "g1 continued from round $first, not from its checkpoint at 30"
"$MURMUR" job status --wait --interval 0.2 "${FLEET_OP[@]}" >"$FLEET/status" || fail "g1 (40) did not complete"
[ "$(fleet_done g1 40/40 3 "$FLEET/status")" -eq 3 ] ||
  { cat "$FLEET/status"; fail "g1 did not end at 40/40"; }
echo "4. g1 after g2: refused; g1 with 40 rounds went on from round $first"

# 5. A federated job: 2 clients, aggregator 0.
{
  echo 'job_id: "f1" aggregator: 0'
  echo 'spec { algorithm: "fedavg" model: "softmax" dataset: "synthetic:blobs" nodes: 2 clients_per_round: 0'
  echo '       rounds: 10 lr: 0.1 local_steps: 5 eval_every: 5 compression: "none" deadline: 20 }'
} >"$FLEET/f1.job"
"$MURMUR" job submit "$FLEET/f1.job" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "submit f1"; }
"$MURMUR" job status --wait --interval 0.2 "${FLEET_OP[@]}" >"$FLEET/status" ||
  { cat "$FLEET/status"; fail "f1 did not complete"; }
cat "$FLEET/status"
row=$(awk -v d="127.0.0.1:$((BASE_PORT + 100))" '$1 == d && $3 == "f1" { a = $6 } END { print a }' "$FLEET/status")
grep -q "^global model test accuracy $row (the aggregator, 127.0.0.1:$((BASE_PORT + 100)))" "$FLEET/status" ||
  fail "the global model's accuracy is not the aggregator's ($row)"
grep -q "^clients: .* over 2 clients" "$FLEET/status" || fail "the clients are not reported apart"
# --wait prints a table each time a state changes: a client done early is in more than one.
[ "$(awk '$3 == "f1" && $4 == "done" && $2 != 0 && $7 > 0 { print $2 }' "$FLEET/status" | sort -u | wc -l)" -eq 2 ] ||
  fail "a client's training loss is not reported"
! grep -q "over 3 daemons" "$FLEET/status" || fail "the aggregator was averaged with its clients"
echo "5. f1: global model $row reported from the aggregator, clients apart"

# 6. Neighbours from measurements: each daemon has probed the other two by
# now (membership probes one peer a protocol period).
for _ in $(seq 50); do
  "$MURMUR" peers --rtt-csv "$FLEET/rtt.csv" "${FLEET_OP[@]}" >"$FLEET/out" || { cat "$FLEET/out"; fail "peers --rtt-csv"; }
  [ "$(grep -c '^[0-9]' "$FLEET/rtt.csv")" -eq 6 ] && break
  sleep 0.2
done
[ "$(grep -c '^[0-9]' "$FLEET/rtt.csv")" -eq 6 ] || { cat "$FLEET/rtt.csv"; fail "not every pair's round trip was measured"; }
"$MURMUR" topology link-aware-ring --measured "$FLEET/rtt.csv" --export edges --out "$FLEET/ring.txt" >"$FLEET/out" ||
  { cat "$FLEET/out"; fail "topology --measured"; }
[ "$(grep -c '^[0-9]' "$FLEET/ring.txt")" -eq 3 ] || { cat "$FLEET/ring.txt"; fail "the measured ring of 3 has not 3 edges"; }
sed "s|topology: \"ring\"|topology: \"file:$FLEET/ring.txt\"|" "$(job m1 10)" >"$FLEET/m1ring.job"
"$MURMUR" job submit "$FLEET/m1ring.job" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "submit m1"; }
"$MURMUR" job status --wait --interval 0.2 "${FLEET_OP[@]}" >"$FLEET/status" || { cat "$FLEET/status"; fail "m1 did not complete"; }
grep -q "over 3 daemons (3 done)" "$FLEET/status" || { cat "$FLEET/status"; fail "m1's summary"; }
echo "6. m1 ran on the ring chosen from the measured round trips: $(tr '\n' ' ' <"$FLEET/ring.txt")"

# 7. Throughput from the transfers: a job whose models (mlp:4096 on blobs,
# about 590 kB) are large enough to be timed; every daemon then has each
# peer's throughput, and each row of --rtt-csv carries its link's.
sed 's|model: "softmax"|model: "mlp:4096"|' "$(job t1 4)" >"$FLEET/t1big.job"
"$MURMUR" job submit "$FLEET/t1big.job" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "submit t1"; }
"$MURMUR" job status --wait --interval 0.2 "${FLEET_OP[@]}" >"$FLEET/status" || { cat "$FLEET/status"; fail "t1 did not complete"; }
"$MURMUR" peers --rtt-csv "$FLEET/rtt.csv" "${FLEET_OP[@]}" >"$FLEET/out" || { cat "$FLEET/out"; fail "peers --rtt-csv after t1"; }
cat "$FLEET/out"
head -1 "$FLEET/rtt.csv" | grep -qx 'from,to,rtt_ms,mbps' || { cat "$FLEET/rtt.csv"; fail "the --rtt-csv header"; }
[ "$(awk -F, 'NR > 1 && $4 > 0' "$FLEET/rtt.csv" | wc -l)" -eq 6 ] ||
  { cat "$FLEET/rtt.csv"; fail "not every link's throughput was measured"; }
[ "$(awk 'NR > 2 && $1 ~ /^[0-9]+$/ && $NF ~ /^[0-9.]+$/' "$FLEET/out" | wc -l)" -eq 6 ] ||
  fail "murmur peers does not print each peer's throughput"
"$MURMUR" topology link-aware-ring --measured "$FLEET/rtt.csv" --model-bytes 590000 >"$FLEET/out" ||
  { cat "$FLEET/out"; fail "topology --measured with throughputs"; }
echo "7. throughput of every link measured from t1's transfers: $(awk -F, 'NR > 1 { printf "%s->%s %s Mbit/s  ", $1, $2, $4 }' "$FLEET/rtt.csv")"

# 8. A link-aware topology is chosen by `murmur job submit` from the links
# the daemons measured, and sent as edges:...; a ring all-reduce runs on it.
sed 's|topology: "ring"|topology: "link-aware-ring"|' "$(job a1 6 allreduce)" >"$FLEET/a1aware.job"
"$MURMUR" job submit "$FLEET/a1aware.job" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "submit a1"; }
grep -q "topology link-aware-ring chosen from 6 measured round trips and 6 throughputs (3 edges" "$FLEET/out" ||
  { cat "$FLEET/out"; fail "submit did not choose the ring from the measurements"; }
edges=$(sed -n 's/.*): edges:\(.*\)$/\1/p' "$FLEET/out")
[ "$(tr ';' '\n' <<<"$edges" | wc -l)" -eq 3 ] || { cat "$FLEET/out"; fail "the chosen ring '$edges' has not 3 edges"; }
"$MURMUR" job status --wait --interval 0.2 "${FLEET_OP[@]}" >"$FLEET/status" || { cat "$FLEET/status"; fail "a1 did not complete"; }
grep -q "over 3 daemons (3 done)" "$FLEET/status" || { cat "$FLEET/status"; fail "a1's summary"; }
echo "8. a1 ran a ring all-reduce on the ring murmur job submit chose from the measured links: edges:$edges"

# 9. Following links that changed: a running D-PSGD job (whole models, so
# its state does not depend on the graph) is stopped and submitted again on
# a link-aware graph chosen anew; it goes on from its checkpoints.
job r1 100000 >/dev/null
"$MURMUR" job submit "$FLEET/r1.job" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "submit r1"; }
for _ in $(seq 100); do
  done_rounds=$(min_round)
  [ "$done_rounds" -ge 20 ] && break
  sleep 0.1
done
"$MURMUR" job stop "${FLEET_OP[@]}" >/dev/null || fail "stop r1"
for _ in $(seq 100); do [ "$(states)" = "stopped stopped stopped " ] && break; sleep 0.1; done
[ "$(states)" = "stopped stopped stopped " ] || fail "r1 did not stop: $(states)"
stopped=$(min_round)
sed 's|topology: "ring"|topology: "link-aware:2"|' "$FLEET/r1.job" >"$FLEET/r1aware.job"
"$MURMUR" job submit "$FLEET/r1aware.job" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "submit r1 on the measured graph"; }
grep -q "topology link-aware:2 chosen from 6 measured round trips" "$FLEET/out" || { cat "$FLEET/out"; fail "r1's graph was not chosen"; }
# Each daemon logs the round its checkpoint ends (the stop drained one round more at most).
again=""
for i in 0 1 2; do
  r=$(sed -n 's/.*job r1 resumes after round \([0-9]*\).*/\1/p' "$FLEET/node$i/log" | tail -1)
  [ -n "$r" ] && [ "$r" -ge "$stopped" ] || fail "daemon $i did not go on from its checkpoint (resumed after '$r', stopped at $stopped)"
  again="$again $r"
done
"$MURMUR" job stop "${FLEET_OP[@]}" >/dev/null || fail "stop r1 again"
for _ in $(seq 100); do [ "$(states)" = "stopped stopped stopped " ] && break; sleep 0.1; done
echo "9. r1 stopped at round $stopped, submitted again on the link-aware graph chosen anew, went on after rounds$again"

# 10. murmur job relink. r2 runs on the path 0-1-2; on 3 nodes link-aware:2
# is the triangle, whose busiest node carries the path's middle node's two
# links or more: no gain, so the path is kept, until --force.
job r2 100000 >/dev/null
sed 's|topology: "ring"|topology: "edges:0 1;1 2"|' "$FLEET/r2.job" >"$FLEET/r2path.job"
sed 's|topology: "ring"|topology: "link-aware:2"|' "$FLEET/r2.job" >"$FLEET/r2aware.job"
"$MURMUR" job submit "$FLEET/r2path.job" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "submit r2"; }
for _ in $(seq 100); do [ "$(min_round)" -ge 20 ] && break; sleep 0.1; done
"$MURMUR" job relink "$FLEET/r2aware.job" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "relink r2"; }
grep -q "under --min-gain 10.0%): kept" "$FLEET/out" || { cat "$FLEET/out"; fail "r2's path was not kept"; }
grep -q -- "-[0-9.]*% less" "$FLEET/out" && { cat "$FLEET/out"; fail "a negative gain printed as '-x% less'"; }
[ "$(states)" = "running running running " ] || fail "r2 stopped on a kept graph: $(states)"
"$MURMUR" job relink "$FLEET/r2aware.job" --force "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "relink r2 --force"; }
grep -q "job r2 goes on from its checkpoints" "$FLEET/out" || { cat "$FLEET/out"; fail "r2 was not submitted again"; }
relinked=$(sed -n 's/.*job r2 goes on from its checkpoints (round \([0-9]*\) and after).*/\1/p' "$FLEET/out")
for i in 0 1 2; do
  r=$(sed -n 's/.*job r2 resumes after round \([0-9]*\).*/\1/p' "$FLEET/node$i/log" | tail -1)
  [ -n "$r" ] && [ "$r" -ge "$relinked" ] || fail "daemon $i did not go on from its checkpoint (resumed after '$r', stopped at $relinked)"
done
"$MURMUR" job relink "$FLEET/r2aware.job" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "relink r2 again"; }
grep -q "job r2 runs on the graph its measured links choose" "$FLEET/out" || { cat "$FLEET/out"; fail "r2 is not on the triangle"; }
# A file whose job differs in more than its topology and rounds (here: lr)
# is refused before anything stops: the daemons would refuse it after the
# stop and leave the job stopped.
sed 's|lr: [0-9.e-]*|lr: 0.0123|' "$FLEET/r2aware.job" >"$FLEET/r2lr.job"
grep -q "lr: 0.0123" "$FLEET/r2lr.job" || fail "r2lr.job has no changed lr"
"$MURMUR" job relink "$FLEET/r2lr.job" --force "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 && { cat "$FLEET/out"; fail "relink of another configuration succeeded"; }
grep -q "has another configuration than the file's .*nothing stopped, the job runs on" "$FLEET/out" || { cat "$FLEET/out"; fail "relink of another configuration: no reason given"; }
[ "$(states)" = "running running running " ] || fail "relink of another configuration stopped r2: $(states)"
# --every: passes until the job ends (here: stopped by the operator).
timeout 60 "$MURMUR" job relink "$FLEET/r2aware.job" --every 0.2 "${FLEET_OP[@]}" >"$FLEET/follow" 2>&1 &
follower=$!
sleep 1
"$MURMUR" job stop "${FLEET_OP[@]}" >/dev/null || fail "stop r2"
wait "$follower" || { cat "$FLEET/follow"; fail "relink --every did not end with r2"; }
grep -q "job r2 has ended on every daemon" "$FLEET/follow" || { cat "$FLEET/follow"; fail "relink --every: no end"; }
echo "10. r2: path kept (no gain), replaced by the triangle with --force after round $relinked, then kept; relink --every ended with the job"
echo "daemon operator test passed"
