#include "sim/run/federated_edges.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/net/device.h"

namespace murmur::sim {

std::vector<std::uint32_t> EdgesById(NodeId clients, NodeId edges) {
  std::vector<std::uint32_t> edge_of(clients);
  for (NodeId i = 0; i < clients; ++i) {
    edge_of[i] = static_cast<std::uint32_t>(static_cast<std::uint64_t>(i) * edges / clients);
  }
  return edge_of;
}

std::vector<std::uint32_t> NearestRsu(const Mobility& mobility, NodeId clients, NodeId edges) {
  const auto& p = mobility.positions();
  std::vector<std::uint32_t> edge_of(clients, 0);
  for (NodeId i = 0; i < clients; ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (NodeId e = 0; e < edges; ++e) {
      const auto& r = p[clients + e];
      const double d2 = (p[i].x - r.x) * (p[i].x - r.x) + (p[i].y - r.y) * (p[i].y - r.y);
      if (d2 < best) {
        best = d2;
        edge_of[i] = e;
      }
    }
  }
  return edge_of;
}

std::vector<std::uint8_t> StayingInRange(const Mobility& m, std::span<const std::uint32_t> edge_of,
                                         const std::vector<DeviceProfile>& devices,
                                         std::span<const double> samples, const ClientRoundCost& cost) {
  const auto clients = static_cast<NodeId>(edge_of.size());
  std::vector<std::uint8_t> staying(clients, 0);
  for (NodeId i = 0; i < clients; ++i) {
    const NodeId rsu = clients + edge_of[i];
    const DeviceProfile& d = devices[i];
    const DeviceProfile& r = devices[rsu];
    const double range = m.Range(i, rsu);
    const double radio = cost.radio.on() ? cost.radio.At(std::min(m.Distance(i, rsu), range), range)
                                         : std::numeric_limits<double>::infinity();
    const double up = std::min({d.up_bps, r.down_bps, radio}), down = std::min({r.up_bps, d.down_bps, radio});
    const double needed = cost.model_bits / down + cost.model_bits / up +
                          cost.local_epochs * samples[i] * cost.flops_per_sample / d.flops_per_s;
    staying[i] = m.PredictedContact(i, rsu) >= needed;
  }
  return staying;
}

Placement PlaceEdgeClusters(std::span<const std::uint32_t> edge_of, NodeId edges, int ranks, int rank) {
  const auto clients = static_cast<NodeId>(edge_of.size());
  const Placement blocks(clients, ranks, rank);
  std::vector<int> rank_of(clients + edges + 1, ranks - 1);
  std::vector<std::vector<NodeId>> members(edges);
  for (NodeId i = 0; i < clients; ++i) {
    rank_of[i] = blocks.RankOf(i);
    members[edge_of[i]].push_back(i);
  }
  for (NodeId e = 0; e < edges; ++e)
    if (!members[e].empty()) rank_of[clients + e] = rank_of[members[e][members[e].size() / 2]];
  return Placement(std::move(rank_of), ranks, rank);
}

double AutoMaxWeight(const ml::Partition& partition, NodeId clients, bool edges) {
  double largest_share = 1, all_shares = 0;
  for (NodeId i = 0; i < clients; ++i) {
    const auto share = static_cast<double>(partition.node(i).size());
    largest_share = std::max(largest_share, share);
    all_shares += share;
  }
  return edges ? std::max(all_shares, 1.0) : largest_share;
}

}  // namespace murmur::sim
