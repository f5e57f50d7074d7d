#!/usr/bin/env bash
# One row of docs/netbed.md's fidelity table: N murmurd daemons in the
# network test bed on identical access links (RATE Mbit/s up and down,
# one-way path latency LATENCY ms split between the two ends, packet loss P
# on each access link), a D-PSGD job on a ring (mlp:128 on Fashion-MNIST,
# 0.4 MB dense messages, or CHOCO with top-1% of them), against
# `murmur sim --job` on the same links. Prints the fleet's wall seconds per
# round (from the last daemon to mix round 2 to the last to mix round R - 1,
# over R - 3 rounds: no evaluation falls between), the simulator's virtual
# seconds per round over the same rounds, their ratio, and whether the final
# mean test accuracies agree (the models are the simulator's where nothing
# was lost). The devices' 10 GFLOP/s charge about what one step of mlp:128
# takes on the machine the table was measured on (2 ms).
# usage (root): fidelity.sh MURMUR MURMURD NETDELAY --nodes N --rate MBPS
#               --latency-ms L --packet-loss P --compression none|topk:0.01 [--rounds R]
#               [--slow-start-after-idle 0|1]   (the hosts' sysctl, and the simulator told so)
#               [--local-steps H] [--gflops G]   (G: the devices' speed for the simulator, 10)
set -uo pipefail
MURMUR=$(realpath "$1") MURMURD=$(realpath "$2") NETBED_DELAY=$(realpath "$3")
shift 3
n=8 rate=20 latency=1 loss=0 compression=none rounds=12 ssai=1 steps=1 gflops=10
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) n=$2 ;; --rate) rate=$2 ;; --latency-ms) latency=$2 ;; --packet-loss) loss=$2 ;;
    --compression) compression=$2 ;; --rounds) rounds=$2 ;; --slow-start-after-idle) ssai=$2 ;;
    --local-steps) steps=$2 ;; --gflops) gflops=$2 ;;
    *) echo "fidelity: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
SRC=$(cd "$(dirname "$0")/../.." && pwd)
FLEET=$(mktemp -d /tmp/murmur-fidelity.XXXXXX)
chmod 755 "$FLEET"
source "$SRC/tools/netbed/netbed.sh"
FLEET_LOG_LEVEL=debug  # every round's "mixed round" line
source "$SRC/tools/fleet.sh"
trap 'fleet_stop_all; netbed_down; rm -rf /tmp/netbed-$NETBED_ID-*; [ -n "${KEEP:-}" ] || rm -rf "$FLEET"' EXIT

echo "node,gflops,up_mbps,down_mbps,latency_ms,availability" >"$FLEET/devices.csv"
for ((i = 0; i < n; i++)); do
  echo "$i,$gflops,$rate,$rate,$(awk -v l="$latency" 'BEGIN { print l / 2 }'),1" >>"$FLEET/devices.csv"
done
netbed_up --nodes "$n" --devices "trace:$FLEET/devices.csv" --packet-loss "$loss" --tcp-slow-start-after-idle "$ssai" || exit 1
fleet_make "$n"
for ((i = 0; i < n; i++)); do fleet_start "$i" || exit 1; done
gamma=""
[ "$compression" = none ] || gamma="gamma: 0.05"
cat >"$FLEET/job" <<JOB
job_id: "fidelity" checkpoint_every: 1000
spec { algorithm: "dpsgd" model: "mlp:128" dataset: "fashion-mnist" nodes: $n topology: "ring"
       rounds: $rounds local_steps: $steps lr: 0.05 batch: 32 eval_every: $rounds seed: 3 compression: "$compression" $gamma
       round_timeout: 600 }
JOB
"${FLEET_OP_LAUNCH[@]}" "$MURMUR" job submit "$FLEET/job" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; exit 1; }
"${FLEET_OP_LAUNCH[@]}" "$MURMUR" job status --wait --interval 1 "${FLEET_OP[@]}" >"$FLEET/status" 2>&1 ||
  { tail "$FLEET/status"; exit 1; }
fleet=$(grep -o "mean test accuracy [0-9.]*" "$FLEET/status" | tail -n 1 | awk '{ print $4 }')
# The last daemon's log time of "mixed round R" (HH:MM:SS.mmm), in seconds.
last_mix() {
  cat "$FLEET"/node*/log | grep "job fidelity mixed round $1\$" |
    awk '{ split($2, t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3]; if (s > m) m = s } END { printf "%.3f", m }'
}
fleet_per_round=$(awk -v a="$(last_mix 2)" -v b="$(last_mix $((rounds - 1)))" -v k=$((rounds - 3)) \
  'BEGIN { if (b < a) b += 86400; printf "%.3f", (b - a) / k }')  # a run past midnight
"$MURMUR" sim --job "$FLEET/job" --devices "trace:$FLEET/devices.csv" --packet-loss "$loss" --tcp-slow-start-after-idle="$([ "$ssai" = 1 ] && echo true || echo false)" --eval-nodes "$n" \
  --eval-samples 1000000 --eval-every 1 --metrics-csv "$FLEET/sim.csv" >"$FLEET/sim" 2>&1 || { tail "$FLEET/sim"; exit 1; }
sim=$(grep -o "node accuracy mean [0-9.]*" "$FLEET/sim" | tail -n 1 | awk '{ print $4 }')
sim_per_round=$(awk -F, -v r=$((rounds - 1)) '$1 == 2 { a = $2 } $1 == r { b = $2 } END { printf "%.3f", (b - a) / (r - 2) }' "$FLEET/sim.csv")
same=no
[ "$fleet" = "$sim" ] && same=yes
printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2f | %s |\n" "$n" "$rate" "$latency" "$loss" "$compression" "$steps" "$ssai" \
  "$fleet_per_round" "$sim_per_round" "$(awk -v f="$fleet_per_round" -v s="$sim_per_round" 'BEGIN { print f / s }')" "$same"
