#!/usr/bin/env bash
# The aarch64 cross build under qemu-aarch64 user emulation (docs/edge.md):
#  1. `file` reports both programs as ARM aarch64 executables; their sizes
#     are printed;
#  2. 4 murmurd processes of the cross build run a 30-round D-PSGD job on
#     loopback and every one finishes it;
#  3. their mean test accuracy equals what `murmur sim` of the same build
#     gives for the job's spec (to the 4 decimals both print: the daemons
#     and the simulator build their nodes through one engine);
#  4. the idle RSS of one murmurd is printed (qemu's own memory included);
#  5. the cipher: where the emulated CPU has the AES and PMULL extensions
#     (`murmurd --version` says so), every session of the job ran
#     AES-256-GCM (murmur_sessions_aesgcm_total equals sessions opened),
#     else none did.
# Bounded: 4 idle daemons, a 30-round softmax job, every wait capped.
# usage: arm64_loopback_test.sh MURMUR MURMURD SOURCE_DIR EMULATOR...
set -euo pipefail
MURMUR_BIN=$(realpath "$1") MURMURD_BIN=$(realpath "$2") SRC=$(realpath "$3")
shift 3
EMULATOR=("$@")
FLEET=$(mktemp -d /tmp/murmur-arm64.XXXXXX)
BASE_PORT=$((20000 + ($$ % 60) * 200))  # the cross build's tests run apart from the native suite
source "$SRC/tools/fleet.sh"
trap 'fleet_stop_all; [ -n "${KEEP:-}" ] || rm -rf "$FLEET"' EXIT
fail() {
  echo "FAIL: $*"
  for i in 0 1 2 3; do [ -f "$FLEET/node$i/log" ] && { echo "--- node $i"; tail -n 6 "$FLEET/node$i/log"; }; done
  exit 1
}

# 1. What was built.
for b in "$MURMUR_BIN" "$MURMURD_BIN"; do
  file -b "$b" | grep -q "ARM aarch64" || fail "$(basename "$b") is not an aarch64 executable: $(file -b "$b")"
done
echo "1. aarch64 executables: murmur $(stat -c %s "$MURMUR_BIN") bytes, murmurd $(stat -c %s "$MURMURD_BIN") bytes"

# The programs, run through the emulator.
mkdir -p "$FLEET/bin"
for p in murmur murmurd; do
  bin=$MURMUR_BIN
  [ $p = murmurd ] && bin=$MURMURD_BIN
  printf '#!/bin/sh\nexec %s %s "$@"\n' "${EMULATOR[*]}" "$bin" >"$FLEET/bin/$p"
  chmod +x "$FLEET/bin/$p"
done
MURMUR=$FLEET/bin/murmur MURMURD=$FLEET/bin/murmurd

# 2. Four daemons, one job.
fleet_make 4
for i in 0 1 2 3; do fleet_start "$i" || fail "start $i"; done
sleep 1
rss=$(awk '/VmRSS/ { print $2 }' "/proc/${FLEET_PIDS[0]}/status")
cat >"$FLEET/job" <<JOB
job_id: "arm64" checkpoint_every: 10
spec { algorithm: "dpsgd" model: "softmax" dataset: "synthetic:blobs" nodes: 4 topology: "ring"
       local_steps: 2 rounds: 30 lr: 0.05 round_timeout: 5 eval_every: 10 seed: 5 compression: "none" }
JOB
"$MURMUR" job submit "$FLEET/job" "${FLEET_OP[@]}" >/dev/null || fail "submit"
timeout 120 "$MURMUR" job status --wait --interval 1 "${FLEET_OP[@]}" >"$FLEET/status" ||
  { cat "$FLEET/status"; fail "job status --wait"; }
done_count=$(fleet_done arm64 30/30 4 "$FLEET/status")
[ "$done_count" -eq 4 ] || { cat "$FLEET/status"; fail "$done_count of 4 daemons finished round 30"; }
daemons=$(grep -o "mean test accuracy [0-9.]*" "$FLEET/status" | awk '{ print $4 }')
echo "2. 4 aarch64 daemons finished the 30-round job: mean test accuracy $daemons"

# 3. The simulator of the same build, on the job's spec.
"$MURMUR" sim --job "$FLEET/job" --eval-nodes 4 --eval-samples 1000000 >"$FLEET/sim" 2>&1 || { tail "$FLEET/sim"; fail "murmur sim"; }
sim=$(grep -o "node accuracy mean [0-9.]*" "$FLEET/sim" | awk '{ print $4 }')
[ -n "$sim" ] && [ "$sim" = "$daemons" ] || fail "the daemons' mean accuracy $daemons is not the simulator's $sim"
echo "3. murmur sim of the same spec: node accuracy mean $sim, the daemons' own"
echo "4. idle RSS of one murmurd under qemu-aarch64 (qemu included): $((rss / 1024)) MB"

# 5. The cipher the aarch64 daemons negotiated among themselves.
cpu=$("$MURMURD" --version | sed -n 2p)
opened=$(fleet_metric 0 murmur_sessions_opened_total) aes=$(fleet_metric 0 murmur_sessions_aesgcm_total)
[ "$opened" -gt 0 ] || fail "daemon 0 opened no session ($opened)"
if grep -q "AES-256-GCM" <<<"$cpu"; then
  [ "$aes" = "$opened" ] || fail "$aes of $opened sessions on AES-256-GCM, though '$cpu'"
else
  [ "$aes" = 0 ] || fail "$aes sessions on AES-256-GCM, though '$cpu'"
fi
echo "5. $cpu; daemon 0: $aes of $opened sessions on AES-256-GCM"
echo "arm64 loopback test passed"
