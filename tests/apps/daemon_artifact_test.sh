#!/usr/bin/env bash
# Artifacts through the CLI (docs/daemon.md "Artifacts"): three real murmurd
# processes with empty data directories get a TorchScript job whose model
# file lies only next to the operator's job file.
#  1. `murmur job submit` gives the fleet the file: no daemon had it, the
#     operator uploads it to one and the other two fetch it from the daemons
#     that hold it; each stores it under artifacts/ by its b2sum, and the
#     job trains to its end on every daemon;
#  2. a second job of the same model moves no bytes;
#  3. a daemon's stored copy altered on disk is found at the next submit,
#     named with both hashes, fetched again from the other daemons, and that
#     job trains too;
#  4. with --artifact-uploads 3 the operator uploads a new model to all three.
# usage: daemon_artifact_test.sh MURMUR MURMURD SOURCE_DIR MODEL.pt
set -euo pipefail
MURMUR=$1 MURMURD=$2 SRC=$3 MODEL=$4
FLEET=$(mktemp -d /tmp/murmur-artifact.XXXXXX)
BASE_PORT=$((20000 + ($$ % 60) * 200 + 44))
source "$SRC/tools/fleet.sh"
trap 'fleet_stop_all; [ -n "${KEEP:-}" ] || rm -rf "$FLEET"' EXIT
fail() { fleet_fail "$@"; }
fleet_make 3
for i in 0 1 2; do fleet_start "$i"; done
mkdir "$FLEET/op"
cp "$MODEL" "$FLEET/op/model.pt"
hash=$(b2sum "$FLEET/op/model.pt" | cut -d' ' -f1)
size=$(stat -c %s "$FLEET/op/model.pt")
job() {
  printf 'job_id: "%s"\nspec {\n  model: "torchscript:model.pt" dataset: "synthetic:blobs" nodes: 3 rounds: 10\n  topology: "ring" lr: 0.05 eval_every: 5 compression: "none"\n}\n' \
    "$1" >"$FLEET/op/$1.job"
  echo "$FLEET/op/$1.job"
}
run() {  # run JOB: submit from elsewhere (the file is found next to the job file), wait, check
  (cd / && "$MURMUR" job submit "$(job "$1")" "${FLEET_OP[@]}") >"$FLEET/submit.out" 2>&1 ||
    { cat "$FLEET/submit.out"; fail "submit of $1 failed"; }
  "$MURMUR" job status --wait --interval 0.2 "${FLEET_OP[@]}" >"$FLEET/status.out" 2>&1 ||
    { cat "$FLEET/status.out"; fail "job $1 did not end done on every daemon"; }
  [ "$(fleet_done "$1" 10/10 3 "$FLEET/status.out")" = 3 ] || { cat "$FLEET/status.out"; fail "job $1 not done 10/10 on 3"; }
  grep "^murmur job submit: " "$FLEET/submit.out" || true
  tail -n 1 "$FLEET/status.out"
}

echo "== 1. three daemons without the file"
run first
grep -q "artifact model.pt (.*BLAKE2b ${hash:0:16}...): 0 of 3 daemons had it; uploaded to 1 ($size bytes), fetched by 2 from other daemons" \
  "$FLEET/submit.out" || fail "the submit did not upload once and have the others fetch"
total=0
for i in 0 1 2; do
  cmp -s "$FLEET/op/model.pt" "$FLEET/node$i/artifacts/$hash" || fail "daemon $i has no copy at artifacts/$hash"
  [ ! -e "$FLEET/node$i/model.pt" ] || fail "daemon $i has a model.pt in its data dir"
  got=$(fleet_metric "$i" murmur_artifact_bytes_received_total)
  [ "$got" = "$size" ] || fail "daemon $i took $got bytes, not $size"
  total=$((total + $(fleet_metric "$i" murmur_artifact_bytes_fetched_total)))
done
[ "$total" = $((2 * size)) ] || fail "the daemons fetched $total bytes from each other, not $((2 * size))"
echo "every daemon stores it as artifacts/$hash (b2sum's) and took $size bytes, from the operator or a daemon"

echo "== 2. the same model again"
run second
grep -q "3 of 3 daemons had it; uploaded to 0 (0 bytes), fetched by 0" "$FLEET/submit.out" || fail "the second job moved bytes"

echo "== 3. a stored copy altered on disk"
printf 'X' | dd of="$FLEET/node1/artifacts/$hash" bs=1 seek=100 conv=notrunc status=none
altered=$(b2sum "$FLEET/node1/artifacts/$hash" | cut -d' ' -f1)
run third
grep -q "has BLAKE2b $altered, not its name $hash" "$FLEET/submit.out" || fail "the altered copy was not named with both hashes"
grep -q "2 of 3 daemons had it; uploaded to 0 (0 bytes), fetched by 1 from other daemons" "$FLEET/submit.out" ||
  fail "the altered copy was not fetched again"
cmp -s "$FLEET/op/model.pt" "$FLEET/node1/artifacts/$hash" || fail "daemon 1's copy was not restored"
[ "$(fleet_metric 1 murmur_artifact_refusals_total)" = 1 ] || fail "daemon 1 did not count the refusal"

echo "== 4. --artifact-uploads 3: the operator uploads a new model to every daemon"
cp "$(dirname "$MODEL")/mlp.pt" "$FLEET/op/model.pt"  # the fixtures' MLP: a file no daemon has
size=$(stat -c %s "$FLEET/op/model.pt")
(cd / && "$MURMUR" job submit "$(job fourth)" --artifact-uploads 3 "${FLEET_OP[@]}") >"$FLEET/submit.out" 2>&1 ||
  { cat "$FLEET/submit.out"; fail "submit of fourth failed"; }
grep "^murmur job submit: artifact" "$FLEET/submit.out"
grep -q "0 of 3 daemons had it; uploaded to 3 ($((3 * size)) bytes), fetched by 0" "$FLEET/submit.out" ||
  fail "the operator did not upload to all three"
echo "daemon artifact test passed"
