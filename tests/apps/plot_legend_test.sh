#!/usr/bin/env bash
# murmur plot with 8 runs: every run has its curve and its legend entry, and
# the legend lies below the three panels, so it covers no curve. The panels'
# bottom edge is gnuplot's own layout (GPVAL_TERM_YMIN, in pixels, after
# drawing, scaled to the canvas by GPVAL_TERM_SCALE / GPVAL_TERM_YSIZE), the
# legend's top the script's `set key at screen 0.5, screen TOP`.
# usage: plot_legend_test.sh MURMUR
set -euo pipefail
MURMUR=$1
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
for s in 1 2 3 4 5 6 7 8; do
  "$MURMUR" sim --dataset synthetic:blobs --model softmax --nodes 4 --rounds 10 --eval-every 5 --compression none \
    --seed "$s" --metrics-csv "$DIR/run-seed$s.csv" --quiet >/dev/null 2>&1
done
"$MURMUR" plot --out "$DIR/p.png" --script "$DIR/p.gp" "$DIR"/run-seed*.csv
[ -s "$DIR/p.png" ] || { echo "FAIL: no PNG"; exit 1; }
for s in 1 2 3 4 5 6 7 8; do
  grep -q "title 'run-seed$s'" "$DIR/p.gp" || { echo "FAIL: run $s has no legend entry"; exit 1; }
done
[ "$(grep -o ' using 4:2 ' "$DIR/p.gp" | wc -l)" -eq 8 ] || { echo "FAIL: not 8 curves of accuracy vs bytes"; exit 1; }
[ "$(grep -o ' using 5:2 ' "$DIR/p.gp" | wc -l)" -eq 8 ] || { echo "FAIL: not 8 curves of accuracy vs virtual time"; exit 1; }
key_top=$(sed -n 's/^set key at screen 0.5, screen \([0-9.e-]*\) .*/\1/p' "$DIR/p.gp")
[ -n "$key_top" ] || { echo "FAIL: the legend is not placed below the panels"; exit 1; }
sed -e "s|^set output .*|set output '$DIR/q.png'|" "$DIR/p.gp" >"$DIR/q.gp"
echo 'print GPVAL_TERM_YMIN * GPVAL_TERM_SCALE / (1.0 * GPVAL_TERM_YSIZE)' >>"$DIR/q.gp"
bottom=$(gnuplot "$DIR/q.gp" 2>&1 | tail -n 1)
echo "panels' bottom at $bottom of the height, legend's top at $key_top"
awk -v b="$bottom" -v k="$key_top" 'BEGIN { exit !(b > k + 0.05) }' ||
  { echo "FAIL: the legend reaches into the panels"; exit 1; }
echo "plot legend test passed"
