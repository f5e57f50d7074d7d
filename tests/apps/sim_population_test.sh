#!/usr/bin/env bash
# FedAvg over a population of 1,000,000 clients, 100 per round, 50 rounds,
# within 4 GiB: a client holds a model only while it trains
# (federated/client.h), so memory is the population's bookkeeping and data,
# not a million models (docs/federated.md, "Populations").
# usage: sim_population_test.sh MURMUR
set -euo pipefail
MURMUR=$1
out=$("$MURMUR" sim --algorithm fedavg --nodes 1000000 --clients-per-round 100 --rounds 50 --eval-every 25 \
  --model mlp:64 --dataset synthetic:blobs:5000000 --compression none --quiet 2>&1) || { echo "$out"; exit 1; }
echo "$out" | tail -n 6
acc=$(sed -n 's/^final (round 50): global model test accuracy \([0-9.]*\).*/\1/p' <<<"$out")
rss=$(sed -n 's/.*peak RSS \([0-9.]*\) MB.*/\1/p' <<<"$out")
[ -n "$acc" ] && [ -n "$rss" ] || { echo "FAIL: no final accuracy or peak RSS"; exit 1; }
# Ten well-separated Gaussian blobs: a linear model already reaches 0.9.
awk -v a="$acc" 'BEGIN { exit !(a >= 0.9) }' || { echo "FAIL: accuracy $acc < 0.9"; exit 1; }
awk -v r="$rss" 'BEGIN { exit !(r <= 4096 * 1.048576) }' || { echo "FAIL: peak RSS $rss MB over 4 GiB"; exit 1; }
echo "population test passed: 1,000,000 clients, accuracy $acc, peak RSS $rss MB"
