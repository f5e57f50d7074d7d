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
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "${KEEP:-}" ]; then echo "local-cluster: files kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT INT TERM

say() { printf 'local-cluster: %s\n' "$*"; }

# 1. Keys: a coordinator, an operator, one identity and certificate per daemon.
NETWORK=local-demo
"$MURMUR" keygen --out "$WORK/coordinator" >/dev/null 2>&1
"$MURMUR" keygen --out "$WORK/operator" >/dev/null 2>&1
"$MURMUR" cert issue --coordinator-key "$WORK/coordinator/identity.key" --node-pub "$WORK/operator/identity.pub" \
  --network "$NETWORK" --roles operator --days 1 --out "$WORK/operator/operator.cert" >/dev/null 2>&1
: >"$WORK/cluster"
for i in $(seq 0 $((NODES - 1))); do
  d=$WORK/node$i
  "$MURMUR" keygen --out "$d" >/dev/null 2>&1
  "$MURMUR" cert issue --coordinator-key "$WORK/coordinator/identity.key" --node-pub "$d/identity.pub" \
    --network "$NETWORK" --roles node --days 1 --out "$d/node.cert" >/dev/null 2>&1
  {
    echo "node_id: $i"
    echo "listen: \"127.0.0.1:$((BASE_PORT + i))\""
    echo "control_listen: \"127.0.0.1:$((BASE_PORT + 100 + i))\""
    echo "data_dir: \"$d\""
    echo "network_id: \"$NETWORK\""
    echo "coordinator_key: \"$WORK/coordinator/identity.pub\""
    echo "log_level: \"warning\""
    for j in $(seq 0 $((NODES - 1))); do
      [ "$j" -eq "$i" ] || echo "peers { id: $j address: \"127.0.0.1:$((BASE_PORT + j))\" }"
    done
  } >"$d/node.conf"
  echo "127.0.0.1:$((BASE_PORT + 100 + i))" >>"$WORK/cluster"
done

# 2. Start the daemons (idle: no job in their configs).
for i in $(seq 0 $((NODES - 1))); do
  "$MURMURD" --config "$WORK/node$i/node.conf" 2>"$WORK/node$i/log" &
  PIDS+=($!)
done
for i in $(seq 0 $((NODES - 1))); do
  for _ in $(seq 100); do [ -s "$WORK/node$i/ports" ] && break; sleep 0.1; done
  [ -s "$WORK/node$i/ports" ] || { say "daemon $i did not start:"; cat "$WORK/node$i/log"; exit 1; }
done
say "$NODES daemons up (control ports $((BASE_PORT + 100))..$((BASE_PORT + 99 + NODES)))"

OP=(--cluster "$WORK/cluster" --identity "$WORK/operator/identity.key" --cert "$WORK/operator/operator.cert"
    --coordinator-key "$WORK/coordinator/identity.pub")

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
