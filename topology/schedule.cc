#include "topology/schedule.h"

#include <numeric>

#include "core/rng.h"
#include "topology/generators.h"

namespace murmur::topology {

StaticSchedule::StaticSchedule(Graph graph, MixingMatrix weights, Stochasticity stochasticity)
    : graph_(std::move(graph)), weights_(std::move(weights)), stochasticity_(stochasticity) {
  MURMUR_CHECK(graph_.num_nodes() == weights_.size());
}

OnePeerExponentialSchedule::OnePeerExponentialSchedule(NodeId n) : n_(n) {
  const std::uint32_t tau = std::max<std::uint32_t>(1, CeilLog2(n));
  for (std::uint32_t k = 0; k < tau; ++k) {
    std::vector<Edge> arcs;
    std::vector<Triplet> t;
    for (NodeId i = 0; i < n; ++i) {
      const NodeId peer = static_cast<NodeId>((i + (std::uint64_t{1} << k)) % n);
      if (peer == i) {
        t.push_back({i, i, 1.0});  // n = 1
        continue;
      }
      arcs.push_back({peer, i});
      t.push_back({i, i, 0.5});
      t.push_back({i, peer, 0.5});
    }
    graphs_.push_back(Graph::FromEdgesDedup(n, arcs, Directedness::kDirected));
    weights_.push_back(std::move(MixingMatrix::FromEntries(n, t)).value());
  }
}

RandomMatchingSchedule::RandomMatchingSchedule(NodeId n, std::uint64_t seed) : n_(n), seed_(seed) {}

void RandomMatchingSchedule::Build(std::uint64_t round) {
  if (built_ && round_ == round) return;
  Rng rng = Rng(seed_, 0, RngPurpose::kTopology).Fork(round);
  std::vector<NodeId> order(n_);
  std::iota(order.begin(), order.end(), NodeId{0});
  rng.Shuffle(std::span<NodeId>(order));
  std::vector<Edge> edges;
  std::vector<Triplet> t;
  for (std::size_t k = 0; k + 1 < order.size(); k += 2) {
    NodeId a = order[k], b = order[k + 1];
    edges.push_back({a, b});
    t.insert(t.end(), {{a, a, 0.5}, {a, b, 0.5}, {b, b, 0.5}, {b, a, 0.5}});
  }
  if (n_ % 2 == 1) t.push_back({order.back(), order.back(), 1.0});
  graph_ = Graph::FromEdgesDedup(n_, edges);
  weights_ = std::move(MixingMatrix::FromEntries(n_, t)).value();
  built_ = true;
  round_ = round;
}

const MixingMatrix& RandomMatchingSchedule::At(std::uint64_t round) {
  Build(round);
  return weights_;
}

const Graph& RandomMatchingSchedule::GraphAt(std::uint64_t round) {
  Build(round);
  return graph_;
}

}  // namespace murmur::topology
