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
// carries on. At most `max_connections` are served at once; more are refused.
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
#include "proto/control.pb.h"

namespace murmur::node {

struct ControlServerOptions {
  std::chrono::seconds idle_timeout{30};  // a connection without a complete request for this long is closed
  int max_connections = 16;
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
  // The credentials presented to operators from the next connection on (a renewed certificate).
  void SetCredentials(crypto::Credentials credentials) { credentials_ = std::move(credentials); }
  std::uint16_t port() const { return port_; }
  // Connections closed for a failed handshake or a bad request.
  std::uint64_t failures() const { return failures_; }
  std::uint64_t requests() const { return requests_; }

 private:
  class Connection;
  void Accept();

  asio::io_context& io_;
  crypto::Credentials credentials_;
  crypto::TrustPolicy policy_;
  Handler handler_;
  ControlServerOptions options_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;
  std::uint16_t port_ = 0;
  std::shared_ptr<int> open_ = std::make_shared<int>(0);  // live connections
  std::atomic<std::uint64_t> failures_{0};
  std::atomic<std::uint64_t> requests_{0};
};

}  // namespace murmur::node
