# Shell functions for the attack tests (tests/apps/attack_*_test.sh): a fleet
# from tools/fleet.sh, an attacker identity with a certificate of its own, and
# what the tests read from a daemon (metrics, resident memory, CPU time).
# Sourced after setting MURMUR, MURMURD, SRC, HOSTILE, FLEET, BASE_PORT and NAME.
source "$SRC/tools/fleet.sh"
trap 'attack_cleanup' EXIT
ATTACK_PIDS=()

attack_cleanup() {
  local p
  for p in "${ATTACK_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  fleet_stop_all
  [ -n "${KEEP:-}" ] || rm -rf "$FLEET"
}

fail() {
  local i
  echo "FAIL: $*"
  for i in "${!FLEET_PIDS[@]}"; do echo "--- node $i"; tail -n 12 "$FLEET/node$i/log" 2>/dev/null; done
  exit 1
}

# certified_make NAME ID: an identity and a node certificate for node ID in
# $FLEET/NAME; prints hostile_peer's arguments for it.
certified_make() {
  local d=$FLEET/$1
  "$MURMUR" keygen --out "$d" >/dev/null 2>&1
  "$MURMUR" cert issue --coordinator-key "$FLEET/coordinator/identity.key" --node-pub "$d/identity.pub" \
    --node-id "$2" --network "$FLEET_NETWORK" --roles node --days 1 --out "$d/node.cert" >/dev/null 2>&1 ||
    fail "cert issue for $1"
  echo "--identity $d/identity.key --cert $d/node.cert --coordinator-key $FLEET/coordinator/identity.pub --network $FLEET_NETWORK"
}

# attacker_make ID: ATTACKER, the arguments of a certified attacker (node ID),
# and LEGIT, those of a legitimate peer (node ID + 1) whose handshakes are timed.
attacker_make() {
  read -r -a ATTACKER <<<"$(certified_make attacker "$1")"
  read -r -a LEGIT <<<"$(certified_make legit $(($1 + 1)))"
}


# rss_kb PID: resident memory in kB.
rss_kb() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"; }

# cpu_ticks PID: user + system CPU time in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# cpu_percent PID SECONDS: the share of one core PID used over the next SECONDS.
cpu_percent() {
  local t0 t1 hz
  hz=$(getconf CLK_TCK)
  t0=$(cpu_ticks "$1")
  sleep "$2"
  t1=$(cpu_ticks "$1")
  echo $(((t1 - t0) * 100 / hz / $2))
}

# now_ms: a monotonic-enough wall clock in milliseconds.
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# wait_connected I N: waits up to 10 s for daemon I to hold N peer sessions.
wait_connected() {
  local _
  for _ in $(seq 100); do [ "$(fleet_metric "$1" murmur_peers_connected)" = "$2" ] && return 0; sleep 0.1; done
  fail "daemon $1 does not hold $2 sessions"
}
