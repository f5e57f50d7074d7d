# The network test bed (docs/netbed.md): N nodes, each in its own network
# namespace, joined by a bridge in a hub namespace, each behind an access
# link shaped as the simulator's device profile says (sim/net/device.h):
#   uplink    tbf at the node's eth0 egress, up_mbps
#   downlink  tbf at the hub's port towards the node, down_mbps
#   latency   murmur-netdelay on the receiver's ingress (NFQUEUE): a packet
#             from a to b is held latency_a + latency_b + the extra latency,
#             scaled by U(1 - jitter, 1 + jitter), as sim/net/simulator.h
#             charges a message, without reordering
#   loss      a packet crossing a node's access link, either way, is dropped
#             with probability packet_loss (so a path loses
#             1 - (1 - p_a)(1 - p_b)), by the same stage, from a seed
# Partitions and outages are iptables DROP rules on the receivers' ingress
# (the senders' sockets see loss, as on a real path, not a local error).
#
# Sourced by the bed's tests (tests/netbed/) and usable by hand as root:
#   source tools/netbed/netbed.sh
#   NETBED_DELAY=build/release/bin/murmur-netdelay
#   netbed_up --nodes 4 --devices trace:devices.csv --latency-ms 10 --packet-loss 0.01
#   netbed_exec 0 ping -c 3 "$(netbed_addr 1)"
#   netbed_down
# With fleet.sh sourced after it, fleet_make/fleet_start put daemon I in
# namespace I at address netbed_addr I, and FLEET_OP_LAUNCH runs the
# operator's commands in the hub (address 10.77.255.254).
#
# Names: namespaces mnb<ID>-hub and mnb<ID>-<I> (ID: NETBED_ID, default the
# shell's PID), so beds of parallel tests never meet. Addresses 10.77.0.0/16
# exist only inside them: nothing is routed to any other network.

NETBED_ID=${NETBED_ID:-$$}
NETBED_HUB=mnb$NETBED_ID-hub
NETBED_NODES=0
NETBED_DELAY_PIDS=()
NETBED_UP=() NETBED_DOWN=() NETBED_LATENCY=()

netbed_ns() { echo "mnb$NETBED_ID-$1"; }
netbed_addr() { echo "10.77.$(($1 / 250)).$(($1 % 250 + 1))"; }
netbed_exec() { local i=$1; shift; ip netns exec "$(netbed_ns "$i")" "$@"; }
netbed_hub() { ip netns exec "$NETBED_HUB" "$@"; }

# fleet.sh's hooks: daemon I in namespace I (behind a NAT, in its LAN
# namespace at the private address), the operator in the hub.
NETBED_NAT=()
fleet_addr() { netbed_addr "$1"; }
fleet_listen_addr() { if [ -n "${NETBED_NAT[$1]:-}" ]; then echo 192.168.0.2; else netbed_addr "$1"; fi; }
fleet_prefix() {
  if [ -n "${NETBED_NAT[$1]:-}" ]; then echo ip netns exec "$(netbed_ns "$1")-lan"; else echo ip netns exec "$(netbed_ns "$1")"; fi
}
FLEET_OP_LAUNCH=(ip netns exec "$NETBED_HUB")

# netbed_devices N SPEC: fills NETBED_UP/DOWN (Mbit/s) and NETBED_LATENCY (ms)
# from "uniform" (the simulator's defaults: 100/100 Mbit/s, 5 ms) or
# "trace:FILE.csv" (murmur sim --devices' trace: a header
# node,gflops,up_mbps,down_mbps,latency_ms,availability and a row per node).
netbed_devices() {
  local n=$1 spec=$2 i
  NETBED_UP=() NETBED_DOWN=() NETBED_LATENCY=()
  case $spec in
    uniform)
      for ((i = 0; i < n; i++)); do NETBED_UP[i]=100 NETBED_DOWN[i]=100 NETBED_LATENCY[i]=5; done ;;
    trace:*)
      local file=${spec#trace:} node gflops up down lat avail rest
      [ -r "$file" ] || { echo "netbed: cannot read the device trace $file" >&2; return 1; }
      while IFS=, read -r node gflops up down lat avail rest; do
        [[ $node =~ ^[0-9]+$ ]] || continue  # the header, comments
        ((node < n)) || { echo "netbed: $file names node $node of $n" >&2; return 1; }
        NETBED_UP[node]=$up NETBED_DOWN[node]=$down NETBED_LATENCY[node]=$lat
      done <"$file"
      for ((i = 0; i < n; i++)); do
        [ -n "${NETBED_UP[i]:-}" ] || { echo "netbed: $file has no row for node $i" >&2; return 1; }
      done ;;
    *) echo "netbed: devices must be uniform or trace:FILE.csv, not '$spec'" >&2; return 1 ;;
  esac
}

