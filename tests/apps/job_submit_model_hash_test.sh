#!/usr/bin/env bash
# `murmur job submit` fills in a TorchScript job's empty model_blake2b with
# the BLAKE2b-512 of the operator's copy of the model file (next to the job
# file here), equal to what coreutils' b2sum prints, and refuses the job,
# naming the field, when there is no copy (docs/daemon.md, "TorchScript
# models"). No daemon is needed: both happen before any is called (port 9 of
# loopback, the discard port, has no daemon, so the submit fails after).
# usage: job_submit_model_hash_test.sh MURMUR
set -uo pipefail
MURMUR=$1
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
printf 'job_id: "ts"\nspec {\n  model: "torchscript:model.pt"\n  dataset: "synthetic:blobs"\n  nodes: 4\n  rounds: 2\n}\n' \
  >"$DIR/ts.job"
cd /
if "$MURMUR" job submit "$DIR/ts.job" --daemon 127.0.0.1:9 >"$DIR/out" 2>&1; then fail "submitted without a model file"; fi
grep -q "spec field 'model_blake2b' is empty and the model file 'model.pt' is neither here nor next to the job file" \
  "$DIR/out" || { cat "$DIR/out"; fail "the refusal does not name the field and the file"; }
echo "without the file: $(tail -n 1 "$DIR/out")"
printf 'not really a model' >"$DIR/model.pt"
want=$(b2sum "$DIR/model.pt" | cut -d' ' -f1)
"$MURMUR" job submit "$DIR/ts.job" --daemon 127.0.0.1:9 >"$DIR/out" 2>&1
grep -qF "spec field 'model_blake2b' set to the BLAKE2b of $DIR/model.pt: $want" "$DIR/out" ||
  { cat "$DIR/out"; fail "the hash filled in is not b2sum's $want"; }
echo "with the file: model_blake2b $want (b2sum's)"
echo "job submit model hash test passed"
