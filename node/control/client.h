// CallDaemon: the operator's end of the control protocol (node/control/server.h).
//
// Connects to a daemon's control port, runs the Noise XX handshake as
// initiator with the operator's credentials (the certificate must carry the
// operator role; the daemon's must carry the node role and the network's
// coordinator signature), sends one ControlRequest and returns the
// ControlResponse. Blocking, bounded by `timeout` for the whole exchange.
//
// Thread-safety: a free function with its own io_context; call it from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/status.h"
#include "crypto/handshake.h"
#include "proto/control.pb.h"

namespace murmur::node {

// One operator session with a daemon: the handshake once, then any number of
// requests, each answered in order (a file's chunks offered one after
// another). A request that fails (timeout, closed connection) breaks the
// session: later calls fail at once.
class ControlSession {
 public:
  // Connects and runs the handshake within `timeout`; errors as CallDaemon's.
  static Result<std::unique_ptr<ControlSession>> Open(const std::string& address,
                                                      const crypto::Credentials& credentials,
                                                      const crypto::TrustPolicy& policy,
                                                      std::chrono::milliseconds timeout);
  ~ControlSession();
  // One request and its response within `timeout`.
  Result<proto::ControlResponse> Call(const proto::ControlRequest& request,
                                      std::chrono::milliseconds timeout);
  // The halves of Call, for requests sent ahead of their answers (the daemon
  // answers in order): Send writes one request, Receive reads the next answer.
  Status Send(const proto::ControlRequest& request, std::chrono::milliseconds timeout);
  Result<proto::ControlResponse> Receive(std::chrono::milliseconds timeout);
  const std::string& address() const { return address_; }

 private:
  struct Impl;
  ControlSession(std::string address, std::unique_ptr<Impl> impl);
  std::string address_;
  std::unique_ptr<Impl> impl_;
};

// `address` is "HOST:PORT" or "[V6]:PORT" (numeric). Unavailable (connect,
// closed connection), DeadlineExceeded, or the handshake's error
// (Unauthenticated, PermissionDenied) naming the address.
Result<proto::ControlResponse> CallDaemon(const std::string& address, const crypto::Credentials& credentials,
                                          const crypto::TrustPolicy& policy,
                                          const proto::ControlRequest& request,
                                          std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace murmur::node
