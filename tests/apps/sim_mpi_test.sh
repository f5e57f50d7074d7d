#!/usr/bin/env bash
# mpirun -np R murmur sim, R = 1, 2, 3 and 4, writes the metrics file of the
# plain murmur sim run of the same scenario and seed, column for column but
# wall time (docs/simulator.md, "Across processes"), for every gossip
# algorithm family and for flat, buffered and hierarchical federated runs,
# with nodes placed in id blocks and by graph partition; a scenario a
# partitioned run refuses ends every rank with one error, and a rank that
# dies ends the job instead of leaving it waiting.
# usage: sim_mpi_test.sh MURMUR
set -euo pipefail
MURMUR=$1
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
# Root in CI and in containers; several ranks on a 2-core machine.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# More ranks than cores: a rank waiting in a collective yields its core instead of spinning.
export OMPI_MCA_mpi_yield_when_idle=1
MPIRUN=(mpirun --oversubscribe -np)
# The columns but wall_s (the third).
strip() { cut -d, -f1,2,4- "$1"; }

common=(--dataset synthetic:blobs --model mlp:16 --nodes 13 --rounds 24 --eval-every 6 --eval-samples 400
  --eval-nodes 5 --lr 0.1 --devices phone:0.5,iot:0.5 --loss 0.05 --jitter 0.3 --churn-online 0.5 --period 0.05
  --threads 1 --quiet)
cases=(
  "dpsgd|--algorithm dpsgd --compression fp16"
  "choco|--algorithm dpsgd --compression topk:0.1"
  "push-sum|--algorithm push-sum --topology exponential --compression fp16"
  "dsgt|--algorithm dsgt --compression none"
  "gossip-learning|--algorithm gossip-learning --compression int8"
  "diloco-allreduce|--algorithm diloco-allreduce --local-steps 4 --compression int8"
  "fedavg|--algorithm fedavg --clients-per-round 5 --compression none --upload-compression topk:0.3"
  "fedbuff|--algorithm fedbuff --clients-per-round 4 --compression none"
  "hierarchical|--algorithm fedavg --edge-aggregators 3 --clients-per-round 6 --compression none --loss 0"
)
for c in "${cases[@]}"; do
  name=${c%%|*}
  read -r -a flags <<<"${c#*|}"
  "$MURMUR" sim "${common[@]}" "${flags[@]}" --metrics-csv "$DIR/$name-plain.csv" >"$DIR/out" 2>&1 ||
    { cat "$DIR/out"; echo "FAIL: plain $name run"; exit 1; }
  for ranks in 1 2 3 4; do
    "${MPIRUN[@]}" "$ranks" "$MURMUR" sim "${common[@]}" "${flags[@]}" --metrics-csv "$DIR/$name-$ranks.csv" \
      >"$DIR/out" 2>&1 || { cat "$DIR/out"; echo "FAIL: $name on $ranks ranks"; exit 1; }
    if ! diff <(strip "$DIR/$name-plain.csv") <(strip "$DIR/$name-$ranks.csv") >"$DIR/diff"; then
      cat "$DIR/diff"
      echo "FAIL: $name on $ranks ranks differs from the plain run"
      exit 1
    fi
  done
  points=$(($(wc -l <"$DIR/$name-plain.csv") - 1))
  echo "$name: 1-4 ranks give the plain run's $points points"
done

# The placement changes no bit, only the traffic between ranks: id blocks
# against the graph partition on a random geometric graph, whose ids say
# nothing of who is near whom. The dataset is read once per host: no rank
# falls back to a copy of its own, and no shared object is left behind.
shm_before=$(ls /dev/shm | grep -c '^murmur-data-' || true)
geo=("${common[@]}" --algorithm dpsgd --compression none --nodes 100 --topology geometric:0.2)
"$MURMUR" sim "${geo[@]}" --metrics-csv "$DIR/geo-plain.csv" >/dev/null 2>&1
declare -A crossed
for placement in blocks graph; do
  "${MPIRUN[@]}" 3 "$MURMUR" sim "${geo[@]}" --placement "$placement" \
    --metrics-csv "$DIR/geo-$placement.csv" >"$DIR/out" 2>&1 || { cat "$DIR/out"; echo "FAIL: $placement"; exit 1; }
  diff <(strip "$DIR/geo-plain.csv") <(strip "$DIR/geo-$placement.csv") ||
    { echo "FAIL: $placement placement differs from the plain run"; exit 1; }
  line=$(grep "^ranks: 3 ($placement placement)" "$DIR/out") || { cat "$DIR/out"; echo "FAIL: no ranks line"; exit 1; }
  crossed[$placement]=$(echo "$line" | sed -E 's/.*placement\), ([0-9]+) messages.*/\1/')
  ! grep -q "could not share the dataset" "$DIR/out" || { cat "$DIR/out"; echo "FAIL: dataset not shared"; exit 1; }
