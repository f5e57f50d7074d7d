// Transport: authenticated, encrypted, framed TCP sessions between daemons.
//
// Each peer is reached over one TCP connection (IPv4 or IPv6, numeric
// addresses). A connection runs crypto::SecureHandshake (Noise XX with
// certificates), then carries crypto::SecureChannel messages, each one frame
// (crypto::BeginFrame / FrameReader with kConnectionFrameLimits, so a length
// over 65535 is refused before any allocation). Inside the channel, records
// (node/transport/envelope.h) carry a HELLO with the sender's node id, keepalives and
// application messages cut into chunks and reassembled up to
// `max_message_bytes`.
//
// Who dials: of two peers, the one with the smaller node id dials the other
// and redials with exponential backoff and jitter after a failure or a lost
// session. The other dials too when no session has come up
// `reverse_dial_after` after it learned the peer's address or lost its
// session (the smaller id may not reach it: it is behind a NAT), with the
// same backoff after that. Both sides keep the same one of two sessions: a
// newly authenticated session replaces the old one (the peer restarted)
// unless the old one was dialled by the smaller id and the new one by the
// larger, which is then closed. Dials are also limited by
// address, whatever node id they are for: one in flight per address, and
// after a failure there (no connection, a failed handshake, no HELLO or
// another node's) the next dial to it waits the same backoff.
//
// Send queues: one per peer, kept while the peer is disconnected, bounded by
// `max_queue_bytes`. A message that does not fit evicts the oldest messages
// not yet started on the wire (drop-oldest: gossip prefers fresh models); a
// single message over the bound is refused. Every dropped message is counted
// in stats().send_queue_drops. Only the message being written is held sealed,
// in batches of about `write_batch_bytes`. Each record is sealed straight
// from the message's payload into the batch (crypto::AeadSlot::SealGather);
// a received frame is decrypted straight from where the socket read put it
// into the message being reassembled (node::Payload, never zero-filled):
// ChaCha20-Poly1305 verifies the tag first, AES-GCM as it decrypts, with
// nothing acted on before the tag verifies (node/transport/session.cc,
// GcmFrameRecord).
//
// Crypto workers (`crypto_threads` > 0, a core::ThreadPool): the io thread
// takes every frame's key and nonce from the channel in order and gives
// every frame its place in the batch before any is sealed; the frames are
// then sealed on the workers and the io thread together, and the batch is
// written when all are done. So the bytes on the wire, and the nonce of each
// frame (one each, never repeated), are exactly those of sealing on the io
// thread alone. Likewise the sealed frames of one read are verified and
// decrypted in place in parallel (their nonces taken in order), then handled
// in order up to the first that fails, which closes the session as before.
//
// A failed handshake, a bad frame length, a frame that fails authentication
// (tampered, replayed) or a malformed record closes that connection only; the
// event is logged and counted, and every other session carries on.
//
// Misbehaving peers (node/transport/peer_scoring.h, docs/security.md): each of those
// failures is also booked against the peer (its node id once HELLO has
// named it, else its IP address), as is every undecodable payload the
// handler reports with ReportMisbehaviour. A graylisted node's session is
// closed at once and its new sessions are closed right after HELLO, before
// any message; a graylisted address's connections are closed on accept,
// before the handshake; this node does not dial a graylisted node until its
// term ends. Token buckets per address bound handshakes (connections over
// the limit are closed on accept) and messages (a message over the limit is
// skipped unread: its records are authenticated and counted, but the payload
// is neither buffered nor handed on).
//
// Certificate renewal: SetCredentials swaps the certificate this node
// presents; open sessions carry it to their peers in a CERTIFICATE record
// (node/transport/envelope.h), which the peer checks as the handshake would (same node
// key, same Noise static key) and then holds instead of the old one. A
// session then lasts until the newer not_after. A peer that does not know the
// record closes the session, and the redial presents the new certificate.
//
// Transfer throughput (Throughput): each message of at least
// kTimedMessageBytes that a peer sends is timed where it arrives, from the
// socket read that brought its first record to the one that brought its
// last; its records that came after that first read, over that time, are one
// sample. The samples of a peer are smoothed as TCP smooths round trips
// (RFC 6298: the first as is, then 7/8 of the old value plus 1/8 of the
// new). This is what the link delivered while the peer had a model to send:
// at most the slower of the path and either side's sealing and opening.
// A message that arrives in one read, or with less than
// kTimedBytesAfterFirstRead after it, gives no sample (too fast to time).
//
// Thread-safety: everything runs on the io_context's thread (one executor per
// node); call Start, Send, AddPeer, SetCredentials and Stop there (or before it runs). stats()
// may be read from any thread. Destroy the Transport after Stop() and after
// the io_context has stopped running its handlers, or on its thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/env.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "crypto/handshake.h"
#include "node/transport/asio.h"
#include "node/transport/envelope.h"
#include "node/transport/listener.h"
#include "node/transport/peer_scoring.h"
#include "node/transport/pending.h"
#include "node/transport/relay.h"
#include "node/transport/transport_options.h"
#include "node/transport/write_batch.h"

