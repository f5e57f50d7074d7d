#include "membership/peer_sampler.h"

#include <algorithm>

namespace murmur::membership {

std::vector<NodeId> MembershipPeerSampler::Sample(std::size_t k) {
  std::vector<NodeId> alive = membership_.AliveMembers();
  const std::size_t n = std::min(k, alive.size());
  for (std::size_t i = 0; i < n; ++i) {
    std::swap(alive[i], alive[i + rng_.UniformInt(alive.size() - i)]);
  }
  alive.resize(n);
  return alive;
}

}  // namespace murmur::membership
