#!/usr/bin/env bash
# 8 real murmurd daemons in the network test bed (docs/netbed.md), each in its
# own namespace behind the access link a device trace gives it (uplinks 5-20
# Mbit/s, downlinks 20-50 Mbit/s, 2-8 ms, 5 ms more on every path, 0.5%
# packet loss on every access link):
#  1. a D-PSGD job (ring, mlp:128 on Fashion-MNIST, dense messages of 0.4 MB)
#     runs to its end on every daemon, and the daemons' test accuracies
#     (mean, min and max over the 8) are those `murmur sim --job` computes
#     for the same job file: TCP recovered every lost packet, so the models
#     are the simulator's;
#  2. a FedAvg job with SecAgg+ (aggregator 0, 7 clients) does the same: the
#     aggregator's global model has the simulator's test accuracy.
# Each part prints the fleet's wall time from submission to the end and the
# simulator's summary on the same links (per-round times are
# tools/netbed/fidelity.sh's: docs/netbed.md, "Fidelity").
# usage: netbed_job_test.sh MURMUR MURMURD NETDELAY SOURCE_DIR
source "$4/tests/apps/netbed_fleet_lib.sh"

cat >"$FLEET/devices.csv" <<'CSV'
node,gflops,up_mbps,down_mbps,latency_ms,availability
0,10,20,50,2,1
1,10,10,50,4,1
2,10,5,20,8,1
3,10,20,50,2,1
4,10,10,20,4,1
5,10,5,50,8,1
6,10,20,20,2,1
7,10,10,50,4,1
CSV
netbed_up --nodes 8 --devices "trace:$FLEET/devices.csv" --latency-ms 5 --packet-loss 0.005 || fail "bed up"
fleet_make 8
for i in $(seq 0 7); do fleet_start "$i" || fail "start $i"; done

# The same links for the simulator.
LINKS=(--devices "trace:$FLEET/devices.csv" --latency-ms 5 --packet-loss 0.005)

# 1. D-PSGD, dense.
cat >"$FLEET/dpsgd.job" <<JOB
job_id: "bed-dpsgd" checkpoint_every: 10
spec { algorithm: "dpsgd" model: "mlp:128" dataset: "fashion-mnist" nodes: 8 topology: "ring"
       rounds: 20 lr: 0.05 local_steps: 1 batch: 32 eval_every: 10 seed: 3 compression: "none" }
JOB
wall=$(run "$FLEET/dpsgd.job") || exit 1
[ "$(fleet_done bed-dpsgd 20/20 8 "$FLEET/status")" -eq 8 ] || { tail -n 12 "$FLEET/status"; fail "not all 8 daemons ended at 20/20"; }
daemons=$(grep -o "mean test accuracy [0-9.]*" "$FLEET/status" | tail -n 1 | awk '{ print $4 }')
"$MURMUR" sim --job "$FLEET/dpsgd.job" "${LINKS[@]}" --eval-nodes 8 --eval-samples 1000000 >"$FLEET/sim" 2>&1 ||
  { tail "$FLEET/sim"; fail "murmur sim"; }
sim=$(grep -o "node accuracy mean [0-9.]*" "$FLEET/sim" | tail -n 1 | awk '{ print $4 }')
[ -n "$sim" ] && [ "$sim" = "$daemons" ] || { tail -n 3 "$FLEET/sim"; fail "the daemons' mean accuracy $daemons is not the simulator's $sim"; }
echo "1. D-PSGD on 8 shaped daemons: mean test accuracy $daemons, murmur sim's $sim; wall ${wall} s for 20 rounds"
tail -n 2 "$FLEET/sim"

# 2. FedAvg with SecAgg+: aggregator 0, clients 1..7.
cat >"$FLEET/fedavg.job" <<JOB
job_id: "bed-fedavg" aggregator: 0
spec { algorithm: "fedavg" model: "softmax" dataset: "fashion-mnist" nodes: 7 clients_per_round: 0
       rounds: 10 lr: 0.1 eval_every: 5 seed: 4 compression: "none" secure_aggregation: true }
JOB
wall=$(run "$FLEET/fedavg.job") || exit 1
[ "$(fleet_done bed-fedavg 10/10 8 "$FLEET/status")" -eq 8 ] || { tail -n 12 "$FLEET/status"; fail "not all 8 daemons ended at 10/10"; }
global=$(grep -o "global model test accuracy [0-9.]*" "$FLEET/status" | awk '{ print $5 }')
# The simulator's clients 0..6 are daemons 1..7 (client index c is node c + 1
# above the aggregator, docs/daemon.md); its server has an edge-server's links.
awk -F, 'NR == 1 || $1 == "#" { print; next } $1 > 0 { $1 = $1 - 1; print }' OFS=, "$FLEET/devices.csv" >"$FLEET/clients.csv"
"$MURMUR" sim --job "$FLEET/fedavg.job" --devices "trace:$FLEET/clients.csv" --latency-ms 5 --packet-loss 0.005 >"$FLEET/sim" 2>&1 ||
  { tail "$FLEET/sim"; fail "murmur sim (fedavg)"; }
sim=$(grep -o "final (round 10): global model test accuracy [0-9.]*" "$FLEET/sim" | awk '{ print $8 }')
[ -n "$sim" ] && [ "$sim" = "$global" ] || { tail -n 3 "$FLEET/sim"; fail "the aggregator's accuracy $global is not the simulator's $sim"; }
echo "2. FedAvg with SecAgg+ on 8 shaped daemons: global model test accuracy $global, murmur sim's $sim; wall ${wall} s for 10 rounds"
tail -n 2 "$FLEET/sim"

echo "netbed job test passed"