namespace murmur::node {

class Session;

class Transport {
 public:
  using MessageHandler = std::function<void(NodeId from, ReceivedMessage message)>;

  // `io` must outlive the Transport. `handler` runs on the io thread for each
  // complete message from an authenticated peer.
  Transport(asio::io_context& io, crypto::Credentials credentials, crypto::TrustPolicy policy,
            TransportOptions options, MessageHandler handler);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Binds and listens, then dials the peers this node dials.
  // InvalidArgument (bad address) or Unavailable (bind failed).
  Status Start();
  // Closes the listener and every session; pending messages are dropped.
  void Stop();

  // Adds or updates a peer's address (dials it when this node is the dialer).
  void AddPeer(const PeerAddress& peer);
  // Queues `payload` for `to` (see the class comment for the bound).
  void Send(NodeId to, std::uint32_t kind, std::shared_ptr<const crypto::Bytes> payload);

  // Books `offence` against an authenticated peer (for the handler: an
  // undecodable payload, a bad signature). When it puts the peer on the
  // graylist, its session is closed at once (before any later message of it
  // is read) and it is refused until its term ends.
  void ReportMisbehaviour(NodeId peer, Offence offence);

  // Replaces the credentials this node presents (a renewed certificate; the
  // caller has checked it, node/certificate_reload.h): new handshakes present
  // them, and every open session sends the new certificate in a CERTIFICATE
  // record, so that the peer keeps the session past the old not_after.
  // InvalidArgument, changing nothing, when the identity key differs.
  Status SetCredentials(crypto::Credentials credentials);
  const crypto::Credentials& credentials() const { return credentials_; }
  bool IsGraylisted(NodeId peer) const;
  // The node's misbehaviour score now (0: clean; docs/security.md).
  double Score(NodeId peer) const;

  std::uint16_t port() const { return listener_.port(); }
  // Accept failures for want of descriptors or memory (node/transport/listener.h).
  std::uint64_t accept_resource_errors() const { return listener_.resource_errors(); }
  bool IsConnected(NodeId peer) const;
  // Why `peer` has no session and for how long; nullopt when it has one or
  // no address is known for it.
  std::optional<PeerOutage> Unconnected(NodeId peer) const;
  // The Ed25519 key of the certificate `peer` presented on its current
  // session; nullopt without one. (Membership verifies signatures with it.)
  std::optional<crypto::SignPublicKey> PeerKey(NodeId peer) const;
  // The key `peer`'s address entry pins (the config's `public_key`), if any.
  std::optional<crypto::SignPublicKey> PinnedKey(NodeId peer) const;
  // The certificate `peer` holds on its current session: the handshake's, or
  // the last renewed one it sent there. nullopt without a session.
  std::optional<crypto::Certificate> PeerCertificate(NodeId peer) const;
  std::vector<NodeId> ConnectedPeers() const;
  // The smoothed throughput of `peer`'s messages to this node (class
  // comment); nullopt until one of them was timed. Kept across sessions.
  std::optional<PeerThroughput> Throughput(NodeId peer) const;
  // Every peer's, by node id.
  const std::map<NodeId, PeerThroughput>& Throughputs() const { return throughput_; }
  const TransportStats& stats() const { return stats_; }
  // The relay this node serves (refusing every circuit unless options.relay.serve).
  RelayServer& relay() { return *relay_; }
  const RelayServer& relay() const { return *relay_; }
  // Where an operator's relayed control connection goes (RELAY_INVITE from
  // one of this node's relays with initiator kNoNode): the socket, after
  // its preface, for the control server to run as an accepted connection.
  // Without a handler such invitations are refused.
  using ControlCircuitHandler = std::function<void(asio::ip::tcp::socket socket, NodeId relay)>;
  void SetControlCircuitHandler(ControlCircuitHandler handler) { control_circuit_ = std::move(handler); }
  // Called on the io thread whenever the probes change their finding.
  void SetReachabilityHandler(std::function<void(Reachability)> handler) {
    reachability_handler_ = std::move(handler);
  }
  // This node's relays from now on (relays learned from membership).
  void SetRelays(std::vector<NodeId> relays) { options_.relays = std::move(relays); }
  const std::vector<NodeId>& relays() const { return options_.relays; }
  // Whether peers can dial this node (the last probe round's finding), and
  // in words: who dialled it back, or why they could not.
  Reachability reachability() const { return static_cast<Reachability>(stats_.reachable.load()); }
  const std::string& reachability_detail() const { return reachability_detail_; }
  // The relay `peer`'s current session runs through; nullopt when it is
  // direct or there is none.
  std::optional<NodeId> RelayOf(NodeId peer) const;
  NodeId self() const { return options_.self; }

