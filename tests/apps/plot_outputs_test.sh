#!/usr/bin/env bash
# murmur plot's outputs and refusals:
#  1. --out x.svg writes an SVG (gnuplot's svg terminal), --out x.png a PNG;
#  2. any other extension, and a directory that does not exist, are refused
#     before gnuplot runs, naming the path, with nothing on standard output
#     (a failed `set output` used to send the PNG's bytes there);
#  3. a metrics file with a header and no rows is refused, naming the file;
#  4. a language model's run (no accuracy, a loss: a text dataset) is drawn
#     as test perplexity, exp(loss), on a log scale, not as accuracy.
# usage: plot_outputs_test.sh MURMUR
set -uo pipefail
MURMUR=$1
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
"$MURMUR" sim --dataset synthetic:blobs --model softmax --nodes 4 --rounds 10 --eval-every 5 --compression none \
  --metrics-csv "$DIR/run.csv" --quiet >/dev/null 2>&1 || fail "murmur sim"

# 1.
"$MURMUR" plot --out "$DIR/p.svg" "$DIR/run.csv" >/dev/null 2>&1 || fail "plot to .svg"
grep -q "<svg" "$DIR/p.svg" || fail "p.svg is not an SVG"
"$MURMUR" plot --out "$DIR/p.png" "$DIR/run.csv" >/dev/null 2>&1 || fail "plot to .png"
[ "$(head -c 4 "$DIR/p.png" | od -An -tx1 | tr -d ' ')" = 89504e47 ] || fail "p.png is not a PNG"

# 2.
out=$("$MURMUR" plot --out "$DIR/p.jpg" "$DIR/run.csv" 2>"$DIR/err") && fail "a .jpg was accepted"
grep -q "p.jpg': the plot is written as .png or .svg" "$DIR/err" || fail "the .jpg refusal: $(cat "$DIR/err")"
out=$("$MURMUR" plot --out "$DIR/no/such/dir/p.png" "$DIR/run.csv" 2>"$DIR/err") && fail "a missing directory was accepted"
[ -z "$out" ] || fail "standard output got $(printf %s "$out" | wc -c) bytes with a missing directory"
grep -q "no directory '$DIR/no/such/dir'" "$DIR/err" || fail "the missing directory's refusal: $(cat "$DIR/err")"

# 3.
head -n 1 "$DIR/run.csv" >"$DIR/empty.csv"
"$MURMUR" plot --out "$DIR/e.png" "$DIR/empty.csv" >/dev/null 2>"$DIR/err" && fail "a header-only file was accepted"
grep -q "'empty' has no rows of metrics to plot" "$DIR/err" || fail "the header-only refusal: $(cat "$DIR/err")"
grep -qi "gnuplot" "$DIR/err" && fail "gnuplot's own errors reached the user: $(cat "$DIR/err")"

# 4. The run's file with its accuracy columns zeroed, as a language model's are.
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^(acc_mean|acc_min|acc_max|avg_acc)$/) z[i] = 1; print; next }
                  { for (i in z) $i = "0"; print }' "$DIR/run.csv" >"$DIR/lm.csv"
"$MURMUR" plot --out "$DIR/lm.png" --script "$DIR/lm.gp" "$DIR/lm.csv" >/dev/null 2>&1 || fail "plot of a language model"
grep -q "set title 'test perplexity vs rounds'" "$DIR/lm.gp" || fail "no perplexity panel"
grep -q "set logscale y" "$DIR/lm.gp" || fail "perplexity not on a log scale"
grep -q "accuracy" "$DIR/lm.gp" && fail "a language model drawn as accuracy"
# Its first point's perplexity is exp(avg_loss) of the file's first row.
want=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "avg_loss") c = i } NR == 2 { printf "%.4f", exp($c) }' "$DIR/lm.csv")
got=$(awk '/^\$run0 << EOD/ { getline; printf "%.4f", $2 }' "$DIR/lm.gp")
[ "$want" = "$got" ] || fail "perplexity $got, expected exp(avg_loss) = $want"
echo "plot outputs test passed"
