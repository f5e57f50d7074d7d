#include "node/config.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <set>

#include "crypto/file_io.h"
#include "node/control/fault_control.h"
#include "node/job/job_data.h"

namespace murmur::node {

namespace {
class FirstError final : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (first.empty())
      first = "line " + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message;
  }
  std::string first;
};
}  // namespace

namespace {
// Parses `text` into *c: protobuf text, or JSON when it starts with '{'.
Status ParseConfigText(const std::string& text, const std::string& origin, google::protobuf::Message* c) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    google::protobuf::util::JsonParseOptions opts;
    opts.ignore_unknown_fields = false;
    auto st = google::protobuf::util::JsonStringToMessage(text, c, opts);
    if (!st.ok()) return Status::InvalidArgument(origin + ": " + std::string(st.message()));
    return Status::Ok();
  }
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, c)) {
    return Status::InvalidArgument(origin + ": " +
                                   (errors.first.empty() ? "not a valid " + c->GetTypeName() : errors.first));
  }
  return Status::Ok();
}
}  // namespace

Result<proto::NodeConfig> ParseNodeConfig(const std::string& text, const std::string& origin) {
  proto::NodeConfig c;
  MURMUR_RETURN_IF_ERROR(ParseConfigText(text, origin, &c));
  return c;
}

Result<proto::JobConfig> ParseJobConfig(const std::string& text, const std::string& origin) {
  proto::JobConfig c;
  MURMUR_RETURN_IF_ERROR(ParseConfigText(text, origin, &c));
  return c;
}

Result<proto::JobConfig> LoadJobConfig(const std::string& path) {
  auto text = crypto::ReadSmallFile(path, std::size_t{1} << 20);
  if (!text.ok()) return text.status().WithContext("job '" + path + "'");
  return ParseJobConfig(*text, path);
}

Result<proto::NodeConfig> LoadNodeConfig(const std::string& path) {
  auto text = crypto::ReadSmallFile(path, std::size_t{1} << 20);
  if (!text.ok()) return text.status().WithContext("config '" + path + "'");
  return ParseNodeConfig(*text, path);
}

Status ValidateNodeConfig(const proto::NodeConfig& c) {
  if (!c.has_node_id()) return Status::InvalidArgument("config: node_id is required");
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
  if (c.has_faults()) {
    if (!c.fault_injection())
      return Status::InvalidArgument("config field 'faults' needs 'fault_injection: true'");
    MURMUR_RETURN_IF_ERROR(ValidateFaultConfig(c.faults()).WithContext("config field 'faults'"));
  }
  return Status::Ok();
}

}  // namespace murmur::node