# netbed_tbf NS DEV MBPS: shapes DEV's egress to MBPS Mbit/s. The bucket holds
# 1 ms of the rate (at least one full frame); the queue holds 4 s of it, so
# the link queues as the simulator's FIFO does instead of dropping.
netbed_tbf() {
  local bytes_per_s burst limit
  bytes_per_s=$(awk -v r="$3" 'BEGIN { printf "%d", r * 1e6 / 8 }')
  burst=$((bytes_per_s / 1000 > 1600 ? bytes_per_s / 1000 : 1600))
  limit=$((bytes_per_s * 4 > 262144 ? bytes_per_s * 4 : 262144))
  ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$(awk -v r="$3" 'BEGIN { printf "%dbit", r * 1e6 }')" \
    burst "$burst" limit "$limit"
}

# netbed_up --nodes N [--devices uniform|trace:FILE.csv] [--latency-ms MS]
#           [--jitter FRACTION] [--packet-loss P] [--seed S]
#           [--tcp-slow-start-after-idle 0|1]
# The last sets the sysctl of that name in every node's namespace (Linux's
# default, 1, when not given).
netbed_up() {
  local n=0 devices=uniform extra=0 jitter=0 loss=0 seed=1 ssai=1 i j ns rules delay ready
  while [ $# -gt 0 ]; do
    case $1 in
      --nodes) n=$2 ;; --devices) devices=$2 ;; --latency-ms) extra=$2 ;;
      --jitter) jitter=$2 ;; --packet-loss) loss=$2 ;; --seed) seed=$2 ;;
      --tcp-slow-start-after-idle) ssai=$2 ;;
      *) echo "netbed_up: unknown option $1" >&2; return 1 ;;
    esac
    shift 2
  done
  ((n >= 2 && n <= 1000)) || { echo "netbed_up: --nodes must be 2..1000" >&2; return 1; }
  [ -x "${NETBED_DELAY:-}" ] || { echo "netbed_up: NETBED_DELAY must name the murmur-netdelay binary" >&2; return 1; }
  [ "$(id -u)" -eq 0 ] || { echo "netbed_up: the bed needs root (network namespaces)" >&2; return 1; }
  netbed_devices "$n" "$devices" || return 1
  NETBED_NODES=$n
  ip netns add "$NETBED_HUB" || return 1
  ip -n "$NETBED_HUB" link set lo up
  ip -n "$NETBED_HUB" link add br0 type bridge
  ip -n "$NETBED_HUB" addr add 10.77.255.254/16 dev br0
  ip -n "$NETBED_HUB" link set br0 up
  for ((i = 0; i < n; i++)); do
    ns=$(netbed_ns "$i")
    ip netns add "$ns" || return 1
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_slow_start_after_idle="$ssai" || return 1
    ip -n "$NETBED_HUB" link add "v$i" type veth peer name eth0 netns "$ns"
    ip -n "$NETBED_HUB" link set "v$i" master br0 up
    ip -n "$ns" addr add "$(netbed_addr "$i")/16" dev eth0
    ip -n "$ns" link set eth0 up
    netbed_tbf "$ns" eth0 "${NETBED_UP[i]}" || return 1
    netbed_tbf "$NETBED_HUB" "v$i" "${NETBED_DOWN[i]}" || return 1
    # Partitions and outages (netbed_partition): this node's ingress drops.
    ip netns exec "$ns" iptables -N NETBED_CUT
    ip netns exec "$ns" iptables -A INPUT -j NETBED_CUT
  done
  for ((i = 0; i < n; i++)); do
    ns=$(netbed_ns "$i")
    rules=("10.77.255.254,0,0,0")  # the operator in the hub: no latency, no loss
    for ((j = 0; j < n; j++)); do
      ((j == i)) && continue
      rules+=("$(awk -v a="${NETBED_LATENCY[i]}" -v b="${NETBED_LATENCY[j]}" -v e="$extra" -v J="$jitter" \
        -v p="$loss" -v addr="$(netbed_addr "$j")" \
        'BEGIN { d = a + b + e; printf "%s,%.6f,%.6f,%.9f", addr, d, d * J, 1 - (1 - p) * (1 - p) }')")
    done
    ready=$(mktemp -u "/tmp/netbed-ready.XXXXXX")
    ip netns exec "$ns" "$NETBED_DELAY" --queue 0 --seed $((seed * 1000 + i)) --ready "$ready" "${rules[@]}" \
      2>"/tmp/netbed-$NETBED_ID-delay-$i.log" &
    NETBED_DELAY_PIDS[i]=$!
    for _ in $(seq 100); do [ -s "$ready" ] && break; sleep 0.02; done
    [ -s "$ready" ] || { echo "netbed: the delay stage of node $i did not start" >&2; cat "/tmp/netbed-$NETBED_ID-delay-$i.log" >&2; return 1; }
    rm -f "$ready"
    # Queue only what arrives over the access link, after the downlink's tbf.
    ip netns exec "$ns" iptables -t raw -A PREROUTING -i eth0 -j NFQUEUE --queue-num 0
  done
}

