#!/usr/bin/env bash
# Contact-aware scheduling against today's, on the SUMO city of run.sh
# (256 vehicle seats, 8 RSUs, one virtual hour, 20:2 Mbit/s radios), three
# seeds (each its own trips and sumo run, and murmur's seed): D-PSGD over
# V2V contacts and hierarchical FedAvg through the RSUs, each with
# contact_aware on and off. Prints, per run: the messages lost, the final
# accuracy, and the virtual time at which the averaged (gossip) or global
# (FedAvg) model first reached TARGET, then a summary line per scheduling.
# docs/experiments.md records its output.
#
# Usage: examples/sumo/compare.sh [OUT_DIR] [GOSSIP_TARGET] [FEDAVG_TARGET]
#   (from the checkout; about an hour on 2 cores)
set -euo pipefail
SRC=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-sumo-compare}
GT=${2:-0.80} FT=${3:-0.82}
BIN=${BIN:-build/release/bin}
mkdir -p "$OUT"
# The metrics CSV's column named $2, at its last row ("last") or at the first row where it reaches $3.
col() {
  awk -F, -v name="$2" -v target="${3:-}" -v want="${4:-}" '
    NR == 1 { for (i = 1; i <= NF; i++) { if ($i == name) c = i; if ($i == "virtual_s") t = i; if ($i == "messages_lost") l = i } next }
    { last = $c; lost = $l; if (target != "" && at == "" && $c >= target) at = $t }
    END { if (want == "at") print (at == "" ? "never" : at); else if (want == "lost") print lost; else print last }' "$1"
}
printf '%-7s %-5s %-10s %10s %10s %14s\n' run seed scheduling lost accuracy "s to target"
for seed in 1 2 3; do
  city="$OUT/city-$seed"
  "$SRC/run.sh" --seed "$seed" --city-only "$city" >/dev/null
  files=(--sumo-fcd "$city/city.fcd.xml" --sumo-net "$city/city.net.xml" --seed "$seed" --quiet)
  for kind in gossip fedavg; do
    target=$GT
    [ $kind = fedavg ] && target=$FT
    for aware in false true; do
      csv="$OUT/$kind-$seed-$aware.csv"
      [ -s "$csv" ] || "$BIN/murmur" sim --scenario "$SRC/$kind.textproto" "${files[@]}" --contact-aware="$aware" \
        --metrics-csv "$csv" >/dev/null 2>&1
      sched=$([ $aware = true ] && echo contact || echo today)
      printf '%-7s %-5s %-10s %10s %10s %14s\n' $kind $seed $sched "$(col "$csv" avg_acc "" lost)" \
        "$(col "$csv" avg_acc)" "$(col "$csv" avg_acc "$target" at)"
    done
  done
done
