# What the bed's fleet tests (netbed_job_test.sh, netbed_nat_test.sh) share:
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
