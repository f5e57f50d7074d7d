#include "node/job/job_peer_sampler.h"

namespace murmur::node {

JobPeerSampler::JobPeerSampler(Env& env, NodeId nodes, std::vector<NodeId> candidates,
                               std::function<bool(NodeId)> peer_alive)
    : nodes_(nodes),
      candidates_(std::move(candidates)),
      peer_alive_(std::move(peer_alive)),
      rng_(env.MakeRng(RngPurpose::kPeerSampling)),
      draws_(std::make_unique<std::atomic<std::uint64_t>[]>(nodes)) {}

std::vector<NodeId> JobPeerSampler::Sample(std::size_t k) {
  std::vector<NodeId> alive;
  for (NodeId j : candidates_) {
    if (!peer_alive_ || peer_alive_(j)) alive.push_back(j);
  }
  const std::size_t m = std::min(k, alive.size());
  for (std::size_t i = 0; i < m; ++i) {
    std::swap(alive[i], alive[i + rng_.UniformInt(alive.size() - i)]);
    draws_[alive[i]].fetch_add(1, std::memory_order_relaxed);
  }
  alive.resize(m);
  return alive;
}

std::vector<std::uint64_t> JobPeerSampler::draws() const {
  std::vector<std::uint64_t> out(nodes_);
  for (NodeId j = 0; j < nodes_; ++j) out[j] = draws_[j].load(std::memory_order_relaxed);
  return out;
}

}  // namespace murmur::node
