// The file descriptors a daemon's configured limits can take at once, and
// the check that RLIMIT_NOFILE fits them (docs/daemon.md "Limits"): every
// bound on connections (NodeConfig max_sessions, max_pending_handshakes,
// control_max_sessions, control_max_pending; the metrics server's
// max_connections) is a bound on descriptors, and a limit below their sum
// would let accept fail with EMFILE while every connection stays within its
// own bound. So the daemon raises its soft limit to the sum when the hard
// limit allows, and refuses to start when it does not, naming both.
//
// Thread-safety: functions; EnsureDescriptors changes the process's limit.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "proto/node.pb.h"

namespace murmur::node {

// Descriptors the daemon itself holds whatever its peers do: the standard
// streams, the event loop (epoll, eventfd, timerfd), the signal pipe, three
// listeners and the files a job reads and checkpoints (an idle daemon holds
// 13; the rest is headroom).
inline constexpr std::uint64_t kDaemonBaseDescriptors = 32;

struct DescriptorNeeds {
  std::uint64_t base = kDaemonBaseDescriptors;
  std::uint64_t sessions = 0;  // max_sessions
  std::uint64_t pending = 0;   // max_pending_handshakes
  std::uint64_t control = 0;   // control_max_sessions + control_max_pending
  std::uint64_t metrics = 0;   // MetricsServerOptions::max_connections
  std::uint64_t relay = 0;     // relay: true: two per circuit (relay_max_circuits), and kMaxOrphans

  std::uint64_t total() const { return base + sessions + pending + control + metrics + relay; }
  // "1400 (max_sessions 1024 + max_pending_handshakes 256 + ...)".
  std::string Describe() const;
};

DescriptorNeeds NeededDescriptors(const proto::NodeConfig& config);

// Makes RLIMIT_NOFILE's soft limit at least needs.total(), raising it toward
// the hard limit. FailedPrecondition, naming the limits and the fields to
// lower, when the hard limit is below it. *soft is the soft limit after.
Status EnsureDescriptors(const DescriptorNeeds& needs, std::uint64_t* soft);

}  // namespace murmur::node