# netbed_nat I [--forward PORT]...: puts node I behind a NAT router of its
# own. Namespace I becomes the router: it keeps the public address
# netbed_addr I, the access link's shapers and the delay stage, masquerades
# what the node sends, and drops every connection opened towards it (a home
# router or a carrier-grade NAT drops; it does not refuse) except to the
# ports given, which it forwards to the node (a port forward an operator set
# up). The node moves into namespace I-lan at 192.168.0.2 (fleet_prefix and
# fleet_listen_addr say so), its default route the router's 192.168.0.1.
# Call it after netbed_up and before fleet_make.
netbed_nat() {
  local i=$1 ns lan ports=() p
  shift
  while [ $# -gt 0 ]; do
    case $1 in --forward) ports+=("$2") ;; *) echo "netbed_nat: unknown option $1" >&2; return 1 ;; esac
    shift 2
  done
  ns=$(netbed_ns "$i") lan="$(netbed_ns "$i")-lan"
  ip netns add "$lan" || return 1
  ip -n "$lan" link set lo up
  ip netns exec "$lan" sysctl -q -w net.ipv4.tcp_slow_start_after_idle="$(ip netns exec "$ns" sysctl -n net.ipv4.tcp_slow_start_after_idle)"
  ip -n "$ns" link add lan0 type veth peer name eth0 netns "$lan" || return 1
  ip -n "$ns" addr add 192.168.0.1/24 dev lan0
  ip -n "$ns" link set lan0 up
  ip -n "$lan" addr add 192.168.0.2/24 dev eth0
  ip -n "$lan" link set eth0 up
  ip -n "$lan" route add default via 192.168.0.1
  ip netns exec "$ns" sysctl -q -w net.ipv4.ip_forward=1
  ip netns exec "$ns" iptables -t nat -A POSTROUTING -o eth0 -j MASQUERADE || return 1
  ip netns exec "$ns" iptables -A FORWARD -j NETBED_CUT
  ip netns exec "$ns" iptables -A FORWARD -i eth0 -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT || return 1
  for p in ${ports[@]+"${ports[@]}"}; do
    ip netns exec "$ns" iptables -t nat -A PREROUTING -i eth0 -p tcp --dport "$p" -j DNAT --to-destination 192.168.0.2
    ip netns exec "$ns" iptables -A FORWARD -i eth0 -p tcp -d 192.168.0.2 --dport "$p" -j ACCEPT
  done
  ip netns exec "$ns" iptables -A FORWARD -i eth0 -j DROP
  ip netns exec "$ns" iptables -A INPUT -i eth0 -p tcp --syn -j DROP
  NETBED_NAT[i]=1
}

