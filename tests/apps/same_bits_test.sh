#!/usr/bin/env bash
# Same bits on every machine (docs/simulator.md, "Same bits on every
# machine"): the metrics file of a run does not depend on which kernels ran
# or how the program was built. Each scenario below runs
#   - on this build (-march=native) at every kernel level this CPU has,
#     forced with MURMUR_SIMD (generic, avx2, avx512), and with 1, 2 and 8
#     worker threads (8: what a larger machine runs by default);
#   - on the portable build (no -march: the package's x86-64 baseline, SSE2,
#     so no fused multiply-add outside the dispatched kernels), at its best
#     level and at the generic level, whose fused multiply-adds are then C
#     library calls instead of instructions (20 to 40 times slower, so that
#     variant runs fewer rounds, against the native build's best level on
#     the same fewer rounds);
# and every metrics file, wall_s left out, must equal the first bit for bit.
# The scenarios: the README's main job (murmur sim with its defaults:
# CHOCO-SGD with top-1%, 64 nodes, 300 rounds), a convolutional network
# with every layer kind (a first convolution on im2col, a direct one, group
# norm, max and average pooling, dense; with momentum), FedAvg, and DiLoCo
# with AdamW inside and Adam outside (square roots, bias corrections).
# usage: same_bits_test.sh MURMUR PORTABLE_MURMUR
set -uo pipefail
MURMUR=$(realpath "$1")
PORTABLE=$2
WORK=$(mktemp -d /tmp/murmur-same-bits.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
failures=0 compared=0

if [ ! -x "$PORTABLE" ]; then
  echo "FAIL: no portable build at $PORTABLE (./dev test builds it: cmake --preset package && cmake --build build/package --target murmur)"
  exit 1
fi

# The levels a binary's CPU line names: "kernels L (of BEST)".
levels_of() {
  case $("$1" --version | sed -n 's/.*kernels [a-z0-9]* (of \([a-z0-9]*\)).*/\1/p') in
    avx512) echo generic avx2 avx512 ;;
    avx2) echo generic avx2 ;;
    *) echo generic ;;
  esac
}
read -r -a LEVELS <<<"$(levels_of "$MURMUR")"
echo "this CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); levels: ${LEVELS[*]}"

# run NAME BINARY LEVEL ARGS...: the run's metrics, wall_s left out, in $WORK/NAME.csv.
run() {
  local name=$1 bin=$2 level=$3
  shift 3
  local begin=$SECONDS
  if ! MURMUR_SIMD=$level "$bin" sim "$@" --quiet --metrics-csv "$WORK/raw.csv" >"$WORK/out" 2>&1; then
    echo "FAIL: $name: murmur sim $* failed"
    tail -n 5 "$WORK/out" | sed 's/^/    /'
    failures=$((failures + 1))
    return 1
  fi
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "wall_s") w = i }
           { out = ""; for (i = 1; i <= NF; i++) if (i != w) out = out (out == "" && i == 1 ? "" : ",") $i; print out }' \
    "$WORK/raw.csv" >"$WORK/$name.csv"
  echo "  $name: $(tail -n 1 "$WORK/$name.csv" | cut -c1-60)... ($((SECONDS - begin)) s)"
}

# same A B TITLE: compares two metrics files.
same() {
  compared=$((compared + 1))
  if ! cmp -s "$WORK/$1.csv" "$WORK/$2.csv"; then
    echo "FAIL: $3: $2 differs from $1:"
    diff "$WORK/$1.csv" "$WORK/$2.csv" | head -n 6 | sed 's/^/    /'
    failures=$((failures + 1))
  fi
}

# scenario TITLE SHORT ARGS...: every variant of ARGS against the first; the
# portable build's generic level runs ARGS SHORT (fewer rounds), against the
# native build's best level on ARGS SHORT.
scenario() {
  local title=$1 short=$2
  shift 2
  echo "$title: murmur sim $*"
  local name best=native-${LEVELS[-1]}
  for level in "${LEVELS[@]}"; do
    run "native-$level" "$MURMUR" "$level" "$@"
  done
  run native-1-thread "$MURMUR" "${LEVELS[-1]}" "$@" --threads 1
  run native-8-threads "$MURMUR" "${LEVELS[-1]}" "$@" --threads 8
  run portable-best "$PORTABLE" "${LEVELS[-1]}" "$@"
  for name in "${LEVELS[@]/#/native-}" native-1-thread native-8-threads portable-best; do
    [ "$name" = native-generic ] && continue
    [ -f "$WORK/native-generic.csv" ] && [ -f "$WORK/$name.csv" ] && same native-generic "$name" "$title"
  done
  # shellcheck disable=SC2086  # SHORT is a list of flags
  run native-short "$MURMUR" "${LEVELS[-1]}" "$@" $short
  # shellcheck disable=SC2086
  run portable-generic "$PORTABLE" generic "$@" $short
  [ -f "$WORK/native-short.csv" ] && [ -f "$WORK/portable-generic.csv" ] && same native-short portable-generic "$title"
  rm -f "$WORK"/*.csv
}

scenario "the main job" "--rounds 20 --eval-every 10"
scenario "a CNN" "--rounds 3 --eval-every 3" --model cnn:c8k5p2,gn4,pool2,c16k3p1,avg2,d32 --nodes 6 --rounds 6 \
  --eval-every 3 --batch 16 --momentum 0.9 --compression none
scenario "FedAvg" "--rounds 5 --eval-every 5" --algorithm fedavg --model mlp:64 --nodes 40 --rounds 20 --eval-every 5
scenario "DiLoCo with Adam" "--rounds 4 --eval-every 4" --algorithm diloco --optimizer adamw --lr 0.002 \
  --outer-optimizer adam --outer-lr 0.3 --local-steps 5 --nodes 8 --model mlp:32 --rounds 12 --eval-every 4

if [ $failures -gt 0 ]; then
  echo "$failures of $compared comparisons failed"
  exit 1
fi
echo "same bits test passed: $compared metrics files equal bit for bit"
