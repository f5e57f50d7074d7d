#!/usr/bin/env bash
# A murmur fleet on one machine: N daemons (default 8) on loopback, each with
# its own identity and coordinator-signed certificate, run a gossip job and
# then a federated job (FedAvg, daemon 0 aggregates, the others are its
# clients) that an operator submits with `murmur job submit`; the script
# prints accuracy as the jobs go, runs `murmur sim --job` on each job file
# (the same spec in the simulator) for comparison, then stops everything it
# started.
#
#   examples/local-cluster.sh                 # 8 daemons, D-PSGD softmax on Fashion-MNIST, ring; FedAvg
#   NODES=4 ROUNDS=100 examples/local-cluster.sh
#   ALGORITHM=push-sum TOPOLOGY=one-peer-exponential FED_ROUNDS=0 examples/local-cluster.sh
#   COMPRESSION=topk:0.1 GAMMA=0.5 FED_ROUNDS=0 examples/local-cluster.sh   # CHOCO-SGD
#   MODEL=mlp:128 ROUNDS=600 examples/local-cluster.sh
#   GOSSIP=0 FED_ROUNDS=50 FED_PARTITION=dirichlet:0.5 examples/local-cluster.sh   # the federated job only
#   GOSSIP=0 FED_ROUNDS=60 FED_KILL_AT=15 examples/local-cluster.sh   # the aggregator dies and resumes
#   GOSSIP=0 FED_SECAGG=1 examples/local-cluster.sh   # the federated job with SecAgg+
#   GOSSIP=0 FED_DP=1:1 FED_KILL_AT=8 examples/local-cluster.sh   # DP-FedAvg; the resumed aggregator keeps its epsilon
#   GOSSIP=0 FED_ATTACK=sign-flip FED_ROBUST=median examples/local-cluster.sh   # attackers against the median
#
# Needs the murmur and murmurd binaries (./dev build puts them in build/release/bin).
# Everything lives in a temporary directory (kept with KEEP=1); all addresses are 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."

