#!/usr/bin/env bash
# Cipher negotiation between real daemons (docs/protocol.md, "Cipher
# negotiation"):
#  1. daemons 0 and 1 (`cipher: auto`, the default) open their session on
#     AES-256-GCM where this CPU runs it; daemon 2 has `cipher: chachapoly`,
#     as a device without AES instructions would, and opens both of its
#     sessions on ChaCha20-Poly1305; the logs and murmur_sessions_aesgcm_total
#     say so;
#  2. daemon 0 then dials daemon 1 through a man in the middle on loopback:
#     passing every byte, the session opens; stripping the cipher offer from
#     message 1 (so that daemon 1 picks ChaCha20-Poly1305), the handshake fails
#     at message 2 on daemon 0, is counted, and no session opens through it.
# Bounded: 3 idle daemons, every wait capped at 10 s.
# usage: daemon_cipher_test.sh MURMUR MURMURD SOURCE_DIR
set -euo pipefail
MURMUR=$(realpath "$1") MURMURD=$(realpath "$2") SRC=$(realpath "$3")
FLEET=$(mktemp -d /tmp/murmur-cipher.XXXXXX)
BASE_PORT=$((20000 + ($$ % 60) * 200 + 45))  # below the ephemeral range; offsets 45-48 are this test's
PROXY_PORT=$((BASE_PORT + 3))
PROXY_PID=
source "$SRC/tools/fleet.sh"
trap '[ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null; fleet_stop_all; [ -n "${KEEP:-}" ] || rm -rf "$FLEET"' EXIT
fail() {
  echo "FAIL: $*"
  for i in 0 1 2; do [ -f "$FLEET/node$i/log" ] && { echo "--- node $i"; tail -n 6 "$FLEET/node$i/log"; }; done
  exit 1
}
# wait_metric I NAME MIN: waits up to 10 s for daemon I's NAME to reach MIN.
wait_metric() {
  for _ in $(seq 100); do
    [ "$(fleet_metric "$1" "$2")" -ge "$3" ] 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# AES-GCM where libsodium runs it: x86-64 with AES-NI and PCLMUL.
if grep -qw aes /proc/cpuinfo && grep -qw pclmulqdq /proc/cpuinfo; then AES=1; else AES=0; fi

fleet_make 3
echo 'cipher: "chachapoly"' >>"$FLEET/node2/node.conf"
for i in 0 1 2; do fleet_start "$i" || fail "start $i"; done
for i in 0 1 2; do wait_metric "$i" murmur_sessions_opened_total 2 || fail "daemon $i: not 2 sessions within 10 s"; done
[ "$(fleet_metric 0 murmur_sessions_aesgcm_total)" = "$AES" ] || fail "daemon 0: $(fleet_metric 0 murmur_sessions_aesgcm_total) AES-GCM sessions, want $AES"
[ "$(fleet_metric 1 murmur_sessions_aesgcm_total)" = "$AES" ] || fail "daemon 1: $(fleet_metric 1 murmur_sessions_aesgcm_total) AES-GCM sessions, want $AES"
[ "$(fleet_metric 2 murmur_sessions_aesgcm_total)" = 0 ] || fail "daemon 2 (chachapoly) has AES-GCM sessions"
want=ChaChaPoly
[ "$AES" = 1 ] && want=AESGCM
grep -q "session with node 1 ready ($want)" "$FLEET/node0/log" || fail "daemon 0 does not log its session with 1 on $want"
grep -q "session with node 2 ready (ChaChaPoly)" "$FLEET/node0/log" || fail "daemon 0's session with 2 is not on ChaChaPoly"
grep -q "session with node 0 ready (ChaChaPoly)" "$FLEET/node2/log" || fail "daemon 2's session with 0 is not on ChaChaPoly"
echo "1. sessions: 0-1 on $want, 0-2 and 1-2 on ChaChaPoly (daemon 2 has cipher: chachapoly)"
fleet_stop_all

# 2. Daemon 0 alone dials daemon 1 (the lower id dials), through the proxy.
sed -i "s|peers { id: 1 address: \"127.0.0.1:$((BASE_PORT + 1))\" }|peers { id: 1 address: \"127.0.0.1:$PROXY_PORT\" }|" "$FLEET/node0/node.conf"
grep -q "127.0.0.1:$PROXY_PORT" "$FLEET/node0/node.conf" || fail "could not point daemon 0 at the proxy"
# proxy MODE: relays 127.0.0.1:PROXY_PORT to daemon 1; with MODE strip, message 1
# (the first frame: u32 little-endian length, then e and the offer) loses its offer.
proxy() {
  python3 - "$PROXY_PORT" "$((BASE_PORT + 1))" "$1" "$FLEET/proxy-$1.log" <<'PY' &
import socket, struct, sys, threading
port, target, mode, log = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(8)
def exact(s, n):
    b = b""
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            raise OSError("closed")
        b += d
    return b
def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
while True:
    c, _ = srv.accept()
    try:
        u = socket.create_connection(("127.0.0.1", target))
        if mode == "strip":
            body = exact(c, struct.unpack("<I", exact(c, 4))[0])
            with open(log, "a") as f:
                f.write("message 1 of %d bytes, offer %s stripped\n" % (len(body), body[32:].hex()))
            u.sendall(struct.pack("<I", 32) + body[:32])
    except OSError:
        c.close()
        continue
    threading.Thread(target=pipe, args=(c, u), daemon=True).start()
    threading.Thread(target=pipe, args=(u, c), daemon=True).start()
PY
  PROXY_PID=$!
  for _ in $(seq 50); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $PROXY_PORT)).close()" 2>/dev/null && return 0; sleep 0.1; done
  fail "the proxy did not start"
}
proxy pass
fleet_start 1 || fail "start 1"
fleet_start 0 || fail "start 0"
wait_metric 0 murmur_sessions_opened_total 1 || fail "no session through the passing proxy"
[ "$(fleet_metric 0 murmur_sessions_aesgcm_total)" = "$AES" ] || fail "through the passing proxy: AES-GCM sessions $(fleet_metric 0 murmur_sessions_aesgcm_total), want $AES"
echo "2a. through a proxy that passes every byte: the session opens (on $want)"
fleet_stop_all
kill "$PROXY_PID" 2>/dev/null; wait "$PROXY_PID" 2>/dev/null || true; PROXY_PID=

if [ "$AES" = 1 ]; then
  proxy strip
  fleet_start 1 || fail "start 1"
  fleet_start 0 || fail "start 0"
  wait_metric 0 murmur_handshake_failures_total 1 || fail "daemon 0 counted no failed handshake through the stripping proxy"
  grep -q "offer 01020201 stripped" "$FLEET/proxy-strip.log" || fail "the proxy saw no offer of AESGCM, ChaChaPoly: $(cat "$FLEET/proxy-strip.log")"
  grep -q "handshake message 2 does not authenticate" "$FLEET/node0/log" || fail "daemon 0 does not log message 2 failing"
  [ "$(fleet_metric 0 murmur_sessions_opened_total)" = 0 ] || fail "a session opened through the stripping proxy"
  [ "$(fleet_metric 1 murmur_sessions_opened_total)" = 0 ] || fail "daemon 1 opened a session through the stripping proxy"
  echo "2b. offer stripped on the way: $(fleet_metric 0 murmur_handshake_failures_total) handshakes failed at message 2 on daemon 0, no session"
else
  echo "2b. not run: this CPU runs no AES-GCM, so there is no offer to strip"
fi
echo "daemon cipher test passed"
