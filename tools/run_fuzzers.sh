#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a bounded time.
# Usage: tools/run_fuzzers.sh [seconds per target, default 60]
# Exits non-zero when a target crashes (the reproducer is left in build/fuzz/artifacts).
set -euo pipefail
seconds="${1:-60}"
root="${MURMUR_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
build="$root/build/fuzz"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DMURMUR_FUZZ=ON \
  -DMURMUR_CUDA=OFF -DMURMUR_BUILD_TESTS=OFF -DMURMUR_BUILD_BENCH=OFF -DMURMUR_PYTHON=OFF -DMURMUR_TORCH=OFF -DMURMUR_MPI=OFF -DMURMUR_METIS=OFF >/dev/null
targets=(update_decoder_fuzzer frame_fuzzer handshake_fuzzer secagg_decoder_fuzzer membership_decoder_fuzzer fed_message_fuzzer
  job_message_fuzzer envelope_fuzzer npy_fuzzer trace_fuzzer sumo_fuzzer artifact_store_fuzzer)
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
mkdir -p "$build/artifacts"
for t in "${targets[@]}"; do
  work="$build/corpus/$t"
  mkdir -p "$work"
  echo "== $t for ${seconds}s"
  # New inputs go to the scratch corpus; the committed seeds are read only.
  "$build/fuzz/$t" -max_total_time="$seconds" -artifact_prefix="$build/artifacts/$t-" \
    "$work" "$root/fuzz/corpus/$t"
done
