#include "gossip/node_state.h"

#include <algorithm>

namespace murmur::gossip {

Status NodeState::Get(const std::string& name, ParamVector& out) const {
  auto it = vectors.find(name);
  if (it == vectors.end()) return Status::NotFound("node state has no vector '" + name + "'");
  if (it->second.size() != out.size())
    return Status::InvalidArgument("node state vector '" + name + "' has " +
                                   std::to_string(it->second.size()) + " elements, the model has " +
                                   std::to_string(out.size()));
  std::copy(it->second.begin(), it->second.end(), out.data());
  return Status::Ok();
}

Result<double> NodeState::Scalar(const std::string& name) const {
  auto it = scalars.find(name);
  if (it == scalars.end()) return Status::NotFound("node state has no scalar '" + name + "'");
  return it->second;
}

}  // namespace murmur::gossip
