#!/usr/bin/env bash
# Daemons behind NAT that reach each other through relays, in the network
# test bed (docs/daemon.md "Behind NAT", docs/protocol.md sections 7.4, 7.5):
# 10 daemons on 5 ms access links; nodes 3 and 6 each behind a NAT router of
# its own that drops every connection opened towards it, no port forwarded;
# nodes 8 and 9 relay (`relay: true`) and run no job. Node 3 names them
# (`relays: [8, 9]`); node 6 names none and learns them from membership once
# its probes find it not reachable. The operator, in the hub outside both
# NATs, reaches nodes 3 and 6 through a relay (`3@RELAY:PORT` in its cluster
# file): it submits, watches, stops and reads their metrics and peers that way.
#  1. every daemon holds a session with every other, nodes 3 and 6 with each
#     other through a relay; the probes find nodes 3 and 6 not reachable and
#     the others reachable (metric, log and `murmur peers`); the relays state
#     that they relay, and node 6 states the relays it learned;
#  2. a D-PSGD job on the complete graph (3 and 6 are neighbours) runs to
#     its end on daemons 0-7 and their models are `murmur sim`'s bit for bit;
#     the relay counts what it forwarded;
#  3. a FedAvg job with SecAgg+ (aggregator 0; clients 3 and 6 key each
#     other through the relay) does the same;
#  4. the relay that carries nodes 3 and 6 is killed mid-job: they are back
#     in session through the other within 10 s, and the job runs to its end;
#  5. the operator stops a running job on all 8, and every daemon reports it
#     stopped.
# usage: netbed_relay_test.sh MURMUR MURMURD NETDELAY SOURCE_DIR
source "$4/tests/apps/netbed_fleet_lib.sh"
NATTED=(3 6)
OP_RELAY=9  # the relay the operator reaches nodes 3 and 6 through

netbed_up --nodes 10 --latency-ms 5 || fail "bed up"
for i in "${NATTED[@]}"; do netbed_nat "$i" || fail "NAT $i"; done
fleet_make 10
for i in 8 9; do echo "relay: true" >>"$FLEET/node$i/node.conf"; done
echo "relays: [8, 9]" >>"$FLEET/node3/node.conf"
# The operator's address of daemon I: through OP_RELAY for those behind NAT.
ctl() {
  case " ${NATTED[*]} " in
    *" $1 "*) echo "$1@$(fleet_addr $OP_RELAY):$((BASE_PORT + 100 + OP_RELAY))" ;;
    *) echo "$(fleet_addr "$1"):$((BASE_PORT + 100 + $1))" ;;
  esac
}
metric() {
  op metrics --daemon "$(ctl "$1")" "${FLEET_OP[@]:2}" 2>/dev/null |
    awk -v n="$2" '$1 == n { print $2; found = 1 } END { if (!found) print -1 }'
}
rounds() {
  op job status --daemon "$(ctl "$1")" "${FLEET_OP[@]:2}" 2>/dev/null |
    awk -v job="$2" 'NR == 2 && $3 == job { split($5, r, "/"); print r[1]; found = 1 } END { if (!found) print -1 }'
}
# The relay carrying node 3's session with node 6 (from node 3's `murmur peers`), or nothing.
carrier() {
  op peers --daemon "$(ctl 3)" "${FLEET_OP[@]:2}" 2>/dev/null | awk '$1 == 6 && $3 == "up" && /through relay/ { print $NF }'
}
# The jobs run on daemons 0-7; daemons 8 and 9 only relay.
cluster() { for i in $(seq 0 7); do ctl "$i"; done >"$FLEET/cluster"; }
cluster
# The relays first, so that they are up when nodes 3 and 6 first look for one.
for i in 8 9 $(seq 0 7); do fleet_start "$i" || fail "start $i"; done

