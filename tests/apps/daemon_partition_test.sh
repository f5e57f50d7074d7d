#!/usr/bin/env bash
# Real murmurd processes on loopback (issue acceptance, docs/security.md
# "Fault injection"): 8 daemons run a gossip job on a ring; the operator cuts
# them into {0-3} and {4-7} for 60 s with `murmur fault set --partition`, then
# heals. Asserted:
#  1. during the partition each side declares the other dead (membership) and
#     every daemon's round counter advances (both halves keep training), the
#     daemons of a half together (none runs on alone);
#  2. after the heal `murmur peers` shows the 7 others alive on every daemon
#     within the bound of docs/membership.md "Partitions";
#  3. the job completes on all 8;
#  4. no daemon mixed any round twice: the per-round log lines are unique per
#     daemon and the murmur_rounds_mixed_twice_total counter is 0 everywhere;
#  5. the heal does not flap: no daemon declares a member dead after it (a
#     merge only suspects what the other side held dead), so no daemon races
#     ahead alone, and catching up skips at most the rounds between the
#     halves at the heal (plus 100 for the time the halves ran on after the
#     counters were read).
# It prints the final accuracy beside `murmur sim` of the same job without a
# partition. Every message carries an injected 50 ms delay from the start, so
# that rounds run at a pace that leaves the job running through the heal.
# With NETDELAY (the network bed, docs/netbed.md) the daemons run in network
# namespaces on 100 Mbit/s links of 30 ms one way instead, and the cut is
# real: every packet between the halves is dropped (netbed_partition) for
# PARTITION_S (30 s) of a 1,500-round job, and the same 5 things hold.
# usage: daemon_partition_test.sh MURMUR MURMURD SOURCE_DIR [DATA_DIR [NETDELAY]]
set -euo pipefail
MURMUR=$1 MURMURD=$2 SRC=$3 DATA_DIR=${4:-/usr/share/datasets/fashion-mnist} NETBED_DELAY=${5:-}
FLEET=$(mktemp -d /tmp/murmur-partition.XXXXXX)
chmod 755 "$FLEET"
BASE_PORT=$((20000 + ($$ % 60) * 200 + 10))  # below the ephemeral range; offsets 0, 10, 20, 30 keep the daemon tests apart
FLEET_LOG_LEVEL=debug                           # the "mixed round R" lines
[ -z "$NETBED_DELAY" ] || source "$SRC/tools/netbed/netbed.sh"
source "$SRC/tools/fleet.sh"
trap 'fleet_stop_all; [ -z "$NETBED_DELAY" ] || netbed_down; [ -n "${KEEP:-}" ] || rm -rf "$FLEET"' EXIT
op() { ${FLEET_OP_LAUNCH[@]+"${FLEET_OP_LAUNCH[@]}"} "$MURMUR" "$@"; }
fail() {
  echo "FAIL: $*"
  for i in $(seq 0 $((NODES - 1))); do
    echo "--- murmur peers of daemon $i"
    op peers --daemon "$(fleet_addr "$i"):$((BASE_PORT + 100 + i))" "${FLEET_OP[@]:2}" 2>&1 | head -n 10
  done
  for i in $(seq 0 $((NODES - 1))); do
    echo "--- node $i"
    grep -E "member [0-9]+ |declared|FAIL|error" "$FLEET/node$i/log" | tail -n 12
  done
  exit 1
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
alive_peers() {  # alive_peers I: members daemon I's `murmur peers` shows alive
  op peers --daemon "$(fleet_addr "$1"):$((BASE_PORT + 100 + $1))" "${FLEET_OP[@]:2}" 2>/dev/null |
    awk '$4 == "alive" || $5 == "alive"' | wc -l
}

NODES=8 ROUNDS=${ROUNDS:-1800} DELAY=0.05 PARTITION_S=${PARTITION_S:-60}
if [ -n "$NETBED_DELAY" ]; then
  ROUNDS=${ROUNDS_BED:-1500} PARTITION_S=${PARTITION_S_BED:-30}
  netbed_up --nodes $NODES --latency-ms 20 || fail "bed up"  # uniform devices: 5 ms each end, 30 ms one way
fi
# Membership convergence bound after the heal (docs/membership.md "Partitions"):
# 2 reconnect intervals (5 s) for every node to push-pull across the cut and
# refute, then lambda * ceil(log10(n + 1)) = 4 protocol periods (1 s) for the
# refutations to spread, plus one period: 15 s.
HEAL_BOUND=15
fleet_make $NODES
for i in $(seq 0 $((NODES - 1))); do
  [ -n "$NETBED_DELAY" ] || printf 'fault_injection: true\nfaults { delay: %s }\n' "$DELAY" >>"$FLEET/node$i/node.conf"
  fleet_start "$i"
done
cat >"$FLEET/job" <<JOB
job_id: "partition-test" checkpoint_every: 100
spec { model: "softmax" dataset: "fashion-mnist" data_dir: "$DATA_DIR" compression: "none"
       nodes: $NODES topology: "ring" rounds: $ROUNDS lr: 0.05 batch: 32 round_timeout: 1
       eval_every: $ROUNDS seed: 5 }
JOB
op job submit "$FLEET/job" "${FLEET_OP[@]}" >/dev/null || fail "submit"
for _ in $(seq 600); do [ "$(fleet_rounds 0)" -ge 50 ] && break; sleep 0.1; done
[ "$(fleet_rounds 0)" -ge 50 ] || fail "the job did not reach round 50"

# 1. The partition.
if [ -n "$NETBED_DELAY" ]; then
  netbed_partition "0 1 2 3" "4 5 6 7"
else
  "$MURMUR" fault set --delay $DELAY --partition '0-3|4-7' "${FLEET_OP[@]}" >/dev/null || fail "fault set"
fi
t_cut=$(now)
declare -a before after
for i in $(seq 0 $((NODES - 1))); do before[$i]=$(fleet_rounds "$i"); done
sleep "$PARTITION_S"
for i in $(seq 0 $((NODES - 1))); do after[$i]=$(fleet_rounds "$i"); done
for i in $(seq 0 $((NODES - 1))); do
  dead=$(fleet_metric "$i" murmur_peers_dead)
  [ "$dead" = 4 ] || fail "daemon $i holds $dead members dead at the end of the partition, not the other 4"
  part=$(fleet_metric "$i" murmur_fault_partitioned_total)
  echo "daemon $i: rounds ${before[$i]} -> ${after[$i]} during the partition ($part sends cut), 4 dead"
  [ "${after[$i]}" -ge $((before[$i] + 100)) ] || fail "daemon $i advanced less than 100 rounds in the partition"
  [ "${after[$i]}" -lt "$ROUNDS" ] || fail "daemon $i finished during the partition: make the job longer"
done
# Within a half the ring's neighbours wait for each other: no daemon runs on
# alone (a neighbour that only lags is not left behind as silent). The
# counters are read one after the other, so they may differ by the rounds
# that takes, far fewer than 100.
for half in "0 1 2 3" "4 5 6 7"; do
  spread=$(for i in $half; do echo "${after[$i]}"; done | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print hi - lo }')
  [ "$spread" -le 100 ] || fail "the round counters of daemons $half are $spread apart at the end of the partition: one ran on alone"
done
echo "partition held $(since "$t_cut") s"

# 2. The heal: membership converges.
declare -a log_at_heal
for i in $(seq 0 $((NODES - 1))); do log_at_heal[$i]=$(wc -l <"$FLEET/node$i/log"); done
if [ -n "$NETBED_DELAY" ]; then
  netbed_heal
else
  "$MURMUR" fault set --delay $DELAY "${FLEET_OP[@]}" >/dev/null || fail "fault set (heal)"
fi
t_heal=$(now)
converged=0
while awk -v t="$(since "$t_heal")" -v b=$HEAL_BOUND 'BEGIN { exit !(t <= b) }'; do
  all=1
  for i in $(seq 0 $((NODES - 1))); do [ "$(alive_peers "$i")" -eq 7 ] || { all=0; break; }; done
  took=$(since "$t_heal")
  [ "$all" -eq 1 ] && { converged=1; break; }
  sleep 0.25
done
[ "$converged" -eq 1 ] && awk -v t="$took" -v b=$HEAL_BOUND 'BEGIN { exit !(t <= b) }' ||
  fail "membership did not converge within $HEAL_BOUND s of the heal"
echo "every daemon's murmur peers shows the 7 others alive $took s after the heal (bound $HEAL_BOUND s)"

# 3. The job completes everywhere.
op job status --wait --interval 1 "${FLEET_OP[@]}" >"$FLEET/status" || { cat "$FLEET/status"; fail "job status --wait"; }
done_count=$(fleet_done partition-test "$ROUNDS/$ROUNDS" $NODES "$FLEET/status")
[ "$done_count" -eq $NODES ] || { cat "$FLEET/status"; fail "only $done_count of $NODES daemons finished at round $ROUNDS"; }
acc=$(awk '/^mean test accuracy/ { print $4 }' "$FLEET/status")

# 4. No round mixed twice; 5. no flapping, catch-up bridges only the gap.
gap=$(printf '%s\n' "${after[@]}" | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print hi - lo }')
for i in $(seq 0 $((NODES - 1))); do
  flaps=$(tail -n +"$((log_at_heal[$i] + 1))" "$FLEET/node$i/log" | grep -c "declared dead" || true)
  [ "$flaps" -eq 0 ] || fail "daemon $i declared $flaps members dead after the heal"
  skipped=$(fleet_metric "$i" murmur_rounds_skipped_total)
  [ "$skipped" -le $((gap + 100)) ] || fail "daemon $i skipped $skipped rounds catching up; the halves were $gap apart"
  mixes=$(grep -c "job partition-test mixed round " "$FLEET/node$i/log" || true)
  twice=$(grep -o "job partition-test mixed round [0-9]*" "$FLEET/node$i/log" | sort | uniq -d | wc -l)
  [ "$twice" -eq 0 ] || fail "daemon $i logged $twice rounds mixed twice"
  counter=$(fleet_metric "$i" murmur_rounds_mixed_twice_total)
  [ "$counter" = 0 ] || fail "daemon $i counts $counter rounds mixed twice"
  echo "daemon $i: $mixes rounds mixed, none twice; $skipped skipped by catching up (halves $gap apart)"
done

sim=$("$MURMUR" sim --algorithm dpsgd --model softmax --dataset fashion-mnist --data-dir "$DATA_DIR" \
  --partition iid --nodes $NODES --topology ring --rounds "$ROUNDS" --lr 0.05 --batch 32 --compression none \
  --eval-every "$ROUNDS" --eval-nodes $NODES --eval-samples 10000 --seed 5 --metrics-csv "$FLEET/sim.csv" \
  >/dev/null 2>&1 && tail -n 1 "$FLEET/sim.csv" | awk -F, '{ print $4 }')
echo "accuracy: $acc (mean over the 8 daemons, partitioned $PARTITION_S s${NETBED_DELAY:+ in the network bed}) vs ${sim:-?} (murmur sim, no partition)"
echo "daemon partition test passed"
