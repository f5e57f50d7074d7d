#include "node/job/federated_state.h"

#include <string>
#include <string_view>

namespace murmur::node {

namespace {

constexpr std::string_view kServerPrefix = "server/";

// The DP noise stream is secret (system randomness, drawn afresh after a
// restart): its position, and the Gaussian it has cached, stay off the disk.
bool Secret(const std::string& name) { return name.starts_with("noise/"); }

}  // namespace

void PutServerState(const federated::ServerState& s, Checkpoint* c) {
  for (const auto& [name, x] : s.scalars)
    if (!Secret(name)) c->scalars[std::string(kServerPrefix) + name] = x;
  for (const auto& [name, v] : s.vectors) c->wide[std::string(kServerPrefix) + name] = v;
}

Result<federated::ServerState> GetServerState(const Checkpoint& c) {
  federated::ServerState s;
  for (const auto& [name, x] : c.scalars)
    if (name.starts_with(kServerPrefix)) s.scalars[name.substr(kServerPrefix.size())] = x;
  for (const auto& [name, v] : c.wide)
    if (name.starts_with(kServerPrefix)) s.vectors[name.substr(kServerPrefix.size())] = v;
  if (s.scalars.count("round") == 0) return Status::NotFound("no federated server state");
  return s;
}

}  // namespace murmur::node
