// RelayServer: splices two TCP connections into one circuit, so that two
// daemons that cannot dial each other (both behind NAT) run their Noise
// session through a third that both can reach (docs/protocol.md section
// 7.4, docs/daemon.md "Behind NAT").
//
// A circuit: node A, on its session with this relay, sends RELAY_CONNECT
// (target B, token a); the relay checks its bounds and, when it takes the
// circuit, sends RELAY_INVITE (initiator A, token b, fresh random) to B on
// B's session, else RELAY_REFUSED (token a, reason) to A. A and B each open a
// TCP connection to the relay and send a preface with their token
// (node/transport/preface.h); when both are in, the relay forwards bytes
// between them both ways, as they come, until either closes. A then runs
// the Noise handshake as initiator and B as responder: what the relay
// forwards is their handshake and sealed frames, never a plaintext, and the
// relay cannot alter a byte without the session failing.
//
// Bounds (RelayOptions): circuits at once, in all and per node (each end
// counts for its node); bytes per second per node (a token bucket each;
// every forwarded byte is charged to both ends' nodes, and a direction whose
// node is in debt stops reading until it is repaid); a circuit whose two
// ends are not both in within pair_timeout is dropped; a spliced circuit
// silent for idle_timeout is closed. A connection with a token no circuit
// holds waits at most kOrphanWait for its RELAY_CONNECT (it may race it),
// at most kMaxOrphans of them.
//
// Thread-safety: runs on the Transport's io_context thread only.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/env.h"
#include "crypto/bytes.h"
#include "node/transport/asio.h"
#include "node/transport/envelope.h"

namespace murmur::node {

struct RelayOptions {
  bool serve = false;  // relays for other nodes
  std::size_t max_circuits = 256;
  std::size_t max_circuits_per_node = 16;
  double bytes_per_second_per_node = 16.0 * (1 << 20);
  double burst_bytes_per_node = 4.0 * (1 << 20);
  Nanos pair_timeout = std::chrono::seconds(10);
  Nanos idle_timeout = std::chrono::seconds(60);
};

struct RelayStats {
  std::atomic<std::uint64_t> circuits_open{0};       // spliced or waiting for their ends
  std::atomic<std::uint64_t> circuits_spliced{0};    // both ends came in (total)
  std::atomic<std::uint64_t> circuits_refused{0};    // RELAY_CONNECTs refused (total)
  std::atomic<std::uint64_t> circuits_unpaired{0};   // dropped: an end never came
  std::atomic<std::uint64_t> bytes_forwarded{0};     // both directions
  std::atomic<std::uint64_t> prefaces_unknown{0};    // connections whose token no circuit held
  std::atomic<std::uint64_t> rate_limited_waits{0};  // reads held back for a node's byte rate
};

inline constexpr Nanos kOrphanWait = std::chrono::seconds(2);
inline constexpr std::size_t kMaxOrphans = 32;
inline constexpr std::size_t kRelayBufferBytes = 64 * 1024;

class RelayServer {
 public:
  // Sends a record to a node on its session; false when there is none.
  using SendRecord = std::function<bool(NodeId to, crypto::Bytes record)>;

  RelayServer(asio::io_context& io, NodeId self, RelayOptions options, SendRecord send);
  ~RelayServer();
  RelayServer(const RelayServer&) = delete;
  RelayServer& operator=(const RelayServer&) = delete;

  // RELAY_CONNECT from authenticated `from`. `connected` says whether this
  // node has a session with the target.
  void OnConnect(NodeId from, NodeId target, const RelayToken& token, bool connected);
  // An operator's circuit to `target`'s control server (the operator is
  // authenticated by this node's control server; relaying for it needs no
  // `serve`): RELAY_INVITE(kNoNode, token b) goes to the target, and the
  // operator's end is to send the preface with the returned token.
  // FailedPrecondition / ResourceExhausted with the reason otherwise.
  Result<RelayToken> OpenControl(NodeId target, bool connected);
  // A connection opened with a preface naming `token`; `rest` is what came
  // after the preface (the initiator's first handshake message, maybe).
  void OnPreface(asio::ip::tcp::socket socket, const RelayToken& token, crypto::Bytes rest);
  // Closes every circuit.
  void Stop();

  // Every byte forwarded, as it is forwarded (tests read what a relay sees).
  void SetTap(std::function<void(crypto::ByteSpan)> tap) { tap_ = std::move(tap); }
  const RelayOptions& options() const { return options_; }
  const RelayStats& stats() const { return stats_; }
  // Circuits at once with `node` at one end.
  std::size_t CircuitsOf(NodeId node) const;

 private:
  struct Circuit;
  struct Bucket {
    double tokens = 0;
    std::chrono::steady_clock::time_point last{};
    std::size_t circuits = 0;
  };
  // Checks the bounds for a circuit between `from` and `target`; the reason
  // it is refused, or empty.
  std::string Refusal(NodeId from, NodeId target, bool connected) const;
  // Registers a circuit whose initiator token is `token` and invites the target.
  bool Open(NodeId from, NodeId target, const RelayToken& token);
  void Refuse(NodeId from, const RelayToken& token, const std::string& why);
  void Attach(const std::shared_ptr<Circuit>& c, int end, asio::ip::tcp::socket socket, crypto::Bytes rest);
  void Splice(const std::shared_ptr<Circuit>& c);
  void ArmIdle(const std::shared_ptr<Circuit>& c);
  void Forward(const std::shared_ptr<Circuit>& c, int from_end);
  void Close(const std::shared_ptr<Circuit>& c, const std::string& why);
  // Charges n bytes to both ends' nodes; how long the reading end must wait
  // before it reads again (0: none).
  Nanos Charge(const Circuit& c, std::size_t n);
  Bucket& BucketOf(NodeId node);

  asio::io_context& io_;
  NodeId self_;
  RelayOptions options_;
  SendRecord send_;
  std::function<void(crypto::ByteSpan)> tap_;
  std::map<RelayToken, std::shared_ptr<Circuit>> by_token_;  // both tokens of each circuit
  std::map<NodeId, Bucket> nodes_;
  struct Orphan {
    RelayToken token;
    std::shared_ptr<asio::ip::tcp::socket> socket;
    crypto::Bytes rest;
    std::shared_ptr<asio::steady_timer> timer;
  };
  std::vector<Orphan> orphans_;
  bool stopped_ = false;
  RelayStats stats_;
};

}  // namespace murmur::node
