#!/usr/bin/env bash
# A real Prometheus server scrapes two murmurd processes on loopback during a
# job (docs/daemon.md, "Prometheus and Grafana"):
#  1. every daemon's exposition passes `promtool check metrics`, idle and
#     after a job;
#  2. packaging/prometheus/murmur-alerts.yml passes `promtool check rules`
#     and its unit tests (`promtool test rules`), and the server loads it;
#  3. the server's HTTP API gives, for each daemon, the rounds of the job,
#     the peers alive, the round trip and throughput from its peer (the
#     value murmur metrics prints), and bytes sent and received that lie between the
#     values `murmur metrics` printed just before and just after the scrape;
#  4. every query of packaging/grafana/murmur-dashboard.json runs on the
#     server without error and returns a series for each daemon.
# Bounded: 2 daemons, a 20-round job, a server in a scratch directory with a
# 1 s scrape interval, every wait capped.
# usage: daemon_prometheus_test.sh MURMUR MURMURD SOURCE_DIR
set -euo pipefail
MURMUR=$(realpath "$1") MURMURD=$(realpath "$2") SRC=$(realpath "$3")
FLEET=$(mktemp -d /tmp/murmur-prometheus.XXXXXX)
BASE_PORT=$((20000 + ($$ % 60) * 200 + 50))  # below the ephemeral range; offsets 0-50 keep the daemon tests apart
PROM_PORT=$((BASE_PORT - 1))  # offset 49
PROM_PID=
source "$SRC/tools/fleet.sh"
trap '[ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null; fleet_stop_all; [ -n "${KEEP:-}" ] || rm -rf "$FLEET"' EXIT
fail() {
  echo "FAIL: $*"
  [ -f "$FLEET/prometheus.log" ] && tail -n 8 "$FLEET/prometheus.log"
  exit 1
}
api() { curl -sf --max-time 5 "http://127.0.0.1:$PROM_PORT/api/v1/$1" "${@:2}"; }
# query EXPR: the instant query's result as "INSTANCE VALUE" lines (python3 reads the JSON).
query() {
  api query --data-urlencode "query=$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["status"] == "success", r
for s in r["data"]["result"]:
    print(s["metric"].get("instance", "-"), s["value"][1])'
}

fleet_make 2
for i in 0 1; do fleet_start "$i" || fail "start $i"; done
declare -A INSTANCE
for i in 0 1; do INSTANCE[$i]=127.0.0.1:$(awk '$1 == "metrics" { print $2 }' "$FLEET/node$i/ports"); done

# 1. The exposition, idle.
for i in 0 1; do
  curl -sf --max-time 5 "http://${INSTANCE[$i]}/metrics" >"$FLEET/metrics$i" || fail "GET /metrics of daemon $i"
  promtool check metrics <"$FLEET/metrics$i" >"$FLEET/lint" 2>&1 || { cat "$FLEET/lint"; fail "promtool check metrics, daemon $i idle"; }
done
echo "1. promtool check metrics: both daemons' expositions pass (idle)"

# 2. The alert rules.
promtool check rules "$SRC/packaging/prometheus/murmur-alerts.yml" >"$FLEET/lint" 2>&1 ||
  { cat "$FLEET/lint"; fail "promtool check rules"; }
(cd "$SRC/packaging/prometheus" && promtool test rules murmur-alerts.test.yml) >"$FLEET/lint" 2>&1 ||
  { cat "$FLEET/lint"; fail "promtool test rules"; }
cat >"$FLEET/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $SRC/packaging/prometheus/murmur-alerts.yml
scrape_configs:
  - job_name: murmur
    static_configs:
      - targets: ["${INSTANCE[0]}", "${INSTANCE[1]}"]
EOF
prometheus --config.file="$FLEET/prometheus.yml" --storage.tsdb.path="$FLEET/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --storage.tsdb.retention.time=1h >"$FLEET/prometheus.log" 2>&1 &
PROM_PID=$!
for _ in $(seq 150); do curl -sf --max-time 1 "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null && break; sleep 0.2; done
curl -sf --max-time 1 "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null || fail "prometheus is not ready after 30 s"
want=$(grep -c -- '- alert:' "$SRC/packaging/prometheus/murmur-alerts.yml")  # every rule of the file, healthy
for _ in $(seq 25); do
  rules=$(api rules | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["groups"]
print(sum(1 for g in r for rule in g["rules"] if rule["health"] != "err"), sum(len(g["rules"]) for g in r))')
  [ "$rules" = "$want $want" ] && break
  sleep 0.2
done
[ "$rules" = "$want $want" ] || fail "the server loaded the rules as: $rules (healthy, total), not $want $want"
echo "2. alert rules: promtool check and unit tests pass; the server loaded all $want rules"

# 3. A job, scraped.
cat >"$FLEET/p1.job" <<EOF
job_id: "p1"
spec {
  algorithm: "dpsgd" topology: "ring" model: "mlp:4096" dataset: "synthetic:blobs"
  nodes: 2 rounds: 20 lr: 0.1 eval_every: 5 compression: "none"
}
EOF
"$MURMUR" job submit "$FLEET/p1.job" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "submit p1"; }
"$MURMUR" job status --wait --interval 0.2 "${FLEET_OP[@]}" >"$FLEET/status" || { cat "$FLEET/status"; fail "p1 did not complete"; }
for i in 0 1; do
  curl -sf --max-time 5 "http://${INSTANCE[$i]}/metrics" >"$FLEET/metrics$i" || fail "GET /metrics of daemon $i"
  promtool check metrics <"$FLEET/metrics$i" >"$FLEET/lint" 2>&1 ||
    { cat "$FLEET/lint"; fail "promtool check metrics, daemon $i after the job"; }
