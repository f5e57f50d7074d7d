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
#include <string>

#include "core/status.h"
#include "crypto/handshake.h"
#include "proto/control.pb.h"

namespace murmur::node {

// `address` is "HOST:PORT" or "[V6]:PORT" (numeric). Unavailable (connect,
// closed connection), DeadlineExceeded, or the handshake's error
// (Unauthenticated, PermissionDenied) naming the address.
Result<proto::ControlResponse> CallDaemon(const std::string& address, const crypto::Credentials& credentials,
                                          const crypto::TrustPolicy& policy,
                                          const proto::ControlRequest& request,
                                          std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace murmur::node