# 1. Sessions, reachability, stated addresses.
connected_all() {
  local i
  for i in $(seq 0 9); do [ "$(metric "$i" murmur_peers_connected)" = 9 ] || return 1; done
  [ -n "$(carrier)" ]
}
start=$(date +%s)
for _ in $(seq 90); do connected_all && break; sleep 0.5; done
took=$(($(date +%s) - start))
for i in $(seq 0 9); do echo -n "node $i: $(metric "$i" murmur_peers_connected) sessions; "; done; echo
connected_all || { op peers --daemon "$(ctl 3)" "${FLEET_OP[@]:2}"; fail "the sessions did not all come up"; }
relay=$(carrier)
for i in "${NATTED[@]}"; do
  [ "$(metric "$i" murmur_relayed_sessions_total)" -ge 1 ] || fail "node $i counts no relayed session"
done
reach_ok() {
  local i want
  for i in $(seq 0 9); do
    want=1
    case " ${NATTED[*]} " in *" $i "*) want=0 ;; esac
    [ "$(metric "$i" murmur_reachable)" = "$want" ] || return 1
  done
}
for _ in $(seq 30); do reach_ok && break; sleep 0.5; done
for i in $(seq 0 9); do echo -n "node $i: reachable $(metric "$i" murmur_reachable); "; done; echo
reach_ok || fail "the probes did not find nodes 3 and 6 unreachable and the others reachable"
grep -q "node 3: not reachable by its peers (node [0-9]: dial back to .*: timed out" "$FLEET/node3/log" || fail "node 3 does not log that it is not reachable"
grep -q "node 6: states its address as 192.168.0.2:$((BASE_PORT + 6));relays=[89],[89] (relays learned from membership)" "$FLEET/node6/log" ||
  fail "node 6 did not learn relays 8 and 9"
op peers --daemon "$(ctl 0)" "${FLEET_OP[@]:2}" >"$FLEET/peers0" 2>&1
for i in 8 9; do grep -Eq "^ +$i +[0-9.]+:[0-9]+;relay " "$FLEET/peers0" || { cat "$FLEET/peers0"; fail "node $i does not state that it relays"; }; done
op peers --daemon "$(ctl 3)" "${FLEET_OP[@]:2}" >"$FLEET/peers" 2>&1
grep -q "^node 3 .*; not reachable: node" "$FLEET/peers" || { cat "$FLEET/peers"; fail "murmur peers does not say node 3 is not reachable"; }
echo "1. all 10 daemons in session within $took s, nodes 3 and 6 through relay $relay; node 3 (asked through relay $OP_RELAY):"
head -n 1 "$FLEET/peers" | sed 's/^/   /'
grep -E "^ +6 " "$FLEET/peers" | sed 's/^ */   /'
echo "   node 0 sees node 6 at: $(awk '$1 == 6 { print $2 }' "$FLEET/peers0")"

# 2. D-PSGD on the complete graph.
relayed=$(metric "$relay" murmur_relay_bytes_total)
cat >"$FLEET/dpsgd.job" <<JOB
job_id: "relay-dpsgd" checkpoint_every: 10
spec { algorithm: "dpsgd" model: "mlp:128" dataset: "fashion-mnist" nodes: 8 topology: "complete"
       rounds: 20 lr: 0.05 local_steps: 1 batch: 32 eval_every: 10 seed: 3 compression: "none" }
JOB
daemons=$(gossip_matches_sim "$FLEET/dpsgd.job" 20 5) || exit 1
forwarded=$(($(metric "$relay" murmur_relay_bytes_total) - relayed))
# 20 rounds of a 101,770-parameter model each way between 3 and 6: 16.28 MB and their framing.
((forwarded > 16000000)) || fail "relay $relay forwarded $forwarded bytes during the job"
echo "2. D-PSGD, nodes 3 and 6 neighbours through relay $relay: models equal to murmur sim's (digests), mean test accuracy $daemons; relay $relay forwarded $forwarded bytes"

