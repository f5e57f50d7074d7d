#!/usr/bin/env bash
# The network test bed's own accuracy (docs/netbed.md, "Accuracy"): what its
# links do against what they were configured to do, measured with ping
# (iputils) and iperf3 between two namespaces.
#  1. one-way latency: the mean user-to-user ping RTT (ping -U) is within
#     1 ms of 2 x (latency_a + latency_b + extra) on 100 Mbit/s and on
#     1 Mbit/s links;
#  2. rate: iperf3's TCP goodput over a 5 Mbit/s uplink and into a 20 Mbit/s
#     downlink is within 5% of the rate times 1448/1514 (the payload of a
#     full frame with TCP timestamps: the shaper counts Ethernet frames);
#  3. packet loss: of 100,000 UDP datagrams over two access links that each
#     drop 5%, the share lost is within 5% of 1 - 0.95^2 (sd 1%: 5 sd);
#  4. jitter: 100 pings with jitter 0.5 of a 20 ms path all fall within
#     [20, 60] ms of RTT and their mean within 4 ms of 40 (sd 0.8 ms);
#  5. a partition drops every packet between its sides; healed, none.
# usage: netbed_accuracy_test.sh NETDELAY SOURCE_DIR
set -uo pipefail
NETBED_DELAY=$1 SRC=$2
WORK=$(mktemp -d /tmp/murmur-netbed.XXXXXX)
source "$SRC/tools/netbed/netbed.sh"
trap 'netbed_down; rm -rf "$WORK" /tmp/netbed-$NETBED_ID-*' EXIT
fail() { echo "FAIL: $*"; exit 1; }
for tool in ping iperf3 iptables tc; do command -v $tool >/dev/null || fail "$tool is missing (./dev deps installs it)"; done

# within X WANT TOLERANCE: |X - WANT| <= TOLERANCE
within() { awk -v x="$1" -v w="$2" -v t="$3" 'BEGIN { exit !((x - w) <= t && (w - x) <= t) }'; }
# mean_rtt: the mean of the "time=" values ping -U printed.
rtts() { grep -o 'time=[0-9.]*' | cut -d= -f2; }

# 1. Latency at 100 and at 1 Mbit/s.
for rate in 100 1; do
  printf 'node,gflops,up_mbps,down_mbps,latency_ms,availability\n0,10,%s,%s,7,1\n1,10,%s,%s,3,1\n' \
    "$rate" "$rate" "$rate" "$rate" >"$WORK/devices.csv"
  netbed_up --nodes 2 --devices "trace:$WORK/devices.csv" --latency-ms 10 || fail "bed up ($rate Mbit/s)"
  netbed_exec 0 ping -U -c 20 -i 0.1 "$(netbed_addr 1)" | rtts >"$WORK/rtt"
  [ "$(wc -l <"$WORK/rtt")" -eq 20 ] || fail "$(wc -l <"$WORK/rtt") of 20 pings answered at $rate Mbit/s"
  mean=$(awk '{ s += $1 } END { printf "%.3f", s / NR }' "$WORK/rtt")
  within "$mean" 40 1 || fail "mean RTT $mean ms at $rate Mbit/s, configured 2 x (7 + 3 + 10) = 40 ms"
  echo "1. RTT at $rate Mbit/s: configured 40 ms, measured mean $mean ms"
  netbed_down
done

# 2. Rates: node 0's uplink 5 Mbit/s, node 0's downlink 20 Mbit/s.
printf 'node,gflops,up_mbps,down_mbps,latency_ms,availability\n0,10,5,20,1,1\n1,10,100,100,1,1\n' >"$WORK/devices.csv"
netbed_up --nodes 2 --devices "trace:$WORK/devices.csv" || fail "bed up (rates)"
netbed_exec 1 iperf3 -s -D -I "$WORK/iperf.pid" || fail "iperf3 server"
sleep 0.3
for dir in up down; do
  flag="" want=5
  [ $dir = down ] && flag=-R want=20
  netbed_exec 0 iperf3 -c "$(netbed_addr 1)" $flag -t 4 -O 1 -f m >"$WORK/iperf" 2>&1 || { cat "$WORK/iperf"; fail "iperf3 $dir"; }
  got=$(awk '/receiver/ { for (i = 1; i <= NF; i++) if ($i == "Mbits/sec") print $(i - 1) }' "$WORK/iperf")
  goodput=$(awk -v r=$want 'BEGIN { printf "%.3f", r * 1448 / 1514 }')
  tolerance=$(awk -v g="$goodput" 'BEGIN { print g * 0.05 }')
  within "$got" "$goodput" "$tolerance" || { cat "$WORK/iperf"; fail "$dir: $got Mbit/s, want $goodput +- 5%"; }
  echo "2. ${dir}link of $want Mbit/s: TCP goodput $got Mbit/s, expected $goodput (+- 5%)"