NODES=${NODES:-8}
ROUNDS=${ROUNDS:-200}
MODEL=${MODEL:-softmax}
TOPOLOGY=${TOPOLOGY:-ring}
ALGORITHM=${ALGORITHM:-dpsgd}       # gossip job: dpsgd, dpsgd-cta, push-sum or dsgt
COMPRESSION=${COMPRESSION:-none}    # gossip job: none, fp16, ...; topk:F etc. make dpsgd CHOCO-SGD
GAMMA=${GAMMA:-0}                   # CHOCO consensus step (0: the default)
GOSSIP=${GOSSIP:-1}                 # 0: skip the gossip job
FED_ROUNDS=${FED_ROUNDS:-20}        # federated job: rounds (0: skip it)
FED_PARTITION=${FED_PARTITION:-iid} # iid, dirichlet:ALPHA, shards:K or quantity:BETA over the NODES-1 clients
SIM=${SIM:-1}                       # 0: skip the `murmur sim` comparison
FED_KILL_AT=${FED_KILL_AT:-0}       # > 0: kill -9 the aggregator at this round, then restart it
FED_SECAGG=${FED_SECAGG:-0}         # 1: the federated job runs SecAgg+ (every other client a neighbour)
FED_DP=${FED_DP:-}                  # CLIP:NOISE: DP-FedAvg with clip norm CLIP and noise multiplier NOISE
FED_ROBUST=${FED_ROBUST:-mean}      # federated aggregation: mean, median, trimmed-mean[:B], krum, ...
FED_ATTACK=${FED_ATTACK:-none}      # simulated attackers: none, sign-flip, gaussian, alie, ipm, label-flip
FED_ATTACK_FRACTION=${FED_ATTACK_FRACTION:-0.3}  # ... this fraction of the clients, drawn from the seed
FED_ATTACK_SCALE=${FED_ATTACK_SCALE:-3}          # ... sign-flip s, gaussian noise size, ipm epsilon
BASE_PORT=${BASE_PORT:-17100}
BIN=${BIN:-build/release/bin}
DATA_DIR=${DATASET_DIR:-/usr/share/datasets/fashion-mnist}
MURMUR=$BIN/murmur
MURMURD=$BIN/murmurd
[ -x "$MURMUR" ] && [ -x "$MURMURD" ] || { echo "local-cluster: build first (./dev build)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/murmur-cluster.XXXXXX)
FLEET=$WORK
FLEET_LOG_LEVEL=warning
source tools/fleet.sh
cleanup() {
  fleet_stop_all
  if [ -n "${KEEP:-}" ]; then echo "local-cluster: files kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT INT TERM

say() { printf 'local-cluster: %s\n' "$*"; }

# 1. Keys: a coordinator, an operator, one identity and certificate per daemon;
# 2. the daemons, idle (no job in their configs).
fleet_make "$NODES"
for i in $(seq 0 $((NODES - 1))); do fleet_start "$i"; done
say "$NODES daemons up (control ports $((BASE_PORT + 100))..$((BASE_PORT + 99 + NODES)))"
OP=("${FLEET_OP[@]}")

# 3. A gossip job.
if [ "$GOSSIP" != 0 ]; then
cat >"$WORK/gossip.job" <<JOB
job_id: "gossip-demo"
spec {
  algorithm: "$ALGORITHM"
  compression: "$COMPRESSION"
  gamma: $GAMMA
  model: "$MODEL"
  dataset: "fashion-mnist"
  data_dir: "$DATA_DIR"
  nodes: $NODES
  topology: "$TOPOLOGY"
  rounds: $ROUNDS
  lr: 0.1
  batch: 32
  round_timeout: 10
  eval_every: $((ROUNDS / 10 > 0 ? ROUNDS / 10 : 1))
  seed: 1
}
checkpoint_every: 10
JOB
say "submitting $WORK/gossip.job"
"$MURMUR" job submit "$WORK/gossip.job" "${OP[@]}"
"$MURMUR" job status --wait --interval 5 "${OP[@]}"
say "node 0's peers:"
"$MURMUR" peers --daemon "127.0.0.1:$((BASE_PORT + 100))" "${OP[@]:2}"
if [ "$SIM" != 0 ]; then
  say "murmur sim of the same spec (mean test accuracy over all $NODES nodes, full test set):"
  "$MURMUR" sim --job "$WORK/gossip.job" --eval-every "$ROUNDS" --eval-nodes "$NODES" --eval-samples 10000 \
    --metrics-csv "$WORK/gossip-sim.csv" >/dev/null 2>&1
  tail -n 1 "$WORK/gossip-sim.csv" | awk -F, '{printf "local-cluster: murmur sim round %s: mean node test accuracy %.4f\n", $1, $4}'
fi
fi

# 4. A federated job: FedAvg, daemon 0 the aggregator, daemons 1..NODES-1 its
# NODES-1 clients (the engine's clients 0..NODES-2), every client in every
# round, one local epoch each. On the clients, the accuracy shown is that of
# the last global model they received; the aggregator's is the current global model's.
if [ "$FED_ROUNDS" != 0 ]; then
FED_EXTRA=""
[ "$FED_SECAGG" != 0 ] && FED_EXTRA+=$'\n  secure_aggregation: true'
[ -n "$FED_DP" ] && FED_EXTRA+=$'\n  '"dp_clip: ${FED_DP%%:*} dp_noise: ${FED_DP#*:}"
if [ "$FED_ROBUST" != mean ] || [ "$FED_ATTACK" != none ]; then
  FED_EXTRA+=$'\n  '"robust: \"$FED_ROBUST\" attack: \"$FED_ATTACK\" attack_fraction: $FED_ATTACK_FRACTION"
  FED_EXTRA+=" attack_scale: $FED_ATTACK_SCALE"
fi
cat >"$WORK/federated.job" <<JOB
job_id: "federated-demo"
spec {
  algorithm: "fedavg"
  model: "$MODEL"
  dataset: "fashion-mnist"
  data_dir: "$DATA_DIR"
  partition: "$FED_PARTITION"
  nodes: $((NODES - 1))
  clients_per_round: 0
  rounds: $FED_ROUNDS
  lr: 0.05
  batch: 32
  local_epochs: 1
  deadline: 300
  secagg_timeout: 30
  eval_every: $((FED_ROUNDS / 10 > 0 ? FED_ROUNDS / 10 : 1))
  seed: 1$FED_EXTRA
}
aggregator: 0
checkpoint_every: 5
JOB
say "submitting $WORK/federated.job"
"$MURMUR" job submit "$WORK/federated.job" "${OP[@]}"
start=$(date +%s)
if [ "$FED_KILL_AT" -gt 0 ]; then
  AGG=(--daemon "127.0.0.1:$((BASE_PORT + 100))" "${OP[@]:2}")
  for _ in $(seq 3000); do
    r=$("$MURMUR" job status "${AGG[@]}" | awk 'NR == 2 { split($5, a, "/"); print a[1] }')
    [ "${r:-0}" -ge "$FED_KILL_AT" ] && break
    sleep 0.2
  done
  say "kill -9 of the aggregator (daemon 0) at round $r; restarting it in 2 s"
  fleet_kill 0
  sleep 2
  fleet_start 0
  for _ in $(seq 100); do "$MURMUR" job status "${AGG[@]}" >/dev/null 2>&1 && break; sleep 0.1; done
  say "daemon 0 restarted; its job resumes after round $("$MURMUR" job status "${AGG[@]}" |
    awk 'NR == 2 { split($5, a, "/"); print a[1] }')"
fi
"$MURMUR" job status --wait --interval 1 "${OP[@]}"
say "federated job: $(( $(date +%s) - start )) s; the aggregator's global model:"
"$MURMUR" job status --daemon "127.0.0.1:$((BASE_PORT + 100))" "${OP[@]:2}"
say "aggregator traffic since it started (all jobs): $("$MURMUR" metrics --daemon "127.0.0.1:$((BASE_PORT + 100))" \
  "${OP[@]:2}" | awk '/^murmur_bytes_(received|sent)_total/ { printf "%s %s  ", $1, $2 }')"
if [ "$SIM" != 0 ]; then
  say "murmur sim of the same spec ($((NODES - 1)) clients):"
  "$MURMUR" sim --job "$WORK/federated.job" --eval-every "$FED_ROUNDS" --metrics-csv "$WORK/federated-sim.csv" \
    >/dev/null 2>&1
  tail -n 1 "$WORK/federated-sim.csv" | awk -F, '{printf "local-cluster: murmur sim round %s: global model test accuracy %.4f\n", $1, $8}'
fi
fi
say "done"
