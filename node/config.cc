#include "node/config.h"

#include <set>

#include "config/files.h"
#include "engine/faults.h"
#include "node/job/job_data.h"

namespace murmur::node {

Result<proto::NodeConfig> ParseNodeConfig(const std::string& text, const std::string& origin) {
  proto::NodeConfig c;
  Status st = config::ParseMessageText(text, origin, &c);
  // A job block in the layout of murmur 0.1 gets a hint naming its fields' new place.
  if (!st.ok()) return Status::InvalidArgument(st.message() + config::OldNodeJobHint(text));
  return c;
}

Result<proto::NodeConfig> LoadNodeConfig(const std::string& path) {
  MURMUR_ASSIGN_OR_RETURN(std::string text, config::ReadConfigFile(path, "config"));
  return ParseNodeConfig(text, path);
}

Status ValidateNodeConfig(const proto::NodeConfig& c) {
  if (!c.has_node_id()) return Status::InvalidArgument("config: node_id is required");
  if (c.cipher() != "auto" && c.cipher() != "chachapoly")
    return Status::InvalidArgument("config field 'cipher': '" + c.cipher() + "' is not auto or chachapoly");
  if (!c.has_data_dir() || c.data_dir().empty())
    return Status::InvalidArgument("config: data_dir is required");
  if (!c.has_network_id()) return Status::InvalidArgument("config: network_id is required");
  if (!c.has_coordinator_key()) return Status::InvalidArgument("config: coordinator_key is required");
  MURMUR_RETURN_IF_ERROR(ParseHostPort(c.listen()).status().WithContext("config field 'listen'"));
  auto metrics = ParseHostPort(c.metrics_listen());
  MURMUR_RETURN_IF_ERROR(metrics.status().WithContext("config field 'metrics_listen'"));
  if (metrics->host != "127.0.0.1" && metrics->host != "::1")
    return Status::InvalidArgument("config field 'metrics_listen': metrics are served on loopback only");
  auto control = ParseHostPort(c.control_listen());
  MURMUR_RETURN_IF_ERROR(control.status().WithContext("config field 'control_listen'"));
  if (!(c.drain_timeout() >= 0) || !(c.linger() >= 0))
    return Status::InvalidArgument("config: drain_timeout and linger must not be negative");
  if (!(c.message_rate_per_address() > 0) || !(c.message_burst_per_address() >= 1))
    return Status::InvalidArgument(
        "config fields 'message_rate_per_address' and 'message_burst_per_address' must be positive (burst >= "
        "1)");
  MURMUR_RETURN_IF_ERROR(CheckLocalData(c.data()));
  const std::pair<const char*, std::uint32_t> bounds[] = {
      {"max_sessions", c.max_sessions()},
      {"max_pending_handshakes", c.max_pending_handshakes()},
      {"max_pending_handshakes_per_address", c.max_pending_handshakes_per_address()},
      {"control_max_sessions", c.control_max_sessions()},
      {"control_max_pending", c.control_max_pending()},
      {"control_max_pending_per_address", c.control_max_pending_per_address()},
      {"max_members_per_peer", c.max_members_per_peer()},
      {"relay_max_circuits", c.relay_max_circuits()},
      {"relay_max_circuits_per_node", c.relay_max_circuits_per_node()},
  };
  for (const auto& [name, value] : bounds)
    if (value < 1)
      return Status::InvalidArgument(std::string("config field '") + name + "' must be at least 1");
  if (!(c.control_handshake_timeout() > 0))
    return Status::InvalidArgument("config field 'control_handshake_timeout' must be positive");
  std::set<std::uint32_t> ids;
  for (const auto& p : c.peers()) {
    if (!p.has_id() || p.id() == c.node_id() || !ids.insert(p.id()).second)
      return Status::InvalidArgument("config field 'peers': id " + std::to_string(p.id()) +
                                     " is missing, repeated, or this node's own");
    MURMUR_RETURN_IF_ERROR(ParseHostPort(p.address()).status().WithContext("config field 'peers.address'"));
  }
  if (!(c.relay_bytes_per_second_per_node() >= 1024))
    return Status::InvalidArgument("config field 'relay_bytes_per_second_per_node' must be at least 1024");
  if (c.relays_size() > static_cast<int>(kMaxRelays))
    return Status::InvalidArgument("config field 'relays': at most " + std::to_string(kMaxRelays) +
                                   " relays");
  std::set<std::uint32_t> relays;
  for (std::uint32_t r : c.relays()) {
    if (ids.count(r) == 0 || !relays.insert(r).second)
      return Status::InvalidArgument(
          "config field 'relays': node " + std::to_string(r) +
          " is repeated or not in 'peers' (a relay must be dialled by its address)");
  }
  if (c.has_faults()) {
    if (!c.fault_injection())
      return Status::InvalidArgument("config field 'faults' needs 'fault_injection: true'");
    MURMUR_RETURN_IF_ERROR(
        engine::ValidateFaults(c.faults(), engine::kMaxFaultNodeId, engine::FaultTime::kUntilCleared)
            .WithContext("config field 'faults'"));
  }
  return Status::Ok();
}

}  // namespace murmur::node