done
kill "$(cat "$WORK/iperf.pid")" 2>/dev/null
netbed_down

# 3. Packet loss: 5% on each access link.
netbed_up --nodes 2 --packet-loss 0.05 --seed 7 || fail "bed up (loss)"
netbed_exec 1 iperf3 -s -D -I "$WORK/iperf.pid" || fail "iperf3 server"
sleep 0.3
# The receiving socket's own drops (its buffer full while iperf3 waited for
# a core) are not the link's: the namespace's UDP RcvbufErrors counts them.
rcvbuf_errors() { netbed_exec 1 awk '/^Udp:/ { if (h) { for (i = 2; i <= NF; i++) if (n[i] == "RcvbufErrors") print $i } else { h = 1; for (i = 2; i <= NF; i++) n[i] = $i } }' /proc/net/snmp; }
before=$(rcvbuf_errors)
netbed_exec 0 iperf3 -c "$(netbed_addr 1)" -u -b 16M -l 100 -t 5 -f m >"$WORK/iperf" 2>&1 || { cat "$WORK/iperf"; fail "iperf3 udp"; }
overflow=$(($(rcvbuf_errors) - before))
read -r lost total < <(awk '/receiver/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\/[0-9]+$/) { split($i, p, "/"); print p[1], p[2] } }' "$WORK/iperf")
[ -n "${total:-}" ] && [ "$total" -ge 90000 ] || { cat "$WORK/iperf"; fail "too few datagrams: ${total:-none}"; }
share=$(awk -v l="$lost" -v o="$overflow" -v t="$total" 'BEGIN { printf "%.5f", (l - o) / t }')
within "$share" 0.0975 0.004875 || { cat "$WORK/iperf"; fail "lost $lost of $total ($overflow by the receiving socket: $share), want 0.0975 +- 5%"; }
echo "3. packet loss 5% per access link: $((lost - overflow)) of $total datagrams lost on the links ($share; $overflow more by the receiving socket), expected 0.0975 (+- 5%)"
kill "$(cat "$WORK/iperf.pid")" 2>/dev/null
netbed_down

# 4. Jitter 0.5 on a 20 ms path (uniform 5 ms devices and 10 ms more).
netbed_up --nodes 2 --latency-ms 10 --jitter 0.5 || fail "bed up (jitter)"
netbed_exec 0 ping -U -c 100 -i 0.05 "$(netbed_addr 1)" | rtts >"$WORK/rtt"
[ "$(wc -l <"$WORK/rtt")" -eq 100 ] || fail "$(wc -l <"$WORK/rtt") of 100 pings answered with jitter"
read -r lo hi mean < <(sort -n "$WORK/rtt" | awk '{ s += $1; v[NR] = $1 } END { printf "%s %s %.3f", v[1], v[NR], s / NR }')
within "$mean" 40 4 || fail "jittered mean RTT $mean ms, want 40 +- 4"
awk -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(lo >= 19.5 && hi <= 61) }' || fail "jittered RTTs span [$lo, $hi] ms, outside [20, 60]"
echo "4. jitter 0.5 of 20 ms: RTT in [$lo, $hi] ms, mean $mean ms"

# 5. A partition, then healed.
netbed_partition 0 1
if netbed_exec 0 ping -c 3 -i 0.2 -W 1 "$(netbed_addr 1)" >/dev/null 2>&1; then fail "a ping crossed the partition"; fi
netbed_heal
netbed_exec 0 ping -c 3 -i 0.2 -W 1 "$(netbed_addr 1)" >/dev/null 2>&1 || fail "no ping after healing"
echo "5. partitioned: no ping crossed; healed: every ping answered"
netbed_down
[ -z "$(ip netns list | grep "mnb$NETBED_ID-")" ] || fail "namespaces left behind: $(ip netns list)"
echo "netbed accuracy test passed"