 private:
  friend class Session;
  struct Outgoing {
    std::uint32_t kind;
    std::shared_ptr<const crypto::Bytes> payload;
    std::size_t next_record = 0;  // > 0 once the message has started on the wire
  };
  struct Peer {
    std::optional<PeerAddress> address;
    std::shared_ptr<Session> session;  // the ready session, if any
    std::deque<Outgoing> queue;
    std::size_t queued_bytes = 0;
    int failures = 0;  // consecutive dial failures, for the backoff
    std::unique_ptr<asio::steady_timer> redial;
    bool dialing = false;
    // Without a session: since when, the last reason, and whether it was reported.
    std::chrono::steady_clock::time_point unconnected_since{};
    std::string why;
    bool reported = false;
    // Dials alternate between the address and the peer's relays.
    bool via_relay_next = false;
    std::size_t relay_turn = 0;
    // An address known, no session, and the time without one counted.
    bool unconnected() const {
      return !session && address.has_value() && unconnected_since != std::chrono::steady_clock::time_point{};
    }
    std::string reason() const { return why.empty() ? "not dialled yet" : why; }
  };

  void OnAccept(asio::ip::tcp::socket socket);
  void Dial(NodeId id);
  void ScheduleRedial(NodeId id);
  // Closes `socket` when its connect has not completed within connect_timeout
  // (cancel the timer when it has).
  std::shared_ptr<asio::steady_timer> ConnectTimer(const std::shared_ptr<asio::ip::tcp::socket>& socket);
  // The redial wait after `failures` consecutive failures (jittered).
  Nanos Backoff(int failures);
  // A dial to the address `key` failed: the next to it waits out the backoff.
  void DialFailed(const std::string& key);
  void RedialAfter(NodeId id, Nanos delay);
  bool Dials(NodeId peer) const { return options_.self < peer; }
  // Arms the first dial of a peer whose address is known and that has no
  // session: at once when this node dials it, after reverse_dial_after when not.
  void WantSession(NodeId id);
  // Records why `id` has no session yet.
  void Unreached(NodeId id, std::string why);
  // Why a dial's connect failed, in words (refused, timed out, unreachable).
  std::string ConnectFailure(const asio::error_code& ec) const;
  // Once a second: warns about peers unconnected past the report delay.
  void ReportUnconnected();

  // Called by sessions.
  // The handshake completed: the session leaves the pending set. False when
  // max_sessions are open (the session then closes).
  bool OnAuthenticated(Session* session);
  // The session leaves the pending set (authenticated or closed).
  void ReleasePending(Session* session);
  void OnReady(const std::shared_ptr<Session>& session);
  void OnClosed(Session* session, NodeId peer, bool was_dialer, const Status& why);
  // Appends sealed frames of queued messages for `peer` to *out, up to about
  // write_batch_bytes.
  Status FillBatch(NodeId peer, crypto::SecureChannel& channel, WriteBatch* out);
  bool HasQueued(NodeId peer) const;
  void Deliver(NodeId from, ReceivedMessage message);
  // A message of `bytes` from `from` arrived, `after_first_read` of them
  // `elapsed` after the read that brought its first record.
  void OnTransfer(NodeId from, std::uint64_t bytes, std::uint64_t after_first_read, Nanos elapsed);
  // A session failed with `why`: books it against the peer (node id when
  // known, else the address).
  void OnSessionFailure(NodeId peer, const std::string& address, bool in_handshake, const Status& why);
  // Whether a message from `peer` (authenticated) at `address` is to be read.
  bool AdmitMessage(NodeId peer, const std::string& address);
  // A message skipped for its address's rate is invisible to the job, which
  // then waits out its round; says so in the log, at most every 10 s.
  void WarnRateLimited(NodeId peer, const std::string& address, std::chrono::steady_clock::time_point now);
  void OnGraylisted(NodeId peer);

