#!/usr/bin/env bash
# Daemons behind NAT in the network test bed (docs/daemon.md "Behind NAT"):
# 8 daemons, 5 ms access links, nodes 3 and 6 each behind a NAT router of
# its own that drops every connection opened towards it (only the control
# port forwarded, for the operator in the hub):
#  1. within 10 s nodes 3 and 6 hold sessions with every other daemon
#     although no smaller id can dial them (they dial it themselves:
#     murmur_reverse_dials_total), and each reports the other, which no dial
#     reaches, in its log, murmur_peers_unconnected and `murmur peers`, with
#     the reason;
#  2. a D-PSGD job (ring, mlp:128) runs to its end on all 8, and their mean
#     test accuracy is `murmur sim --job`'s on the same links;
#  3. a FedAvg job with SecAgg+ (aggregator 0, clients 1..7) does the same.
# usage: netbed_nat_test.sh MURMUR MURMURD NETDELAY SOURCE_DIR
source "$4/tests/apps/netbed_fleet_lib.sh"
NATTED=(3 6)

netbed_up --nodes 8 --latency-ms 5 || fail "bed up"
for i in "${NATTED[@]}"; do netbed_nat "$i" --forward $((BASE_PORT + 100 + i)) || fail "NAT $i"; done
fleet_make 8
for i in $(seq 0 7); do fleet_start "$i" || fail "start $i"; done

# 1. Sessions and reports.
connected_all() {
  local i want
  for i in $(seq 0 7); do
    want=7  # every other daemon; one behind NAT reaches all but the other one behind NAT
    case " ${NATTED[*]} " in *" $i "*) want=6 ;; esac
    [ "$(fleet_metric "$i" murmur_peers_connected)" = "$want" ] || return 1
  done
}
start=$(date +%s)
for _ in $(seq 40); do connected_all && break; sleep 0.5; done
for i in $(seq 0 7); do echo -n "node $i: $(fleet_metric "$i" murmur_peers_connected) sessions; "; done; echo
connected_all || fail "the sessions did not all come up"
for i in "${NATTED[@]}"; do
  [ "$(fleet_metric "$i" murmur_reverse_dials_total)" -ge 1 ] || fail "node $i did not dial the smaller ids"
done
for _ in $(seq 20); do
  [ "$(fleet_metric 3 murmur_peers_unconnected)" = 1 ] && [ "$(fleet_metric 6 murmur_peers_unconnected)" = 1 ] && break
  sleep 0.5
done
took=$(($(date +%s) - start))
((took <= 10)) || fail "reports took $took s"
for pair in "3 6" "6 3"; do
  read -r a b <<<"$pair"
  [ "$(fleet_metric "$a" murmur_peers_unconnected)" = 1 ] || fail "node $a does not count node $b as unconnected"
  grep -q "no session with node $b at .*: timed out" "$FLEET/node$a/log" || fail "node $a does not log why node $b is unconnected"
  op peers --daemon "$(fleet_addr "$a"):$((BASE_PORT + 100 + a))" "${FLEET_OP[@]:2}" >"$FLEET/peers" 2>&1
  grep -Eq "^ +$b .* down .*no session for [0-9]+ s: timed out" "$FLEET/peers" || { cat "$FLEET/peers"; fail "murmur peers on node $a does not say why node $b is down"; }
done
echo "1. nodes ${NATTED[*]} behind NAT: sessions with every reachable daemon, each reports the other within $took s:"
grep -E "^ +3 " "$FLEET/peers" | sed 's/^ */   node 6: /'

# 2. D-PSGD.
cat >"$FLEET/dpsgd.job" <<JOB
job_id: "nat-dpsgd" checkpoint_every: 10
spec { algorithm: "dpsgd" model: "mlp:128" dataset: "fashion-mnist" nodes: 8 topology: "ring"
       rounds: 20 lr: 0.05 local_steps: 1 batch: 32 eval_every: 10 seed: 3 compression: "none" }
JOB
daemons=$(gossip_matches_sim "$FLEET/dpsgd.job" 20 5) || exit 1
echo "2. D-PSGD with nodes ${NATTED[*]} behind NAT: mean test accuracy $daemons, equal to murmur sim's"

# 3. FedAvg with SecAgg+.
cat >"$FLEET/fedavg.job" <<JOB
job_id: "nat-fedavg" aggregator: 0
spec { algorithm: "fedavg" model: "softmax" dataset: "fashion-mnist" nodes: 7 clients_per_round: 0
       rounds: 10 lr: 0.1 eval_every: 5 seed: 4 compression: "none" secure_aggregation: true }
JOB
global=$(fedavg_matches_sim "$FLEET/fedavg.job" 10 5) || exit 1
echo "3. FedAvg with SecAgg+, clients ${NATTED[*]} behind NAT: global model test accuracy $global, equal to murmur sim's"
echo "netbed nat test passed"
