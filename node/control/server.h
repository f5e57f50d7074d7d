// ControlServer: the daemon's end of the operator's control protocol
// (docs/protocol.md section 10; docs/daemon.md, "Operator commands").
//
// It listens on its own TCP port (NodeConfig.control_listen), runs the Noise
// XX handshake as responder with a TrustPolicy that requires the operator
// role, then answers each ControlRequest (node/control/codec.h framing) with
// the handler's ControlResponse, until the operator closes the connection.
// A failed handshake, a frame that fails authentication, an oversized or
// malformed request, or `idle_timeout` without a complete request closes
// that connection only (counted in failures()); the daemon's other work
// carries on.
//
// Unauthenticated connections never starve operators (docs/security.md
// "Attacks and their bounds"): a connection must complete its handshake
// within `handshake_timeout`; connections still in their handshake are
// bounded apart from the sessions (`pending`: at most 64 at once, 8 from one
// address; a new one sheds the oldest of the address holding the most,
// node/transport/pending.h); and `max_sessions` counts authenticated
// operator sessions only. During the handshake frames are read under the
// handshake's limits (crypto::kHandshakeFrameLimits), so a pending
// connection holds a few kilobytes.
//
// Thread-safety: runs on the io_context's thread; the handler is called
// there. Stop() before the io_context goes away.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "crypto/handshake.h"
#include "node/transport/asio.h"
#include "node/transport/listener.h"
#include "node/transport/pending.h"
#include "proto/control.pb.h"

namespace murmur::node {

struct ControlServerOptions {
  Nanos handshake_timeout = std::chrono::seconds(2);  // from accept to a completed handshake
  Nanos idle_timeout = std::chrono::seconds(30);      // an operator session without a complete request
  std::size_t max_sessions = 16;                      // authenticated operator sessions at once
  PendingOptions pending{64, 8};                      // handshakes in progress: at once, per address
};

class ControlServer {
 public:
  using Handler =
      std::function<proto::ControlResponse(const proto::ControlRequest&, const crypto::PeerInfo&)>;

  // `policy.required_roles` should include kRoleOperator (the daemon's does).
  ControlServer(asio::io_context& io, crypto::Credentials credentials, crypto::TrustPolicy policy,
                Handler handler, ControlServerOptions options = {});
  ~ControlServer();

  // Listens on host:port (0: any free port). Unavailable on failure.
  Status Start(const std::string& host, std::uint16_t port);
  void Stop();
  // Runs `socket` as an accepted connection (an operator's, relayed to this
  // daemon: node/transport/relay.h), under the same bounds.
  void Adopt(asio::ip::tcp::socket socket) { OnAccept(std::move(socket)); }
  // The credentials presented to operators from the next connection on (a renewed certificate).
  void SetCredentials(crypto::Credentials credentials) { credentials_ = std::move(credentials); }
  std::uint16_t port() const { return listener_.port(); }
  // Connections closed for a failed or late handshake, a bad request, or
  // refused by the bounds above.
  std::uint64_t failures() const { return state_->failures; }
  std::uint64_t requests() const { return requests_; }
  // Pending handshakes shed to make room for newer ones.
  std::uint64_t shed() const { return state_->shed; }
  std::uint64_t accept_resource_errors() const { return listener_.resource_errors(); }

 private:
  class Connection;
  // What connections update, and may outlive the server with (a connection
  // is destroyed when the io_context drops its last handler).
  struct State {
    explicit State(PendingOptions o) : pending(o) {}
    PendingConnections pending;
    std::size_t sessions = 0;  // authenticated
    std::atomic<std::uint64_t> failures{0};
    std::atomic<std::uint64_t> shed{0};
  };
  void OnAccept(asio::ip::tcp::socket socket);

  asio::io_context& io_;
  crypto::Credentials credentials_;
  crypto::TrustPolicy policy_;
  Handler handler_;
  ControlServerOptions options_;
  std::shared_ptr<State> state_;
  Listener listener_;
  std::atomic<std::uint64_t> requests_{0};
};

}  // namespace murmur::node