done
for i in 0 1; do
  inst=${INSTANCE[$i]}
  before_sent=$(fleet_metric "$i" murmur_bytes_sent_total) before_received=$(fleet_metric "$i" murmur_bytes_received_total)
  rounds=$(fleet_metric "$i" murmur_rounds_completed_total) alive=$(fleet_metric "$i" murmur_peers_alive)
  # Wait for a scrape that began after `murmur metrics` answered.
  asked=$(date +%s.%N)
  for _ in $(seq 100); do
    t=$(query "timestamp(murmur_bytes_sent_total{instance=\"$inst\"})" | awk '{ print $2 }')
    [ -n "$t" ] && awk -v t="$t" -v a="$asked" 'BEGIN { exit !(t > a + 0.1) }' && break
    sleep 0.2
  done
  p_sent=$(query "murmur_bytes_sent_total{instance=\"$inst\"}" | awk '{ print $2 }')
  p_received=$(query "murmur_bytes_received_total{instance=\"$inst\"}" | awk '{ print $2 }')
  p_rounds=$(query "murmur_rounds_completed_total{instance=\"$inst\"}" | awk '{ print $2 }')
  p_alive=$(query "murmur_peers_alive{instance=\"$inst\"}" | awk '{ print $2 }')
  p_rtt=$(query "murmur_peer_rtt_seconds{instance=\"$inst\"}" | awk '{ print $2 }')
  # The models (mlp:4096, about 590 kB) are timed; after the job the value stays.
  peer=$((1 - i))
  tput=$(fleet_metric "$i" "murmur_peer_throughput_bytes_per_second{peer=\"$peer\"}")
  p_tput=$(query "murmur_peer_throughput_bytes_per_second{instance=\"$inst\",peer=\"$peer\"}" | awk '{ print $2 }')
  after_sent=$(fleet_metric "$i" murmur_bytes_sent_total) after_received=$(fleet_metric "$i" murmur_bytes_received_total)
  [ "$rounds" = 20 ] && [ "$p_rounds" = "$rounds" ] || fail "daemon $i: rounds $p_rounds in Prometheus, $rounds from murmur metrics"
  [ "$alive" = 1 ] && [ "$p_alive" = "$alive" ] || fail "daemon $i: peers alive $p_alive in Prometheus, $alive from murmur metrics"
  # The other daemon's round trip over loopback: measured, and well under the 0.5 s probe timeout.
  awk -v r="$p_rtt" 'BEGIN { exit !(r > 0 && r < 0.5) }' || fail "daemon $i: round trip to its peer '$p_rtt' s"
  awk -v t="$tput" -v p="$p_tput" 'BEGIN { exit !(t > 0 && p > 0.999999 * t && p < 1.000001 * t) }' ||
    fail "daemon $i: throughput from its peer $p_tput B/s in Prometheus, $tput from murmur metrics"
  awk -v a="$before_sent" -v p="$p_sent" -v b="$after_sent" 'BEGIN { exit !(a <= p && p <= b) }' ||
    fail "daemon $i: bytes sent $p_sent in Prometheus, not within murmur metrics' $before_sent..$after_sent"
  awk -v a="$before_received" -v p="$p_received" -v b="$after_received" 'BEGIN { exit !(a <= p && p <= b) }' ||
    fail "daemon $i: bytes received $p_received in Prometheus, not within murmur metrics' $before_received..$after_received"
  echo "3. daemon $i ($inst): rounds $p_rounds, peers alive $p_alive, round trip $p_rtt s, throughput from its peer $p_tput B/s, bytes sent $before_sent <= $p_sent <= $after_sent, received $before_received <= $p_received <= $after_received"
done

# 4. The dashboard's queries.
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["panels"]:
    for t in p.get("targets", []):
        print(t["expr"].replace("$instance", ".*").replace("$__rate_interval", "15s"))' \
  "$SRC/packaging/grafana/murmur-dashboard.json" >"$FLEET/queries"
sleep 2  # rate() over 15 s needs two samples of the finished job's counters at least
n=0
while IFS= read -r q; do
  got=$(query "$q") || fail "dashboard query fails: $q"
  for i in 0 1; do
    grep -q "^${INSTANCE[$i]} " <<<"$got" || fail "dashboard query has no series for daemon $i: $q"
  done
  n=$((n + 1))
done <"$FLEET/queries"
echo "4. the dashboard's $n queries run and return both daemons"
echo "daemon prometheus test passed"