  // Relays (transport_relay.cc).
  // Asks one of the peer's relays for a circuit and dials the relay.
  void DialViaRelay(NodeId id);
  // Connects to `relay`'s address, sends the preface with `token`, then
  // `done` with the socket, or `failed` with why.
  void ConnectPreface(const PeerAddress& relay, const RelayToken& token,
                      std::function<void(asio::ip::tcp::socket)> done,
                      std::function<void(std::string)> failed);
  void OnRelayConnect(NodeId from, NodeId target, const RelayToken& token);
  void OnRelayInvite(NodeId from, NodeId initiator, const RelayToken& token);
  void OnRelayRefused(NodeId from, const RelayToken& token, const std::string& reason);
  // An accepted connection began with a relay preface: it leaves the
  // session (still in its handshake) for the relay.
  void OnPreface(Session* session, asio::ip::tcp::socket socket, const RelayToken& token, crypto::Bytes rest);
  // Reachability probes (transport_probe.cc).
  void ProbeRound();
  // The round's end: a verdict from the answers, then the next round.
  void ConcludeProbes();
  void OnProbeRequest(NodeId from, const std::string& observed, const RelayToken& nonce);
  void OnProbeResult(NodeId from, const RelayToken& nonce, ProbeVerdict verdict, const std::string& reason);
  // A dial-back reached this node's listener; false when `nonce` is not one of this round's.
  bool OnDialBack(const RelayToken& nonce);
  void SetReachability(Reachability r, std::string detail);
  // Sends a record on `to`'s session; false without one.
  bool SendRecord(NodeId to, crypto::Bytes record);

  asio::io_context& io_;
  crypto::Credentials credentials_;
  crypto::TrustPolicy policy_;
  TransportOptions options_;
  MessageHandler handler_;
  PendingConnections pending_;
  Listener listener_;
  asio::steady_timer report_timer_;  // ReportUnconnected's
  std::size_t sessions_open_ = 0;    // authenticated sessions and dials in progress, against max_sessions
  std::size_t pending_peak_ = 0;     // most pending handshakes at once since memory was last returned
  std::map<NodeId, Peer> peers_;
  std::map<NodeId, PeerThroughput> throughput_;  // authenticated senders only
  // Dials by address ("host port"), whatever node id each is for: one at a
  // time, and after a failure there the next waits Backoff(failures), so
  // that members pointing many ids at one address cost it one dial's worth.
  struct AddressDials {
    int failures = 0;
    std::chrono::steady_clock::time_point next{};
    bool in_flight = false;
  };
  std::map<std::string, AddressDials> address_dials_;
  std::vector<std::weak_ptr<Session>> sessions_;  // every live session, for Stop
  Rng jitter_;
  PeerScores scores_;
  std::unique_ptr<ThreadPool> workers_;  // null without crypto threads
  std::unique_ptr<RelayServer> relay_;
  // Circuits this node asked for, by its token: for the relay's refusal.
  struct RelayDial {
    NodeId peer = kNoNode;
    NodeId relay = kNoNode;
    bool connecting = true;  // the TCP connection to the relay is under way
    std::string refused;     // the relay's reason, when it refused before the connection was up
    std::weak_ptr<Session> session;
  };
  std::map<RelayToken, RelayDial> relay_dials_;
  std::size_t invites_in_flight_ = 0;
  ControlCircuitHandler control_circuit_;
  std::function<void(Reachability)> reachability_handler_;
  // Reachability probes: this round's, by nonce.
  struct Probe {
    NodeId peer = kNoNode;
    bool answered = false;
    bool confirmed = false;  // its dial-back reached the listener
    ProbeVerdict verdict = ProbeVerdict::kNoVerdict;
    std::string reason = {};
  };
  std::map<RelayToken, Probe> probes_;
  std::unique_ptr<asio::steady_timer> probe_timer_;
  std::uint64_t probe_rounds_ = 0;
  std::string reachability_detail_ = "not probed yet";
  // Serving others' probes: when each peer was last dialled back, and dials under way.
  std::map<NodeId, std::chrono::steady_clock::time_point> probe_served_at_;
  std::size_t probe_dials_ = 0;
  bool stopped_ = false;
  std::chrono::steady_clock::time_point next_rate_warning_{};  // WarnRateLimited's next
  TransportStats stats_;
};

}  // namespace murmur::node
