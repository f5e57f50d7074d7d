#!/usr/bin/env bash
# A drive on the network test bed (docs/netbed.md, "Driving"): vehicles of a
# SUMO trace become bed nodes whose links follow their positions.
# A drives along the x axis at 10 m/s from 0, B towards it from 600 m, C
# stands 1 km away; 150 m of radio range, 20:2 Mbit/s radios. murmur sim
# writes the drive (drive_csv) and netbed_drive plays it twice as fast:
#  1. the drive says what the closed form says: A and B in range for trace
#     times in [22.5, 37.5] s only, C never;
#  2. on the bed, A's pings reach B at trace time 28 and not at 10 or 48,
#     and never reach C;
#  3. at trace time 28 (40 m apart) A's uplink carries 20 (2/20)^(40/150) =
#     10.77 Mbit/s.
# usage: netbed_drive_test.sh MURMUR NETDELAY SOURCE_DIR
set -uo pipefail
MURMUR=$1 NETBED_DELAY=$2 SRC=$3
WORK=$(mktemp -d /tmp/murmur-netbed.XXXXXX)
source "$SRC/tools/netbed/netbed.sh"
DRIVER=""
trap '[ -n "$DRIVER" ] && kill "$DRIVER" 2>/dev/null; netbed_down; rm -rf "$WORK" /tmp/netbed-$NETBED_ID-*' EXIT
fail() { echo "FAIL: $*"; exit 1; }
for tool in ping iptables tc python3; do command -v $tool >/dev/null || fail "$tool is missing (./dev deps installs it)"; done

python3 - "$WORK/drive.fcd.xml" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("<fcd-export>\n")
    for t in range(0, 61):
        f.write(f'<timestep time="{t}.00">\n')
        f.write(f'<vehicle id="A" x="{10 * t}" y="0" angle="90" speed="10"/>\n')
        f.write(f'<vehicle id="B" x="{600 - 10 * t}" y="0" angle="270" speed="10"/>\n')
        f.write('<vehicle id="C" x="0" y="1000" angle="0" speed="0"/>\n')
        f.write("</timestep>\n")
    f.write("</fcd-export>\n")
PY
"$MURMUR" sim --topology vehicles --sumo-fcd "$WORK/drive.fcd.xml" --nodes 3 --rsus 0 --radio-range 150 \
  --radio-rate 20:2 --round-interval 1 --round-period 1 --rounds 60 --dataset synthetic:blobs --model softmax \
  --compression fp16 --drive-csv "$WORK/drive.csv" --quiet >"$WORK/sim.log" 2>&1 || { cat "$WORK/sim.log"; fail "murmur sim"; }
# 1. Node 0's peers at each second against the closed form.
awk -F, '$2 == 0 { t = $1 + 0; want = (t >= 22.5 && t <= 37.5) ? "1" : ""; if ($5 != want) { print "t=" t ": peers [" $5 "], want [" want "]"; bad = 1 } n++ }
  END { if (n < 60 || bad) exit 1 }' "$WORK/drive.csv" || fail "the drive's links are not the closed form's"
echo "1. drive: A and B in range for trace times 23-37 s, C never"

netbed_up --nodes 3 || fail "bed up"
netbed_drive "$WORK/drive.csv" 2 &
DRIVER=$!
start=$(date +%s.%N)
at() { sleep "$(awk -v s="$start" -v t="$1" -v n="$(date +%s.%N)" 'BEGIN { w = s + t / 2 - n; print (w > 0 ? w : 0) }')"; }
reach() { netbed_exec 0 ping -c 1 -W 0.5 "$(netbed_addr "$1")" >/dev/null 2>&1; }
at 10; reach 1 && fail "A reached B at trace time 10 (600 - 20 t = 400 m apart)"
reach 2 && fail "A reached C at trace time 10"
at 28; reach 1 || fail "A did not reach B at trace time 28 (40 m apart)"
rate=$(netbed_exec 0 tc qdisc show dev eth0 | grep -o 'rate [0-9.]*[KMG]*bit' | head -1)
kbit=$(echo "$rate" | awk '{ r = $2; m = 1; if (r ~ /Mbit$/) m = 1000; if (r ~ /Gbit$/) m = 1e6; sub(/[KMG]?bit$/, "", r); print r * m }')
awk -v k="$kbit" 'BEGIN { exit !(k > 10500 && k < 11000) }' || fail "A's uplink at trace time 28: $rate, want 10.77 Mbit/s"
echo "2./3. trace time 28: A reaches B, A's uplink $rate"
at 48; reach 1 && fail "A reached B at trace time 48 (360 m apart)"
echo "2. trace times 10 and 48: A reaches neither B nor C"
wait "$DRIVER"
DRIVER=""
echo "netbed drive test passed"