done
echo "geometric graph on 3 ranks: ${crossed[blocks]} messages cross with id blocks, ${crossed[graph]} with the partition"
[ $((crossed[graph] * 3)) -lt "${crossed[blocks]}" ] || { echo "FAIL: the partition does not cut the traffic threefold"; exit 1; }
[ "$(ls /dev/shm | grep -c '^murmur-data-' || true)" -eq "$shm_before" ] || { echo "FAIL: /dev/shm left"; exit 1; }

# Hierarchical FedAvg: each edge aggregator on its clients' rank (placement
# auto) gives the same metrics as id blocks, with less crossing.
hier=("${common[@]}" --algorithm fedavg --edge-aggregators 4 --clients-per-round 12 --compression none --loss 0
  --nodes 40)
"$MURMUR" sim "${hier[@]}" --metrics-csv "$DIR/hier-plain.csv" >/dev/null 2>&1
for placement in blocks auto; do
  "${MPIRUN[@]}" 4 "$MURMUR" sim "${hier[@]}" --placement "$placement" --metrics-csv "$DIR/hier-$placement.csv" \
    >"$DIR/out" 2>&1 || { cat "$DIR/out"; echo "FAIL: hierarchical, $placement"; exit 1; }
  diff <(strip "$DIR/hier-plain.csv") <(strip "$DIR/hier-$placement.csv") ||
    { echo "FAIL: hierarchical with placement $placement differs from the plain run"; exit 1; }
  crossed[$placement]=$(sed -nE 's/^ranks: 4 \(.*placement\), ([0-9]+) messages.*/\1/p' "$DIR/out")
done
grep -q "^ranks: 4 (edge clusters placement)" "$DIR/out" || { cat "$DIR/out"; echo "FAIL: not edge clusters"; exit 1; }
echo "hierarchical on 4 ranks: ${crossed[blocks]} messages cross with id blocks, ${crossed[auto]} with edge clusters"
[ $((crossed[auto] * 2)) -lt "${crossed[blocks]}" ] || { echo "FAIL: edge clusters do not halve the traffic"; exit 1; }

# Summary lines come once, from rank 0, and say how many ranks ran.
"${MPIRUN[@]}" 3 "$MURMUR" sim "${common[@]}" --algorithm dpsgd >"$DIR/out" 2>&1
[ "$(grep -c '^final (round 24)' "$DIR/out")" -eq 1 ] || { cat "$DIR/out"; echo "FAIL: not one summary"; exit 1; }
grep -q "per rank (3 ranks)" "$DIR/out" || { cat "$DIR/out"; echo "FAIL: no rank count"; exit 1; }

# What the ranks refuse is said once, by the lowest rank: exit 1.
set +e
"${MPIRUN[@]}" 2 "$MURMUR" sim "${common[@]}" --compression none --attack sign-flip --attack-fraction 0.2 >"$DIR/out" 2>&1
code=$?
set -e
[ "$code" -ne 0 ] || { cat "$DIR/out"; echo "FAIL: a Byzantine scenario ran on 2 ranks"; exit 1; }
[ "$(grep -c 'runs on one rank only' "$DIR/out")" -eq 1 ] || { cat "$DIR/out"; echo "FAIL: not one refusal"; exit 1; }
# A usage error is printed once, by rank 0.
set +e
"${MPIRUN[@]}" 3 "$MURMUR" sim --nodes 0 >"$DIR/out" 2>&1
set -e
[ "$(grep -c "spec field 'nodes'" "$DIR/out")" -eq 1 ] || { cat "$DIR/out"; echo "FAIL: not one usage error"; exit 1; }

# A rank killed mid-run ends the job: no rank waits forever for it.
set +e
timeout 60 "${MPIRUN[@]}" 3 "$MURMUR" sim "${common[@]}" --rounds 100000 --eval-every 0 >"$DIR/out" 2>&1 &
job=$!
set -e
for _ in $(seq 1 100); do
  pid=$(pgrep -f "^$MURMUR sim .*--rounds 100000" | sed -n 2p || true)  # a rank, not mpirun
  [ -n "$pid" ] && break
  sleep 0.1
done
sleep 1
[ -n "$pid" ] || { cat "$DIR/out"; echo "FAIL: no rank to kill"; exit 1; }
kill -9 "$pid"
set +e
wait "$job"
code=$?
set -e
[ "$code" -ne 0 ] && [ "$code" -ne 124 ] || { cat "$DIR/out"; echo "FAIL: killing a rank left the job running ($code)"; exit 1; }
grep -q "exited on signal 9" "$DIR/out" || { cat "$DIR/out"; echo "FAIL: mpirun did not say a rank was killed"; exit 1; }
echo "sim mpi test passed"
