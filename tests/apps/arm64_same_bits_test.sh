#!/usr/bin/env bash
# Same bits on x86-64 and aarch64 (docs/simulator.md, "Same bits on every
# machine"): short runs of the aarch64 cross build under qemu-aarch64 write
# the same metrics file, wall_s left out, as the x86-64 build of the same
# tree: D-PSGD with top-1% (the main job's algorithm and model), a
# convolutional network with every layer kind, FedAvg, and DiLoCo with
# AdamW inside and Adam outside.
# usage: arm64_same_bits_test.sh ARM64_MURMUR X86_64_MURMUR EMULATOR...
set -uo pipefail
ARM=$(realpath "$1")
X86=$2
shift 2
EMULATOR=("$@")
WORK=$(mktemp -d /tmp/murmur-arm64-bits.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
if [ ! -x "$X86" ]; then
  echo "FAIL: no x86-64 build at $X86 to compare with (./dev test and ./dev arm64 build it first)"
  exit 1
fi
failures=0

# metrics NAME ARGS...: the run's metrics, wall_s left out, in $WORK/NAME.csv.
metrics() {
  local name=$1
  shift
  if ! "$@" --quiet --metrics-csv "$WORK/raw.csv" >"$WORK/out" 2>&1; then
    echo "FAIL: $name: $* failed"
    tail -n 5 "$WORK/out" | sed 's/^/    /'
    return 1
  fi
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "wall_s") w = i }
           { out = ""; for (i = 1; i <= NF; i++) if (i != w) out = out (out == "" && i == 1 ? "" : ",") $i; print out }' \
    "$WORK/raw.csv" >"$WORK/$name.csv"
}

compare() {  # TITLE ARGS...
  local title=$1 begin=$SECONDS
  shift
  metrics x86 "$X86" sim "$@" && metrics arm "${EMULATOR[@]}" "$ARM" sim "$@" || { failures=$((failures + 1)); return; }
  if cmp -s "$WORK/x86.csv" "$WORK/arm.csv"; then
    echo "$title: the same $(wc -l <"$WORK/x86.csv") metrics lines bit for bit ($((SECONDS - begin)) s): $(tail -n 1 "$WORK/arm.csv" | cut -c1-50)..."
  else
    echo "FAIL: $title: aarch64 differs from x86-64:"
    diff "$WORK/x86.csv" "$WORK/arm.csv" | head -n 6 | sed 's/^/    /'
    failures=$((failures + 1))
  fi
}

compare "D-PSGD, top-1%" --nodes 8 --rounds 20 --eval-every 10 --eval-samples 500
compare "a CNN" --model cnn:c8k5p2,gn4,pool2,c16k3p1,avg2,d32 --nodes 2 --rounds 2 --eval-every 2 --batch 8 \
  --eval-samples 200 --momentum 0.9 --compression none
compare "FedAvg" --algorithm fedavg --model mlp:32 --nodes 10 --rounds 5 --eval-every 5 --eval-samples 500 \
  --local-epochs 0 --local-steps 20
compare "DiLoCo with Adam" --algorithm diloco --optimizer adamw --lr 0.002 --outer-optimizer adam --outer-lr 0.3 \
  --local-steps 5 --nodes 4 --model mlp:32 --rounds 4 --eval-every 4 --eval-samples 500
[ $failures -eq 0 ] || exit 1
echo "arm64 same bits test passed"
