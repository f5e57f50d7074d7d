// What a Transport is told and what it reports (node/transport/transport.h):
// a peer's address, the options with their defaults, the counters of
// stats(), and the per-peer outage and throughput records.
//
// Thread-safety: plain values; TransportStats' counters are atomics, read
// from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/env.h"
#include "crypto/handshake.h"
#include "node/transport/listener.h"
#include "node/transport/peer_scoring.h"
#include "node/transport/pending.h"
#include "node/transport/relay.h"

namespace murmur::node {

struct PeerAddress {
  NodeId id = kNoNode;
  std::string host;  // numeric IPv4 or IPv6 address
  std::uint16_t port = 0;
  // When set, the peer's certificate must name this key.
  std::optional<crypto::SignPublicKey> key;
  // Relays the peer holds sessions with (its membership address names them):
  // when a dial to host:port fails, the next goes through one of them.
  std::vector<NodeId> relays = {};
};

// Whether this node's peers can dial it, as the reachability probes last
// found (docs/protocol.md section 7.5).
enum class Reachability { kUnknown = -1, kUnreachable = 0, kReachable = 1 };

struct TransportOptions {
  NodeId self = 0;
  std::string listen_host = "127.0.0.1";  // numeric; "::1" for IPv6
  std::uint16_t listen_port = 0;          // 0: an ephemeral port (see Transport::port())
  std::vector<PeerAddress> peers;
  std::uint64_t seed = 1;  // for reconnect jitter
  Nanos connect_timeout = std::chrono::seconds(3);
  Nanos handshake_timeout = std::chrono::seconds(5);  // from TCP connect to HELLO
  // Accepted connections still in their handshake: at most pending.max_total
  // at once (128), pending.max_per_address from one IP address (16); a new
  // one sheds the oldest of the address holding the most (node/transport/pending.h).
  PendingOptions pending;
  // Authenticated sessions (and dials in progress) at once; a handshake that
  // completes beyond it is closed. Bounds the descriptors sessions take.
  std::size_t max_sessions = 1024;
  Nanos reconnect_initial = std::chrono::milliseconds(100);
  Nanos reconnect_max = std::chrono::seconds(5);
  // The larger id dials when the smaller has not connected within this.
  Nanos reverse_dial_after = std::chrono::seconds(2);
  // A peer with an address and no session for this long is reported (a
  // warning with the reason, once per outage; stats().peers_unconnected):
  // by then the reverse dial has had its connect_timeout.
  Nanos unconnected_report_after = std::chrono::seconds(8);
  Nanos keepalive_interval = std::chrono::seconds(2);  // PING when idle this long
  Nanos idle_timeout = std::chrono::seconds(10);       // close after this long without a record
  std::size_t max_queue_bytes = std::size_t{64} << 20;
  std::uint64_t max_message_bytes = std::uint64_t{256} << 20;
  std::size_t write_batch_bytes = std::size_t{256} << 10;
  // Threads that seal and open frames beside the io thread (0: the io thread
  // alone). -1 (default): DefaultCryptoThreads(HardwareThreads()), i.e.
  // min(2, threads - 1) on machines with 4 or more hardware threads, else 0
  // (docs/benchmarks.md: on 2 cores a worker only competes with the peer).
  int crypto_threads = -1;
  crypto::ChannelOptions channel;
  // This node's relays: it accepts RELAY_INVITEs from these nodes only
  // (node/transport/relay.h). Its peers learn them from its membership address.
  std::vector<NodeId> relays = {};
  // Relaying for others (off unless relay.serve), and its bounds.
  RelayOptions relay;
  // RELAY_INVITEs being answered at once (a dial to the relay each).
  std::size_t max_relay_invites_in_flight = 8;
  // Reachability probes: the first round this long after Start, then one
  // every probe_interval; each asks up to probe_peers peers with direct
  // sessions to dial this node back.
  Nanos probe_first = std::chrono::seconds(3);
  Nanos probe_interval = std::chrono::minutes(5);
  std::size_t probe_peers = 3;
  PeerScoringOptions
      scoring;  // penalties, graylisting, rate limits (defaults in node/transport/peer_scoring.h)
};

struct TransportStats {
  std::atomic<std::uint64_t> bytes_sent{0};
  std::atomic<std::uint64_t> bytes_received{0};
  std::atomic<std::uint64_t> messages_sent{0};
  std::atomic<std::uint64_t> messages_received{0};
  std::atomic<std::uint64_t> sessions_opened{0};
  std::atomic<std::uint64_t> sessions_aes_gcm{0};  // of them, on AES-256-GCM (the rest on ChaCha20-Poly1305)
  std::atomic<std::uint64_t> handshake_failures{0};
  std::atomic<std::uint64_t> frames_rejected{0};  // bad length, failed authentication, bad record
  std::atomic<std::uint64_t> connect_failures{0};
  std::atomic<std::uint64_t> send_queue_drops{0};
  std::atomic<std::uint64_t> peers_connected{0};
  std::atomic<std::uint64_t> sessions_expired{0};  // closed when a certificate expired mid-session
  // Certificate renewal (SetCredentials, CERTIFICATE records).
  std::atomic<std::uint64_t> certificates_presented{0};       // renewed certificates sent on open sessions
  std::atomic<std::uint64_t> certificate_updates{0};          // peers' renewed certificates taken
  std::atomic<std::uint64_t> certificate_updates_refused{0};  // peers' renewed certificates refused
  // Misbehaving peers.
  std::atomic<std::uint64_t> offences{0};                 // offences booked (node ids and addresses)
  std::atomic<std::uint64_t> graylistings{0};             // times a node id or address went on the graylist
  std::atomic<std::uint64_t> connections_refused{0};      // accepted from a graylisted address, closed unread
  std::atomic<std::uint64_t> handshakes_rate_limited{0};  // accepted over the handshake rate, closed unread
  std::atomic<std::uint64_t> sessions_refused{0};         // HELLO from a graylisted node, closed
  std::atomic<std::uint64_t> messages_dropped_graylisted{0};  // skipped unread: sender graylisted
  std::atomic<std::uint64_t> messages_rate_limited{0};        // skipped unread: over the message rate
  // Sessions taken on a version 1 certificate, which binds no node id (pinned key).
  std::atomic<std::uint64_t> legacy_certificates{0};
  // Resource bounds (docs/security.md "Attacks and their bounds").
  std::atomic<std::uint64_t> pending_refused{
      0};                                      // accepted over the per-address pending limit, closed unread
  std::atomic<std::uint64_t> pending_shed{0};  // pending handshakes closed to make room (or a descriptor)
  std::atomic<std::uint64_t> sessions_over_limit{0};  // handshakes completed beyond max_sessions, closed
  std::atomic<std::uint64_t> dials_deferred{
      0};  // dials put off: their address has one in flight or backs off
  // Reachability (docs/daemon.md "Behind NAT").
  std::atomic<std::uint64_t> peers_unconnected{
      0};  // peers with an address, no session for unconnected_report_after
  std::atomic<std::uint64_t> reverse_dials{0};       // dials by the larger id (the smaller did not connect)
  std::atomic<std::uint64_t> sessions_duplicate{0};  // the second of two sessions with a peer, closed
  // Through relays (node/transport/relay.h), as an end of a circuit.
  std::atomic<std::uint64_t> relay_dials{0};            // circuits asked for (RELAY_CONNECT sent)
  std::atomic<std::uint64_t> relay_refusals{0};         // of them, refused by the relay
  std::atomic<std::uint64_t> relay_invites{0};          // RELAY_INVITEs answered (a dial to the relay)
  std::atomic<std::uint64_t> relay_invites_refused{0};  // not answered: not from a relay of this node, bounds
  std::atomic<std::uint64_t> relayed_sessions{0};       // sessions that came up through a relay
  std::atomic<std::uint64_t> relayed_bytes_sent{0};     // bytes written on relayed sessions
  std::atomic<std::uint64_t> relayed_bytes_received{0};
  // Reachability probes (docs/protocol.md section 7.5).
  std::atomic<std::uint64_t> probes_sent{0};      // PROBE_REQUESTs this node sent
  std::atomic<std::uint64_t> probe_dialbacks{0};  // dial-backs that reached this node with a nonce of its own
  std::atomic<std::uint64_t> probes_served{0};    // dial-backs this node made for its peers
  std::atomic<std::uint64_t> probes_refused{0};   // PROBE_REQUESTs answered without a dial (rate, no address)
  std::atomic<int> reachable{-1};                 // Reachability, as a number
};

// Why a peer with an address has no session (Transport::Unconnected).
struct PeerOutage {
  std::string reason;  // "refused", "timed out", "unreachable", "waiting for it to dial", ...
  Nanos duration{0};   // since the session was lost or the address learned
};

// Messages of at least this many bytes (their records) are timed for the
// peer's transfer throughput, when at least kTimedBytesAfterFirstRead of
// them arrive after the read that brought the first record.
inline constexpr std::uint64_t kTimedMessageBytes = std::uint64_t{256} << 10;
inline constexpr std::uint64_t kTimedBytesAfterFirstRead = std::uint64_t{64} << 10;

// A peer's smoothed transfer throughput to this node (see Transport).
struct PeerThroughput {
  double bytes_per_second = 0;
  std::uint64_t samples = 0;  // messages timed
};

// The default number of crypto workers on a machine with `hardware_threads`
// (TransportOptions::crypto_threads = -1).
int DefaultCryptoThreads(int hardware_threads);

}  // namespace murmur::node
