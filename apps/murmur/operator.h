// What the operator's commands (murmur job, peers, metrics) share: the
// operator's credentials, the daemons to talk to, and one request to each.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <cxxopts.hpp>

#include "core/status.h"
#include "crypto/handshake.h"
#include "proto/control.pb.h"

namespace murmur::cli {

struct OperatorContext {
  std::optional<crypto::Credentials> credentials;  // set by LoadOperatorContext
  crypto::TrustPolicy policy;                      // what a daemon must present
  std::vector<std::string> daemons;                // control addresses, HOST:PORT
  int timeout_ms = 10000;
};

// Adds --daemon, --cluster, --identity, --cert, --coordinator-key, --timeout.
void AddOperatorOptions(cxxopts::Options& options);
// Loads the operator's key and certificate (which must carry the operator
// role) and the daemon list. InvalidArgument / NotFound naming the flag or file.
Result<OperatorContext> LoadOperatorContext(const cxxopts::ParseResult& args);

struct DaemonReply {
  std::string address;
  Result<proto::ControlResponse> response;
};
// Sends `request` to every daemon, in order; the replies in the same order.
std::vector<DaemonReply> CallAll(const OperatorContext& ctx, const proto::ControlRequest& request);

// What the daemons measured of each other, from their replies to a peers
// request: a row per round trip `from` measured to `to` (> 0), with the
// throughput of from -> to that `to` timed (Mbit/s; 0: not timed, or `to`
// did not answer). Ordered by (from, to).
struct MeasuredPair {
  std::uint32_t from = 0, to = 0;
  double rtt_ms = 0, mbps = 0;
};
std::vector<MeasuredPair> MeasuredPairs(const std::vector<DaemonReply>& replies);

}  // namespace murmur::cli
