#include "node/fd_budget.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>

#include "node/metrics_server.h"
#include "node/transport/relay.h"

namespace murmur::node {

std::string DescriptorNeeds::Describe() const {
  return std::to_string(total()) + " (max_sessions " + std::to_string(sessions) +
         " + max_pending_handshakes " + std::to_string(pending) +
         " + control_max_sessions and control_max_pending " + std::to_string(control) + " + metrics " +
         std::to_string(metrics) + (relay > 0 ? " + relay circuits " + std::to_string(relay) : "") + " + " +
         std::to_string(base) + " for the daemon itself)";
}

DescriptorNeeds NeededDescriptors(const proto::NodeConfig& c) {
  DescriptorNeeds n;
  n.sessions = c.max_sessions();
  n.pending = c.max_pending_handshakes();
  n.control = std::uint64_t{c.control_max_sessions()} + c.control_max_pending();
  n.metrics = MetricsServerOptions{}.max_connections;
  if (c.relay()) n.relay = 2 * std::uint64_t{c.relay_max_circuits()} + kMaxOrphans;
  return n;
}

Status EnsureDescriptors(const DescriptorNeeds& needs, std::uint64_t* soft) {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0)
    return Status::Internal(std::string("getrlimit(RLIMIT_NOFILE): ") + std::strerror(errno));
  const std::uint64_t want = needs.total();
  if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < want) {
    if (r.rlim_max != RLIM_INFINITY && r.rlim_max < want) {
      *soft = r.rlim_cur;
      return Status::FailedPrecondition(
          "the configured limits need " + needs.Describe() + " file descriptors, but RLIMIT_NOFILE is " +
          std::to_string(r.rlim_cur) + " (hard " + std::to_string(r.rlim_max) +
          "): raise it (systemd LimitNOFILE=, ulimit -n) or lower those config fields");
    }
    r.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &r) != 0)
      return Status::Internal(std::string("setrlimit(RLIMIT_NOFILE, ") + std::to_string(want) +
                              "): " + std::strerror(errno));
  }
  *soft = r.rlim_cur;
  return Status::Ok();
}

}  // namespace murmur::node
