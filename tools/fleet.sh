# Shell functions for a murmur fleet on loopback: keys, certificates and
# configs for N daemons, starting and stopping them, and the operator's
# arguments. Sourced by examples/local-cluster.sh and the multi-process tests
# (tests/apps/). Every address is 127.0.0.1, unless fleet_addr is defined
# before sourcing (the network test bed, tools/netbed/netbed.sh: daemon I at
# its namespace's address, started after the words fleet_prefix I prints;
# the operator's commands run after FLEET_OP_LAUNCH).
#
# Set before sourcing: MURMUR, MURMURD (binaries), FLEET (a fresh directory),
# and optionally BASE_PORT (transport ports BASE_PORT+i, control BASE_PORT+100+i)
# and FLEET_LAUNCH (an array of words run before murmurd, e.g. a prlimit).

FLEET_NETWORK=${FLEET_NETWORK:-local-demo}
BASE_PORT=${BASE_PORT:-17100}
FLEET_PIDS=()
FLEET_OP_LAUNCH=(${FLEET_OP_LAUNCH[@]+"${FLEET_OP_LAUNCH[@]}"})
declare -F fleet_addr >/dev/null || fleet_addr() { echo 127.0.0.1; }
# fleet_listen_addr I: where daemon I listens, when that is not the address
# the others dial (a daemon behind a NAT listens on its private address).
declare -F fleet_listen_addr >/dev/null || fleet_listen_addr() { fleet_addr "$1"; }
# fleet_prefix I: the words that run a command where daemon I lives (none here).
declare -F fleet_prefix >/dev/null || fleet_prefix() { :; }

# fleet_make N: a coordinator, an operator and N daemons' identities,
# certificates and configs (no job: the daemons start idle). Every daemon
# sends from 127.0.0.1, so each one's per-address message budget counts all
# of its peers together: 10,000 messages/s per daemon (a ring all-reduce of 8
# at 1,300 rounds/s sends 14 messages a round to each successor, 18,000/s).
fleet_make() {
  local n=$1 i j d
  "$MURMUR" keygen --out "$FLEET/coordinator" >/dev/null 2>&1
  "$MURMUR" keygen --out "$FLEET/operator" >/dev/null 2>&1
  "$MURMUR" cert issue --coordinator-key "$FLEET/coordinator/identity.key" \
    --node-pub "$FLEET/operator/identity.pub" --network "$FLEET_NETWORK" --roles operator --days 1 \
    --out "$FLEET/operator/operator.cert" >/dev/null 2>&1
  : >"$FLEET/cluster"
  for i in $(seq 0 $((n - 1))); do
    d=$FLEET/node$i
    "$MURMUR" keygen --out "$d" >/dev/null 2>&1
    "$MURMUR" cert issue --coordinator-key "$FLEET/coordinator/identity.key" --node-pub "$d/identity.pub" \
      --node-id "$i" --network "$FLEET_NETWORK" --roles node --days 1 --out "$d/node.cert" >/dev/null 2>&1
    {
      echo "node_id: $i"
      echo "listen: \"$(fleet_listen_addr "$i"):$((BASE_PORT + i))\""
      echo "control_listen: \"$(fleet_listen_addr "$i"):$((BASE_PORT + 100 + i))\""
      echo "data_dir: \"$d\""
      echo "network_id: \"$FLEET_NETWORK\""
      echo "coordinator_key: \"$FLEET/coordinator/identity.pub\""
      echo "log_level: \"${FLEET_LOG_LEVEL:-info}\""
      echo "drain_timeout: 2"
      # Every daemon here sends from 127.0.0.1: the per-address message budget is n daemons' worth.
      echo "message_rate_per_address: $((10000 * n))"
      echo "message_burst_per_address: $((20000 * n))"
      for j in $(seq 0 $((n - 1))); do
        [ "$j" -eq "$i" ] || echo "peers { id: $j address: \"$(fleet_addr "$j"):$((BASE_PORT + j))\" }"
      done
    } >"$d/node.conf"
    echo "$(fleet_addr "$i"):$((BASE_PORT + 100 + i))" >>"$FLEET/cluster"
  done
  FLEET_OP=(--cluster "$FLEET/cluster" --identity "$FLEET/operator/identity.key"
            --cert "$FLEET/operator/operator.cert" --coordinator-key "$FLEET/coordinator/identity.pub")
}

