#!/usr/bin/env bash
# A murmur fleet on one machine: N daemons (default 8) on loopback, each with
# its own identity and coordinator-signed certificate, run a gossip job that
# an operator submits with `murmur job submit`; the script prints accuracy as
# the job goes, then stops everything it started.
#
#   examples/local-cluster.sh                 # 8 daemons, D-PSGD softmax on Fashion-MNIST, ring
#   NODES=4 ROUNDS=100 examples/local-cluster.sh
#   MODEL=mlp:128 ROUNDS=600 examples/local-cluster.sh
#
# Needs the murmur and murmurd binaries (./dev build puts them in build/release/bin).
# Everything lives in a temporary directory (kept with KEEP=1); all addresses are 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."

NODES=${NODES:-8}
ROUNDS=${ROUNDS:-200}
MODEL=${MODEL:-softmax}
TOPOLOGY=${TOPOLOGY:-ring}
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
cat >"$WORK/gossip.job" <<JOB
job_id: "gossip-demo"
algorithm: "dpsgd"
model: "$MODEL"
dataset: "fashion-mnist"
dataset_dir: "$DATA_DIR"
nodes: $NODES
topology: "$TOPOLOGY"
rounds: $ROUNDS
lr: 0.1
batch: 32
round_timeout: 10
eval_every: $((ROUNDS / 10 > 0 ? ROUNDS / 10 : 1))
checkpoint_every: 10
seed: 1
JOB
say "submitting $WORK/gossip.job"
"$MURMUR" job submit "$WORK/gossip.job" "${OP[@]}"
"$MURMUR" job status --wait --interval 5 "${OP[@]}"
say "node 0's peers:"
"$MURMUR" peers --daemon "127.0.0.1:$((BASE_PORT + 100))" "${OP[@]:2}"
say "done"