# 3. FedAvg with SecAgg+.
cat >"$FLEET/fedavg.job" <<JOB
job_id: "relay-fedavg" aggregator: 0
spec { algorithm: "fedavg" model: "softmax" dataset: "fashion-mnist" nodes: 7 clients_per_round: 0
       rounds: 10 lr: 0.1 eval_every: 5 seed: 4 compression: "none" secure_aggregation: true }
JOB
global=$(fedavg_matches_sim "$FLEET/fedavg.job" 10 5) || exit 1
echo "3. FedAvg with SecAgg+, clients 3 and 6 behind NAT: global model equal to murmur sim's (digest), test accuracy $global"

# 4. The carrying relay dies mid-job; the operator goes through the other.
other=$((relay == 8 ? 9 : 8))
OP_RELAY=$other
cluster
cat >"$FLEET/long.job" <<JOB
job_id: "relay-dies" checkpoint_every: 10
spec { algorithm: "dpsgd" model: "mlp:128" dataset: "fashion-mnist" nodes: 8 topology: "complete"
       rounds: 60 lr: 0.05 local_steps: 1 batch: 32 eval_every: 20 seed: 5 compression: "none" round_timeout: 5 }
JOB
op job submit "$FLEET/long.job" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "submit long.job"; }
for _ in $(seq 100); do [ "$(rounds 3 relay-dies)" -ge 10 ] && break; sleep 0.1; done
at=$(rounds 3 relay-dies)
((at >= 10 && at < 60)) || fail "node 3 at round $at when relay $relay was to die"
circuits=$(metric "$other" murmur_relay_circuits_total)
fleet_kill "$relay"
killed=$(date +%s.%N)
moved=""
for _ in $(seq 100); do
  [ "$(carrier)" = "$other" ] && { moved=$(date +%s.%N); break; }
  sleep 0.1
done
[ -n "$moved" ] || { op peers --daemon "$(ctl 3)" "${FLEET_OP[@]:2}"; fail "node 3 did not reach node 6 through relay $other"; }
after=$(awk -v s="$killed" -v e="$moved" 'BEGIN { printf "%.1f", e - s }')
awk -v a="$after" 'BEGIN { exit !(a <= 10) }' || fail "moving to relay $other took $after s"
timeout 150 "${FLEET_OP_LAUNCH[@]}" "$MURMUR" job status --wait --interval 0.5 "${FLEET_OP[@]}" >"$FLEET/status" 2>&1 ||
  { tail -n 20 "$FLEET/status"; fail "relay-dies did not complete"; }
[ "$(fleet_done relay-dies 60/60 8 "$FLEET/status")" -eq 8 ] || { tail -n 12 "$FLEET/status"; fail "not all 8 daemons ended at 60/60"; }
(($(metric "$other" murmur_relay_circuits_total) > circuits)) || fail "relay $other counts no new circuit"
echo "4. relay $relay killed at round $at of node 3: nodes 3 and 6 in session through relay $other after $after s; all 8 daemons ended at 60/60"

# 5. The operator stops a job on all 8, nodes 3 and 6 through a relay.
sed -e 's/relay-dies/relay-stop/' -e 's/rounds: 60/rounds: 100000/' "$FLEET/long.job" >"$FLEET/stop.job"
op job submit "$FLEET/stop.job" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "submit stop.job"; }
for _ in $(seq 100); do [ "$(rounds 6 relay-stop)" -ge 3 ] && break; sleep 0.1; done
op job stop --job-id relay-stop "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "job stop"; }
for _ in $(seq 50); do
  op job status "${FLEET_OP[@]}" >"$FLEET/status" 2>&1
  [ "$(awk '$3 == "relay-stop" && $4 == "stopped"' "$FLEET/status" | wc -l)" -eq 8 ] && break
  sleep 0.2
done
[ "$(awk '$3 == "relay-stop" && $4 == "stopped"' "$FLEET/status" | wc -l)" -eq 8 ] || { cat "$FLEET/status"; fail "not all 8 daemons stopped relay-stop"; }
echo "5. relay-stop stopped by the operator on all 8 daemons (nodes 3 and 6 through relay $other)"
echo "netbed relay test passed"