# fleet_metric I NAME: daemon I's value of metric NAME (from `murmur metrics`), or -1.
fleet_metric() {
  ${FLEET_OP_LAUNCH[@]+"${FLEET_OP_LAUNCH[@]}"} "$MURMUR" metrics --daemon "$(fleet_addr "$1"):$((BASE_PORT + 100 + $1))" "${FLEET_OP[@]:2}" 2>/dev/null |
    awk -v n="$2" '$1 == n { print $2; found = 1 } END { if (!found) print -1 }'
}

# fleet_start I: starts daemon I (log appended to node I/log) and waits for its ports file.
fleet_start() {
  local i=$1 d=$FLEET/node$1
  rm -f "$d/ports"
  local prefix=()
  read -ra prefix <<<"$(fleet_prefix "$i")"  # words, not a function: $! must be the daemon itself
  ${prefix[@]+"${prefix[@]}"} ${FLEET_LAUNCH[@]+"${FLEET_LAUNCH[@]}"} "$MURMURD" --config "$d/node.conf" 2>>"$d/log" &
  FLEET_PIDS[$i]=$!
  for _ in $(seq 200); do [ -s "$d/ports" ] && return 0; sleep 0.05; done
  echo "fleet: daemon $i did not start:" >&2
  tail -n 5 "$d/log" >&2
  return 1
}

# fleet_kill I [SIGNAL]: signals daemon I (default KILL) and reaps it.
fleet_kill() {
  local pid=${FLEET_PIDS[$1]:-}
  [ -n "$pid" ] || return 0
  kill "-${2:-KILL}" "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  unset "FLEET_PIDS[$1]"
}

# fleet_stop_all: SIGTERM to every daemon still running, then waits for them.
fleet_stop_all() {
  local i
  for i in "${!FLEET_PIDS[@]}"; do kill "${FLEET_PIDS[$i]}" 2>/dev/null || true; done
  for i in "${!FLEET_PIDS[@]}"; do wait "${FLEET_PIDS[$i]}" 2>/dev/null || true; done
  FLEET_PIDS=()
}

# fleet_fail MESSAGE...: prints FAIL and the message, then the last lines of
# each daemon's log, and exits 1.
fleet_fail() {
  local d
  echo "FAIL: $*"
  for d in "$FLEET"/node*/; do
    echo "--- $(basename "$d")"
    tail -n 8 "$d/log" 2>/dev/null || true
  done
  exit 1
}

# fleet_done JOB R/R N FILE: how many daemons the last table of a `murmur job
# status --wait` output in FILE shows done with JOB at R/R, of its N daemons
# (--wait prints a table at every interval: only the last one counts).
fleet_done() {
  awk -v job="$1" '$3 == job' "$4" | tail -n "$3" | awk -v r="$2" '$4 == "done" && $5 == r' | wc -l
}

# fleet_rounds I [JOB]: rounds done by daemon I's job (from `murmur job status`),
# or -1; with JOB, -1 unless that is the job it has.
fleet_rounds() {
  ${FLEET_OP_LAUNCH[@]+"${FLEET_OP_LAUNCH[@]}"} "$MURMUR" job status --daemon "$(fleet_addr "$1"):$((BASE_PORT + 100 + $1))" "${FLEET_OP[@]:2}" 2>/dev/null |
    awk -v job="${2:-}" 'NR == 2 && (job == "" || $3 == job) { split($5, r, "/"); print r[1]; found = 1 }
                         END { if (!found) print -1 }'
}
