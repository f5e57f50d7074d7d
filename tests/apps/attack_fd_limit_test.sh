#!/usr/bin/env bash
# The file-descriptor limit (docs/security.md "Attacks and their bounds"):
#  1. under RLIMIT_NOFILE 64 a daemon with the default limits (1,272
#     descriptors) refuses to start, naming both;
#  2. with limits that fit 64, 100 idle connections from 10 source
#     addresses, reopened when closed, keep its CPU under 20% of a core and a
#     legitimate handshake completes within 0.5 s, 5 times out of 5;
#  3. squeezed to the descriptors it holds (prlimit on the running daemon:
#     every accept then fails with EMFILE), the same holds: the listener
#     sheds its oldest pending handshake to take the next connection, or
#     backs off, and the failures are counted and logged at most once per
#     10 s, not once per attempt.
# usage: attack_fd_limit_test.sh MURMUR MURMURD SOURCE_DIR HOSTILE_PEER
set -euo pipefail
MURMUR=$1 MURMURD=$2 SRC=$3 HOSTILE=$4 NAME=fd_limit
FLEET=$(mktemp -d /tmp/murmur-fd.XXXXXX)
BASE_PORT=$((20000 + ($$ % 60) * 200 + 69))
source "$SRC/tests/apps/attack_lib.sh"

fleet_make 1
attacker_make 7
conf=$FLEET/node0/node.conf
if prlimit --nofile=64:64 "$MURMURD" --config "$conf" >"$FLEET/refused" 2>&1; then fail "started under 64 descriptors"; fi
grep -q "the configured limits need 1272 (max_sessions 1024 .*RLIMIT_NOFILE is 64 (hard 64)" "$FLEET/refused" ||
  { cat "$FLEET/refused"; fail "the refusal does not name the limits"; }
echo "default limits under RLIMIT_NOFILE 64: $(tail -n 1 "$FLEET/refused")"

# 32 + 8 + 8 + (2 + 4) + 8 = 62 descriptors.
printf 'max_sessions: 8\nmax_pending_handshakes: 8\nmax_pending_handshakes_per_address: 4\n' >>"$conf"
printf 'control_max_sessions: 2\ncontrol_max_pending: 4\n' >>"$conf"
FLEET_LAUNCH=(prlimit --nofile=64:64)
fleet_start 0
pid=${FLEET_PIDS[0]}
"$HOSTILE" hold --daemon "127.0.0.1:$BASE_PORT" --count 100 --from 127.0.4.1-10 --reopen-ms 100 --seconds 40 \
  >"$FLEET/hold" &
ATTACK_PIDS+=($!)
check() {  # check WHAT: CPU over 5 s and 5 legitimate handshakes
  local cpu max
  sleep 1
  cpu=$(cpu_percent "$pid" 5)
  "$HOSTILE" handshake --daemon "127.0.0.1:$BASE_PORT" --from 127.0.0.9 --as 8 --count 5 "${LEGIT[@]}" \
    >"$FLEET/handshakes" || true
  max=$(awk '/^handshakes:/ { print int($NF) }' "$FLEET/handshakes")
  echo "$1: CPU $cpu% of a core; $(tail -n 1 "$FLEET/handshakes")"
  [ "$cpu" -lt 20 ] || fail "$1: CPU $cpu%"
  grep -q "handshakes: 5 of 5 completed" "$FLEET/handshakes" || { cat "$FLEET/handshakes"; fail "$1: a handshake failed"; }
  [ "$max" -lt 500 ] || fail "$1: a legitimate handshake took $max ms"
}
check "limits that fit 64, 100 idle connections"
open_fds=$(ls "/proc/$pid/fd" | wc -l)
prlimit --pid "$pid" --nofile=$open_fds:64
check "squeezed to the $open_fds descriptors it holds"
prlimit --pid "$pid" --nofile=64:64  # room for the operator's connection again
errors=$(fleet_metric 0 murmur_accept_resource_errors_total)
lines=$(grep -c "failed .* times: Too many open files" "$FLEET/node0/log" || true)
echo "accept: $errors failures for want of descriptors, $lines log lines"
[ "$errors" -gt 0 ] || fail "the daemon never hit its descriptor limit"
[ "$lines" -le 3 ] || fail "$lines log lines for $errors failures"
echo "attack fd_limit test passed"
