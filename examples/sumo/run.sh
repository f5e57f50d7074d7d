#!/usr/bin/env bash
# Vehicles from SUMO, from nothing: Debian's SUMO tools build a city
# (netgenerate: a grid of streets with traffic lights; randomTrips.py: trips
# with a stated seed; sumo: the drive, written as floating car data), then
# murmur learns on it twice: D-PSGD over the vehicles' V2V contacts
# (gossip.textproto) and hierarchical FedAvg through roadside units at the
# busiest junctions (fedavg.textproto). It plots accuracy (murmur's --plot)
# and the vehicles on the road and their contacts round by round (murmur's
# contacts_csv; contacts.py counts them from the trace apart from murmur,
# as the test suite does to check them).
#
# Usage: examples/sumo/run.sh [--small] [--seed N] [--city-only] [OUT_DIR]
#   (from the checkout)
#   default  an 8 x 8 grid of 200 m blocks, one hour (after 10 minutes that
#            fill the streets), about 200 vehicles on
#            the road at once, 200 vehicle seats and 8 RSUs (a few minutes)
#   --small  a 4 x 4 grid for five minutes, 32 seats and 2 RSUs, few rounds
#            (what the test suite runs, well under a minute)
#   --seed N the trips' and sumo's seed 41 + N, murmur's seed N (default 1)
#   --city-only  make the city and its trace, and stop
# OUT_DIR (default sumo-city) receives the network, routes, trace, metrics
# and plots; a second run reuses the trace when its inputs are unchanged.
# Needs: sumo and sumo-tools (./dev deps --test installs them), gnuplot for
# the plots, and murmur (BIN, default build/release/bin).
set -euo pipefail
SRC=$(cd "$(dirname "$0")" && pwd)
small=0 seed=1 city_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --small) small=1 ;;
    --seed) seed=$2; shift ;;
    --city-only) city_only=1 ;;
    *) break ;;
  esac
  shift
done
trips_seed=$((41 + seed))
OUT=${1:-sumo-city}
BIN=${BIN:-build/release/bin}
export SUMO_HOME=${SUMO_HOME:-/usr/share/sumo}
for tool in netgenerate sumo; do
  command -v $tool >/dev/null || { echo "run.sh: $tool not found: apt-get install sumo sumo-tools" >&2; exit 1; }
done
[ -f "$SUMO_HOME/tools/randomTrips.py" ] || { echo "run.sh: no $SUMO_HOME/tools/randomTrips.py: apt-get install sumo-tools" >&2; exit 1; }
mkdir -p "$OUT"

if [ $small = 1 ]; then
  grid=4 end=400 period=3.0
  common=(--nodes 34 --rsus 2 --sumo-begin 100 --eval-every 10 --devices vehicle)
  gossip=(--rounds 20 "${common[@]}")
  fedavg=(--rounds 10 --clients-per-round 8 --edge-aggregators 2 "${common[@]}")
else
  grid=8 end=4200 period=0.6  # the first 600 s fill the streets (sumo_begin)
  gossip=() fedavg=()
fi

# The city: a grid of 200 m blocks with traffic lights, trips from the seed.
stamp="grid=$grid end=$end period=$period seed=$trips_seed"
if [ "$(cat "$OUT/city.stamp" 2>/dev/null)" != "$stamp" ]; then
  netgenerate --grid --grid.number $grid --grid.length 200 --default.lanenumber 1 --tls.guess true \
    --seed $trips_seed -o "$OUT/city.net.xml" >/dev/null
  python3 "$SUMO_HOME/tools/randomTrips.py" -n "$OUT/city.net.xml" -o "$OUT/city.trips.xml" \
    -r "$OUT/city.rou.xml" -b 0 -e $end -p $period --fringe-factor 5 --seed $trips_seed --validate >/dev/null
  sumo -n "$OUT/city.net.xml" -r "$OUT/city.rou.xml" --end $end --seed $trips_seed --no-step-log \
    --fcd-output "$OUT/city.fcd.xml" >/dev/null
  echo "$stamp" >"$OUT/city.stamp"
fi
echo "run.sh: city $OUT/city.net.xml, trace $OUT/city.fcd.xml ($(du -h "$OUT/city.fcd.xml" | cut -f1))"

[ $city_only = 1 ] && exit 0

files=(--sumo-fcd "$OUT/city.fcd.xml" --sumo-net "$OUT/city.net.xml" --seed "$seed")
"$BIN/murmur" sim --scenario "$SRC/gossip.textproto" "${files[@]}" "${gossip[@]}" \
  --metrics-csv "$OUT/gossip.csv" --plot "$OUT/gossip.png" --contacts-csv "$OUT/contacts.csv"
"$BIN/murmur" sim --scenario "$SRC/fedavg.textproto" "${files[@]}" "${fedavg[@]}" \
  --metrics-csv "$OUT/fedavg.csv" --plot "$OUT/fedavg.png"

if command -v gnuplot >/dev/null; then
  gnuplot <<PLOT
set terminal pngcairo size 900,500
set output "$OUT/contacts.png"
set datafile separator ","
set key top left
set xlabel "virtual time (s)"
set ylabel "count"
plot "$OUT/contacts.csv" using 2:4 with lines title "vehicles on the road", \
     "$OUT/contacts.csv" using 2:5 with lines title "V2V links", \
     "$OUT/contacts.csv" using 2:6 with lines title "vehicle-RSU links"
PLOT
fi
echo "run.sh: wrote $OUT/gossip.csv, $OUT/fedavg.csv, $OUT/contacts.csv and their plots (.png)"
