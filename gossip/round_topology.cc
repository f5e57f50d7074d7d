#include "gossip/round_topology.h"

#include <algorithm>
#include <deque>

#include "core/check.h"

namespace murmur::gossip {

RoundTopology::RoundTopology(topology::MixingMatrix w) : cache_(1) {
  auto e = std::make_unique<Entry>();
  e->round = 0;
  e->out = w.Transposed();
  e->in = std::move(w);
  cache_[0] = std::move(e);
}

RoundTopology::RoundTopology(std::function<topology::MixingMatrix(std::uint64_t)> make, std::size_t window)
    : make_(std::move(make)), window_(window), cache_(window) {
  MURMUR_CHECK(window_ > 0);
}

NodeId RoundTopology::size() const {
  if (cache_[0]) return cache_[0]->in.size();
  return make_(0).size();
}

RoundTopology::Entry& RoundTopology::Get(std::uint64_t round) {
  if (!make_) return *cache_[0];
  auto& slot = cache_[round % window_];
  if (!slot || slot->round != round) {
    auto e = std::make_unique<Entry>();
    e->round = round;
    e->in = make_(round);
    e->out = e->in.Transposed();
    slot = std::move(e);
  }
  return *slot;
}

std::uint64_t RoundTopology::InNeighbourLead(NodeId self) {
  if (make_) return 1;
  const topology::MixingMatrix& in = In(0);
  const topology::MixingMatrix& out = Out(0);
  MURMUR_CHECK(self < in.size());
  // Breadth-first distances from self along out-edges.
  std::vector<std::uint64_t> dist(in.size(), kUnboundedLead);
  std::deque<NodeId> queue = {self};
  dist[self] = 0;
  while (!queue.empty()) {
    const NodeId u = queue.front();
    queue.pop_front();
    for (const auto& e : out.Row(u)) {
      if (dist[e.col] != kUnboundedLead) continue;
      dist[e.col] = dist[u] + 1;
      queue.push_back(e.col);
    }
  }
  std::uint64_t lead = 1;
  for (const auto& e : in.Row(self)) {
    if (e.col != self) lead = std::max(lead, dist[e.col]);
  }
  return lead;
}

std::uint64_t RoundTopology::MajorityRound(std::uint64_t round, NodeId self,
                                           const std::map<NodeId, std::uint64_t>& latest) {
  std::vector<std::uint64_t> claims;
  for (const auto& e : In(round).Row(self)) {
    if (e.col == self) continue;
    auto seen = latest.find(e.col);
    claims.push_back(seen == latest.end() ? 0 : seen->second);
  }
  if (claims.empty()) return 0;
  const std::size_t m = claims.size() / 2 + 1;
  std::nth_element(claims.begin(), claims.begin() + static_cast<std::ptrdiff_t>(m - 1), claims.end(),
                   std::greater<>());
  return claims[m - 1];
}

const topology::MixingMatrix& RoundTopology::In(std::uint64_t round) { return Get(round).in; }
const topology::MixingMatrix& RoundTopology::Out(std::uint64_t round) { return Get(round).out; }

}  // namespace murmur::gossip
