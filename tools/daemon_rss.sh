#!/usr/bin/env bash
# Resident memory of murmurd: two daemons on loopback run a softmax job;
# prints each daemon's VmRSS once its session is up and its peak (VmHWM) at
# the end. Used for docs/benchmarks.md ("murmurd memory").
#
#   tools/daemon_rss.sh [DATASET] [ROUNDS] [PARTS]
#     DATASET: a murmur sim dataset spec (default fashion-mnist; synthetic:blobs for a tiny job)
#     ROUNDS:  rounds of the job (default 200)
#     PARTS:   when set, daemon i's config has local data
#              "fashion-mnist:iid:part=i/PARTS" (docs/daemon.md "Local data")
# Needs build/release (murmur, murmurd), or MURMURD=path to measure another
# murmurd. Everything runs on 127.0.0.1 and is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
DATASET=${1:-fashion-mnist}
ROUNDS=${2:-200}
PARTS=${3:-}
BIN=build/release/bin
MURMURD=${MURMURD:-$(find build/release -name murmurd -type f -perm -u+x | head -1)}
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

"$BIN/murmur" keygen --out "$WORK/coord" > /dev/null 2>&1
BASE=$((20000 + RANDOM % 20000))
for i in 0 1; do
  "$BIN/murmur" keygen --out "$WORK/n$i" > /dev/null 2>&1
  "$BIN/murmur" cert issue --coordinator-key "$WORK/coord/identity.key" --node-pub "$WORK/n$i/identity.pub" \
    --node-id "$i" --network rss --days 1 --out "$WORK/n$i/node.cert" > /dev/null 2>&1
done
for i in 0 1; do
  j=$((1 - i))
  LOCAL=""
  [[ -n "$PARTS" ]] && LOCAL="data: \"fashion-mnist:iid:part=$i/$PARTS\""
  cat > "$WORK/n$i.textproto" <<CFG
node_id: $i
listen: "127.0.0.1:$((BASE + i))"
data_dir: "$WORK/n$i"
network_id: "rss"
coordinator_key: "$WORK/coord/identity.pub"
peers { id: $j address: "127.0.0.1:$((BASE + j))" }
job {
  spec {
    algorithm: "dpsgd"
    compression: "none"
    model: "softmax"
    dataset: "$DATASET"
    data_dir: "/usr/share/datasets/fashion-mnist"
    partition: "iid"
    nodes: 2
    topology: "ring"
    rounds: $ROUNDS
    lr: 0.1
    batch: 32
    round_timeout: 30
    eval_every: 0
  }
  checkpoint_every: 50
}
$LOCAL
threads: 1
linger: 1
log_level: "warning"
CFG
  "$MURMURD" --config "$WORK/n$i.textproto" > "$WORK/n$i.log" 2>&1 &
  PIDS+=($!)
done
rss() { awk -v k="$2" '$1 == k":" { print $2 / 1000 }' "/proc/$1/status" 2>/dev/null || echo "?"; }
sleep 1
echo "dataset $DATASET, $ROUNDS rounds of softmax, 2 daemons"
for i in 0 1; do echo "node $i after 1 s: VmRSS $(rss "${PIDS[$i]}" VmRSS) MB"; done
# Sample until both exit; report the last peak seen.
peak0=0 peak1=0
while kill -0 "${PIDS[0]}" 2>/dev/null || kill -0 "${PIDS[1]}" 2>/dev/null; do
  for i in 0 1; do
    h=$(rss "${PIDS[$i]}" VmHWM)
    [[ "$h" == "?" || -z "$h" ]] && continue
    if [[ $i == 0 ]]; then peak0=$h; else peak1=$h; fi
  done
  sleep 0.2
done
echo "node 0 peak VmHWM $peak0 MB; node 1 peak VmHWM $peak1 MB"
for i in 0 1; do wait "${PIDS[$i]}" || echo "node $i exit status $? ($(tail -1 "$WORK/n$i.log"))"; done
PIDS=()