# netbed_partition "A..." "B...": nodes of group A stop hearing those of B
# and the other way round, until netbed_heal.
netbed_partition() {
  local i j
  for i in $1; do for j in $2; do
    netbed_exec "$i" iptables -A NETBED_CUT -s "$(netbed_addr "$j")" -j DROP
    netbed_exec "$j" iptables -A NETBED_CUT -s "$(netbed_addr "$i")" -j DROP
  done; done
}

netbed_heal() {
  local i
  for ((i = 0; i < NETBED_NODES; i++)); do netbed_exec "$i" iptables -F NETBED_CUT; done
}

# netbed_drive FILE [SPEEDUP]: plays a drive (`murmur sim` scenario field
# drive_csv: rows time_s,node,on_road,mbps,peers) on the bed, one step per
# time_s, SPEEDUP (default 1) times faster than the trace: at each step node
# I hears only the nodes in its peers (its NETBED_CUT chain drops the
# others; the operator in the hub is always heard), and its uplink and
# downlink carry mbps when that is above 0 (the radio's rate to its nearest
# peer; 0: the rates stay); only what changed since the step before is
# applied. Runs in the foreground until the file ends; put it in the
# background to drive a running fleet. Bed node I is drive node I.
netbed_drive() {
  local file=$1 speedup=${2:-1} start t now wait prev="" node on mbps peers i j keep
  local -A was_peers=() was_mbps=()  # what each node's links are now: only changes are applied
  start=$(date +%s.%N)
  while IFS=, read -r t node on mbps peers; do
    [ "$t" = time_s ] && continue
    ((node < NETBED_NODES)) || continue
    if [ "$t" != "$prev" ]; then
      now=$(date +%s.%N)
      wait=$(awk -v s="$start" -v t="$t" -v k="$speedup" -v n="$now" 'BEGIN { w = s + t / k - n; print (w > 0 ? w : 0) }')
      sleep "$wait"
      prev=$t
    fi
    if [ "${was_peers[$node]-unset}" != "$peers" ]; then
      was_peers[$node]=$peers
      netbed_exec "$node" iptables -F NETBED_CUT
      for ((j = 0; j < NETBED_NODES; j++)); do
        ((j == node)) && continue
        keep=0
        for i in $peers; do [ "$i" = "$j" ] && keep=1; done
        [ $keep = 1 ] || netbed_exec "$node" iptables -A NETBED_CUT -s "$(netbed_addr "$j")" -j DROP
      done
    fi
    if [ "${was_mbps[$node]-unset}" != "$mbps" ] && awk -v m="$mbps" 'BEGIN { exit !(m > 0) }'; then
      was_mbps[$node]=$mbps
      netbed_tbf "$(netbed_ns "$node")" eth0 "$mbps"
      netbed_tbf "$NETBED_HUB" "v$node" "$mbps"
    fi
  done <"$file"
}

# netbed_delay_stats I: the stage's counts line of node I, once it stopped
# (netbed_down stops them all).
netbed_delay_stats() { cat "/tmp/netbed-$NETBED_ID-delay-$1.log" 2>/dev/null; }

# netbed_down: stops every process in the bed's namespaces and removes them.
# Safe to call twice, and on a bed that came up only in part.
netbed_down() {
  local ns pid
  for pid in "${NETBED_DELAY_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${NETBED_DELAY_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  NETBED_DELAY_PIDS=()
  for ns in $(ip netns list | awk -v p="mnb$NETBED_ID-" 'index($1, p) == 1 { print $1 }'); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
}
