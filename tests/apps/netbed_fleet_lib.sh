# What the bed's fleet tests (netbed_job_test.sh, netbed_nat_test.sh, netbed_relay_test.sh) share:
# the binaries from the arguments MURMUR MURMURD NETDELAY SOURCE_DIR, a
# fleet directory, tools/netbed/netbed.sh and tools/fleet.sh, a teardown on
# exit, fail (prints the daemons' last log lines), op (the operator in the
# hub), and run JOB_FILE (submits, waits for the end, prints the wall
# seconds from submission). Sourced with the test's own arguments.
set -uo pipefail
MURMUR=$(realpath "$1") MURMURD=$(realpath "$2") NETBED_DELAY=$3 SRC=$4
FLEET=$(mktemp -d /tmp/murmur-netbed-fleet.XXXXXX)
chmod 755 "$FLEET"
source "$SRC/tools/netbed/netbed.sh"
source "$SRC/tools/fleet.sh"
trap 'fleet_stop_all; netbed_down; rm -rf /tmp/netbed-$NETBED_ID-*; [ -n "${KEEP:-}" ] || rm -rf "$FLEET"' EXIT
fail() {  # on stderr, so that it shows from inside $(run ...) too
  local log
  {
    echo "FAIL: $*"
    for log in "$FLEET"/node*/log; do echo "--- ${log%/log}"; tail -n 5 "$log"; done
  } >&2
  exit 1
}
op() { netbed_hub "$MURMUR" "$@"; }

run() {
  local start end
  start=$(date +%s.%N)
  op job submit "$1" "${FLEET_OP[@]}" >"$FLEET/out" 2>&1 || { cat "$FLEET/out"; fail "submit $1"; }
  timeout 150 "${FLEET_OP_LAUNCH[@]}" "$MURMUR" job status --wait --interval 0.5 "${FLEET_OP[@]}" >"$FLEET/status" 2>&1 ||
    { tail -n 20 "$FLEET/status"; fail "$1 did not complete"; }
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }'
}

# same_models PATTERN: the fleet's line of `murmur job status --model-digests`
# that PATTERN finds is the simulator's ($FLEET/sim): the models are equal bit for bit.
same_models() {
  local fleet simulated
  op job status --model-digests "${FLEET_OP[@]}" >"$FLEET/digests" 2>&1
  fleet=$(grep -E "$1" "$FLEET/digests")
  simulated=$(grep -E "$1" "$FLEET/sim")
  [ -n "$fleet" ] && [ "$fleet" = "$simulated" ] ||
    fail "the fleet's models are not the simulator's: fleet '$fleet', murmur sim '$simulated'"
}

# gossip_matches_sim JOB_FILE ROUNDS LATENCY_MS: runs a gossip job on the
# fleet's 8 daemons to its end, checks that their models are `murmur sim
# --job`'s on links of that latency bit for bit (the digests of
# --model-digests) and so is their mean test accuracy, and prints it.
gossip_matches_sim() {
  local id daemons sim
  id=$(sed -n 's/.*job_id: "\([^"]*\)".*/\1/p' "$1" | head -n 1)
  run "$1" >/dev/null || exit 1
  [ "$(fleet_done "$id" "$2/$2" 8 "$FLEET/status")" -eq 8 ] || { tail -n 12 "$FLEET/status" >&2; fail "not all 8 daemons ended at $2/$2"; }
  daemons=$(grep -o "mean test accuracy [0-9.]*" "$FLEET/status" | tail -n 1 | awk '{ print $4 }')
  "$MURMUR" sim --job "$1" --latency-ms "$3" --eval-nodes 8 --eval-samples 1000000 --model-digests >"$FLEET/sim" 2>&1 ||
    { tail "$FLEET/sim" >&2; fail "murmur sim"; }
  sim=$(grep -o "node accuracy mean [0-9.]*" "$FLEET/sim" | tail -n 1 | awk '{ print $4 }')
  [ -n "$sim" ] && [ "$sim" = "$daemons" ] || { tail -n 3 "$FLEET/sim" >&2; fail "the daemons' mean accuracy $daemons is not the simulator's $sim"; }
  same_models "^model digests:"
  echo "$daemons"
}

# fedavg_matches_sim JOB_FILE ROUNDS LATENCY_MS: the same for a federated
# job: the aggregator's global model, and its test accuracy, against murmur sim's.
fedavg_matches_sim() {
  local id global sim
  id=$(sed -n 's/.*job_id: "\([^"]*\)".*/\1/p' "$1" | head -n 1)
  run "$1" >/dev/null || exit 1
  [ "$(fleet_done "$id" "$2/$2" 8 "$FLEET/status")" -eq 8 ] || { tail -n 12 "$FLEET/status" >&2; fail "not all 8 daemons ended at $2/$2"; }
  global=$(grep -o "global model test accuracy [0-9.]*" "$FLEET/status" | awk '{ print $5 }')
  "$MURMUR" sim --job "$1" --latency-ms "$3" --model-digests >"$FLEET/sim" 2>&1 || { tail "$FLEET/sim" >&2; fail "murmur sim (fedavg)"; }
  sim=$(grep -o "final (round $2): global model test accuracy [0-9.]*" "$FLEET/sim" | awk '{ print $8 }')
  [ -n "$sim" ] && [ "$sim" = "$global" ] || { tail -n 3 "$FLEET/sim" >&2; fail "the aggregator's accuracy $global is not the simulator's $sim"; }
  same_models "^global model digest"
  echo "$global"
}
